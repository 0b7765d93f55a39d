//! The `server` backend: kernels on a Jupyter Server (or Enterprise Gateway)
//! through its REST API (`/api/kernels`, `/api/sessions`) and the kernel's
//! websocket (`/api/kernels/{id}/channels`).

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use futures::{SinkExt as _, StreamExt as _};
use jupyter_protocol::Channel;
use jupyter_websocket_client::RemoteServer;
use pack_sdk::{PackError, codes};
use serde_json::{Value, json};

use crate::{
    conn::Conn,
    http::{Api, Response},
    kernel::{Backend, BoxFuture, Kernel, Started},
};

/// How long a kernel on the server may take to answer its first `kernel_info`.
const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// Kernels on one Jupyter Server.
pub struct ServerBackend {
    api: Arc<Api>,
}

impl ServerBackend {
    /// The server at `url` with `token`.
    pub fn new(url: &str, token: &str) -> Result<Self, String> {
        Ok(Self {
            api: Arc::new(Api::new(url, token)?),
        })
    }
}

/// An error result for a REST answer that is not `expected`.
fn upstream(api: &Api, what: &str, response: &Response) -> PackError {
    let message = response.body["message"]
        .as_str()
        .or_else(|| response.body["reason"].as_str())
        .map(str::to_owned)
        .unwrap_or_else(|| response.text.chars().take(300).collect());
    let code = match response.status {
        401 | 403 => codes::UNAUTHORIZED,
        404 => codes::NOT_FOUND,
        _ => codes::UPSTREAM_ERROR,
    };
    let error = PackError::new(
        code,
        format!(
            "{what}: the Jupyter Server at {} answered {}: {message}",
            api.base_url, response.status
        ),
    );
    match response.status {
        401 | 403 => error.with_help("set `token` in [packs.jupyter] config to the server's token"),
        _ => error,
    }
}

fn unreachable(e: String) -> PackError {
    PackError::new(codes::UPSTREAM_ERROR, e)
        .with_help("check `url` in [packs.jupyter] config and that the Jupyter Server runs")
}

impl Backend for ServerBackend {
    fn name(&self) -> &'static str {
        "server"
    }

    fn ready(&self) -> BoxFuture<'_, Result<(), PackError>> {
        Box::pin(async move {
            let api = &self.api;
            let response = api.call("GET", "status", None).await.map_err(unreachable)?;
            match response.status {
                200 => Ok(()),
                _ => Err(upstream(api, "asking the server's status", &response)),
            }
        })
    }

    fn start<'a>(
        &'a self,
        kernel_name: &'a str,
        notebook_path: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Started, PackError>> {
        Box::pin(async move {
            let api = &self.api;
            let (session_id, kernel_id, server_session) = match notebook_path {
                None => {
                    let response = api
                        .call("POST", "kernels", Some(&json!({ "name": kernel_name })))
                        .await
                        .map_err(unreachable)?;
                    if response.status != 201 && response.status != 200 {
                        return Err(upstream(api, "starting a kernel", &response));
                    }
                    let id = string_at(&response.body, &["id"])
                        .ok_or_else(|| upstream(api, "starting a kernel (no id)", &response))?;
                    (id.clone(), id, None)
                }
                Some(path) => {
                    let name = path.rsplit('/').next().unwrap_or(path);
                    let body = json!({
                        "path": path,
                        "name": name,
                        "type": "notebook",
                        "kernel": { "name": kernel_name },
                    });
                    let response = api
                        .call("POST", "sessions", Some(&body))
                        .await
                        .map_err(unreachable)?;
                    if response.status != 201 && response.status != 200 {
                        return Err(upstream(api, "starting a notebook session", &response));
                    }
                    let sid = string_at(&response.body, &["id"]);
                    let kid = string_at(&response.body, &["kernel", "id"]);
                    let (Some(sid), Some(kid)) = (sid, kid) else {
                        return Err(upstream(
                            api,
                            "starting a notebook session (no ids)",
                            &response,
                        ));
                    };
                    (sid.clone(), kid, Some(sid))
                }
            };
            let kernel = self.kernel(&kernel_id, server_session);
            if let Err(e) = kernel.connect().await {
                kernel.shutdown().await;
                return Err(PackError::new(codes::UPSTREAM_ERROR, e));
            }
            Ok(Started {
                session_id,
                kernel_id,
                kernel: Arc::new(kernel),
            })
        })
    }
}

