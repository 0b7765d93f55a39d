"""Drive packhost with the official Python MCP SDK 2.x (`mcp`, pinned in
tests/requirements-mcp2.txt), which speaks MCP 2026-07-28: a question of a
call comes back as an `input_required` result, which the SDK answers
through its callbacks and retries with the `requestState`.

Usage: python client_mrtr.py SPEC.json, SPEC as for client.py (http only,
no token), with "answers". Prints {"protocolVersion"}, then the {"asked"}
lines of the callbacks and one line per call as client.py does.
"""

import asyncio
import json
import sys

import mcp_types as types
from mcp import Client


def emit(line):
    print(json.dumps(line), flush=True)


def answerers(answers):
    queue = list(answers.get("elicitation", []))

    async def elicit(context, params):
        emit({"asked": "elicitation/create", "params": params.model_dump(mode="json", exclude_none=True)})
        return types.ElicitResult(**queue.pop(0))

    async def sample(context, params):
        emit({"asked": "sampling/createMessage", "params": params.model_dump(mode="json", exclude_none=True)})
        content = types.TextContent(type="text", text=answers["sampling"])
        return types.CreateMessageResult(role="assistant", content=content, model="test-model")

    async def roots(context):
        emit({"asked": "roots/list", "params": {}})
        return types.ListRootsResult(roots=[types.Root(**r) for r in answers["roots"]])

    callbacks = {}
    if "elicitation" in answers:
        callbacks["elicitation_callback"] = elicit
    if "sampling" in answers:
        callbacks["sampling_callback"] = sample
    if "roots" in answers:
        callbacks["list_roots_callback"] = roots
    return callbacks


async def main(spec):
    url = spec["transport"]["http"]["url"]
    async with Client(url, mode="2026-07-28", **answerers(spec.get("answers", {}))) as client:
        emit({"protocolVersion": client.protocol_version})
        for call in spec["calls"]:
            line = {"id": call["id"], "tool": call["tool"]}
            try:
                result = await client.call_tool(call["tool"], call.get("arguments", {}))
            except Exception as e:  # the SDK's verdict is what we report
                line["exception"] = f"{type(e).__name__}: {e}"
                emit(line)
                continue
            texts = [c.text for c in result.content if c.type == "text"]
            line.update(isError=bool(result.is_error if hasattr(result, "is_error") else result.isError),
                        text=texts[0] if texts else None)
            emit(line)


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        asyncio.run(main(json.load(f)))
