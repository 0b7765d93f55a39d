//! A small MCP server for the `remote_mcp` tests: it can fail, crash, hang
//! and tell what it was given. `packhost-fixture-mcp` serves stdio;
//! `packhost-fixture-mcp --http 127.0.0.1:PORT` serves streamable HTTP at
//! `/mcp` (and a redirect to it at `/moved`) and prints
//! `listening on http://ADDR/mcp` once bound. `--twins` (before `--http`)
//! adds `get-sum {a, b}` and `get_sum {a, b}`, listed in that order, whose
//! names become one function name (each answers `<its name>: <a + b>`).
//!
//! Tools: `echo {text}`, `pid {}`, `fail {message}` (a tool error),
//! `crash {}` (exits mid-call), `sleep {ms}`, `env {name}` (a variable of its
//! environment), `authorization {}` (the `Authorization` header it got),
//! `typed {form}` (declares an output schema `{n: integer}`; `form` picks
//! the answer: `structured`, `text` (the JSON only as text, as servers from
//! before structured content do), `plain` (no JSON at all) or `wrong` (a
//! structured content that does not fit)), and for the sandbox tests `read
//! {path}` (a file's text, or a folder's names), `signal_parent {}` (signal
//! 0 to its parent, the host: only the permission check) and `connect
//! {addr}` (a TCP connection to `HOST:PORT`); each answers `ok: ...` or
//! `denied: <the OS error>`.

use std::{sync::Arc, time::Duration};

use rmcp::{
    ErrorData, RoleServer, ServerHandler, ServiceExt as _,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
        PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    },
    service::RequestContext,
    transport::{
        StreamableHttpServerConfig, StreamableHttpService,
        streamable_http_server::session::local::LocalSessionManager,
    },
};
use serde_json::{Value, json};

#[derive(Clone)]
struct Fixture {
    /// Also list `get-sum` and `get_sum`.
    twins: bool,
}

fn tool(name: &'static str, description: &'static str, properties: Value) -> Tool {
    let required: Vec<&String> = properties
        .as_object()
        .map(|p| p.keys().collect())
        .unwrap_or_default();
    let schema = json!({"type": "object", "properties": properties, "required": required});
    let Value::Object(schema) = schema else {
        unreachable!()
    };
    Tool::new(name, description, schema)
}

fn typed() -> Tool {
    let mut tool = tool(
        "typed",
        "Answer `{n: 7}` in the given form.",
        json!({"form": {"type": "string"}}),
    );
    let Value::Object(schema) = json!({
        "type": "object",
        "properties": {"n": {"type": "integer"}},
        "required": ["n"]
    }) else {
        unreachable!()
    };
    tool.output_schema = Some(Arc::new(schema));
    tool
}

fn text(text: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(text.into())])
}

