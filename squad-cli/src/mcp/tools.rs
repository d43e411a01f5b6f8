//! The tools of `squad mcp`: each one is a `squad` command run without its printing. The input
//! schema is derived from the command's argument type, the arguments are read into that type,
//! and the result is the command's `--json` document; errors carry the CLI's message.

use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::model::{CallToolResult, ContentBlock, Tool, ToolAnnotations};
use rmcp::service::RequestContext;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use squad_memory::{FsStore, LeftOutDetail, Touch};

use super::output;
use super::schema::input_schema;
use crate::approval_cmd::{RequestArgs, StatusArgs, WaitArgs};
use crate::ctx::{CliError, Ctx};
use crate::memory_cmd::{AddInput, SearchInput, SpawnInput};
use crate::notes_cmd::{ListInput, ShowInput, WriteInput};
use crate::route_briefing_cmd::{BriefingArgs, Stdin};

/// One tool: its name, what it does, whether it writes, and its input schema.
pub(crate) struct ToolDef {
    /// The tool's name (`notes_write`).
    pub(crate) name: &'static str,
    /// A title for people.
    title: &'static str,
    /// What the tool does, for the model.
    description: &'static str,
    /// `true` when the tool changes nothing (`--read-only` keeps only these).
    pub(crate) read_only: bool,
    /// `true` when repeating the call with the same arguments changes nothing more.
    idempotent: bool,
    /// `true` when the tool reaches outside the repository (a webhook, GitHub).
    open_world: bool,
    /// The input schema, derived from the command's argument type.
    schema: fn() -> Map<String, Value>,
    /// The output schema: the shape of the structured result (see [`super::output`]).
    output: fn() -> Map<String, Value>,
}

/// Every tool, in the order `tools/list` gives them.
pub(crate) const TOOLS: &[ToolDef] = &[
    ToolDef {
        name: "notes_write",
        title: "Write a note entry",
        description: "Add one entry by an agent to the note of a commit in refs/notes/squad/<namespace> \
            (`squad notes write`). `fields` is a JSON object merged into the entry, `content` its free text \
            (one of them is required). The namespace defaults to the agent's own; `research` and `review` are \
            the shared ones. Returns the whole entry; its `id` names it. Entries are append-only: pass `id` to \
            make a retry a no-op.",
        read_only: false,
        idempotent: false,
        open_world: false,
        schema: input_schema::<WriteInput>,
        output: output::notes_write,
    },
    ToolDef {
        name: "notes_show",
        title: "Show the note entries of a commit",
        description: "The entries of namespace `agent` on one commit, oldest first, de-duplicated by id \
            (`squad notes show --json`), as `{\"entries\": [...]}`. Lines that are not valid entries are reported as warnings.",
        read_only: true,
        idempotent: true,
        open_world: false,
        schema: input_schema::<ShowInput>,
        output: output::notes_show,
    },
    ToolDef {
        name: "notes_list",
        title: "List the commits with notes",
        description: "The objects that have a note in namespace `agent`, with their number of entries and \
            their type (`squad notes list --json`). The structured result is `{\"notes\": [...]}`.",
        read_only: true,
        idempotent: true,
        open_world: false,
        schema: input_schema::<ListInput>,
        output: output::notes_list,
    },
    ToolDef {
        name: "memory_context",
        title: "Memory context for a spawn prompt",
        description: "The `## Memory Context` block for an agent's spawn prompt, for a situation and a task, \
            with its manifest of what was loaded and left out (`squad memory spawn --json`: `prompt` and \
            `manifest`). Reads only.",
        read_only: true,
        idempotent: true,
        open_world: false,
        schema: input_schema::<SpawnInput>,
        output: output::memory_context,
    },
    ToolDef {
        name: "memory_search",
        title: "Search an agent's memory",
        description: "Ranked search over an agent's hot, cold and archive tiers and the wiki \
            (`squad memory search --json`). The structured result is `{\"hits\": [...]}`.",
        read_only: true,
        idempotent: true,
        open_world: false,
        schema: input_schema::<SearchInput>,
        output: output::memory_search,
    },
    ToolDef {
        name: "memory_add",
        title: "Add a memory entry",
        description: "Add one entry to an agent's hot tier (`squad memory add --json`); refused when hot \
            would go over its cap (run the Scribe). Waits its turn for the memory lock up to `lock_timeout` \
            seconds (default 30). Returns the entry; its `id` names it and `line` its heading's line in the \
            hot file.",
        read_only: false,
        idempotent: false,
        open_world: false,
        schema: input_schema::<AddInput>,
        output: output::memory_add,
    },
    ToolDef {
        name: "approval_request",
        title: "Request a human approval gate",
        description: "Open an approval gate when the mode's rules say this trigger pings, notify the human \
            through the configured channel and record the pending gate (`squad approval request --json`): \
            the gate record (its `id` names it), or `{\"gate\": null, \"reason\": ...}` when the mode does \
            not stop here. Refused while a gate is pending or after the run was stopped. Only a human \
            decides a gate: call approval_wait for the decision.",
        read_only: false,
        idempotent: false,
        open_world: true,
        schema: input_schema::<RequestArgs>,
        output: output::approval_request,
    },
    ToolDef {
        name: "approval_status",
        title: "Approval status",
        description: "The pending gate, the current run, the last decisions and the health of the state \
            files (`squad approval status --json`).",
        read_only: true,
        idempotent: true,
        open_world: false,
        schema: input_schema::<StatusArgs>,
        output: output::approval_status,
    },
    ToolDef {
        name: "approval_wait",
        title: "Wait for a human's decision",
        description: "Wait up to `timeout_secs` (default 30) for a human's decision on the pending gate \
            (or `gate`) and return it (`squad approval wait --json`): `state` is `approved`, `approve-all`, \
            `changes-requested` (with its `note`), `stopped`, `expired`, or `pending` when no decision came \
            in time (not an error: call again). For an in-chat gate the human is asked in the client \
            (an elicitation) when the client supports it; otherwise the configured channel is polled. \
            Nothing in a tool call can decide a gate.",
        read_only: false,
        idempotent: false,
        open_world: true,
        schema: input_schema::<WaitArgs>,
        output: output::approval_wait,
    },
    ToolDef {
        name: "route_briefing",
        title: "Leader briefing of a squad",
        description: "The leader briefing for a squad, from a routing trace's final state or from a \
            database that `squad route replay --db` keeps (`squad route briefing --json`).",
        read_only: true,
        idempotent: true,
        open_world: false,
        schema: input_schema::<BriefingArgs>,
        output: output::route_briefing,
    },
];

