//! JSON-RPC request handling: whatever a client sends after a valid
//! handshake (garbage, half messages, unknown methods, odd params, tool calls
//! with any arguments), the MCP server (rmcp's parsing in front of packhost's
//! handler and executor) neither panics nor hangs, and ends when its input
//! ends. The executor has no packs, so `run` exercises the command front and
//! every tool name the not-found paths.
#![no_main]

use std::{
    sync::{Arc, OnceLock},
    time::Duration,
};

use libfuzzer_sys::fuzz_target;
use packhost::{
    config::Config,
    executor::Executor,
    identity::Identity,
    mcp::PackhostServer,
};
use rmcp::ServiceExt as _;
use tokio::{
    io::{AsyncReadExt as _, AsyncWriteExt as _},
    runtime::Runtime,
};

const HANDSHAKE: &str = concat!(
    r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"fuzz","version":"0"}}}"#,
    "\n",
    r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    "\n",
);

fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
    })
}

fn executor() -> Arc<Executor> {
    static EXECUTOR: OnceLock<Arc<Executor>> = OnceLock::new();
    Arc::clone(EXECUTOR.get_or_init(|| {
        let _guard = runtime().enter();
        Executor::new(
            Vec::new(),
            &Config::default(),
            Arc::new(catalog_search::Searcher::new(None)),
        )
    }))
}

fuzz_target!(|data: &[u8]| {
    let executor = executor();
    runtime().block_on(async move {
        let (client, server) = tokio::io::duplex(1 << 16);
        let (server_read, server_write) = tokio::io::split(server);
        let serving = tokio::spawn(async move {
            let handler = PackhostServer::new(executor, Identity::default())
                .expect("a server over an executor without packs");
            if let Ok(service) = handler.serve((server_read, server_write)).await {
                let _ = service.waiting().await;
            }
        });
        let (mut client_read, mut client_write) = tokio::io::split(client);
        // Read everything the server says, so it never blocks on a full pipe.
        let draining = tokio::spawn(async move {
            let mut sink = Vec::new();
            let _ = client_read.read_to_end(&mut sink).await;
        });
        let _ = client_write.write_all(HANDSHAKE.as_bytes()).await;
        let _ = client_write.write_all(data).await;
        let _ = client_write.write_all(b"\n").await;
        let _ = client_write.shutdown().await;
        drop(client_write);
        tokio::time::timeout(Duration::from_secs(10), serving)
            .await
            .expect("the server did not end within 10 s of its input ending")
            .expect("the server task panicked");
        draining.abort();
    });
});
