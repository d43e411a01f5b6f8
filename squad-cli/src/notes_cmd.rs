//! `squad notes write | show | list`: commit-scoped agent notes under `refs/notes/squad/<ns>`.

use serde_json::{Map, Value};
use squad_model::{AgentName, EntryId, NoteEntry, NoteType, Timestamp};
use squad_notes::{GixNotes, Notes, Oid};

use crate::ctx::{CliError, CmdResult, Ctx, errln, outln};

/// Arguments of `squad notes`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Example:\n  squad notes write --agent data --type decision --fields '{\"decision\":\"Use JWT RS256\"}' --promote\n  squad notes show --agent data HEAD --json\n  squad notes setup && squad notes sync\n  squad notes promote --dry-run"
)]
pub(crate) struct Args {
    #[command(subcommand)]
    command: NotesCommand,
}

#[derive(Debug, clap::Subcommand)]
enum NotesCommand {
    /// Add one entry to the note of a commit in refs/notes/squad/NAMESPACE.
    Write(WriteArgs),
    /// Show the entries of one commit in a namespace, oldest first.
    Show(ShowArgs),
    /// List the commits that have a note in a namespace.
    List(ListArgs),
    /// Configure fetching notes into refs/notes/remotes/REMOTE/squad/* (idempotent).
    Setup(crate::notes_setup_cmd::SetupArgs),
    /// Fetch, merge entry by entry and push the squad notes with a lease (retries lost races).
    Sync(crate::notes_sync_cmd::SyncArgs),
    /// Promote flagged entries on the default branch to decisions.md on squad-state, once.
    Promote(crate::notes_promote_cmd::PromoteArgs),
    /// Archive flagged entries of a closed, unmerged branch to research/ on squad-state, once.
    Archive(crate::notes_promote_cmd::ArchiveArgs),
}

#[derive(Debug, clap::Args)]
#[command(
    group(clap::ArgGroup::new("body").required(true).args(["fields", "content"])),
    after_help = "Example:\n  squad notes write --agent data --type decision \\\n    --fields '{\"decision\":\"Use JWT RS256\",\"reasoning\":\"auth.go:47\"}' --promote"
)]
struct WriteArgs {
    /// The writing agent (lowercase a-z, 0-9, '-', '_'; 1 to 64 characters).
    #[arg(long, value_name = "name")]
    agent: String,
    /// The entry type: decision, research, review, progress or security.
    #[arg(long = "type", value_name = "type")]
    kind: String,
    /// A JSON object merged into the entry.
    #[arg(long, value_name = "json-object")]
    fields: Option<String>,
    /// Free text for the entry's `content`.
    #[arg(long, value_name = "text")]
    content: Option<String>,
    /// The namespace to write: the agent's own (default), `research` or `review`.
    #[arg(long, value_name = "ns")]
    namespace: Option<String>,
    /// The commit to annotate.
    #[arg(long, value_name = "rev", default_value = "HEAD")]
    commit: String,
    /// Set `promote_to_permanent: true` (Ralph copies it to decisions.md after merge).
    #[arg(long)]
    promote: bool,
    /// Set `archive_on_close: true` (Ralph archives it even when the PR is closed).
    #[arg(long)]
    archive: bool,
}

#[derive(Debug, clap::Args)]
#[command(after_help = "Example:\n  squad notes show --agent data HEAD~1 --json")]
struct ShowArgs {
    /// The namespace to read (an agent name, `research` or `review`).
    #[arg(long, value_name = "ns")]
    agent: String,
    /// The commit whose note to show.
    #[arg(value_name = "rev", default_value = "HEAD")]
    rev: String,
}

#[derive(Debug, clap::Args)]
#[command(after_help = "Example:\n  squad notes list --agent research --json")]
struct ListArgs {
    /// The namespace to list (an agent name, `research` or `review`).
    #[arg(long, value_name = "ns")]
    agent: String,
}

pub(crate) fn run(args: &Args, ctx: &Ctx) -> CmdResult {
    match &args.command {
        NotesCommand::Write(a) => write(a, ctx),
        NotesCommand::Show(a) => show(a, ctx),
        NotesCommand::List(a) => list(a, ctx),
        NotesCommand::Setup(a) => crate::notes_setup_cmd::run(a, ctx),
        NotesCommand::Sync(a) => crate::notes_sync_cmd::run(a, ctx),
        NotesCommand::Promote(a) => crate::notes_promote_cmd::promote(a, ctx),
        NotesCommand::Archive(a) => crate::notes_promote_cmd::archive(a, ctx),
    }
}

/// Maps a library error to the CLI's exit codes: caller errors are 2, the rest 1.
fn lib_err(e: squad_notes::Error) -> CliError {
    if e.is_user_error() {
        CliError::usage(e.to_string())
    } else {
        CliError::failure(format!("{e:#}"))
    }
}

