//! A real `jupyter server` on loopback with a token, for the jupyter pack's
//! server backend (tests and benchmark).

use std::{
    net::TcpListener,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

/// A `jupyter server` in its own process group; stopped (kernels and all)
/// on drop.
pub struct JupyterServer {
    child: Child,
    /// `http://127.0.0.1:<port>`.
    pub url: String,
    /// The token clients must send.
    pub token: String,
    root: tempfile::TempDir,
}

impl JupyterServer {
    /// Start it with `python` (which has jupyter_server) and wait until
    /// `/api/status` answers; `Err` carries the server's log.
    pub fn start(python: &str) -> Result<Self, String> {
        let root = tempfile::TempDir::new().map_err(|e| e.to_string())?;
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| e.to_string())?
            .port();
        let token = format!("t{}", std::process::id());
        let log =
            std::fs::File::create(root.path().join("server.log")).map_err(|e| e.to_string())?;
        let mut command = Command::new(python);
        command
            .args([
                "-m",
                "jupyter_server",
                "--no-browser",
                "--ServerApp.ip=127.0.0.1",
            ])
            .arg(format!("--ServerApp.port={port}"))
            .args(["--ServerApp.port_retries=0", "--allow-root"])
            // The server's default output rate limit (1 MB/s) drops output;
            // large outputs must arrive complete.
            .args([
                "--ServerApp.iopub_data_rate_limit=1e12",
                "--ServerApp.iopub_msg_rate_limit=1e9",
            ])
            .arg(format!("--IdentityProvider.token={token}"))
            .arg(format!("--ServerApp.root_dir={}", root.path().display()))
            .env("JUPYTER_CONFIG_DIR", root.path().join("config"))
            .env("JUPYTER_DATA_DIR", root.path().join("data"))
            .env("JUPYTER_RUNTIME_DIR", root.path().join("runtime"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log);
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let mut server = Self {
            child: command
                .spawn()
                .map_err(|e| format!("cannot start jupyter server: {e}"))?,
            url: format!("http://127.0.0.1:{port}"),
            token,
            root,
        };
        let started = Instant::now();
        while !server.answers(port) {
            if let Ok(Some(status)) = server.child.try_wait() {
                return Err(format!(
                    "jupyter server exited ({status}):\n{}",
                    server.log()
                ));
            }
            if started.elapsed() > Duration::from_secs(60) {
                return Err(format!(
                    "jupyter server did not answer within 60 s:\n{}",
                    server.log()
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(server)
    }

    fn answers(&self, port: u16) -> bool {
        get(port, &self.token, "/api/status")
            .is_some_and(|answer| answer.starts_with("HTTP/1.1 200"))
    }

    /// The kernels running on the server (`GET /api/kernels`).
    pub fn kernels(&self) -> serde_json::Value {
        kernels(&self.url, &self.token)
    }

    /// What the server logged.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.root.path().join("server.log")).unwrap_or_default()
    }
}

impl Drop for JupyterServer {
    fn drop(&mut self) {
        let pgid = self.child.id() as i32;
        // SIGTERM first: the server shuts its kernels down; then the group.
        // SAFETY: signalling the process group started above.
        unsafe { libc::killpg(pgid, libc::SIGTERM) };
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(5) {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        // SAFETY: as above.
        unsafe { libc::killpg(pgid, libc::SIGKILL) };
        let _ = self.child.wait();
    }
}

/// The kernels running on the Jupyter Server at `url`
/// (`http://127.0.0.1:<port>`) with `token`.
pub fn kernels(url: &str, token: &str) -> serde_json::Value {
    let port = url.rsplit(':').next().and_then(|p| p.parse().ok());
    let answer = get(port.expect("a port"), token, "/api/kernels").expect("the server answers");
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, body)| body);
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {answer}"))
}

/// The whole HTTP answer to `GET path` on loopback `port`, with `token`.
fn get(port: u16, token: &str, path: &str) -> Option<String> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: token {token}\r\nConnection: close\r\n\r\n"
    );
    let mut answer = String::new();
    stream.write_all(request.as_bytes()).ok()?;
    stream.read_to_string(&mut answer).ok()?;
    Some(answer)
}
