//! The sandbox (issue 14, part 2) through the real binary over HTTP: with a
//! bearer token of organisation `evil`, model-written code tries everything
//! in [`ATTEMPTS`] in Python (`exec_py.run` and a `run` code block), in
//! TypeScript (`exec_ts.execute`) and in a Jupyter kernel
//! (`jupyter.execute_code`), while organisation `acme` has a call running, a
//! notebook and a kernel of its own. Every attempt must fail or be contained
//! as its row says, nothing secret may appear in any answer, and after each
//! attempt the host still serves `acme` (`proj.list()`, a Python `1 + 1`).
//! The book's "Sandbox attempts and outcomes" table (docs/src/security/attempts.md) is this one.
//!
//! The session-scoping attacks (evil lists, runs in, restarts or closes
//! acme's Jupyter sessions and exec_ts notebooks) are in `tenancy.rs`.
//!
//! Seen to fail without protection: set [`SANDBOX`] to `"off"` locally and
//! every test reports the attempts that escaped (the ones that would kill
//! every process of the machine are skipped and counted as escaped).

use std::{
    io::ErrorKind,
    net::{TcpListener, UdpSocket},
    os::unix::net::UnixListener,
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use packhost_tests::{
    Recorder, downstream::integrations, error_code, http::HttpHost, is_error, structured, text,
    venv_python,
};
use rmcp::{RoleClient, model::CallToolResult, service::RunningService};
use serde_json::{Value, json};
use tempfile::TempDir;

use crate::http::token;

/// `"on"`. Flip to `"off"` locally (never commit it) to see the attempts
/// escape: each test then fails listing them.
const SANDBOX: &str = "on";

type Client = RunningService<RoleClient, Recorder>;

/// Where the code runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lang {
    /// `exec_py.run`.
    Py,
    /// `run` with a Python code block (the issue's one-liners).
    Run,
    /// `exec_ts.execute`, TypeScript.
    Ts,
    /// `jupyter.execute_code` in evil's own kernel.
    Kernel,
}