fn name(value: &str, what: &str) -> Result<AgentName, CliError> {
    AgentName::new(value).map_err(|e| CliError::usage(format!("{what}: {e}")))
}

fn open(ctx: &Ctx) -> Result<GixNotes, CliError> {
    ctx.repo_root()?;
    GixNotes::discover(&ctx.dir).map_err(|e| {
        CliError::usage(e.to_string()).with_hint("run inside a git repository or pass -C <path>")
    })
}

fn resolve(backend: &GixNotes, rev: &str) -> Result<Oid, CliError> {
    backend.resolve_commit(rev).map_err(lib_err)
}

fn build_entry(args: &WriteArgs, agent: &AgentName) -> Result<NoteEntry, CliError> {
    let kind: NoteType = args
        .kind
        .parse()
        .map_err(|e: squad_model::Error| CliError::usage(e.to_string()))?;
    let mut obj = Map::new();
    obj.insert("id".into(), Value::String(EntryId::generate().to_string()));
    obj.insert("agent".into(), Value::String(agent.to_string()));
    obj.insert(
        "timestamp".into(),
        Value::String(Timestamp::now().to_string()),
    );
    obj.insert("type".into(), Value::String(kind.to_string()));
    if let Some(fields) = &args.fields {
        let value: Value = serde_json::from_str(fields)
            .map_err(|e| CliError::usage(format!("--fields is not valid JSON: {e}")))?;
        let Value::Object(fields) = value else {
            return Err(CliError::usage("--fields must be a JSON object"));
        };
        for (key, value) in fields {
            let fixed = match key.as_str() {
                "agent" => Some(agent.as_str()),
                "type" => Some(kind.as_str()),
                _ => None,
            };
            if let Some(fixed) = fixed
                && value.as_str() != Some(fixed)
            {
                return Err(CliError::usage(format!(
                    "--fields sets {key:?} to {value}, which contradicts --{} {fixed}",
                    if key == "type" { "type" } else { "agent" }
                )));
            }
            obj.insert(key, value);
        }
    }
    if let Some(content) = &args.content {
        obj.insert("content".into(), Value::String(content.clone()));
    }
    if args.promote {
        obj.insert("promote_to_permanent".into(), Value::Bool(true));
    }
    if args.archive {
        obj.insert("archive_on_close".into(), Value::Bool(true));
    }
    NoteEntry::from_value(Value::Object(obj))
        .map_err(|e| CliError::usage(format!("invalid note entry: {e}")))
}

fn write(args: &WriteArgs, ctx: &Ctx) -> CmdResult {
    let agent = name(&args.agent, "--agent")?;
    let namespace = match &args.namespace {
        Some(ns) => name(ns, "--namespace")?,
        None => agent.clone(),
    };
    let entry = build_entry(args, &agent)?;
    let backend = open(ctx)?;
    let commit = resolve(&backend, &args.commit)?;
    Notes::new(backend)
        .write(&namespace, &commit, &entry)
        .map_err(lib_err)?;
    if ctx.json {
        ctx.print_json(&entry.to_value())?;
    } else {
        outln!(ctx, "{}", entry.id)?;
    }
    Ok(0)
}

fn show(args: &ShowArgs, ctx: &Ctx) -> CmdResult {
    let namespace = name(&args.agent, "--agent")?;
    let backend = open(ctx)?;
    let commit = resolve(&backend, &args.rev)?;
    let note = Notes::new(backend)
        .show(&namespace, &commit)
        .map_err(lib_err)?;
    for u in &note.unparsed {
        errln!("warning: {commit} line {}: {}", u.line, u.error);
    }
    if ctx.json {
        ctx.print_json(&Value::Array(
            note.entries.iter().map(NoteEntry::to_value).collect(),
        ))?;
    } else {
        for e in &note.entries {
            outln!(ctx, "{} {} {} {}", e.timestamp, e.agent, e.kind, e.id)?;
            let text = e
                .content
                .as_deref()
                .or(e.decision.as_deref())
                .or(e.topic.as_deref());
            if let Some(text) = text {
                for line in text.lines() {
                    outln!(ctx, "    {line}")?;
                }
            }
        }
    }
    Ok(0)
}

fn list(args: &ListArgs, ctx: &Ctx) -> CmdResult {
    let namespace = name(&args.agent, "--agent")?;
    let backend = open(ctx)?;
    let all = Notes::new(backend).read_all(&namespace).map_err(lib_err)?;
    if ctx.json {
        ctx.print_json(&Value::Array(
            all.iter()
                .map(|(commit, note)| {
                    serde_json::json!({"commit": commit.as_str(), "entries": note.entries.len()})
                })
                .collect(),
        ))?;
    } else {
        for (commit, note) in &all {
            outln!(ctx, "{commit} {}", note.entries.len())?;
        }
    }
    Ok(0)
}
