"""packhost beside OneTool 2.2.2 (PyPI `onetool-mcp`), measured in one run.

OneTool's `run` tool executes Python in its own server process, unconfined
(an AST check, then `exec`). packhost's `run` hands Python blocks to the
`exec_py` pack, measured twice: with the sandbox on (the default) and with
`sandbox = "off"`. Every figure goes through the official Python MCP client
(`mcp`) over stdio, one client session per server:

1. `run` of `1+1`, back to back, p50 and p99;
2. the same from 16 concurrent callers on one session (calls/s);
3. the same with 100 ms between calls, p50;
4. a pack call through `run`: packhost's `proj.list()` against OneTool's
   `ot.version()`, p50;
5. cold start: spawn -> `initialize` -> `tools/list` answered, packhost with
   the shipped packs.toml against OneTool with the config `onetool init`
   writes, median; and packhost's again by a raw JSON-RPC client (no SDK:
   the client's own share of each start is then close to nothing);
6. memory: RSS of the whole process tree (the server and every process
   under it, VmRSS summed from /proc), fresh servers as in 5, right after
   start, after the calls of 1-4 (one round of them), and after
   `--idle-secs` without calls; the same for its anonymous part alone
   (RssAnon: the heap and stacks, not the mapped code, whose resident
   share follows the page cache's folio sizes); then what each process of
   packhost's tree holds.

Every answer is checked (`1+1` must give 2); an error fails the run. Targets
(issue #14) are printed, not enforced: this is a measurement.

Run by `./dev bench` with the OneTool venv's Python (OneTool needs Python >=
3.12; the venv also holds `mcp`, pinned by tests/requirements.txt). Alone:

    ~/.cache/packhost-onetool-venv/bin/python tests/bench/onetool.py [--quick]
        [--calls 200] [--workers 16] [--per-worker 25] [--spaced 30]
        [--gap-ms 100] [--pack-calls 100] [--starts 10] [--rounds 6]
        [--idle-secs 60] [--packhost BIN] [--onetool BIN]

OneTool runs offline with the config `onetool init` writes (no extensions,
no secrets) and DO_NOT_TRACK=1 (else every start posts telemetry to
PostHog from a background thread), with a HOME and config directory of its
own under a temporary directory, where it keeps its logs and per-call stats.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

REPO = Path(__file__).resolve().parents[2]

# OneTool wraps every answer in markers with a random id.
ONETOOL_WRAP = re.compile(
    r"^/\* <external-content-[0-9a-f]+> \*/\n(.*)\n/\* </external-content-[0-9a-f]+> \*/$", re.S
)


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="small counts: checks that it works")
    p.add_argument("--calls", type=int, default=200, help="back-to-back calls per server")
    p.add_argument("--workers", type=int, default=16, help="concurrent callers on one session")
    p.add_argument("--per-worker", type=int, default=25, help="calls per concurrent caller")
    p.add_argument("--spaced", type=int, default=30, help="calls spaced by --gap-ms")
    p.add_argument("--gap-ms", type=int, default=100)
    p.add_argument("--pack-calls", type=int, default=100)
    p.add_argument("--starts", type=int, default=10, help="cold starts per server")
    p.add_argument("--rounds", type=int, default=6, help="rounds of each phase, in alternating server order")
    p.add_argument("--idle-secs", type=float, help="idle period before the settled memory figure (60; --quick: 5)")
    p.add_argument("--packhost", help="the packhost binary (default: $CARGO_TARGET_DIR/release/packhost)")
    p.add_argument("--onetool", help="the onetool script (default: beside this Python)")
    a = p.parse_args()
    if a.quick:
        a.calls, a.per_worker, a.spaced, a.pack_calls, a.starts, a.rounds = 20, 3, 8, 20, 3, 2
    if a.idle_secs is None:
        a.idle_secs = 5 if a.quick else 60
    if not a.packhost:
        target = os.environ.get("CARGO_TARGET_DIR", str(Path.home() / ".cache/packhost-target"))
        a.packhost = str(Path(target) / "release/packhost")
    if not a.onetool:
        a.onetool = str(Path(sys.executable).parent / "onetool")
    for path in (a.packhost, a.onetool):
        if not os.access(path, os.X_OK):
            sys.exit(f"onetool bench: {path} is not an executable (see the usage in {__file__})")
    return a


# ---------------------------------------------------------------- servers


class BenchError(Exception):
    """A call failed or answered wrong: the run fails."""


@dataclass
class Server:
    """How to start one MCP server and what its `run` calls look like."""

    name: str
    command: list[str]
    env: dict[str, str]
    cwd: str
    log: str
    pack_call: str  # a `run` command that calls a pack
    pack_check: str  # text the pack call's answer must contain
    stack: contextlib.AsyncExitStack = field(default_factory=contextlib.AsyncExitStack)
    session: ClientSession | None = None

    def params(self) -> StdioServerParameters:
        return StdioServerParameters(
            command=self.command[0], args=self.command[1:], env=self.env, cwd=self.cwd
        )

    async def open(self) -> None:
        errlog = self.stack.enter_context(open(self.log, "a"))
        read, write = await self.stack.enter_async_context(stdio_client(self.params(), errlog))
        self.session = await self.stack.enter_async_context(ClientSession(read, write))
        await self.session.initialize()
        tools = await self.session.list_tools()
        run = [t for t in tools.tools if t.name == "run"]
        if not run or "command" not in run[0].inputSchema.get("properties", {}):
            self.fail(f"no `run` tool with a `command` argument: {[t.name for t in tools.tools]}")

    async def close(self) -> None:
        await self.stack.aclose()
        self.session = None

    def fail(self, message: str) -> None:
        try:
            tail = Path(self.log).read_text(errors="replace")[-3000:]
        except OSError:
            tail = ""
        raise BenchError(f"{self.name}: {message}\n--- its stderr ({self.log}):\n{tail}")

    async def run(self, command: str) -> tuple[str, object]:
        """`tools/call run {command}`: the answer's text, unwrapped, and its
        structured content."""
        assert self.session is not None
        result = await self.session.call_tool("run", {"command": command})
        text = "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")
        if result.isError:
            self.fail(f"`run {command}` answered an error: {text}")
        m = ONETOOL_WRAP.match(text)
        return (m.group(1) if m else text).strip(), result.structuredContent

    async def one_plus_one(self) -> None:
        # OneTool answers the text `2`; packhost's exec_py answers
        # {"success": true, "result": 2, ...} (structured, and as JSON text).
        answer, structured = await self.run("1+1")
        if answer == "2":
            return
        if isinstance(structured, dict) and structured.get("success") and structured.get("result") == 2:
            return
        self.fail(f"`run 1+1` answered {answer!r}, not 2")

    async def pack(self) -> None:
        answer, _ = await self.run(self.pack_call)
        if self.pack_check not in answer:
            self.fail(f"`run {self.pack_call}` answered {answer[:300]!r}, without {self.pack_check!r}")


def packhost_config(tmp: Path, sandbox: str) -> Path:
    path = tmp / f"packhost-{sandbox}.toml"
    path.write_text(
        f'[packs.exec_py]\nconfig = {{ sandbox = "{sandbox}" }}\n'
        f'[packs.proj]\n[projects]\nbench = "{REPO}"\n'
    )
    return path


def packhost_server(args, tmp: Path, name: str, config: Path) -> Server:
    # As the e2e tests start it: nothing but PATH, HOME and LANG.
    env = {k: os.environ[k] for k in ("PATH", "HOME", "LANG") if k in os.environ}
    return Server(
        name=name,
        command=[args.packhost, "serve", "--config", str(config)],
        env=env,
        cwd=str(config.parent),
        log=str(tmp / f"{name}.log"),
        pack_call="proj.list()",
        pack_check="bench",
    )


def onetool_server(args, tmp: Path) -> Server:
    home = tmp / "onetool-home"
    config = home / ".onetool" / "onetool.yaml"
    if not config.exists():
        home.mkdir(parents=True, exist_ok=True)
        # The non-interactive `onetool init` (stdin is not a terminal): its
        # default onetool.yaml, no extensions.
        subprocess.run(
            [args.onetool, "init", "--config", str(config)],
            env=onetool_env(home), cwd=home, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True,
        )
    return Server(
        name="OneTool",
        command=[args.onetool, "--config", str(config)],
        env=onetool_env(home),
        cwd=str(home),
        log=str(tmp / "onetool.log"),
        pack_call="ot.version()",
        pack_check="2.2.2",
    )


def onetool_env(home: Path) -> dict[str, str]:
    env = {k: os.environ[k] for k in ("PATH", "LANG") if k in os.environ}
    env["HOME"] = str(home)
    env["DO_NOT_TRACK"] = "1"  # no telemetry post at start
    return env


# ---------------------------------------------------------------- memory


def proc_status(pid: int) -> dict[str, str]:
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:  # gone meanwhile
        return {}
    return dict(line.split(":\t", 1) for line in lines if ":\t" in line)


def children() -> dict[int, list[int]]:
    """Every process's children, from /proc/<pid>/stat."""
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces and parentheses.
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        tree.setdefault(ppid, []).append(int(entry.name))
    return tree