/// What counts as failed or contained.
#[derive(Clone, Copy, Debug)]
enum Outcome {
    /// The code's attempt raised: `DENIED <code> ...` (an errno name, or
    /// `EXIT` for a program that failed, `SQLITE` for sqlite3), whose
    /// message contains the second string.
    Denied(&'static str, &'static str),
    /// The code ran and found itself confined: `RESULT CONTAINED ...`.
    Contained,
    /// The call ended with `LIMIT_EXCEEDED` naming this bound.
    Limit(&'static str),
    /// The call ended at its time limit (`TIMEOUT`).
    Timeout,
    /// The call was refused before any code ran, with this error code.
    Refused(&'static str),
}

use Outcome::*;

const EACCES: Outcome = Denied("EACCES", "");
const EPERM: Outcome = Denied("EPERM", "");
/// A socket refused by the sandbox (no sockets at all), or a TCP connect or
/// bind refused by it (a Jupyter kernel may make TCP sockets for its
/// own ports).
const NO_NET: &[Outcome] = &[EPERM, EACCES];
/// A link or rename across folders: the sandbox refuses with EXDEV (no `refer`
/// right) or EACCES.
const NO_LINK: &[Outcome] = &[Denied("EXDEV", ""), EACCES];
/// A set-uid or privileged program that failed.
const PROGRAM_REFUSED: Outcome = Denied("EXIT", "");

/// One attempt: a Python function body (`""`: none) and a TypeScript async
/// function body (`""`: none), with `@NAME@` placeholders for what the
/// test knows (paths, ports, pids); any of `ok` counts as contained.
struct Attempt {
    name: &'static str,
    py: &'static str,
    ts: &'static str,
    ok: &'static [Outcome],
}

const fn at(
    name: &'static str,
    py: &'static str,
    ts: &'static str,
    ok: &'static [Outcome],
) -> Attempt {
    Attempt { name, py, ts, ok }
}

/// Rows whose attempt would end every process the host user may signal if
/// it escaped: never run unconfined.
const UNSAFE_UNCONFINED: &[&str] = &["kill(-1, SIGKILL)"];

/// The row whose call passes `cwd` (its code is the same in every language).
const CWD_ROW: &str = "cwd outside the configured roots ($HOME)";

/// The row whose leftover process is looked for after the call.
const SETSID_ROW: &str = "a process left behind with setsid";

#[rustfmt::skip]
const ATTEMPTS: &[Attempt] = &[
    // Reading what is not the code's.
    at("list $HOME", "return os.listdir('@HOME@')", "return fs.readdirSync('@HOME@')", &[EACCES]),
    at("read the host's config (token hashes)", "return open('@CONFIG@').read()", "return fs.readFileSync('@CONFIG@', 'utf8')", &[EACCES]),
    at("sqlite3 on the integrations database (issue: acme's bearer token)", "import sqlite3\ntry:\n    return sqlite3.connect('@DB@').execute('select * from integrations').fetchall()\nexcept sqlite3.Error as e:\n    raise Refused('SQLITE', str(e))", "return sh('sqlite3', '@DB@', 'select * from integrations')", &[Denied("SQLITE", "unable to open database file"), Denied("EXIT", "unable to open database")]),
    at("read the integrations database's bytes", "return open('@DB@', 'rb').read()", "return fs.readFileSync('@DB@')", &[EACCES]),
    at("read /etc/shadow", "return open('/etc/shadow').read()", "return fs.readFileSync('/etc/shadow', 'utf8')", &[EACCES]),
    at("list the other calls' folders", "return os.listdir('@SCRATCH@')", "return fs.readdirSync('@SCRATCH@')", &[EACCES]),
    at("glob for another call's files", "r = glob.glob('@SCRATCH@/**/acme*', recursive=True)\nreturn ('ESCAPED %s' % r) if r else 'CONTAINED nothing found'", "", &[Contained]),
    at("read another call's file by its path", "return open('@CALL_FILE@').read()", "return fs.readFileSync('@CALL_FILE@', 'utf8')", &[EACCES]),
    at("read another session's notebook cell (exec_ts)", "return open('@NOTEBOOK_FILE@').read()", "return fs.readFileSync('@NOTEBOOK_FILE@', 'utf8')", &[EACCES]),
    at("read another session's kernel folder (jupyter)", "return open('@KERNEL_FILE@').read()", "return fs.readFileSync('@KERNEL_FILE@', 'utf8')", &[EACCES]),
    at("read /proc/<host pid>/environ", "return open('/proc/@HOST_PID@/environ').read()", "return fs.readFileSync('/proc/@HOST_PID@/environ', 'utf8')", &[EACCES]),
    at("the host's secret variable is not in the environment", "return 'CONTAINED ' + repr(dict(os.environ))", "return 'CONTAINED ' + JSON.stringify(process.env)", &[Contained]),
    at("list the host's open files /proc/<host pid>/fd", "return os.listdir('/proc/@HOST_PID@/fd')", "return fs.readdirSync('/proc/@HOST_PID@/fd')", &[EACCES]),
    at("read another call's /proc/<pid>/environ", "return open('/proc/@CALL_PID@/environ').read()", "return fs.readFileSync('/proc/@CALL_PID@/environ', 'utf8')", &[EACCES]),
    at("list the machine's processes in /proc", "return [p for p in os.listdir('/proc') if p.isdigit()]", "return fs.readdirSync('/proc').filter((p) => /^\\d+$/.test(p))", &[EACCES]),
    at(CWD_ROW, "return os.listdir('.')", "return fs.readdirSync('.')", &[Refused("ACCESS_DENIED")]),
    // Writing outside the work folder.
    at("write into a folder of the host", "return open('@OUTSIDE@/written', 'w').write('x')", "return fs.writeFileSync('@OUTSIDE@/written', 'x')", &[EACCES]),
    at("write /tmp", "return open('/tmp/escaped-@MARKER@', 'w').write('x')", "return fs.writeFileSync('/tmp/escaped-@MARKER@', 'x')", &[EACCES]),
    at("write /dev/shm", "return open('/dev/shm/escaped-@MARKER@', 'w').write('x')", "return fs.writeFileSync('/dev/shm/escaped-@MARKER@', 'x')", &[EACCES]),
    at("write ../ (beside the work folder)", "return open('../escaped-@MARKER@', 'w').write('x')", "return fs.writeFileSync('../escaped-@MARKER@', 'x')", &[EACCES]),
    at("rename a file to ../", "open('mine', 'w').write('x')\nreturn os.rename('mine', '../escaped-rename-@MARKER@')", "fs.writeFileSync('mine', 'x'); return fs.renameSync('mine', '../escaped-rename-@MARKER@')", NO_LINK),
    at("write through a symlink to outside", "os.symlink('@OUTSIDE@/via-symlink', 'out-link')\nreturn open('out-link', 'w').write('x')", "fs.symlinkSync('@OUTSIDE@/via-symlink', 'out-link'); return fs.writeFileSync('out-link', 'x')", &[EACCES]),
    at("read /etc/shadow through a symlink", "os.symlink('/etc/shadow', 'shadow-link')\nreturn open('shadow-link').read()", "fs.symlinkSync('/etc/shadow', 'shadow-link'); return fs.readFileSync('shadow-link', 'utf8')", &[EACCES]),
    at("hardlink the host's config in and read it", "os.link('@CONFIG@', 'config-link')\nreturn open('config-link').read()", "fs.linkSync('@CONFIG@', 'config-link'); return fs.readFileSync('config-link', 'utf8')", NO_LINK),
    at("hardlink a host file in and write it", "os.link('@VICTIM@', 'victim-link')\nreturn open('victim-link', 'a').write('pwned')", "fs.linkSync('@VICTIM@', 'victim-link'); return fs.appendFileSync('victim-link', 'pwned')", NO_LINK),
    // Network.
    at("TCP to the host's own HTTP port", "return socket.create_connection(('127.0.0.1', @HOST_PORT@), 3)", "return await tcp('127.0.0.1', @HOST_PORT@)", NO_NET),
    at("TCP to PostgreSQL on loopback", "return socket.create_connection(('127.0.0.1', @PG_PORT@), 3)", "return await tcp('127.0.0.1', @PG_PORT@)", NO_NET),
    at("TCP to a non-routable address (10.255.255.1)", "return socket.create_connection(('10.255.255.1', 80), 3)", "return await tcp('10.255.255.1', 80)", NO_NET),
    at("UDP to loopback", "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\nreturn s.sendto(b'x', ('127.0.0.1', @UDP_PORT@))", "const s = dgram.createSocket('udp4'); return await new Promise((ok, no) => { s.on('error', no); s.send('x', @UDP_PORT@, '127.0.0.1', (e) => (e ? no(e) : ok('sent'))); })", &[EPERM]),
    at("a Unix socket of the host", "s = socket.socket(socket.AF_UNIX)\ns.connect('@UNIX@')\nreturn 'connected'", "return await new Promise((ok, no) => { const s = net.connect('@UNIX@'); s.on('connect', () => { s.destroy(); ok('connected'); }); s.on('error', no); })", NO_NET),
    at("listen on a TCP port", "s = socket.socket()\ns.bind(('0.0.0.0', 0))\ns.listen()\nreturn s.getsockname()", "return await new Promise((ok, no) => { const srv = net.createServer(); srv.on('error', no); srv.listen(0, () => { const a = srv.address(); srv.close(); ok(JSON.stringify(a)); }); })", NO_NET),
    at("a netlink socket (routes, interfaces)", "return socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)", "return sh('ip', 'address')", &[EPERM, Denied("ENOTSUP", ""), Denied("EXIT", "Operation not")]),
    // Signals and debugging.
    at("SIGKILL a sibling call (acme's)", "return os.kill(@CALL_PID@, signal.SIGKILL)", "return process.kill(@CALL_PID@, 'SIGKILL')", &[EPERM]),
    at("ptrace-attach a sibling call", "r = sys_call(libc.ptrace(16, @CALL_PID@, 0, 0))\ntime.sleep(0.1)\nlibc.ptrace(17, @CALL_PID@, 0, 0)\nreturn 'attached'", "return sh('timeout', '2', 'strace', '-p', '@CALL_PID@')", &[EPERM, Denied("EXIT", "Operation not permitted")]),
    at("ptrace-attach the host", "r = sys_call(libc.ptrace(16, @HOST_PID@, 0, 0))\ntime.sleep(0.1)\nlibc.ptrace(17, @HOST_PID@, 0, 0)\nreturn 'attached'", "return sh('timeout', '2', 'strace', '-p', '@HOST_PID@')", &[EPERM, Denied("EXIT", "Operation not permitted")]),
    // kill(-1) reports success even when every signal was refused; what
    // counts is that the host, acme's call and acme's kernel live on (checked
    // after every attempt and at the end).
    at("kill(-1, SIGKILL)", "os.kill(-1, signal.SIGKILL)\nreturn 'CONTAINED if the host and acme live on'", "process.kill(-1, 'SIGKILL'); return 'CONTAINED if the host and acme live on'", &[Contained, EPERM, Denied("ESRCH", "")]),
    // Privileges.
    at("unshare(CLONE_NEWUSER)", "return sys_call(libc.unshare(0x10000000))", "return sh('unshare', '--user', 'true')", &[EPERM, Denied("EXIT", "Operation not permitted")]),
    at("io_uring_setup (syscall 425)", "p = ctypes.create_string_buffer(120)\nreturn sys_call(libc.syscall(425, 8, p))", "return sh('perl', '-e', 'my $p = \"\\\\0\" x 120; my $r = syscall(425, 8, $p); die \"$!\\\\n\" if $r < 0; print $r')", &[EPERM, Denied("EXIT", "Operation not permitted")]),
    at("capabilities all zero, no_new_privs set", "s = open('/proc/self/status').read()\ncaps = [l for l in s.splitlines() if l.startswith(('Cap', 'NoNewPrivs'))]\nzero = all(l.split()[1].strip('0') == '' for l in caps if l.startswith('Cap'))\nreturn ('CONTAINED ' if zero and 'NoNewPrivs:\\t1' in s else 'ESCAPED ') + ' '.join(caps)", "const s = fs.readFileSync('/proc/self/status', 'utf8'); const caps = s.split('\\n').filter((l) => /^(Cap|NoNewPrivs)/.test(l)); const zero = caps.filter((l) => l.startsWith('Cap')).every((l) => /^\\w+:\\s*0+$/.test(l)); return (zero && /NoNewPrivs:\\s*1/.test(s) ? 'CONTAINED ' : 'ESCAPED ') + caps.join(' ')", &[Contained]),
    at("set-uid mount of a tmpfs", "os.mkdir('m')\nreturn sh('mount', '-t', 'tmpfs', 'none', 'm')", "fs.mkdirSync('m'); return sh('mount', '-t', 'tmpfs', 'none', 'm')", &[PROGRAM_REFUSED]),
    at("set-uid su to read /etc/shadow", "return sh('su', '-c', 'head -c 64 /etc/shadow', 'root')", "return sh('su', '-c', 'head -c 64 /etc/shadow', 'root')", &[PROGRAM_REFUSED]),
    // Bounds.
    at("fork bomb", "pids = []\ntry:\n    for i in range(300):\n        pid = os.fork()\n        if pid == 0:\n            time.sleep(30)\n            os._exit(0)\n        pids.append(pid)\nfinally:\n    for pid in pids:\n        os.kill(pid, signal.SIGKILL)\n        os.waitpid(pid, 0)\nreturn 'forked %d' % len(pids)", "const kids = []; let failed = null; for (let i = 0; i < 300 && !failed; i++) { const c = cp.spawn('sleep', ['30'], { stdio: 'ignore' }); c.on('error', (e) => { failed = failed ?? e; }); kids.push(c); } await new Promise((r) => setTimeout(r, 300)); for (const c of kids) { try { c.kill('SIGKILL'); } catch {} } if (failed) throw failed; return `spawned ${kids.length}`", &[Denied("EAGAIN", ""), Limit("limits.processes")]),
    at("memory bomb (1 GiB)", "x = b'x' * (1 << 30)\nreturn len(x)", "const b = []; for (let i = 0; i < 16; i++) b.push(Buffer.alloc(64 << 20, 1)); return b.length", &[Limit("limits.memory_mb")]),
    at("a 64 MiB file", "return open('big', 'wb').write(b'x' * (64 << 20))", "return fs.writeFileSync('big', Buffer.alloc(64 << 20, 1))", &[Denied("EFBIG", ""), Limit("limits.file_size_mb")]),
    at("CPU spin", "while True:\n    pass", "for (;;) {}", &[Timeout, Limit("limits.cpu_seconds")]),
    at(SETSID_ROW, "subprocess.Popen(['perl', '-e', 'sleep 300', '@MARKER@-setsid'], start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\nreturn 'CONTAINED started; gone after the call?'", "cp.spawn('perl', ['-e', 'sleep 300', '@MARKER@-setsid'], { detached: true, stdio: 'ignore' }).unref(); return 'CONTAINED started; gone after the call?'", &[Contained]),
    // The issue's one-liner, and the same by pid: last, as unconfined they
    // end the host.
    at("SIGTERM the host by its pid", "return os.kill(@HOST_PID@, signal.SIGTERM)", "return process.kill(@HOST_PID@, 'SIGTERM')", &[EPERM]),
    at("SIGKILL the parent (issue: os.kill(os.getppid(), SIGKILL))", "return os.kill(os.getppid(), signal.SIGKILL)", "return process.kill(process.ppid, 'SIGKILL')", &[EPERM]),
];

/// Around every Python body: errors become `DENIED <errno name> <message>`,
/// a value `RESULT <value>`.
const PY_PRELUDE: &str = "import ctypes, errno, glob, os, signal, socket, subprocess, sys, time
libc = ctypes.CDLL(None, use_errno=True)
class Refused(Exception):
    pass
def sys_call(r):
    if r == -1:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return r
def sh(*args):
    p = subprocess.run(list(args), capture_output=True, text=True, timeout=20)
    if p.returncode != 0:
        raise Refused('EXIT', ('%d %s %s' % (p.returncode, p.stderr, p.stdout)).strip()[:300])
    return 'ran: ' + p.stdout[:300]
def _attempt():
";

const PY_POSTLUDE: &str = "
try:
    _r = _attempt()
    print('RESULT', str(_r)[:400])
except Refused as _e:
    print('DENIED', _e.args[0], _e.args[1])
except OSError as _e:
    print('DENIED', errno.errorcode.get(_e.errno, type(_e).__name__) if _e.errno else type(_e).__name__, str(_e)[:300])
";

/// Around every TypeScript body (an ES module, as exec_ts runs it).
const TS_PRELUDE: &str = "import fs from 'node:fs';
import net from 'node:net';
import dgram from 'node:dgram';
import cp from 'node:child_process';
const refused = (code: string, message: string) => Object.assign(new Error(message), { code });
const tcp = (host: string, port: number) => new Promise((ok, no) => { const s = net.connect({ host, port }); s.setTimeout(3000, () => { s.destroy(); no(refused('ETIMEDOUT', 'timed out')); }); s.on('connect', () => { s.destroy(); ok('connected'); }); s.on('error', no); });
const sh = (cmd: string, ...args: string[]) => { const p = cp.spawnSync(cmd, args, { encoding: 'utf8', timeout: 20000 }); if (p.error) throw p.error; if (p.status !== 0) throw refused('EXIT', `${p.status} ${p.stderr} ${p.stdout}`.trim().slice(0, 300)); return `ran: ${p.stdout.slice(0, 300)}`; };
try {
  const r = await (async () => {
";

const TS_POSTLUDE: &str = "
  })();
  console.log('RESULT', String(r).slice(0, 400));
} catch (e: any) {
  console.log('DENIED', e.code ?? e.name, String(e.message).slice(0, 300));
}
";

fn python(body: &str) -> String {
    let body: String = body.lines().map(|l| format!("    {l}\n")).collect();
    format!("{PY_PRELUDE}{body}{PY_POSTLUDE}")
}

fn typescript(body: &str) -> String {
    format!("{TS_PRELUDE}{body}{TS_POSTLUDE}")
}

/// Acme's work the attempts aim at, and everything that must stay secret.
struct World {
    host: HttpHost,
    acme: Client,
    evil: Client,
    /// `@NAME@` → value.
    vars: Vec<(&'static str, String)>,
    /// Must appear in no answer to evil.
    secrets: Vec<String>,
    marker: String,
    outside: TempDir,
    victim: PathBuf,
    _victim_dir: TempDir,
    /// Stands in for PostgreSQL when no server is configured; nothing may
    /// connect to it.
    tcp: Option<TcpListener>,
    udp: UdpSocket,
    unix: UnixListener,
    _unix_dir: TempDir,
    notebooks: TempDir,
    _books: TempDir,
    /// Acme's slow `exec_py.run`: it waits for `release` in its folder.
    acme_call: tokio::task::JoinHandle<Result<CallToolResult, String>>,
    call_dir: PathBuf,
    call_pid: u32,
    acme_kernel: String,
    kernel_dir: PathBuf,
    /// Evil's own kernel, for [`Lang::Kernel`].
    evil_kernel: Option<String>,
}

fn secret(what: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{what}-{}-{nanos:x}", std::process::id())
}

const LIMITS: &str = "limits = { memory_mb = 256, processes = 64, file_size_mb = 16 }";

fn config(dir: &Path, notebooks: &Path, books: &Path, tokens: &[String]) -> String {
    let python = venv_python();
    let db = dir.join("integrations.db").display().to_string();
    format!(
        "[packs.proj]\n\
         [packs.remote_mcp]\nconfig = {{ database = {db:?} }}\n\
         [packs.exec_py]\ntimeout_ms = 600000\n\
         config = {{ sandbox = {SANDBOX:?}, limits = {{ memory_mb = 256, processes = 64, file_size_mb = 16, cpu_seconds = 5 }} }}\n\
         [packs.exec_ts]\ntimeout_ms = 600000\n\
         config = {{ notebooks_dir = {:?}, pool_size = 1, sandbox = {SANDBOX:?}, {LIMITS} }}\n\
         [packs.jupyter]\ntimeout_ms = 600000\n\
         config = {{ python = {python:?}, sandbox = {SANDBOX:?}, {LIMITS} }}\n\
         [projects]\nbooks = {:?}\n\n{}\n",
        notebooks.display().to_string(),
        books.display().to_string(),
        tokens.join("\n\n"),
    )
}

async fn call(client: &Client, name: &str, args: Value) -> Result<CallToolResult, String> {
    tokio::time::timeout(
        Duration::from_secs(60),
        packhost_tests::call(client, name, args),
    )
    .await
    .map_err(|_| format!("tools/call {name}: no answer within 60 s"))?
    .map_err(|e| format!("tools/call {name}: {e}"))
}

/// `call`, which must succeed; its structured content.
async fn must(client: &Client, name: &str, args: Value) -> Value {
    let result = call(client, name, args).await.unwrap();
    assert!(!is_error(&result), "{name}: {}", text(&result));
    structured(&result)
}

/// Poll `found` every 50 ms for up to `within`.
async fn wait_for<T>(within: Duration, mut found: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + within;
    loop {
        if let Some(value) = found() {
            return Some(value);
        }
        if Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn pids() -> Vec<u32> {
    std::fs::read_dir("/proc")
        .map(|dir| {
            dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Live processes whose command line contains `marker` (zombies excluded).
fn processes_with(marker: &str) -> Vec<u32> {
    pids()
        .into_iter()
        .filter(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            String::from_utf8_lossy(&cmdline).contains(marker) && !zombie(*pid)
        })
        .collect()
}

fn zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |stat| {
        stat.rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z'))
    })
}

fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists() && !zombie(pid)
}

impl World {
    async fn start(evil_kernel: bool) -> Self {
        let dir = TempDir::new().unwrap();
        let (notebooks, books) = (TempDir::new().unwrap(), TempDir::new().unwrap());
        let (acme_token, acme_entry) = token("ada", "acme", &[]);
        let (evil_token, evil_entry) = token("eve", "evil", &[]);
        let token_hash = acme_entry
            .split("sha256 = \"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .expect("a hash in the token entry")
            .to_owned();
        let config_path = dir.path().join("packs.toml");
        std::fs::write(
            &config_path,
            config(
                dir.path(),
                notebooks.path(),
                books.path(),
                &[acme_entry, evil_entry],
            ),
        )
        .unwrap();
        let (env_secret, integration_secret) = (secret("host-env"), secret("integration-token"));
        integrations(
            dir.path(),
            &[
                "add",
                "--org",
                "acme",
                "--name",
                "books",
                "--url",
                "http://127.0.0.1:9/mcp",
                "--bearer-token-env",
                "ACME_INTEGRATION_TOKEN",
            ],
            &[("ACME_INTEGRATION_TOKEN", &integration_secret)],
        );
        let db = dir.path().join("integrations.db");
        let stored: Vec<u8> = ["", "-wal"]
            .iter()
            .flat_map(|end| std::fs::read(format!("{}{end}", db.display())).unwrap_or_default())
            .collect();
        assert!(
            String::from_utf8_lossy(&stored).contains(&integration_secret),
            "the database holds acme's bearer token in clear: what the attempts must not read"
        );
        let home = std::env::var("HOME").unwrap();
        let host = HttpHost::start_in(dir, &[], &[("PACKHOST_TEST_SECRET", &env_secret)]).await;
        let host_pid = host.child.id();
        let host_port = host.base.rsplit(':').next().unwrap().to_owned();
        let acme = host.client(Some(&acme_token)).await.expect("connect");
        let evil = host.client(Some(&evil_token)).await.expect("connect");
        let outside = TempDir::new().unwrap();
        let victim_dir = TempDir::new().unwrap();
        let victim = victim_dir.path().join("victim.txt");
        std::fs::write(&victim, "victim-original").unwrap();
        let (tcp, pg_port) = match std::env::var("PACKHOST_TEST_POSTGRES_URL") {
            Ok(url) => {
                let port = url
                    .rsplit_once('@')
                    .map_or(url.as_str(), |(_, host)| host)
                    .split(['/', '?'])
                    .next()
                    .and_then(|host| host.rsplit_once(':'))
                    .map_or("5432".to_owned(), |(_, port)| port.to_owned());
                (None, port)
            }
            Err(_) => {
                let listener = TcpListener::bind("127.0.0.1:0").unwrap();
                listener.set_nonblocking(true).unwrap();
                let port = listener.local_addr().unwrap().port().to_string();
                (Some(listener), port)
            }
        };
        let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
        udp.set_nonblocking(true).unwrap();
        let unix_dir = TempDir::new().unwrap();
        let unix_path = unix_dir.path().join("host.sock");
        let unix = UnixListener::bind(&unix_path).unwrap();
        unix.set_nonblocking(true).unwrap();

        // Acme's call: writes a secret in its own folder, waits for the
        // test to release it.
        let call_secret = secret("acme-call");
        let code = format!(
            "import os, time\nopen('acme-call-secret.txt', 'w').write({call_secret:?})\n\
             while not os.path.exists('release'):\n    time.sleep(0.05)\n'acme-call-done'"
        );
        let slow = host.client(Some(&acme_token)).await.expect("connect");
        let acme_call = tokio::spawn(async move {
            call(
                &slow,
                "exec_py.run",
                json!({"code": code, "timeout_ms": 600000}),
            )
            .await
        });
        let scratch = PathBuf::from("/tmp/packhost-exec-py");
        let call_file = wait_for(Duration::from_secs(60), || {
            find_name_containing(&scratch, "acme-call-secret.txt", 3)
                .into_iter()
                .find(|file| std::fs::read_to_string(file).is_ok_and(|s| s == call_secret))
        })
        .await
        .expect("acme's call wrote its secret");
        let call_dir = call_file.parent().unwrap().to_path_buf();
        let call_pid = pids()
            .into_iter()
            .find(|pid| {
                std::fs::read_link(format!("/proc/{pid}/cwd")).ok() == Some(call_dir.clone())
            })
            .expect("acme's interpreter works in its folder");

        // Acme's notebook: a cell holding a secret.
        let notebook_secret = secret("acme-notebook");
        let session = must(&acme, "exec_ts.session_create", json!({})).await;
        let session = session["sessionId"].as_str().unwrap().to_owned();
        must(
            &acme,
            "exec_ts.cell_create",
            json!({"sessionId": session, "filename": "books.ts",
                   "source": format!("console.log({notebook_secret:?})")}),
        )
        .await;
        let notebook_file = find_file_containing(notebooks.path(), &notebook_secret)
            .expect("acme's cell is on disk");

        // Acme's kernel: a file holding a secret in its folder.
        let kernel_secret = secret("acme-kernel");
        let created = must(&acme, "jupyter.session_create", json!({})).await;
        let acme_kernel = created["session_id"].as_str().unwrap().to_owned();
        let out = must(
            &acme,
            "jupyter.execute_code",
            json!({"session_id": acme_kernel, "code": format!(
                "import os\nopen('acme-kernel-secret.txt', 'w').write({kernel_secret:?})\nos.getcwd()")}),
        )
        .await;
        let kernel_dir = PathBuf::from(out["result"].as_str().unwrap().trim_matches('\''));
        let kernel_file = kernel_dir.join("acme-kernel-secret.txt");
        assert_eq!(
            std::fs::read_to_string(&kernel_file).unwrap(),
            kernel_secret
        );
        let evil_kernel = match evil_kernel {
            true => Some(new_kernel(&evil).await),
            false => None,
        };

        let shadow = std::fs::read_to_string("/etc/shadow").unwrap_or_default();
        let mut secrets = vec![
            env_secret,
            integration_secret,
            token_hash,
            call_secret,
            notebook_secret,
            kernel_secret,
        ];
        secrets.extend(shadow.lines().next().map(str::to_owned));
        let marker = secret("sandbox-marker");
        let vars = vec![
            ("@HOME@", home),
            ("@CONFIG@", config_path.display().to_string()),
            ("@DB@", db.display().to_string()),
            ("@SCRATCH@", scratch.display().to_string()),
            ("@CALL_FILE@", call_file.display().to_string()),
            ("@CALL_PID@", call_pid.to_string()),
            ("@NOTEBOOK_FILE@", notebook_file.display().to_string()),
            ("@KERNEL_FILE@", kernel_file.display().to_string()),
            ("@HOST_PID@", host_pid.to_string()),
            ("@HOST_PORT@", host_port),
            ("@PG_PORT@", pg_port),
            ("@UDP_PORT@", udp.local_addr().unwrap().port().to_string()),
            ("@UNIX@", unix_path.display().to_string()),
            ("@OUTSIDE@", outside.path().display().to_string()),
            ("@VICTIM@", victim.display().to_string()),
            ("@MARKER@", marker.clone()),
        ];
        Self {
            host,
            acme,
            evil,
            vars,
            secrets,
            marker,
            outside,
            victim,
            _victim_dir: victim_dir,
            tcp,
            udp,
            unix,
            _unix_dir: unix_dir,
            notebooks,
            _books: books,
            acme_call,
            call_dir,
            call_pid,
            acme_kernel,
            kernel_dir,
            evil_kernel,
        }
    }

    fn fill(&self, code: &str) -> String {
        self.vars
            .iter()
            .fold(code.to_owned(), |code, (name, value)| {
                code.replace(name, value)
            })
    }

    /// Run `attempt` in `lang` as evil; `None` when it has no code there.
    async fn attempt(
        &self,
        lang: Lang,
        attempt: &Attempt,
    ) -> Option<Result<CallToolResult, String>> {
        let spin = attempt.ok.iter().any(|o| matches!(o, Timeout));
        let ms = if spin { 2000 } else { 30000 };
        let cwd = (attempt.name == CWD_ROW).then(|| self.fill("@HOME@"));
        let (function, args) = match lang {
            Lang::Py | Lang::Run | Lang::Kernel if attempt.py.is_empty() => return None,
            Lang::Ts if attempt.ts.is_empty() => return None,
            Lang::Run | Lang::Kernel if cwd.is_some() => return None,
            Lang::Py => {
                let mut args = json!({"code": python(&self.fill(attempt.py)), "timeout_ms": ms});
                if let Some(cwd) = cwd {
                    args["cwd"] = json!(cwd);
                }
                ("exec_py.run", args)
            }
            Lang::Run => (
                "run",
                json!({"command": format!("```python\n{}\n```", python(&self.fill(attempt.py)))}),
            ),
            Lang::Ts => {
                let mut args = json!({"code": typescript(&self.fill(attempt.ts)),
                                      "language": "typescript", "timeout": ms});
                if let Some(cwd) = cwd {
                    args["cwd"] = json!(cwd);
                }
                ("exec_ts.execute", args)
            }
            Lang::Kernel => (
                "jupyter.execute_code",
                json!({"session_id": self.evil_kernel.as_deref().expect("evil's kernel"),
                       "code": python(&self.fill(attempt.py)), "timeout": ms as f64 / 1000.0}),
            ),
        };
        Some(call(&self.evil, function, args).await)
    }

    /// Whether the answer shows the attempt contained as its row says, and
    /// nothing secret.
    fn judge(&self, attempt: &Attempt, result: &CallToolResult) -> Result<String, String> {
        let everything = format!("{} {}", text(result), structured(result));
        if let Some(secret) = self
            .secrets
            .iter()
            .find(|s| everything.contains(s.as_str()))
        {
            return Err(format!("LEAKED `{secret}`: {everything}"));
        }
        let stdout = structured(result)["stdout"]
            .as_str()
            .map_or_else(|| text(result), str::to_owned);
        let line = stdout
            .lines()
            .find(|l| l.starts_with("RESULT ") || l.starts_with("DENIED "))
            .unwrap_or_default()
            .to_owned();
        let code = if is_error(result) {
            error_code(result)
        } else {
            String::new()
        };
        let matched = attempt.ok.iter().find(|outcome| match outcome {
            Denied(errno, part) => {
                line.starts_with(&format!("DENIED {errno} ")) && line.contains(part)
            }
            Contained => line.starts_with("RESULT CONTAINED"),
            Limit(key) => code == "LIMIT_EXCEEDED" && text(result).contains(key),
            Timeout => code == "TIMEOUT",
            Refused(expected) => code == *expected,
        });
        match matched {
            Some(_) if !line.is_empty() => Ok(line),
            Some(_) => Ok(format!(
                "{code}: {}",
                text(result).lines().next().unwrap_or_default()
            )),
            None => Err(format!(
                "not contained as expected ({:?}): error code {code:?}, line {line:?}; {}",
                attempt.ok,
                everything.chars().take(1500).collect::<String>()
            )),
        }
    }

    /// The host still serves acme: `proj.list()` and a Python `1 + 1`.
    async fn acme_served(&self) -> Result<(), String> {
        if !alive(self.host.child.id()) {
            return Err("the host is gone".into());
        }
        if !alive(self.call_pid) {
            return Err("acme's running call is gone".into());
        }
        let listed = call(&self.acme, "proj.list", json!({})).await?;
        if is_error(&listed) || !structured(&listed).to_string().contains("books") {
            return Err(format!("proj.list: {}", text(&listed)));
        }
        let sum = call(&self.acme, "run", json!({"command": "1 + 1"})).await?;
        if structured(&sum)["result"] != 2 {
            return Err(format!("1 + 1: {}", text(&sum)));
        }
        Ok(())
    }

    /// Every attempt of [`ATTEMPTS`] in each of `langs`; the lines of a
    /// report, and the failures.
    async fn run_all(&mut self, langs: &[Lang]) -> (Vec<String>, Vec<String>) {
        let (mut report, mut failures) = (Vec::new(), Vec::new());
        for attempt in ATTEMPTS {
            for &lang in langs {
                let label = format!("{lang:?}: {}", attempt.name);
                if SANDBOX == "off" && UNSAFE_UNCONFINED.contains(&attempt.name) {
                    failures.push(format!("{label}: not run unconfined (it would kill every process); counted as escaped"));
                    continue;
                }
                let Some(result) = self.attempt(lang, attempt).await else {
                    continue;
                };
                let verdict = result.and_then(|result| self.judge(attempt, &result));
                let verdict = match verdict {
                    Ok(line) if attempt.name == SETSID_ROW => {
                        self.setsid_gone(lang).await.map(|()| line)
                    }
                    other => other,
                };
                match &verdict {
                    Ok(line) => report.push(format!("{label}: {line}")),
                    Err(why) => failures.push(format!("{label}: {why}")),
                }
                eprintln!("{label}: {verdict:?}");
                if let Err(why) = self.acme_served().await {
                    failures.push(format!("{label}: afterwards acme is not served: {why}"));
                }
                if lang == Lang::Kernel {
                    self.kernel_ready().await;
                }
            }
        }
        (report, failures)
    }

    /// The process left behind is gone within 5 s of the call (for a
    /// kernel: of closing its session, since a kernel's processes live
    /// with it). Killed here if not, so nothing outlives the test.
    async fn setsid_gone(&mut self, lang: Lang) -> Result<(), String> {
        let marker = format!("{}-setsid", self.marker);
        if lang == Lang::Kernel {
            let session = self.evil_kernel.take().unwrap();
            let _ = call(
                &self.evil,
                "jupyter.session_close",
                json!({"session_id": session}),
            )
            .await;
            self.evil_kernel = Some(new_kernel(&self.evil).await);
        }
        let gone = wait_for(Duration::from_secs(5), || {
            processes_with(&marker).is_empty().then_some(())
        })
        .await;
        let left = processes_with(&marker);
        for pid in &left {
            // SAFETY: killing a process this test's attempt started.
            unsafe { libc::kill(*pid as libc::pid_t, libc::SIGKILL) };
        }
        gone.ok_or_else(|| format!("ESCAPED: processes {left:?} outlived the call"))
    }

    /// Evil's kernel answers, or is replaced (a bound may have ended it).
    async fn kernel_ready(&mut self) {
        let session = self.evil_kernel.clone().unwrap();
        let answer = call(
            &self.evil,
            "jupyter.execute_code",
            json!({"session_id": session, "code": "1 + 1"}),
        )
        .await;
        if answer.is_ok_and(|a| structured(&a)["result"] == "2") {
            return;
        }
        let _ = call(
            &self.evil,
            "jupyter.session_close",
            json!({"session_id": session}),
        )
        .await;
        self.evil_kernel = Some(new_kernel(&self.evil).await);
    }

    /// What the attempts could have left behind: none of it may be there.
    async fn aftermath(self) -> Vec<String> {
        let mut failures = Vec::new();
        let written: Vec<_> = std::fs::read_dir(self.outside.path())
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.file_name()))
            .collect();
        if !written.is_empty() {
            failures.push(format!("written outside the work folder: {written:?}"));
        }
        let victim = std::fs::read_to_string(&self.victim).unwrap_or_default();
        if victim != "victim-original" {
            failures.push(format!("the hardlinked host file was changed: {victim:?}"));
        }
        let mut roots = vec![
            PathBuf::from("/tmp"),
            PathBuf::from("/dev/shm"),
            self.notebooks.path().to_path_buf(),
        ];
        roots.extend(self.kernel_dir.parent().map(Path::to_path_buf));
        roots.extend(self.call_dir.parent().map(Path::to_path_buf));
        for root in roots {
            let escaped = find_name_containing(&root, &self.marker, 3);
            if !escaped.is_empty() {
                failures.push(format!("files written outside: {escaped:?}"));
            }
        }
        if let Some(tcp) = &self.tcp
            && !matches!(tcp.accept(), Err(e) if e.kind() == ErrorKind::WouldBlock)
        {
            failures.push("a connection reached the PostgreSQL port".into());
        }
        if !matches!(self.udp.recv(&mut [0; 16]), Err(e) if e.kind() == ErrorKind::WouldBlock) {
            failures.push("a datagram reached the test's UDP socket".into());
        }
        if !matches!(self.unix.accept(), Err(e) if e.kind() == ErrorKind::WouldBlock) {
            failures.push("a connection reached the host's Unix socket".into());
        }
        // Acme's call ran through it all, untouched.
        if alive(self.call_pid) {
            std::fs::write(self.call_dir.join("release"), "").unwrap();
        }
        match tokio::time::timeout(Duration::from_secs(30), self.acme_call).await {
            Ok(Ok(Ok(result))) if structured(&result)["result"] == "acme-call-done" => {}
            other => failures.push(format!("acme's call was disturbed: {other:?}")),
        }
        match call(
            &self.acme,
            "jupyter.execute_code",
            json!({"session_id": self.acme_kernel, "code": "6 * 7"}),
        )
        .await
        {
            Ok(out) if structured(&out)["result"] == "42" => {}
            other => failures.push(format!("acme's kernel was disturbed: {other:?}")),
        }
        if let Some(session) = &self.evil_kernel {
            let _ = call(
                &self.evil,
                "jupyter.session_close",
                json!({"session_id": session}),
            )
            .await;
        }
        failures
    }
}

async fn new_kernel(client: &Client) -> String {
    let created = must(client, "jupyter.session_create", json!({})).await;
    created["session_id"].as_str().unwrap().to_owned()
}

fn find_file_containing(root: &Path, needle: &str) -> Option<PathBuf> {
    for entry in std::fs::read_dir(root).ok()?.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if let Some(found) = find_file_containing(&path, needle) {
                return Some(found);
            }
        } else if std::fs::read_to_string(&path).is_ok_and(|s| s.contains(needle)) {
            return Some(path);
        }
    }
    None
}

fn find_name_containing(root: &Path, needle: &str, depth: usize) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(root) else {
        return found;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if entry.file_name().to_string_lossy().contains(needle) {
            found.push(path.clone());
        }
        if depth > 1 && entry.file_type().is_ok_and(|t| t.is_dir()) {
            found.extend(find_name_containing(&path, needle, depth - 1));
        }
    }
    found
}

