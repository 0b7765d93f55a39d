//! Downstream MCP servers for the `remote_mcp` and server-pack tests: the
//! third-party `@modelcontextprotocol/server-everything` (installed by
//! `./dev test`) and the in-repo `packhost-fixture-mcp`, over stdio or HTTP.

use std::{
    io::{BufRead as _, BufReader},
    path::PathBuf,
    process::{Child, Command, Output, Stdio},
    time::Duration,
};

use crate::{build_dir, packhost_command};

/// `node <entry>` of server-everything; `./dev test` exports the entry.
pub fn everything_entry() -> String {
    std::env::var("PACKHOST_TEST_EVERYTHING").unwrap_or_else(|_| {
        panic!(
            "PACKHOST_TEST_EVERYTHING is not set: run the tests with `./dev test`, which \
             installs @modelcontextprotocol/server-everything"
        )
    })
}

/// The stdio command of server-everything.
pub fn everything_stdio() -> Vec<String> {
    vec!["node".into(), everything_entry(), "stdio".into()]
}

/// The in-repo fixture server, built beside the tests.
pub fn fixture_mcp_bin() -> PathBuf {
    build_dir().join("packhost-fixture-mcp")
}

/// The 16 services of tests/fixtures/catalog-200.json, whose tools are
/// named `<service>_...`.
pub const CATALOG_SERVICES: [&str; 16] = [
    "calendar",
    "circleci",
    "cloudflare",
    "confluence",
    "datadog",
    "github",
    "gmail",
    "hubspot",
    "jira",
    "pagerduty",
    "postgres",
    "registry",
    "s3",
    "sentry",
    "slack",
    "stripe",
];

/// A `[packs.<name>]` server pack serving the 245 tools of
/// tests/fixtures/catalog-200.json (`packhost-fixture-catalog`), or only
/// those of one `service`.
pub fn catalog_section(name: &str, service: Option<&str>) -> String {
    let command: Vec<String> = [
        build_dir()
            .join("packhost-fixture-catalog")
            .display()
            .to_string(),
        concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/catalog-200.json").to_owned(),
    ]
    .into_iter()
    .chain(service.map(str::to_owned))
    .collect();
    format!("[packs.{name}]\nkind = \"mcp\"\ncommand = {command:?}\n")
}

/// A downstream server over streamable HTTP on a loopback port, in its own
/// process group (killed on drop).
pub struct HttpServer {
    child: Child,
    /// `http://127.0.0.1:<port>/mcp`.
    pub url: String,
    /// The port.
    pub port: u16,
}

impl HttpServer {
    /// server-everything's streamable HTTP transport on a free port.
    pub fn everything() -> Self {
        let port = free_port();
        let mut command = Command::new("node");
        command
            .args([everything_entry().as_str(), "streamableHttp"])
            .env("PORT", port.to_string());
        Self::spawn(command, port, "listening on port")
    }

    /// The fixture server on `port` (0: a free one).
    pub fn fixture(port: u16) -> Self {
        let port = if port == 0 { free_port() } else { port };
        let mut command = Command::new(fixture_mcp_bin());
        command.args(["--http", &format!("127.0.0.1:{port}")]);
        Self::spawn(command, port, "listening on")
    }

    fn spawn(mut command: Command, port: u16, ready: &str) -> Self {
        use std::os::unix::process::CommandExt as _;
        let mut child = command
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the downstream server");
        // Both streams are read to the end (on threads) so the server never
        // blocks on a full pipe; the first line saying `ready` releases us.
        let (sender, ready_lines) = std::sync::mpsc::channel();
        for stream in [
            Box::new(child.stdout.take().expect("stdout")) as Box<dyn std::io::Read + Send>,
            Box::new(child.stderr.take().expect("stderr")),
        ] {
            let sender = sender.clone();
            let ready = ready.to_owned();
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines().map_while(Result::ok) {
                    if line.contains(&ready) {
                        let _ = sender.send(());
                    }
                }
            });
        }
        ready_lines
            .recv_timeout(Duration::from_secs(30))
            .expect("the downstream server did not say it listens within 30 s");
        Self {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
            port,
        }
    }

    /// Kill its whole group now.
    pub fn kill(&mut self) {
        // SAFETY: signalling our own child's process group.
        unsafe {
            libc::killpg(self.child.id() as libc::pid_t, libc::SIGKILL);
        }
        let _ = self.child.wait();
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A port nobody listens on right now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// `packhost integrations <args>` in `dir` (which holds `packs.toml`), with
/// extra environment variables; panics unless it succeeds.
pub fn integrations(dir: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> String {
    let output = integrations_output(dir, args, env);
    assert!(
        output.status.success(),
        "packhost integrations {args:?} failed:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

/// `packhost integrations <args>`, whatever the outcome.
pub fn integrations_output(dir: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    packhost_command(dir)
        .arg("integrations")
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("run packhost integrations")
}

/// A fresh PostgreSQL database on the server `./dev test` started
/// (`PACKHOST_TEST_POSTGRES_URL`), as a URL. Without the server: a loud
/// skip locally (`None`), a failure in CI.
pub fn postgres_database() -> Option<String> {
    let Ok(server) = std::env::var("PACKHOST_TEST_POSTGRES_URL") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "PACKHOST_TEST_POSTGRES_URL is not set in CI: `./dev test` starts PostgreSQL"
        );
        eprintln!(
            "\n!!! SKIPPED: no PostgreSQL (PACKHOST_TEST_POSTGRES_URL unset); run `./dev test` !!!\n"
        );
        return None;
    };
    let name = format!("e2e_{}_{:x}", std::process::id(), rand_suffix());
    let output = Command::new("psql")
        .args([server.as_str(), "-v", "ON_ERROR_STOP=1", "-c"])
        .arg(format!("CREATE DATABASE {name}"))
        .output()
        .expect("run psql");
    assert!(
        output.status.success(),
        "CREATE DATABASE failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let base = server.rsplit_once('/').map_or(server.as_str(), |(b, _)| b);
    Some(format!("{base}/{name}"))
}

/// Random enough for a database name: std's per-process hash keys.
fn rand_suffix() -> u64 {
    use std::hash::{BuildHasher as _, Hasher as _};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u8(0);
    hasher.finish()
}
