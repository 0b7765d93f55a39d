"""The session the official Python SDK (1.x) scripts here open on packhost:
over stdio or streamable HTTP, as the spec's "transport" says."""

import httpx
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client


async def open_session(stack, transport, **callbacks):
    """An initialised ClientSession on `transport` ({"stdio": {"command",
    "args", "cwd", "env", "stderr"}} or {"http": {"url", "token"?}}), kept
    open by `stack`, with the SDK's `callbacks` (elicitation, sampling,
    roots)."""
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
    session = await stack.enter_async_context(ClientSession(read, write, **callbacks))
    await session.initialize()
    return session