async fn every_attempt_is_contained(langs: &[Lang]) {
    let mut world = World::start(langs.contains(&Lang::Kernel)).await;
    let (report, mut failures) = world.run_all(langs).await;
    failures.extend(world.aftermath().await);
    assert!(
        failures.is_empty(),
        "{} of {} attempts not contained (sandbox {SANDBOX}):\n  {}",
        failures.len(),
        failures.len() + report.len(),
        failures.join("\n  ")
    );
}

#[tokio::test]
async fn sandbox_python_attempts_are_contained() {
    every_attempt_is_contained(&[Lang::Py, Lang::Run]).await;
}

#[tokio::test]
async fn sandbox_typescript_attempts_are_contained() {
    every_attempt_is_contained(&[Lang::Ts]).await;
}

#[tokio::test]
async fn sandbox_jupyter_kernel_attempts_are_contained() {
    every_attempt_is_contained(&[Lang::Kernel]).await;
}

/// The table has the attempts issue 14 asks for, in every language, and at
/// least 40 of them.
#[test]
fn sandbox_table_covers_the_issue() {
    assert!(ATTEMPTS.len() >= 40, "{} attempts", ATTEMPTS.len());
    let names: Vec<_> = ATTEMPTS.iter().map(|a| a.name).collect();
    let mut unique = names.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), names.len(), "attempt names are unique");
    let in_ts = ATTEMPTS.iter().filter(|a| !a.ts.is_empty()).count();
    assert!(in_ts >= 40, "{in_ts} attempts in TypeScript");
}
