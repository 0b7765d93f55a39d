"""Use every MCP feature of a server through packhost with the official
Python SDK (1.x): prompts, completions, resources, templates,
subscriptions, logging, and tool calls that ask the client.

Usage: python whole.py SPEC.json

SPEC is {"transport": ... (see session.py), "answers"?: ... (see client.py),
"steps": [{"id", "op", ...}]}, each step one of:
  {"op": "prompts"} | {"op": "resources"} | {"op": "templates"}
  {"op": "prompt", "name", "arguments"?}
  {"op": "complete", "ref": {"type": "ref/prompt", "name"} or
      {"type": "ref/resource", "uri"}, "argument": {"name", "value"}, "context"?}
  {"op": "read", "uri"}   (a "{{id.path}}" string takes a field of step id's output)
  {"op": "subscribe", "uri"} | {"op": "unsubscribe", "uri"}
  {"op": "level", "level"}
  {"op": "call", "tool", "arguments"?}
  {"op": "updated", "uri", "seconds"}: waits for a resource update of uri
  {"op": "logged", "contains", "seconds", "count"?}: waits for `count` (1)
      log messages holding it
Prints one JSON line per step: {"id", "output"} or {"id", "error"}, and
{"asked": method, "params"} lines when the server's questions arrive.
"""

import asyncio
import json
import sys
from contextlib import AsyncExitStack

from client import answerers, emit, resolve
from mcp import types
from session import open_session


async def waited(condition, seconds):
    """Whether `condition()` came true within `seconds`."""
    for _ in range(int(seconds * 10)):
        if condition():
            return True
        await asyncio.sleep(0.1)
    return condition()


async def step(session, spec, heard):
    op = spec["op"]
    if op == "prompts":
        return (await session.list_prompts()).model_dump(mode="json")["prompts"]
    if op == "resources":
        return (await session.list_resources()).model_dump(mode="json")["resources"]
    if op == "templates":
        listed = await session.list_resource_templates()
        return listed.model_dump(mode="json")["resourceTemplates"]
    if op == "prompt":
        rendered = await session.get_prompt(spec["name"], spec.get("arguments"))
        return rendered.model_dump(mode="json")
    if op == "complete":
        ref = spec["ref"]
        if ref["type"] == "ref/prompt":
            ref = types.PromptReference(type="ref/prompt", name=ref["name"])
        else:
            ref = types.ResourceTemplateReference(type="ref/resource", uri=ref["uri"])
        done = await session.complete(ref, spec["argument"], spec.get("context"))
        return done.model_dump(mode="json")["completion"]
    if op == "read":
        return (await session.read_resource(spec["uri"])).model_dump(mode="json")
    if op == "subscribe":
        await session.subscribe_resource(spec["uri"])
        return {}
    if op == "unsubscribe":
        await session.unsubscribe_resource(spec["uri"])
        return {}
    if op == "level":
        await session.set_logging_level(spec["level"])
        return {}
    if op == "call":
        result = await session.call_tool(spec["tool"], spec.get("arguments", {}))
        return result.model_dump(mode="json")
    if op == "updated":
        return await waited(lambda: spec["uri"] in heard["updated"], spec["seconds"])
    if op == "logged":
        holding = lambda: sum(spec["contains"] in str(m) for m in heard["logs"])
        return await waited(lambda: holding() >= spec.get("count", 1), spec["seconds"])
    raise ValueError(f"unknown op {op}")


async def main(spec):
    heard = {"updated": [], "logs": []}

    async def logged(params):
        heard["logs"].append(params.data)

    async def notified(message):
        if isinstance(message, types.ServerNotification):
            root = message.root
            if isinstance(root, types.ResourceUpdatedNotification):
                heard["updated"].append(str(root.params.uri))

    async with AsyncExitStack() as stack:
        callbacks = answerers(spec.get("answers", {}))
        session = await open_session(
            stack, spec["transport"], logging_callback=logged, message_handler=notified, **callbacks
        )
        outputs = {}
        for each in spec["steps"]:
            line = {"id": each["id"]}
            try:
                output = await step(session, resolve(each, outputs), heard)
                outputs[each["id"]] = output
                line["output"] = output
            except Exception as e:  # the SDK's verdict is what we report
                line["error"] = f"{type(e).__name__}: {e}"
            emit(line)


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        asyncio.run(main(json.load(f)))
