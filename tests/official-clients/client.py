"""Drive packhost with the official Python MCP SDK (`mcp`, pinned in
tests/requirements.txt) and report what the SDK made of each result.

Usage: python client.py SPEC.json

SPEC is {"transport": {"stdio": {"command", "args", "cwd", "env", "stderr"}}
or {"http": {"url", "token"?}}, "calls": [{"id", "tool", "arguments"}]}.
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

import httpx
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client


def resolve(value, results):
    """Replace "{{id.field...}}" strings with fields of earlier results."""
    if isinstance(value, str) and value.startswith("{{") and value.endswith("}}"):
        call, *path = value[2:-2].split(".")
        found = results[call]
        for key in path:
            found = found[key]
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


async def main(spec):
    async with AsyncExitStack() as stack:
        transport = spec["transport"]
        if "stdio" in transport:
            stdio = transport["stdio"]
            params = StdioServerParameters(
                command=stdio["command"],
                args=stdio["args"],
                cwd=stdio.get("cwd"),
                env=stdio.get("env"),
            )
            errlog = stack.enter_context(open(stdio["stderr"], "w"))
            read, write = await stack.enter_async_context(stdio_client(params, errlog=errlog))
        else:
            http = transport["http"]
            headers = {"Authorization": f"Bearer {http['token']}"} if http.get("token") else {}
            client = await stack.enter_async_context(
                httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(120, read=600))
            )
            read, write, _ = await stack.enter_async_context(
                streamable_http_client(http["url"], http_client=client)
            )
        session = await stack.enter_async_context(ClientSession(read, write))
        await session.initialize()
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
