"""Drive packhost with the official Python MCP SDK (`mcp`, pinned in
tests/requirements.txt) and report what the SDK made of each result.

Usage: python client.py SPEC.json

SPEC is {"transport": {"stdio": {"command", "args", "cwd", "env", "stderr"}}
or {"http": {"url", "token"?}}, "calls": [{"id", "tool", "arguments"}],
"answers"?: {"elicitation"?: [ElicitResult...], "sampling"?: "text",
"roots"?: [Root...]}}. With "answers", the client declares the capability of
each kind given and answers the server's questions of that kind (the
elicitation results in turn), printing {"asked": method, "params"} first.
A string argument "{{id.path.to.field}}" is replaced by that field of the
structured content of the earlier call `id`.

Prints one JSON line with the tools (name, whether it has an outputSchema),
then one per call: {"id", "tool", "exception"} when the SDK raised (its
output-schema validation does, on success results), {"id", "tool",
"skipped"} when an earlier result it refers to is missing, else {"id",
"tool", "isError", "structuredContent", "contentTypes", "text"}. The Rust test
(tests/e2e/official_clients.rs) judges the lines.
"""

import asyncio
import json
import sys
from contextlib import AsyncExitStack

from mcp import types
from session import open_session


def resolve(value, results):
    """Replace "{{id.field...}}" strings with fields of earlier results."""
    if isinstance(value, str) and value.startswith("{{") and value.endswith("}}"):
        call, *path = value[2:-2].split(".")
        found = results[call]
        for key in path:
            found = found[int(key)] if isinstance(found, list) else found[key]
        return found
    if isinstance(value, dict):
        return {k: resolve(v, results) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v, results) for v in value]
    return value


def shorten(value):
    """Long strings (base64 images) cut to keep the lines readable."""
    if isinstance(value, str) and len(value) > 4000:
        return value[:200] + f"... ({len(value)} chars)"
    if isinstance(value, dict):
        return {k: shorten(v) for k, v in value.items()}
    if isinstance(value, list):
        return [shorten(v) for v in value]
    return value


def emit(line):
    print(json.dumps(line), flush=True)


def answerers(answers):
    """ClientSession callbacks for the kinds of question `answers` gives:
    the SDK declares a capability only for the callbacks it is given."""
    callbacks = {}
    if "elicitation" in answers:
        queue = list(answers["elicitation"])

        async def elicit(context, params):
            emit({"asked": "elicitation/create", "params": params.model_dump(mode="json")})
            return types.ElicitResult(**queue.pop(0))

        callbacks["elicitation_callback"] = elicit
    if "sampling" in answers:

        async def sample(context, params):
            emit({"asked": "sampling/createMessage", "params": params.model_dump(mode="json")})
            content = types.TextContent(type="text", text=answers["sampling"])
            return types.CreateMessageResult(role="assistant", content=content, model="test-model")

        callbacks["sampling_callback"] = sample
    if "roots" in answers:

        async def roots(context):
            emit({"asked": "roots/list", "params": {}})
            return types.ListRootsResult(roots=[types.Root(**r) for r in answers["roots"]])

        callbacks["list_roots_callback"] = roots
    return callbacks


async def main(spec):
    async with AsyncExitStack() as stack:
        callbacks = answerers(spec.get("answers", {}))
        session = await open_session(stack, spec["transport"], **callbacks)
        tools = (await session.list_tools()).tools
        emit({"tools": [{"name": t.name, "hasOutputSchema": t.outputSchema is not None} for t in tools]})
        results = {}
        for call in spec["calls"]:
            line = {"id": call["id"], "tool": call["tool"]}
            try:
                arguments = resolve(call.get("arguments", {}), results)
            except (KeyError, TypeError) as e:
                line["skipped"] = f"an earlier result it needs is missing: {e!r}"
                emit(line)
                continue
            try:
                result = await session.call_tool(call["tool"], arguments)
            except Exception as e:  # the SDK's verdict is what we report
                line["exception"] = f"{type(e).__name__}: {e}"
                emit(line)
                continue
            results[call["id"]] = result.structuredContent
            texts = [c.text for c in result.content if c.type == "text"]
            line.update(
                isError=bool(result.isError),
                structuredContent=shorten(result.structuredContent),
                contentTypes=[c.type for c in result.content],
                text=texts[0] if texts else None,
            )
            emit(line)


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        asyncio.run(main(json.load(f)))
