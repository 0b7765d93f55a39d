//! `packhost-fixture-catalog FILE [SERVICE]`: an MCP server (stdio) listing
//! the tools of a JSON file (`[{name, description, inputSchema}]`, such as
//! tests/fixtures/catalog-200.json), or only those of one service (the
//! tools named `SERVICE_...`); a call answers with its tool's name and
//! arguments. What a team's many attached servers look like to the host,
//! for the discovery tests and the context benchmark.

use rmcp::{
    ErrorData, RoleServer, ServerHandler, ServiceExt as _,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
        PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    },
    service::RequestContext,
};
use serde_json::Value;

#[derive(Clone)]
struct Catalog {
    tools: Vec<Tool>,
}

impl ServerHandler for Catalog {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = Value::Object(request.arguments.unwrap_or_default());
        let answer = format!("{} called with {args}", request.name);
        Ok(CallToolResult::success(vec![ContentBlock::text(answer)]).into())
    }
}

#[tokio::main]
async fn main() {
    let Some(file) = std::env::args().nth(1) else {
        eprintln!("usage: packhost-fixture-catalog FILE [SERVICE] (a JSON array of MCP tools)");
        std::process::exit(2);
    };
    let service = std::env::args().nth(2).map(|service| format!("{service}_"));
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{file}: {e}"));
    let mut tools: Vec<Tool> =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
    if let Some(service) = &service {
        tools.retain(|tool| tool.name.starts_with(service.as_str()));
    }
    let service = Catalog { tools }
        .serve((tokio::io::stdin(), tokio::io::stdout()))
        .await
        .expect("MCP handshake on stdio");
    let _ = service.waiting().await;
}
