"""Drive packhost with the official Python MCP SDK (`mcp`) as a user who
answers approval questions (elicitation) one set way, or with a client that
cannot be asked at all.

Usage: python approval.py SPEC.json

SPEC is {"transport": {"stdio": {"command", "args", "cwd", "env", "stderr"}}
or {"http": {"url", "token"}}, "answer": null | {"action", "content"?}, "calls": [{"id", "tool",
"arguments"}]}. With "answer" null the client declares no elicitation;
otherwise every elicitation is answered with it.

Prints one JSON line per call: {"id", "isError", "structuredContent",
"text", "asked": [the messages of the questions asked during the call]}.
The Rust test (tests/e2e/approval.rs) judges the lines.
"""

import asyncio
import json
import sys
from contextlib import AsyncExitStack

import httpx
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client


async def main(spec):
    asked = []
    answer = spec["answer"]

    async def elicit(_context, params):
        asked.append(params.message)
        return types.ElicitResult(action=answer["action"], content=answer.get("content"))

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
            client = await stack.enter_async_context(
                httpx.AsyncClient(
                    headers={"Authorization": f"Bearer {http['token']}"},
                    timeout=httpx.Timeout(120, read=300),
                )
            )
            read, write, _ = await stack.enter_async_context(
                streamable_http_client(http["url"], http_client=client)
            )
        session = await stack.enter_async_context(
            ClientSession(read, write, elicitation_callback=elicit if answer else None)
        )
        await session.initialize()
        for call in spec["calls"]:
            asked.clear()
            result = await session.call_tool(call["tool"], call.get("arguments", {}))
            texts = [c.text for c in result.content if c.type == "text"]
            line = {
                "id": call["id"],
                "isError": bool(result.isError),
                "structuredContent": result.structuredContent,
                "text": texts[0] if texts else None,
                "asked": list(asked),
            }
            print(json.dumps(line), flush=True)


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        asyncio.run(main(json.load(f)))
