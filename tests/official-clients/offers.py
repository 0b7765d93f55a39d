"""Drive packhost's prompts, resources and subscriptions with the official
Python MCP SDK (1.x, 2025-11-25), as several callers at once.

Usage: python offers.py SPEC.json

SPEC is {"url", "tokens": {caller: token}, "steps": [{"as": caller, "do":
method, ...}]}; each caller has a session of its own. Methods: "prompts",
"resources", "templates" (the lists), "get" {"name", "arguments"}, "read"
{"uri"}, "complete" {"uri", "argument", "value"}, "subscribe" {"uri"},
"unsubscribe" {"uri"}, "call" {"tool", "arguments"}, "updates" {"count"?,
"wait"?}: the URIs of the `notifications/resources/updated` this caller has
received, once there are `count` of them or `wait` seconds passed.

Prints one JSON line per step: {"step": n, "as", "do", "result"} or, when the
SDK raised, {"step": n, "as", "do", "error": {"code"?, "message"}}. The Rust
test (tests/e2e/caller_offers.rs) judges the lines.
"""

import asyncio
import json
import sys
from contextlib import AsyncExitStack

from mcp import types
from mcp.shared.exceptions import McpError
from session import open_session


class Caller:
    """One session and the resource updates it received."""

    def __init__(self):
        self.updates = []
        self.session = None

    async def on_message(self, message):
        if isinstance(message, types.ServerNotification):
            if isinstance(message.root, types.ResourceUpdatedNotification):
                self.updates.append(str(message.root.params.uri))


async def run(caller, step):
    session, do = caller.session, step["do"]
    if do == "prompts":
        return (await session.list_prompts()).model_dump(mode="json")["prompts"]
    if do == "resources":
        return (await session.list_resources()).model_dump(mode="json")["resources"]
    if do == "templates":
        listed = await session.list_resource_templates()
        return listed.model_dump(mode="json")["resourceTemplates"]
    if do == "get":
        got = await session.get_prompt(step["name"], step.get("arguments"))
        return got.model_dump(mode="json")
    if do == "read":
        return (await session.read_resource(step["uri"])).model_dump(mode="json")
    if do == "complete":
        reference = types.ResourceTemplateReference(type="ref/resource", uri=step["uri"])
        argument = {"name": step["argument"], "value": step["value"]}
        done = await session.complete(reference, argument)
        return done.model_dump(mode="json")["completion"]
    if do == "subscribe":
        await session.subscribe_resource(step["uri"])
        return {}
    if do == "unsubscribe":
        await session.unsubscribe_resource(step["uri"])
        return {}
    if do == "call":
        result = await session.call_tool(step["tool"], step.get("arguments", {}))
        return result.model_dump(mode="json")
    if do == "updates":
        waited, count, wait = 0.0, step.get("count"), step.get("wait", 10)
        while waited < wait and (count is None or len(caller.updates) < count):
            await asyncio.sleep(0.05)
            waited += 0.05
        return list(caller.updates)
    raise ValueError(f"unknown step {do!r}")


async def main(spec):
    async with AsyncExitStack() as stack:
        callers = {}
        for name, token in spec["tokens"].items():
            caller = Caller()
            transport = {"http": {"url": spec["url"], "token": token}}
            caller.session = await open_session(stack, transport, message_handler=caller.on_message)
            callers[name] = caller
        for n, step in enumerate(spec["steps"]):
            line = {"step": n, "as": step["as"], "do": step["do"]}
            try:
                line["result"] = await run(callers[step["as"]], step)
            except McpError as e:
                line["error"] = {"code": e.error.code, "message": e.error.message}
            except Exception as e:  # the SDK's verdict is what we report
                line["error"] = {"message": f"{type(e).__name__}: {e}"}
            print(json.dumps(line), flush=True)


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        asyncio.run(main(json.load(f)))