impl ServerHandler for Fixture {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let string = json!({"type": "string"});
        let mut tools = vec![
            tool("echo", "Echo the text back.", json!({"text": string})),
            tool("pid", "The server's process id.", json!({})),
            tool("fail", "Fail with the message.", json!({"message": string})),
            tool(
                "crash",
                "Exit the process in the middle of the call.",
                json!({}),
            ),
            tool(
                "sleep",
                "Sleep for `ms` milliseconds.",
                json!({"ms": {"type": "integer"}}),
            ),
            tool(
                "env",
                "A variable of the server's environment.",
                json!({"name": string}),
            ),
            tool(
                "authorization",
                "The Authorization header of the request.",
                json!({}),
            ),
            typed(),
            tool(
                "read",
                "A file's text, or the names in a folder.",
                json!({"path": string}),
            ),
            tool(
                "signal_parent",
                "Signal 0 to the parent process.",
                json!({}),
            ),
            tool(
                "connect",
                "Open a TCP connection to HOST:PORT.",
                json!({"addr": string}),
            ),
        ];
        if self.twins {
            let numbers = json!({"a": {"type": "integer"}, "b": {"type": "integer"}});
            tools.push(tool(
                "get-sum",
                "a + b, said by `get-sum`.",
                numbers.clone(),
            ));
            tools.push(tool("get_sum", "a + b, said by `get_sum`.", numbers));
        }
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        let arg = |name: &str| args.get(name).cloned().unwrap_or(Value::Null);
        let result = match request.name.as_ref() {
            "echo" => text(format!(
                "echo: {}",
                arg("text").as_str().unwrap_or_default()
            )),
            "pid" => {
                let mut result = text(std::process::id().to_string());
                result.structured_content = Some(json!({"pid": std::process::id()}));
                result
            }
            "fail" => CallToolResult::error(vec![ContentBlock::text(
                arg("message").as_str().unwrap_or("failed").to_owned(),
            )]),
            "crash" => std::process::exit(3),
            name @ ("get-sum" | "get_sum") if self.twins => {
                let sum = arg("a").as_i64().unwrap_or(0) + arg("b").as_i64().unwrap_or(0);
                text(format!("{name}: {sum}"))
            }
            "typed" => {
                let (text_form, structured) = match arg("form").as_str().unwrap_or_default() {
                    "structured" => (r#"{"n":7}"#, Some(json!({"n": 7}))),
                    "text" => (r#"{"n":7}"#, None),
                    "wrong" => (r#"{"n":"seven"}"#, Some(json!({"n": "seven"}))),
                    _ => ("seven", None),
                };
                let mut result = text(text_form);
                result.structured_content = structured;
                result
            }
            "sleep" => {
                tokio::time::sleep(Duration::from_millis(arg("ms").as_u64().unwrap_or(0))).await;
                text("slept")
            }
            "env" => {
                let name = arg("name");
                let value = std::env::var(name.as_str().unwrap_or_default()).ok();
                text(json!(value).to_string())
            }
            "authorization" => {
                let header = context
                    .extensions
                    .get::<http::request::Parts>()
                    .and_then(|parts| parts.headers.get("authorization"))
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                text(json!(header).to_string())
            }
            "read" => {
                let path = std::path::PathBuf::from(arg("path").as_str().unwrap_or_default());
                let read = if path.is_dir() {
                    std::fs::read_dir(&path).and_then(|entries| {
                        let names: Result<Vec<String>, _> = entries
                            .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
                            .collect();
                        names.map(|n| n.join("\n"))
                    })
                } else {
                    std::fs::read(&path).map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
                };
                outcome(read)
            }
            "signal_parent" => {
                // SAFETY: signal 0 only checks that the signal may be sent.
                let sent = unsafe { libc::kill(libc::getppid(), 0) } == 0;
                outcome(if sent {
                    Ok("signalled".to_owned())
                } else {
                    Err(std::io::Error::last_os_error())
                })
            }
            "connect" => {
                let addr = arg("addr").as_str().unwrap_or_default().to_owned();
                outcome(
                    tokio::net::TcpStream::connect(addr)
                        .await
                        .map(|s| format!("connected to {:?}", s.peer_addr().ok())),
                )
            }
            other => {
                return Err(ErrorData::invalid_params(
                    format!("no tool named `{other}`"),
                    None,
                ));
            }
        };
        Ok(result.into())
    }
}

/// `ok: ...`, or `denied: <the OS error>`.
fn outcome(result: std::io::Result<String>) -> CallToolResult {
    match result {
        Ok(value) => text(format!("ok: {value}")),
        Err(e) => text(format!("denied: {e}")),
    }
}

#[tokio::main]
async fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let twins = args.first().is_some_and(|a| a == "--twins");
    if twins {
        args.remove(0);
    }
    let fixture = Fixture { twins };
    match args.as_slice() {
        [] => {
            let service = fixture
                .serve((tokio::io::stdin(), tokio::io::stdout()))
                .await
                .expect("MCP handshake on stdio");
            let _ = service.waiting().await;
        }
        [flag, addr] if flag == "--http" => {
            let listener = tokio::net::TcpListener::bind(addr).await.expect("bind");
            let bound = listener.local_addr().expect("bound address");
            let config = StreamableHttpServerConfig::default()
                .with_allowed_hosts([bound.ip().to_string(), bound.to_string()]);
            let service = StreamableHttpService::new(
                move || Ok(fixture.clone()),
                Arc::new(LocalSessionManager::default()),
                config,
            );
            // `/moved` redirects to `/mcp`: a client that follows redirects
            // reaches the server through it, one that does not fails.
            let app = axum::Router::new().route_service("/mcp", service).route(
                "/moved",
                axum::routing::any(|| async {
                    (
                        http::StatusCode::TEMPORARY_REDIRECT,
                        [(http::header::LOCATION, "/mcp")],
                    )
                }),
            );
            println!("listening on http://{bound}/mcp");
            axum::serve(listener, app).await.expect("serve");
        }
        _ => {
            eprintln!("usage: packhost-fixture-mcp [--twins] [--http ADDR]");
            std::process::exit(2);
        }
    }
}
