//! `squad mcp`: the squad crates as a Model Context Protocol server on stdin and stdout, built
//! on rmcp (the official Rust SDK). Tools are the CLI's commands (`tools.rs`), resources the
//! memory files, `decisions.md` and the schemas (`resources.rs`), approval waits may ask the
//! human through an elicitation (`wait.rs`), and the stdio transport answers malformed input
//! instead of ending (`transport.rs`). Nothing but JSON-RPC is written on stdout: the commands
//! run without their printers.

mod output;
mod resources;
pub(crate) mod schema;
mod tools;
mod transport;
mod wait;

use std::borrow::Cow;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, InitializeResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
    ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};

use crate::ctx::{CliError, CmdResult, Ctx};

const MCP_HELP: &str = "\
An MCP client starts the server and talks JSON-RPC to it on stdin and stdout (one message per
line); errors and notes go to stderr. A client configuration:

  {\"mcpServers\": {\"squad\": {\"command\": \"squad\", \"args\": [\"mcp\"]}}}

Tools: notes_write, notes_show, notes_list, memory_context, memory_search, memory_add,
approval_request, approval_status, approval_wait, route_briefing (--read-only: only the six that
read). Resources: squad://memory/<hot|cold|archive>/<agent>, squad://memory/wiki/<topic>,
squad://state/decisions.md, squad://schema/<name>. No tool takes an approval decision: a human
decides, in the client (an elicitation) or on the configured channel.

Example:
  squad -C ~/src/app mcp --read-only";

/// Arguments of `squad mcp`.
#[derive(Debug, clap::Args)]
#[command(after_help = MCP_HELP)]
pub(crate) struct Args {
    /// Expose only the tools that read (notes_show, notes_list, memory_context, memory_search,
    /// approval_status, route_briefing).
    #[arg(long)]
    read_only: bool,
}

/// The protocol versions answered: those with an `initialize` handshake, up to 2025-11-25; a
/// client's version among them is echoed, any other gets the newest.
const NEWEST: ProtocolVersion = ProtocolVersion::V_2025_11_25;

const INSTRUCTIONS: &str = "squad: commit-scoped agent notes, tiered agent memory, human approval gates and squad routing. \
Each tool is a `squad` command and returns its --json document. Approval gates are decided only by a human: \
request one with approval_request, then call approval_wait until its state is not `pending`.";

/// The server: the global options, whether write tools are offered, and the turn every tool
/// call and resource read waits for.
#[derive(Debug, Clone)]
struct Server {
    ctx: Arc<Ctx>,
    read_only: bool,
    /// Calls run one at a time, in the order they arrived (tokio's mutex is fair): a client that
    /// sends a write and then a read without waiting for the first answer reads what it wrote.
    /// `approval_wait` gives the turn up once it has found its gate, so that a long wait holds
    /// nobody up.
    turn: Turn,
}

/// The lock calls take turns with.
pub(crate) type Turn = Arc<tokio::sync::Mutex<()>>;

/// A call's turn; dropped when the call is done (or, for a wait, once it has started).
pub(crate) type TurnGuard = tokio::sync::OwnedMutexGuard<()>;

impl Server {
    fn tools(&self) -> impl Iterator<Item = &'static tools::ToolDef> + '_ {
        tools::TOOLS
            .iter()
            .filter(move |t| t.read_only || !self.read_only)
    }
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        let mut server = Implementation::new("squad", env!("CARGO_PKG_VERSION"));
        server.title = Some("squad".to_owned());
        InitializeResult::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .build(),
        )
        .with_server_info(server)
        .with_protocol_version(NEWEST)
        .with_instructions(INSTRUCTIONS)
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(&NEWEST))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(
            self.tools().map(tools::ToolDef::to_tool).collect(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.as_ref();
        let Some(def) = tools::TOOLS.iter().find(|t| t.name == name) else {
            return Err(ErrorData::invalid_params(
                format!("unknown tool: {name}"),
                Some(serde_json::json!({"tool": name})),
            ));
        };
        if self.read_only && !def.read_only {
            return Err(ErrorData::invalid_params(
                format!("tool {name} writes, and this server runs with --read-only"),
                Some(serde_json::json!({"tool": name})),
            ));
        }
        let args = request.arguments.unwrap_or_default();
        let turn = self.turn.clone().lock_owned().await;
        let out = tools::call(name, args, self.ctx.clone(), context, turn).await;
        let result = match out {
            Some(Ok(out)) => out.into_result(),
            Some(Err(e)) => tools::error_result(&e),
            None => tools::error_result(&CliError::failure(format!("unknown tool: {name}"))),
        };
        Ok(result.into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let ctx = self.ctx.clone();
        let _turn = self.turn.clone().lock_owned().await;
        let all = tokio::task::spawn_blocking(move || resources::list(&ctx))
            .await
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))??;
        Ok(ListResourcesResult::with_all_items(all))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(ListResourceTemplatesResult::with_all_items(
            resources::templates(),
        ))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let ctx = self.ctx.clone();
        let uri = request.uri.clone();
        let _turn = self.turn.clone().lock_owned().await;
        let contents = tokio::task::spawn_blocking(move || resources::read(&ctx, &uri))
            .await
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))??;
        Ok(ReadResourceResult::new(vec![contents]).into())
    }
}

/// Serves until the end of input.
pub(crate) fn run(args: &Args, ctx: Ctx) -> CmdResult {
    let runtime = crate::ctx::runtime()?;
    let server = Server {
        ctx: Arc::new(ctx),
        read_only: args.read_only,
        turn: Turn::default(),
    };
    runtime.block_on(async move {
        let transport = transport::LineTransport::new(tokio::io::stdin(), tokio::io::stdout());
        match server.serve(transport).await {
            Ok(running) => {
                running
                    .waiting()
                    .await
                    .map_err(|e| CliError::failure(format!("the MCP session failed: {e}")))?;
                Ok(0)
            }
            // The input ended before a session began: nothing to serve.
            Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => Ok(0),
            Err(e) => Err(CliError::failure(format!("the MCP session failed: {e}"))),
        }
    })
}
