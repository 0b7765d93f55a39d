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

from mcp import types
from session import open_session


async def main(spec):
    asked = []
    answer = spec["answer"]

    async def elicit(_context, params):
        asked.append(params.message)
        return types.ElicitResult(action=answer["action"], content=answer.get("content"))

    async with AsyncExitStack() as stack:
        callbacks = {"elicitation_callback": elicit} if answer else {}
        session = await open_session(stack, spec["transport"], **callbacks)
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