impl ToolDef {
    /// The tool as `tools/list` describes it.
    pub(crate) fn to_tool(&self) -> Tool {
        let annotations = ToolAnnotations::with_title(self.title)
            .read_only(self.read_only)
            .destructive(false)
            .idempotent(self.idempotent)
            .open_world(self.open_world);
        Tool::new(self.name, self.description, Arc::new((self.schema)()))
            .with_raw_output_schema(Arc::new((self.output)()))
            .with_title(self.title)
            .with_annotations(annotations)
    }
}

/// A tool's result: the command's `--json` document and the lines it prints on stderr.
pub(crate) struct Output {
    /// The `--json` document.
    json: Value,
    /// For an array result: the key the structured result holds it under.
    key: Option<&'static str>,
    /// `note: …` and `warning: …` lines.
    messages: Vec<String>,
}

impl Output {
    pub(crate) fn new(json: Value) -> Self {
        Self {
            json,
            key: None,
            messages: Vec::new(),
        }
    }

    fn array(json: Value, key: &'static str) -> Self {
        Self {
            json,
            key: Some(key),
            messages: Vec::new(),
        }
    }

    pub(crate) fn with_messages(mut self, messages: Vec<String>) -> Self {
        self.messages = messages;
        self
    }

    /// The tool result: one text block holding the JSON document, and the same document as the
    /// structured result. An array is held under its key (structured results are objects), and
    /// the messages go inside the document under `messages`, so that a client reading the text
    /// gets one JSON document, however it joins blocks.
    pub(crate) fn into_result(self) -> CallToolResult {
        let mut document = match self.key {
            Some(key) => json!({ key: self.json }),
            None => self.json,
        };
        if !self.messages.is_empty()
            && let Value::Object(o) = &mut document
        {
            o.insert("messages".to_owned(), json!(self.messages));
        }
        let text = serde_json::to_string_pretty(&document).unwrap_or_default();
        let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
        result.structured_content = Some(document);
        result
    }
}

/// A command's error as a tool error: the text is what the CLI prints on stderr, the structured
/// result names the message, the hint and the CLI's exit code.
pub(crate) fn error_result(e: &CliError) -> CallToolResult {
    let mut text = format!("error: {}", e.message());
    if let Some(hint) = e.hint() {
        text.push_str("\nhint: ");
        text.push_str(hint);
    }
    let mut result = CallToolResult::error(vec![ContentBlock::text(text)]);
    result.structured_content = Some(json!({
        "error": e.message(),
        "hint": e.hint(),
        "exit_code": e.code(),
    }));
    result
}

/// Reads a tool's arguments into the command's argument type; what does not fit is bad input.
fn parse<T: DeserializeOwned>(tool: &str, args: Map<String, Value>) -> Result<T, CliError> {
    serde_json::from_value(Value::Object(args))
        .map_err(|e| CliError::usage(format!("invalid arguments for {tool}: {e}")))
}

/// Runs synchronous command code off the async threads.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, CliError> + Send + 'static,
) -> Result<T, CliError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| CliError::failure(format!("the tool stopped: {e}")))?
}