def server_pid(server: Server) -> int:
    """The server this process spawned: the child whose command line is
    the server's (its config file names it alone)."""
    want = "\0".join(server.command[1:])
    for pid in children().get(os.getpid(), []):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_text()
        except OSError:
            continue
        if want in cmdline:
            return pid
    server.fail(f"no child process runs {server.command}")
    raise AssertionError  # fail() raised


def tree_rss(root: int) -> tuple[float, float, list[tuple[int, str, float]]]:
    """MiB resident in `root` and every process under it, the anonymous
    part of it, and each one's (pid, name, MiB), largest first."""
    tree, seen, todo = children(), [], [root]
    while todo:
        pid = todo.pop()
        seen.append(pid)
        todo += tree.get(pid, [])
    each, anonymous = [], 0.0
    for pid in seen:
        status = proc_status(pid)
        if "VmRSS" in status:  # not a zombie
            each.append((pid, status["Name"], int(status["VmRSS"].split()[0]) / 1024))
            anonymous += int(status["RssAnon"].split()[0]) / 1024
    each.sort(key=lambda p: -p[2])
    return sum(p[2] for p in each), anonymous, each


@dataclass
class Memory:
    """A fresh server's tree: MiB at start, after the calls, after idling."""

    start: float = 0.0
    after: float = 0.0
    settled: float = 0.0
    anonymous: dict[str, float] = field(default_factory=dict)
    processes: dict[str, list[tuple[int, str, float]]] = field(default_factory=dict)

    def take(self, when: str, root: int) -> float:
        total, self.anonymous[when], self.processes[when] = tree_rss(root)
        return total


