//! Three packhost instances behind a real HAProxy, started by
//! `deploy/local` as a team would start them, sharing one PostgreSQL
//! database.

use std::{
    io::{BufRead as _, BufReader},
    os::unix::process::CommandExt as _,
    path::Path,
    process::{Child, Command, Stdio},
};

use rmcp::{RoleClient, service::RunningService};
use tempfile::TempDir;

use crate::{Recorder, http::client_at, packhost_bin};

/// The instances and the proxy, stopped together when dropped.
pub struct Instances {
    script: Child,
    /// The PostgreSQL database they share.
    database: String,
    /// HAProxy's MCP endpoint.
    pub url: String,
    /// Holds `packs.toml`, each instance's log and pid.
    pub dir: TempDir,
}

/// Whether `haproxy` can be run: a loud skip locally, a failure in CI
/// (where `./dev test` installs it).
pub fn haproxy_installed() -> bool {
    let found = Command::new("haproxy").arg("-v").output().is_ok();
    if !found {
        assert!(
            std::env::var_os("CI").is_none(),
            "haproxy is not installed in CI: `./dev test` installs it"
        );
        eprintln!("\n!!! SKIPPED: no haproxy on PATH; run `./dev test` !!!\n");
    }
    found
}

impl Instances {
    /// Three instances on `config`, their state in PostgreSQL `database`,
    /// behind HAProxy on a free port; returns once all answer through it.
    pub fn start(config: &str, database: &str) -> Self {
        Self::start_n(config, database, 3)
    }

    /// [`Self::start`] with `count` of the three (1 to 3).
    pub fn start_n(config: &str, database: &str, count: usize) -> Self {
        Self::launch(Some(config), database, count, None)
    }

    /// [`Self::start`] with a Jupyter Server beside them, which `deploy/local
    /// --jupyter-server` starts with `python` (which has jupyter_server).
    pub fn start_with_jupyter(config: &str, database: &str, python: &str) -> Self {
        Self::launch(Some(config), database, 3, Some(python))
    }

    /// The recipe as the README starts it: `deploy/packs.toml`, a Jupyter
    /// Server started with `python`.
    pub fn start_recipe(database: &str, python: &str) -> Self {
        Self::launch(None, database, 3, Some(python))
    }

    /// The kernels running on the Jupyter Server `deploy/local` started.
    pub fn jupyter_kernels(&self) -> serde_json::Value {
        let written = std::fs::read_to_string(self.dir.path().join("jupyter-server"))
            .expect("deploy/local wrote where its Jupyter Server is");
        let (url, token) = written.trim().split_once(' ').expect("URL and token");
        crate::jupyter::kernels(url, token)
    }

    fn launch(config: Option<&str>, database: &str, count: usize, jupyter: Option<&str>) -> Self {
        let dir = TempDir::new().expect("temp dir");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/local");
        let mut command = Command::new(script);
        if let Some(config) = config {
            let file = dir.path().join("packs.toml");
            std::fs::write(&file, config).expect("write config");
            command.args(["--config", file.to_str().unwrap()]);
        }
        command
            .args(["--port", &port.to_string()])
            .args(["--dir", dir.path().to_str().unwrap()])
            .args(["--instances", &count.to_string()])
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", std::env::var_os("HOME").unwrap_or_default())
            .env("PACKHOST", packhost_bin())
            .env("LANG", std::env::var_os("LANG").unwrap_or_default())
            .env("PACKHOST_STATE__DATABASE", database)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            // Its own group, so that all it started stop with it.
            .process_group(0);
        if let Some(python) = jupyter {
            command
                .arg("--jupyter-server")
                .env("JUPYTER_PYTHON", python);
        }
        let mut script = command.spawn().expect("run deploy/local");
        let stdout = script.stdout.take().expect("piped");
        let ready = BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .find_map(|line| line.strip_prefix("ready: ").map(str::to_owned));
        let Some(url) = ready else {
            panic!("deploy/local did not get ready (its errors are above)");
        };
        let database = database.to_owned();
        Self {
            script,
            database,
            url,
            dir,
        }
    }

    /// An MCP client through the proxy.
    pub async fn client(
        &self,
        token: Option<&str>,
    ) -> Result<RunningService<RoleClient, Recorder>, String> {
        client_at(&self.url, token).await
    }

    /// SIGKILL instance `n` (1 to 3): no drain, as a crash.
    pub fn kill(&self, n: usize) {
        // SAFETY: plain kill(2) on a pid this test's script started.
        unsafe { libc::kill(self.pid(n) as i32, libc::SIGKILL) };
    }

    /// Instance `n`'s own MCP endpoint, past the proxy.
    pub fn instance_url(&self, n: usize) -> String {
        let log = self.log(n);
        let at = log
            .split("serving MCP at ")
            .nth(1)
            .expect("the instance said where");
        at.split_whitespace().next().unwrap_or_default().to_owned()
    }

    /// The audit events `packhost audit args` prints of a trail kept in
    /// the shared database.
    pub fn audit_events(&self, args: &[&str]) -> Vec<serde_json::Value> {
        let output = crate::packhost_command(self.dir.path())
            .args(["audit", "--database", &self.database, "--limit", "10000"])
            .args(args)
            .output()
            .expect("run packhost audit");
        assert!(
            output.status.success(),
            "packhost audit {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let text = String::from_utf8_lossy(&output.stdout);
        let lines = text.lines().map(serde_json::from_str);
        lines.collect::<Result<_, _>>().expect("JSON lines")
    }

    /// Instance `n`'s process id.
    pub fn pid(&self, n: usize) -> u32 {
        let pid = std::fs::read_to_string(self.dir.path().join(format!("instance-{n}.pid")))
            .expect("the instance's pid file");
        pid.trim().parse().expect("a pid")
    }

    /// What instance `n` logged.
    pub fn log(&self, n: usize) -> String {
        let log = self.dir.path().join(format!("instance-{n}.log"));
        std::fs::read_to_string(log).unwrap_or_default()
    }
}

impl Drop for Instances {
    fn drop(&mut self) {
        // SAFETY: plain killpg(2) on the group the script leads.
        unsafe { libc::killpg(self.script.id() as i32, libc::SIGTERM) };
        let _ = self.script.wait();
    }
}