/// Runs tool `name` with `args`; `None` when there is no such tool.
pub(crate) async fn call(
    name: &str,
    args: Map<String, Value>,
    ctx: Arc<Ctx>,
    context: RequestContext<RoleServer>,
    turn: super::TurnGuard,
) -> Option<Result<Output, CliError>> {
    let out = match name {
        "notes_write" => notes_write(args, ctx).await,
        "notes_show" => notes_show(args, ctx).await,
        "notes_list" => notes_list(args, ctx).await,
        "memory_context" => memory_context(args, ctx).await,
        "memory_search" => memory_search(args, ctx).await,
        "memory_add" => memory_add(args, ctx).await,
        "approval_request" => approval_request(args, ctx).await,
        "approval_status" => approval_status(args, ctx).await,
        "approval_wait" => match parse::<WaitArgs>(name, args) {
            Ok(a) => super::wait::approval_wait(a, ctx, context, turn).await,
            Err(e) => Err(e),
        },
        "route_briefing" => route_briefing(args, ctx).await,
        _ => return None,
    };
    Some(out)
}

async fn notes_write(args: Map<String, Value>, ctx: Arc<Ctx>) -> Result<Output, CliError> {
    let input: WriteInput = parse("notes_write", args)?;
    blocking(move || {
        // The texts are taken as they are: no `@FILE`, no `-` (stdin is the protocol).
        let fields = input.fields.as_ref().map(|f| f.0.clone());
        let content = input.content.clone();
        let entry = crate::notes_cmd::write_entry(&input, fields.as_deref(), content, false, &ctx)?;
        Ok(Output::new(entry.to_value()))
    })
    .await
}

async fn notes_show(args: Map<String, Value>, ctx: Arc<Ctx>) -> Result<Output, CliError> {
    let input: ShowInput = parse("notes_show", args)?;
    blocking(move || {
        let shown = crate::notes_cmd::show_entries(&input, &ctx)?;
        Ok(Output::array(Value::Array(shown.values), "entries").with_messages(shown.warnings))
    })
    .await
}

async fn notes_list(args: Map<String, Value>, ctx: Arc<Ctx>) -> Result<Output, CliError> {
    let input: ListInput = parse("notes_list", args)?;
    blocking(move || {
        let (all, types) = crate::notes_cmd::list_notes(&input, &ctx, true)?;
        Ok(Output::array(
            crate::notes_cmd::list_json(&all, &types),
            "notes",
        ))
    })
    .await
}

async fn memory_context(args: Map<String, Value>, ctx: Arc<Ctx>) -> Result<Output, CliError> {
    let input: SpawnInput = parse("memory_context", args)?;
    blocking(move || {
        let store = FsStore::new(ctx.existing_state_dir()?);
        let out = crate::memory_cmd::context(&input, Touch::No, LeftOutDetail::Full, &ctx, &store)?;
        Ok(Output::new(crate::memory_cmd::to_json(&out)?))
    })
    .await
}

async fn memory_search(args: Map<String, Value>, ctx: Arc<Ctx>) -> Result<Output, CliError> {
    let input: SearchInput = parse("memory_search", args)?;
    blocking(move || {
        let store = FsStore::new(ctx.existing_state_dir()?);
        let hits = crate::memory_cmd::search_hits(&input, &ctx, &store)?;
        Ok(Output::array(crate::memory_cmd::to_json(&hits)?, "hits"))
    })
    .await
}

async fn memory_add(args: Map<String, Value>, ctx: Arc<Ctx>) -> Result<Output, CliError> {
    let input: AddInput = parse("memory_add", args)?;
    blocking(move || {
        let store = crate::memory_cmd::writer_store(
            &ctx.state_dir()?,
            input.lock_timeout,
            format!("squad mcp memory_add --agent {}", input.agent),
        )?;
        let body = input.body.clone().unwrap_or_default();
        let at = crate::memory_cmd::now_secs()?;
        let entry = crate::memory_cmd::add_entry(&input, body, at, &ctx, &store)?;
        Ok(Output::new(crate::memory_cmd::to_json(&entry)?))
    })
    .await
}

async fn approval_request(args: Map<String, Value>, ctx: Arc<Ctx>) -> Result<Output, CliError> {
    use squad_notify::{InChatChannel, SystemClock};
    let input: RequestArgs = parse("approval_request", args)?;
    // The in-chat notification has nowhere to go but the result: the human is asked at
    // approval_wait. The detail is taken as it is (no `@FILE`, no `-`).
    let chat = Arc::new(InChatChannel::new(
        Box::new(std::io::sink()),
        Arc::new(SystemClock),
    ));
    let detail = input.detail.clone();
    let requested = crate::approval_cmd::open_gate(&input, detail, chat, &ctx).await?;
    Ok(Output::new(requested.json).with_messages(requested.messages))
}

async fn approval_status(args: Map<String, Value>, ctx: Arc<Ctx>) -> Result<Output, CliError> {
    let input: StatusArgs = parse("approval_status", args)?;
    blocking(move || {
        let status = crate::approval_cmd::status_of(&input, &ctx)?;
        Ok(Output::new(status.to_json()))
    })
    .await
}

async fn route_briefing(args: Map<String, Value>, ctx: Arc<Ctx>) -> Result<Output, CliError> {
    let input: BriefingArgs = parse("route_briefing", args)?;
    blocking(move || {
        Ok(Output::new(crate::route_briefing_cmd::briefing_of(
            &input,
            &ctx,
            Stdin::Refused,
        )?))
    })
    .await
}