async def memory(args, servers: list[Server]) -> dict[str, Memory]:
    """Each server started fresh and measured right after `tools/list`
    answered, then after one round of the bench's calls, then, all of them
    together, after `--idle-secs` without calls."""
    out = {s.name: Memory() for s in servers}
    try:
        for s in servers:
            await s.open()
            out[s.name].start = out[s.name].take("start", server_pid(s))
        for s in servers:
            await timed(s.one_plus_one, max(1, args.calls // args.rounds))
            await throughput(s, args.workers, max(1, args.per_worker // args.rounds))
            await timed(s.pack, max(1, args.pack_calls // args.rounds))
            out[s.name].after = out[s.name].take("after the calls", server_pid(s))
        await asyncio.sleep(args.idle_secs)
        for s in servers:
            out[s.name].settled = out[s.name].take("settled", server_pid(s))
    finally:
        for s in servers[::-1]:
            await s.close()
    return out


# ---------------------------------------------------------------- figures


def pct(samples: list[float], p: float) -> float:
    s = sorted(samples)
    return s[round((len(s) - 1) * p)]


async def timed(f, n: int, warmup: int = 3, gap: float = 0.0) -> list[float]:
    out = []
    for i in range(warmup + n):
        if gap:
            await asyncio.sleep(gap)
        t = time.perf_counter()
        await f()
        if i >= warmup:
            out.append(time.perf_counter() - t)
    return out


async def throughput(server: Server, workers: int, per_worker: int) -> float:
    """calls/s of `workers` callers each making `per_worker` calls at once."""

    async def worker() -> None:
        for _ in range(per_worker):
            await server.one_plus_one()

    await asyncio.gather(*(server.one_plus_one() for _ in range(workers)))  # warm
    t = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(workers)))
    return workers * per_worker / (time.perf_counter() - t)


async def cold_start(server: Server) -> float:
    """spawn -> initialize -> tools/list answered, in seconds."""
    t = time.perf_counter()
    async with contextlib.AsyncExitStack() as stack:
        errlog = stack.enter_context(open(server.log, "a"))
        read, write = await stack.enter_async_context(stdio_client(server.params(), errlog))
        session = await stack.enter_async_context(ClientSession(read, write))
        await session.initialize()
        tools = await session.list_tools()
        elapsed = time.perf_counter() - t
        if not tools.tools:
            server.fail("tools/list answered no tools")
    return elapsed


RAW_START = (
    b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
    b'"capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}\n',
    b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n{"jsonrpc":"2.0","id":2,"method":"tools/list"}\n',
)


def raw_cold_start(server: Server) -> float:
    """The same as `cold_start` by a client that only writes and reads JSON
    lines (no SDK, `posix_spawn`), in seconds: the issue's measure."""
    def line(fd: int, buffered: bytes) -> tuple[bytes, bytes]:
        while b"\n" not in buffered:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                server.fail("the server closed its output during start")
            buffered += chunk
        first, _, rest = buffered.partition(b"\n")
        return first, rest

    params = server.params()
    their_in, our_in = os.pipe()
    our_out, their_out = os.pipe()
    here = os.getcwd()
    with open(server.log, "a") as errlog:
        os.chdir(params.cwd or here)  # posix_spawn has no working directory of its own
        t = time.perf_counter()
        pid = os.posix_spawn(params.command, [params.command, *params.args], params.env, file_actions=[
            (os.POSIX_SPAWN_DUP2, their_in, 0), (os.POSIX_SPAWN_DUP2, their_out, 1),
            (os.POSIX_SPAWN_DUP2, errlog.fileno(), 2), (os.POSIX_SPAWN_CLOSE, our_in),
            (os.POSIX_SPAWN_CLOSE, our_out)])
        os.chdir(here)
        os.close(their_in)
        os.close(their_out)
        os.write(our_in, RAW_START[0])
        _, rest = line(our_out, b"")
        os.write(our_in, RAW_START[1])
        answer, _ = line(our_out, rest)
        elapsed = time.perf_counter() - t
        os.close(our_in)
        os.waitpid(pid, 0)
        os.close(our_out)
    if not json.loads(answer).get("result", {}).get("tools"):
        server.fail(f"tools/list answered {answer[:300]!r}")
    return elapsed


def fms(s: float) -> str:
    return f"{s * 1000:.3f} ms"


async def main() -> None:
    args = parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="packhost-bench-onetool-"))
    on = packhost_server(args, tmp, "packhost", packhost_config(tmp, "on"))
    off = packhost_server(args, tmp, "packhost-off", packhost_config(tmp, "off"))
    ot = onetool_server(args, tmp)
    servers = [on, off, ot]
    labels = {on.name: "packhost", off.name: 'packhost `sandbox = "off"`', ot.name: "OneTool"}

    seq: dict[str, list[float]] = {s.name: [] for s in servers}
    conc: dict[str, list[float]] = {s.name: [] for s in servers}
    spaced: dict[str, list[float]] = {s.name: [] for s in servers}
    packs: dict[str, list[float]] = {s.name: [] for s in servers}
    starts: dict[str, list[float]] = {"packhost": [], "packhost raw": [], "OneTool": []}
    try:
        for s in servers:
            await s.open()
        # Each phase runs the servers one after the other, in rounds whose
        # order alternates (a share of the calls each time), so a change in
        # the machine's load shows on all of them. Calls to one server are
        # never interleaved with another's: back to back means back to back.
        rounds = args.rounds
        for round_ in range(rounds):
            order = servers if round_ % 2 == 0 else servers[::-1]
            for s in order:
                seq[s.name] += await timed(s.one_plus_one, max(1, args.calls // rounds))
            for s in order:
                conc[s.name].append(await throughput(s, args.workers, max(1, args.per_worker // rounds)))
            for s in order:
                spaced[s.name] += await timed(
                    s.one_plus_one, max(1, args.spaced // rounds), gap=args.gap_ms / 1000
                )
            for s in order:
                packs[s.name] += await timed(s.pack, max(1, args.pack_calls // rounds))
    finally:
        # anyio's cancel scopes inside stdio_client close in reverse order.
        for s in servers[::-1]:
            await s.close()

    # Cold start: packhost with the shipped packs.toml (packs beside the
    # binary, as `./dev run` serves it), OneTool with `onetool init`'s config.
    shipped = packhost_server(args, tmp, "packhost-shipped", REPO / "packs.toml")
    shipped.cwd = str(REPO)
    for i in range(args.starts + 1):  # the first of each warms the page cache
        for s, key in ((shipped, "packhost"), (ot, "OneTool")):
            elapsed = await cold_start(s)
            if i:
                starts[key].append(elapsed)
        raw = raw_cold_start(shipped)
        if i:
            starts["packhost raw"].append(raw)

    # Memory: fresh servers, packhost with the shipped packs.toml again
    # (whose one project is the repository, `packhost`).
    shipped.log = str(tmp / "packhost-shipped-memory.log")
    shipped.pack_check = '"name": "packhost"'
    mem = await memory(args, [shipped, ot])

    o = ot.name
    rows = []
    for s in (on, off):
        rows.append((f"`run` `1+1` back to back p50, {labels[s.name]}", fms(pct(seq[s.name], 0.5)),
                     "≤ 0.3× OneTool" if s is on else "-",
                     f"OneTool: {fms(pct(seq[o], 0.5))}", pct(seq[s.name], 0.5) / pct(seq[o], 0.5)))
    for s in (on, off):
        rows.append((f"`run` `1+1` back to back p99, {labels[s.name]}", fms(pct(seq[s.name], 0.99)), "-",
                     f"OneTool: {fms(pct(seq[o], 0.99))}", pct(seq[s.name], 0.99) / pct(seq[o], 0.99)))
    rows.append((f"`run` `1+1` back to back p99 against its own p50, {labels[on.name]}", fms(pct(seq[on.name], 0.99)),
                 "≤ 2× its p50", f"its p50: {fms(pct(seq[on.name], 0.5))}",
                 pct(seq[on.name], 0.99) / pct(seq[on.name], 0.5)))
    for s in (on, off):
        v, r = statistics.mean(conc[s.name]), statistics.mean(conc[o])
        rows.append((f"`run` `1+1`, {args.workers} concurrent callers on one session, {labels[s.name]}",
                     f"{v:.0f} calls/s", "≥ 2× OneTool" if s is on else "-",
                     f"OneTool: {r:.0f} calls/s", v / r))
    for s in (on, off):
        rows.append((f"`run` `1+1` spaced {args.gap_ms} ms p50, {labels[s.name]}",
                     fms(pct(spaced[s.name], 0.5)), "-",
                     f"OneTool: {fms(pct(spaced[o], 0.5))}", pct(spaced[s.name], 0.5) / pct(spaced[o], 0.5)))
    for s in (on, off):
        rows.append((f"`run` `proj.list()` p50, {labels[s.name]}", fms(pct(packs[s.name], 0.5)), "-",
                     f"OneTool `run` `ot.version()`: {fms(pct(packs[o], 0.5))}",
                     pct(packs[s.name], 0.5) / pct(packs[o], 0.5)))
    ph, otm = statistics.median(starts["packhost"]), statistics.median(starts["OneTool"])
    rows.append(("cold start (spawn→initialize→tools/list), shipped packs.toml, median",
                 fms(ph), "≤ 10 ms", f"OneTool, `onetool init` config: {fms(otm)}", ph / otm))
    raw = statistics.median(starts["packhost raw"])
    rows.append(("same, by a raw JSON-RPC client (no SDK), median", fms(raw), "≤ 10 ms",
                 f"packhost through the `mcp` client: {fms(ph)}", raw / ph))
    p, q = mem[shipped.name], mem[o]
    mib = lambda v: f"{v:.1f} MiB"  # noqa: E731
    rows.append(("RSS of the process tree right after start, shipped packs.toml", mib(p.start),
                 "≤ 40 MiB", f"OneTool: {mib(q.start)}", p.start / q.start))
    rows.append(("RSS of the process tree after one round of the calls above", mib(p.after),
                 "≤ OneTool's", f"OneTool: {mib(q.after)}", p.after / q.after))
    rows.append((f"RSS of the process tree after {args.idle_secs:g} s idle", mib(p.settled),
                 "≤ 1.10× at start", f"packhost at start: {mib(p.start)} (OneTool now: {mib(q.settled)})",
                 p.settled / p.start))
    for when in ("start", "after the calls", "settled"):
        rows.append((f"anonymous memory (RssAnon) of the tree, {when}", mib(p.anonymous[when]), "-",
                     f"OneTool: {mib(q.anonymous[when])}", p.anonymous[when] / q.anonymous[when]))
    # The sandbox's own cost, confined against unconfined packhost.
    for label, d in (("back to back p50", seq), ("spaced p50", spaced)):
        a, b = pct(d[on.name], 0.5), pct(d[off.name], 0.5)
        rows.append((f"`run` `1+1` {label}, confined vs unconfined packhost", fms(a), "-",
                     f'packhost `sandbox = "off"`: {fms(b)}', a / b))

    print(
        f"OneTool benchmark, {args.rounds} rounds: {args.calls} back-to-back calls, "
        f"{args.workers}×{args.rounds * max(1, args.per_worker // args.rounds)} concurrent, {args.spaced} spaced by "
        f"{args.gap_ms} ms, {args.pack_calls} pack calls, {args.starts} cold starts per server; "
        f"mcp client, python {sys.version.split()[0]}"
    )
    print("| metric | value | target | reference (same run) | ratio |")
    print("|---|---|---|---|---|")
    for metric, value, target, reference, ratio in rows:
        print(f"| {metric} | {value} | {target} | {reference} | {ratio:.2f}x |")
    print("\npackhost's process tree (shipped packs.toml), MiB resident per process:")
    for when, processes in p.processes.items():
        each = ", ".join(f"{name} {rss:.1f}" for _, name, rss in processes)
        print(f"- {when}: {each}")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except BenchError as e:
        sys.exit(f"onetool bench FAILED: {e}")