impl ServerBackend {
    /// Kernel `kernel_id` on the server (of notebook session
    /// `server_session`), not connected yet.
    pub fn kernel(&self, kernel_id: &str, server_session: Option<String>) -> ServerKernel {
        ServerKernel {
            api: Arc::clone(&self.api),
            kernel_id: kernel_id.to_owned(),
            server_session,
            conn: Mutex::new(None),
        }
    }
}

fn string_at(value: &Value, path: &[&str]) -> Option<String> {
    path.iter()
        .try_fold(value, |v, key| v.get(key))?
        .as_str()
        .map(str::to_owned)
}

/// A kernel on the server and our websocket to it.
pub struct ServerKernel {
    api: Arc<Api>,
    kernel_id: String,
    /// The server's session id for a notebook session.
    server_session: Option<String>,
    conn: Mutex<Option<Arc<Conn>>>,
}

impl ServerKernel {
    /// Open a websocket to the kernel and wait until it answers.
    pub(crate) async fn connect(&self) -> Result<(), String> {
        let server = RemoteServer {
            base_url: self.api.base_url.clone(),
            token: self.api.token.clone(),
        };
        let session = uuid::Uuid::new_v4().to_string();
        let (socket, _) = server
            .connect_to_kernel_with_session(&self.kernel_id, Some(&session))
            .await
            .map_err(|e| {
                format!(
                    "cannot open the websocket of kernel {} at {}: {e:#}",
                    self.kernel_id, self.api.base_url
                )
            })?;
        let (mut writer, mut reader) = socket.split();
        let (conn, mut outgoing) = Conn::new(session, true);
        let reader_conn = Arc::clone(&conn);
        conn.own(
            tokio::spawn(async move {
                while let Some(message) = reader.next().await {
                    if let Ok(message) = message {
                        reader_conn.route(message);
                    }
                }
                reader_conn.mark_dead("the Jupyter Server closed the kernel's websocket");
            })
            .abort_handle(),
        );
        let writer_conn = Arc::clone(&conn);
        conn.own(
            tokio::spawn(async move {
                while let Some(message) = outgoing.recv().await {
                    if let Err(e) = writer.send(message.with_channel(Channel::Shell)).await {
                        writer_conn.mark_dead(&format!("cannot send to the Jupyter Server: {e}"));
                        return;
                    }
                }
            })
            .abort_handle(),
        );
        if let Some(old) = self
            .conn
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .replace(Arc::clone(&conn))
        {
            old.close();
        }
        conn.ready(tokio::time::Instant::now() + READY_TIMEOUT)
            .await
            .map_err(|reason| {
                format!(
                    "kernel {} is not ready: {reason} (limit {} s)",
                    self.kernel_id,
                    READY_TIMEOUT.as_secs()
                )
            })
    }

    /// Close this instance's websocket; the kernel runs on.
    fn disconnect(&self) {
        if let Some(old) = self.conn.lock().unwrap_or_else(|e| e.into_inner()).take() {
            old.close();
        }
    }

    async fn post(&self, action: &str) -> Result<(), String> {
        let path = format!("kernels/{}/{action}", self.kernel_id);
        let response = self.api.call("POST", &path, Some(&json!({}))).await?;
        if (200..300).contains(&response.status) {
            Ok(())
        } else {
            Err(upstream(
                &self.api,
                &format!("{action} kernel {}", self.kernel_id),
                &response,
            )
            .message()
            .to_owned())
        }
    }
}

impl Kernel for ServerKernel {
    fn conn(&self) -> Arc<Conn> {
        match self.conn.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
            Some(conn) => Arc::clone(conn),
            None => {
                let (conn, _) = Conn::new(String::new(), false);
                conn.mark_dead("the kernel was shut down");
                conn
            }
        }
    }

    fn interrupt(&self) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(self.post("interrupt"))
    }

    fn restart(&self) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async move {
            self.disconnect();
            // Right after a crash the server restarts the kernel on its own
            // and refuses a second restart meanwhile (500): retry for a while.
            let deadline = tokio::time::Instant::now() + READY_TIMEOUT / 2;
            loop {
                match self.post("restart").await {
                    Ok(()) => break,
                    Err(e) if tokio::time::Instant::now() >= deadline => return Err(e),
                    Err(_) => tokio::time::sleep(Duration::from_millis(500)).await,
                }
            }
            self.connect().await
        })
    }

    fn release(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move { self.disconnect() })
    }

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.disconnect();
            let path = match &self.server_session {
                Some(sid) => format!("sessions/{sid}"),
                None => format!("kernels/{}", self.kernel_id),
            };
            let _ = self.api.call("DELETE", &path, None).await;
        })
    }
}
