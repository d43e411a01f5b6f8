//! `squad memory`: tiered agent memory (squad-memory).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use squad_memory::{
    Budget, Entry, ErrorKind, ExtractiveSummarizer, FsStore, ImportOptions, ImportSource,
    ImportTarget, Kind, LeftOutDetail, LoadPlan, MAX_FILE_BYTES, MemoryId, Problem, Scribe,
    ScribeConfig, Situation, Tier, TopicName, Touch,
};
use squad_model::{AgentName, Timestamp};

use crate::ctx::{CliError, CmdResult, Ctx, count, errln, outln};

const MEMORY_HELP: &str = "\
Layout (under the state directory, .squad/ by default):
  memory/hot/<agent>.md      the current session; every spawn loads it (cap 4 KiB)
  memory/cold/<agent>.md     past sessions and imported history; the relevant sections load
                             when the situation needs history (cap 64 KiB; hot + cold in a
                             prompt at most 16 KiB)
  memory/wiki/<topic>.md     durable reference (decisions, conventions); relevant sections load
                             by task, or a whole topic with --include-wiki (cap 20 KiB each)
  memory/archive/<agent>.md  aged entries: never deleted, searchable, loaded when relevant

Entry format (Markdown, read line by line): every `### ` heading opens an entry, in any shape
(`### 2026-03-14: Title`, `### Title (#977) (2026-05-01)`, `### 1. Title`, `### Title`); a date
in the heading is read out of it, the heading and body are kept verbatim. `#`/`##` headings and
the text under them are free text (`##` groups the entries below it). Field lines right after a
heading: **id:**, **superseded_by:**, **topic:**, **entered:**, **last_loaded:**, **merged:**.
An entry ends at `---`, at the next heading, or at the end of the file. The seed's hot template
(`Current task: ...`, `Active decisions: ...`) is plain free text.

Example: from an existing history.md to a first tiered spawn in three commands:
  squad memory import --agent data .squad/agents/data/history.md
  squad memory import --wiki decisions .squad/decisions.md
  squad memory spawn --agent data --situation resuming --task \"finish the login fix\"";

/// Arguments of `squad memory`.
#[derive(Debug, clap::Args)]
#[command(after_help = MEMORY_HELP)]
pub(crate) struct Args {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Debug, clap::Subcommand)]
enum Cmd {
    /// Print the `## Memory Context` block for a spawn prompt: hot, plus the sections of cold,
    /// the archive and the wiki most relevant to the task (or the newest, without a task), as
    /// the situation or the flags include them. Reads only.
    #[command(
        after_help = "Example:\n  squad memory spawn --agent data --situation debugging --task \"the staging deploy times out again\" --json"
    )]
    Spawn(SpawnArgs),
    /// End of session: hot moves to cold verbatim (with summaries added), cold past its TTL
    /// goes to the archive (structured entries to the wiki), duplicates are merged, caps kept.
    /// Never deletes a line; one Scribe at a time.
    #[command(
        after_help = "Example:\n  squad memory scribe --agent data --now 2026-11-30T18:00:00Z --json"
    )]
    Scribe(ScribeArgs),
    /// Check every memory file: names, symlinks, encoding, field lines, sizes; warn about
    /// missing or stale search indexes. Exit 2 with one `file:line: problem` line per problem;
    /// warnings are printed too.
    #[command(after_help = "Example:\n  squad memory validate")]
    Validate,
    /// Bring existing Markdown memory (an agent's history.md, the team's decisions.md, any
    /// heading style) into the tiers. Every line lands somewhere; importing twice changes
    /// nothing.
    #[command(
        after_help = "Example:\n  squad memory import --agent data .squad/agents/data/history.md --dry-run\n  squad memory import --wiki decisions .squad/decisions.md"
    )]
    Import(ImportArgs),
    /// Add one entry to an agent's hot tier (refused when hot would go over its cap: run the
    /// Scribe first). Prints the entry id.
    #[command(
        after_help = "Example:\n  squad memory add --agent data --kind decision --title \"keep RS256\" --body-file notes.md"
    )]
    Add(AddArgs),
    /// Mark an entry as superseded by another: it stays in its file and never loads again.
    #[command(after_help = "Example:\n  squad memory supersede d-0042 --by d-0051")]
    Supersede(SupersedeArgs),
    /// Ranked search over an agent's hot, cold and archive and the wiki, with scores.
    #[command(
        after_help = "Example:\n  squad memory search --agent data \"deploy timeout\" --tier archive --limit 5"
    )]
    Search(SearchInput),
    /// Print one entry, whatever its tier.
    #[command(after_help = "Example:\n  squad memory show h-3f9a0c12d4e5 --json")]
    Show(ShowArgs),
    /// Rebuild the search index of every cold, archive and wiki file (`memory/.index/`), which
    /// makes a spawn with a task faster. Every write keeps it current; run this after editing
    /// memory files by hand. A spawn never needs it, and gives the same output without it.
    #[command(after_help = "Example:\n  squad memory index")]
    Index(IndexArgs),
}

#[derive(Debug, clap::Args)]
struct IndexArgs {
    #[command(flatten)]
    lock: LockArgs,
}

/// Why an agent is spawned (the load matrix row).
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    clap::ValueEnum,
    serde::Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum SituationArg {
    /// Hot only.
    #[default]
    NewTask,
    /// Hot and cold.
    Resuming,
    /// Hot and cold.
    Debugging,
    /// Hot and wiki.
    ImplementingSpec,
    /// Hot and wiki.
    Onboarding,
    /// Hot, cold and wiki.
    PostIncident,
}

impl From<SituationArg> for Situation {
    fn from(s: SituationArg) -> Self {
        match s {
            SituationArg::NewTask => Situation::NewTask,
            SituationArg::Resuming => Situation::Resuming,
            SituationArg::Debugging => Situation::Debugging,
            SituationArg::ImplementingSpec => Situation::ImplementingSpec,
            SituationArg::Onboarding => Situation::Onboarding,
            SituationArg::PostIncident => Situation::PostIncident,
        }
    }
}

/// What an entry records.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum KindArg {
    Decision,
    Convention,
    Contract,
    Action,
    Blocker,
    Note,
    Memory,
    Directive,
}

impl From<KindArg> for Kind {
    fn from(k: KindArg) -> Self {
        match k {
            KindArg::Decision => Kind::Decision,
            KindArg::Convention => Kind::Convention,
            KindArg::Contract => Kind::Contract,
            KindArg::Action => Kind::Action,
            KindArg::Blocker => Kind::Blocker,
            KindArg::Note => Kind::Note,
            KindArg::Memory => Kind::Memory,
            KindArg::Directive => Kind::Directive,
        }
    }
}

/// A memory tier.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum TierArg {
    Hot,
    Cold,
    Wiki,
    Archive,
}

impl From<TierArg> for Tier {
    fn from(t: TierArg) -> Self {
        match t {
            TierArg::Hot => Tier::Hot,
            TierArg::Cold => Tier::Cold,
            TierArg::Wiki => Tier::Wiki,
            TierArg::Archive => Tier::Archive,
        }
    }
}

/// How long a writer waits for the memory lock (`--lock-timeout`).
#[derive(Debug, Clone, Copy, clap::Args)]
struct LockArgs {
    /// How long to wait in line for the memory lock, in seconds (0 to 3600): writers take
    /// turns in the order they arrive; when the wait runs out, exit 1 naming the holder.
    #[arg(long, value_name = "secs", default_value_t = DEFAULT_LOCK_TIMEOUT,
          allow_negative_numbers = true, value_parser = crate::ctx::bounded(0, MAX_LOCK_TIMEOUT))]
    lock_timeout: u64,
}

/// The default `--lock-timeout` (seconds).
const DEFAULT_LOCK_TIMEOUT: u64 = 30;
/// The largest `--lock-timeout` (seconds).
const MAX_LOCK_TIMEOUT: u64 = 3600;

fn default_lock_timeout() -> u64 {
    DEFAULT_LOCK_TIMEOUT
}

#[derive(Debug, clap::Args)]
struct SpawnArgs {
    #[command(flatten)]
    input: SpawnInput,
    #[command(flatten)]
    lock: LockArgs,
    /// Record `last_loaded` on the cold entries loaded (restarts their TTL; the one write a
    /// spawn can make, under the Scribe lock).
    #[arg(long, conflicts_with = "no_touch")]
    touch: bool,
    /// Read-only (the default; kept for scripts that pass it).
    #[arg(long)]
    no_touch: bool,
    /// The time recorded by --touch (RFC 3339 UTC; default: now).
    #[arg(long, value_name = "rfc3339")]
    now: Option<String>,
}

/// What `squad memory spawn` and the MCP tool `memory_context` take.
#[derive(Debug, clap::Args, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SpawnInput {
    /// The agent being spawned.
    #[arg(long, value_name = "name")]
    pub(crate) agent: String,
    /// Why the agent is spawned; decides which tiers load (default new-task).
    #[arg(long, value_name = "situation", value_enum, default_value = "new-task")]
    #[serde(default)]
    pub(crate) situation: SituationArg,
    /// Load the cold tier whatever the situation.
    #[arg(long)]
    #[serde(default)]
    pub(crate) include_cold: bool,
    /// Load this wiki topic whole (repeatable).
    #[arg(long, value_name = "topic")]
    #[serde(default)]
    pub(crate) include_wiki: Vec<String>,
    /// The task text: cold, archive and wiki sections are ranked against it.
    #[arg(long, value_name = "text")]
    #[serde(default)]
    pub(crate) task: Option<String>,
}

#[derive(Debug, clap::Args)]
struct ScribeArgs {
    /// The agent whose session ends.
    #[arg(long, value_name = "name")]
    agent: String,
    /// The Scribe's clock (RFC 3339 UTC; default: now).
    #[arg(long, value_name = "rfc3339")]
    now: Option<String>,
    #[command(flatten)]
    lock: LockArgs,
}

#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("target").required(true).args(["agent", "wiki"])))]
struct ImportArgs {
    /// Import into this agent's tiers (hot template lines to hot, the rest to cold).
    #[arg(long, value_name = "name")]
    agent: Option<String>,
    /// Import into this wiki topic (`decisions` for decisions.md).
    #[arg(long, value_name = "topic")]
    wiki: Option<String>,
    /// The Markdown files to import.
    #[arg(value_name = "file", required = true)]
    files: Vec<PathBuf>,
    /// Print the plan; write nothing.
    #[arg(long)]
    dry_run: bool,
    /// The time recorded as `entered` (RFC 3339 UTC; default: now).
    #[arg(long, value_name = "rfc3339")]
    now: Option<String>,
    #[command(flatten)]
    lock: LockArgs,
}

#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("text").args(["body", "body_file"])))]
struct AddArgs {
    #[command(flatten)]
    input: AddInput,
    /// Read the body from a file (`-` for stdin).
    #[arg(long, value_name = "file")]
    body_file: Option<PathBuf>,
    /// The entry's date (RFC 3339 UTC; default: now).
    #[arg(long, value_name = "rfc3339")]
    now: Option<String>,
}

/// What `squad memory add` and the MCP tool `memory_add` take.
#[derive(Debug, clap::Args, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct AddInput {
    /// The agent whose hot tier gets the entry.
    #[arg(long, value_name = "name")]
    pub(crate) agent: String,
    /// What the entry records.
    #[arg(long, value_name = "kind", value_enum)]
    pub(crate) kind: KindArg,
    /// One line.
    #[arg(long, value_name = "text")]
    pub(crate) title: String,
    /// The body (Markdown).
    #[arg(long, value_name = "text")]
    #[serde(default)]
    pub(crate) body: Option<String>,
    /// How long to wait in line for the memory lock, in seconds (0 to 3600; default 30):
    /// writers take turns in the order they arrive; when the wait runs out, the error names
    /// the holder.
    #[arg(long, value_name = "secs", default_value_t = DEFAULT_LOCK_TIMEOUT,
          allow_negative_numbers = true, value_parser = crate::ctx::bounded(0, MAX_LOCK_TIMEOUT))]
    #[serde(default = "default_lock_timeout")]
    #[schemars(range(min = 0, max = 3600), default = "default_lock_timeout")]
    pub(crate) lock_timeout: u64,
}

#[derive(Debug, clap::Args)]
struct SupersedeArgs {
    /// The entry that is replaced.
    #[arg(value_name = "id")]
    id: String,
    /// The entry that replaces it.
    #[arg(long, value_name = "id")]
    by: String,
    #[command(flatten)]
    lock: LockArgs,
}

/// What `squad memory search` and the MCP tool `memory_search` take.
#[derive(Debug, clap::Args, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SearchInput {
    /// The agent whose hot, cold and archive are searched (with the wiki).
    #[arg(long, value_name = "name")]
    pub(crate) agent: String,
    /// What to look for.
    #[arg(value_name = "query")]
    pub(crate) query: String,
    /// Search only this tier (repeatable).
    #[arg(long, value_name = "tier", value_enum)]
    #[serde(default)]
    pub(crate) tier: Vec<TierArg>,
    /// At most this many results (1 to 1000; default 10).
    #[arg(long, value_name = "n", default_value_t = 10, allow_negative_numbers = true,
          value_parser = crate::ctx::bounded(1, MAX_LIMIT))]
    #[serde(default = "default_limit")]
    #[schemars(range(min = 1, max = 1000), default = "default_limit")]
    pub(crate) limit: u64,
}

/// The largest `--limit` of `memory search`.
const MAX_LIMIT: u64 = 1000;

fn default_limit() -> u64 {
    10
}

#[derive(Debug, clap::Args)]
struct ShowArgs {
    /// The entry id.
    #[arg(value_name = "id")]
    id: String,
}

pub(crate) fn run(args: &Args, ctx: &Ctx) -> CmdResult {
    let state_dir = match &args.cmd {
        Cmd::Scribe(_) | Cmd::Import(_) | Cmd::Add(_) | Cmd::Supersede(_) | Cmd::Index(_) => {
            ctx.state_dir()?
        }
        Cmd::Spawn(a) if a.touch => ctx.state_dir()?,
        Cmd::Spawn(_) | Cmd::Validate | Cmd::Search(_) | Cmd::Show(_) => {
            ctx.existing_state_dir()?
        }
    };
    let store = FsStore::new(&state_dir);
    // Writers wait in line for the memory lock; the ticket names the command for whoever gives
    // up waiting behind it.
    let writer = |secs: u64, command: String| writer_store(&state_dir, secs, command);
    match &args.cmd {
        Cmd::Spawn(a) => spawn(
            a,
            ctx,
            &writer(
                a.lock.lock_timeout,
                format!("squad memory spawn --touch --agent {}", a.input.agent),
            )?,
        ),
        Cmd::Scribe(a) => scribe(
            a,
            ctx,
            &writer(
                a.lock.lock_timeout,
                format!("squad memory scribe --agent {}", a.agent),
            )?,
        ),
        Cmd::Validate => validate(ctx, &store),
        Cmd::Import(a) => {
            let target = match (&a.agent, &a.wiki) {
                (Some(name), _) => format!("--agent {name}"),
                (None, Some(t)) => format!("--wiki {t}"),
                (None, None) => String::new(),
            };
            import(
                a,
                ctx,
                &writer(a.lock.lock_timeout, format!("squad memory import {target}"))?,
            )
        }
        Cmd::Add(a) => add(
            a,
            ctx,
            &writer(
                a.input.lock_timeout,
                format!("squad memory add --agent {}", a.input.agent),
            )?,
        ),
        Cmd::Supersede(a) => supersede(
            a,
            ctx,
            &writer(
                a.lock.lock_timeout,
                format!("squad memory supersede {} --by {}", a.id, a.by),
            )?,
        ),
        Cmd::Search(a) => search(a, ctx, &store),
        Cmd::Show(a) => show(a, ctx, &store),
        Cmd::Index(a) => index(
            ctx,
            &writer(a.lock.lock_timeout, "squad memory index".to_owned())?,
        ),
    }
}

fn index(ctx: &Ctx, store: &FsStore) -> CmdResult {
    let done = {
        let _lock =
            squad_memory::MemoryStore::lock(store).map_err(|e| lib_error(ctx, store, &e))?;
        store.reindex().map_err(|e| lib_error(ctx, store, &e))?
    };
    if ctx.json {
        ctx.print_json(&serde_json::json!({
            "ok": done.failed.is_empty(),
            "indexed": done.indexed,
            "failed": problems_json(ctx, store, &done.failed),
        }))?;
    } else {
        outln!(ctx, "indexed {}", count(done.indexed, "memory file"))?;
    }
    if done.failed.is_empty() {
        return Ok(0);
    }
    let lines: Vec<String> = done
        .failed
        .iter()
        .map(|p| problem_line(ctx, store, p))
        .collect();
    Err(CliError::failure(format!(
        "{} not written: {}",
        count(done.failed.len(), "search index"),
        lines.join("; ")
    ))
    .with_hint(
        "squad never writes through a link inside the state directory: remove the link (an \
         index is derived data), then run `squad memory index` again",
    ))
}

/// The store of a command that writes: it waits up to `secs` (0 to 3600) for the memory lock,
/// in line, and names itself `command` in its ticket.
pub(crate) fn writer_store(
    state_dir: &Path,
    secs: u64,
    command: String,
) -> Result<FsStore, CliError> {
    if secs > MAX_LOCK_TIMEOUT {
        return Err(CliError::usage(format!(
            "lock timeout: {secs} is out of range (0 to {MAX_LOCK_TIMEOUT} seconds)"
        )));
    }
    Ok(FsStore::new(state_dir)
        .with_lock_wait(Duration::from_secs(secs))
        .with_lock_command(command))
}

fn display_path(ctx: &Ctx, store: &FsStore, file: &str) -> String {
    let full = if file.is_empty() {
        store.root()
    } else {
        store.root().join(file)
    };
    full.strip_prefix(&ctx.dir)
        .unwrap_or(&full)
        .display()
        .to_string()
}

fn problem_line(ctx: &Ctx, store: &FsStore, p: &Problem) -> String {
    let mut p = p.clone();
    p.file = display_path(ctx, store, &p.file);
    p.to_string()
}

/// Problems as `--json` prints them: `[{"file", "line", "message", "level"}]`.
fn problems_json(ctx: &Ctx, store: &FsStore, problems: &[Problem]) -> Vec<serde_json::Value> {
    problems
        .iter()
        .map(|p| {
            serde_json::json!({
                "file": display_path(ctx, store, &p.file),
                "line": p.line,
                "message": p.message,
                "level": p.level,
            })
        })
        .collect()
}

fn warn_all(ctx: &Ctx, store: &FsStore, problems: &[Problem]) {
    for p in problems {
        let line = problem_line(ctx, store, p);
        if p.is_error() {
            errln!("warning: skipped: {line}");
        } else {
            errln!("{line}");
        }
    }
}

fn lib_error(ctx: &Ctx, store: &FsStore, e: &squad_memory::Error) -> CliError {
    let message = if e.problems().is_empty() {
        e.to_string()
    } else {
        e.problems()
            .iter()
            .map(|p| problem_line(ctx, store, p))
            .collect::<Vec<_>>()
            .join("; ")
    };
    match e.kind() {
        // The message names the holder and the wait; the hint only says what to do.
        ErrorKind::Locked => CliError::failure(message).with_hint(
            "try again once it finishes, or wait longer (--lock-timeout <secs>, up to 3600)",
        ),
        _ if e.is_user_error() => CliError::usage(message),
        _ => CliError::failure(crate::ctx::with_sources(&e)),
    }
}

fn agent(name: &str) -> Result<AgentName, CliError> {
    AgentName::new(name).map_err(|e| CliError::usage(e.to_string()))
}

fn now(value: Option<&str>) -> Result<Timestamp, CliError> {
    match value {
        Some(v) => v
            .parse()
            .map_err(|e: squad_model::Error| CliError::usage(format!("--now: {e}"))),
        // Whole seconds: the files show the time, and a reader needs no more.
        None => Timestamp::from_unix_seconds(Timestamp::now().unix_seconds())
            .map_err(|e| CliError::failure(format!("cannot read the clock: {e}"))),
    }
}

fn json(ctx: &Ctx, value: &impl serde::Serialize) -> Result<(), CliError> {
    ctx.print_json(&to_json(value)?)
}

/// Reads a file the user names, refusing one over the memory file cap and naming the line of
/// the first bytes that are not UTF-8.
fn read_text(ctx: &Ctx, path: &Path, what: &str) -> Result<String, CliError> {
    let bytes = if path == Path::new("-") {
        let mut buf = Vec::new();
        std::io::stdin()
            .lock()
            .take(MAX_FILE_BYTES + 1)
            .read_to_end(&mut buf)
            .map_err(|e| CliError::failure(format!("cannot read {what} from stdin: {e}")))?;
        buf
    } else {
        let full = ctx.resolve(path);
        let meta = std::fs::metadata(&full)
            .map_err(|e| CliError::usage(format!("cannot read {}: {e}", path.display())))?;
        if !meta.is_file() {
            return Err(CliError::usage(format!(
                "{} is not a regular file",
                path.display()
            )));
        }
        if meta.len() > MAX_FILE_BYTES {
            return Err(CliError::usage(format!(
                "{} is {} bytes; {what} may hold at most {MAX_FILE_BYTES} bytes",
                path.display(),
                meta.len()
            )));
        }
        let f = std::fs::File::open(&full)
            .map_err(|e| CliError::usage(format!("cannot read {}: {e}", path.display())))?;
        let mut buf = Vec::new();
        f.take(MAX_FILE_BYTES + 1)
            .read_to_end(&mut buf)
            .map_err(|e| CliError::failure(format!("cannot read {}: {e}", path.display())))?;
        buf
    };
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(CliError::usage(format!(
            "{} is over {MAX_FILE_BYTES} bytes; {what} may hold at most that",
            path.display()
        )));
    }
    String::from_utf8(bytes).map_err(|e| {
        let line = 1 + e.as_bytes()[..e.utf8_error().valid_up_to()]
            .iter()
            .filter(|b| **b == b'\n')
            .count();
        CliError::usage(format!("{}:{line}: not valid UTF-8", path.display()))
    })
}

fn spawn(a: &SpawnArgs, ctx: &Ctx, store: &FsStore) -> CmdResult {
    let touch = if a.touch {
        Touch::At(now(a.now.as_deref())?)
    } else {
        Touch::No
    };
    // The text is the prompt alone: the left-out list is only counted, for its notices.
    let detail = if ctx.json {
        LeftOutDetail::Full
    } else {
        LeftOutDetail::Counts
    };
    let out = context(&a.input, touch, detail, ctx, store)?;
    warn_all(ctx, store, &out.manifest.skipped);
    if ctx.json {
        json(ctx, &out)?;
    } else {
        ctx.out(format_args!("{}", out.prompt))?;
    }
    Ok(0)
}

/// `memory spawn` without its printing: the prompt block and its manifest (the `--json`
/// document, with [`LeftOutDetail::Full`]).
pub(crate) fn context(
    a: &SpawnInput,
    touch: Touch,
    detail: LeftOutDetail,
    ctx: &Ctx,
    store: &FsStore,
) -> Result<squad_memory::Rendered, CliError> {
    let who = agent(&a.agent)?;
    let mut plan = LoadPlan::new(a.situation.into());
    plan.include_cold = a.include_cold;
    for t in &a.include_wiki {
        let topic = TopicName::new(t.as_str()).map_err(|e| CliError::usage(e.to_string()))?;
        plan = plan.include_wiki(topic);
    }
    plan.task = a.task.clone();
    squad_memory::spawn_with(store, &who, &plan, &Budget::default(), touch, detail)
        .map_err(|e| lib_error(ctx, store, &e))
}

fn scribe(a: &ScribeArgs, ctx: &Ctx, store: &FsStore) -> CmdResult {
    let who = agent(&a.agent)?;
    let at = now(a.now.as_deref())?;
    let summarizer = ExtractiveSummarizer;
    let report = Scribe::new(store, &summarizer, ScribeConfig::default())
        .run(&who, at)
        .map_err(|e| lib_error(ctx, store, &e))?;
    warn_all(ctx, store, &report.warnings);
    if ctx.json {
        json(ctx, &report)?;
    } else {
        let moved: Vec<String> = report
            .moved
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        outln!(
            ctx,
            "entries before {} = kept {} + moved {} + merged {}; created {} from {}; after {}",
            report.before,
            report.kept,
            report.moved_total(),
            report.merged,
            report.created,
            count(report.summarized_lines, "hot line"),
            report.after
        )?;
        outln!(
            ctx,
            "text: {}, {} before; {}, {} after (none lost)",
            count(report.text_lines_before, "line"),
            count(report.text_bytes_before, "byte"),
            count(report.text_lines_after, "line"),
            count(report.text_bytes_after, "byte")
        )?;
        if !moved.is_empty() {
            outln!(ctx, "moved: {}", moved.join(", "))?;
        }
        for w in &report.written {
            outln!(ctx, "wrote {}", display_path(ctx, store, w))?;
        }
    }
    Ok(0)
}

fn validate(ctx: &Ctx, store: &FsStore) -> CmdResult {
    let mut problems =
        squad_memory::validate(store, &Budget::default()).map_err(|e| lib_error(ctx, store, &e))?;
    problems.extend(stale_index_warnings(store, &problems).map_err(|e| lib_error(ctx, store, &e))?);
    let errors = problems.iter().filter(|p| p.is_error()).count();
    if ctx.json {
        ctx.print_json(&serde_json::json!({
            "ok": errors == 0,
            "problems": problems_json(ctx, store, &problems),
        }))?;
    } else {
        for p in &problems {
            outln!(ctx, "{}", problem_line(ctx, store, p))?;
        }
    }
    if errors == 0 {
        Ok(0)
    } else {
        Err(
            CliError::usage(format!("{} in memory files", count(errors, "problem")))
                .with_hint("fix the files named above; `squad memory --help` describes the format"),
        )
    }
}

/// One warning per cold, archive or wiki file whose search index is missing or out of date,
/// naming the index: a spawn still works, reading the text instead (slower). A file `problems`
/// has an error for gets none: no index can be built for it until it is fixed.
fn stale_index_warnings(
    store: &FsStore,
    problems: &[Problem],
) -> Result<Vec<Problem>, squad_memory::Error> {
    Ok(store
        .stale_indexes()?
        .into_iter()
        .filter(|doc| {
            let file = doc.path();
            !problems.iter().any(|p| p.is_error() && p.file == file)
        })
        .map(|doc| {
            Problem::warning(
                FsStore::index_path(&doc),
                1,
                format!(
                    "the search index of {} is missing or out of date (a spawn reads the text \
                     instead, which is slower); run `squad memory index`",
                    doc.path()
                ),
            )
        })
        .collect())
}

fn import(a: &ImportArgs, ctx: &Ctx, store: &FsStore) -> CmdResult {
    let target = match (&a.agent, &a.wiki) {
        (Some(name), None) => ImportTarget::Agent(agent(name)?),
        (None, Some(t)) => ImportTarget::Wiki(
            TopicName::new(t.as_str()).map_err(|e| CliError::usage(e.to_string()))?,
        ),
        _ => return Err(CliError::usage("give exactly one of --agent and --wiki")),
    };
    let mut sources = Vec::new();
    for f in &a.files {
        sources.push(ImportSource {
            name: f.display().to_string(),
            text: read_text(ctx, f, "a file to import")?,
        });
    }
    let options = ImportOptions {
        dry_run: a.dry_run,
        ..ImportOptions::new(now(a.now.as_deref())?)
    };
    let bar = crate::ctx::progress_bar();
    let mut show = |p: squad_memory::ImportProgress| {
        if let Some(bar) = &bar {
            bar.set_message(import_stage(p));
            bar.set_position(p.done as u64);
            bar.tick();
        }
    };
    let result = squad_memory::import_with_progress(store, &target, &sources, &options, &mut show);
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let report = result.map_err(|e| {
        if e.problems().is_empty() {
            lib_error(ctx, store, &e)
        } else {
            // Problems in the sources name the files as given; problems in memory files name
            // them under the state directory.
            let lines: Vec<String> = e
                .problems()
                .iter()
                .map(|p| {
                    if sources.iter().any(|s| s.name == p.file) {
                        p.to_string()
                    } else {
                        problem_line(ctx, store, p)
                    }
                })
                .collect();
            CliError::usage(lines.join("; "))
        }
    })?;
    for w in &report.warnings {
        if sources.iter().any(|s| s.name == w.file) {
            errln!("{w}");
        } else {
            errln!("{}", problem_line(ctx, store, w));
        }
    }
    if ctx.json {
        json(ctx, &report)?;
    } else {
        outln!(
            ctx,
            "{} in, {} stored; {} read: {} added, {} already there; {}",
            count(report.lines_in, "line"),
            report.lines_stored,
            count(report.entries, "entry"),
            report.added,
            report.merged,
            count(report.hot_lines, "hot line")
        )?;
        let verb = if report.dry_run {
            "would write"
        } else {
            "wrote"
        };
        for p in &report.plan {
            outln!(
                ctx,
                "{verb} {} ({} -> {}, +{}, +{} of text)",
                display_path(ctx, store, &p.path),
                p.bytes_before,
                count(p.bytes_after, "byte"),
                count(p.entries_added, "entry"),
                count(p.lines_added, "line")
            )?;
        }
        if report.plan.is_empty() {
            outln!(ctx, "nothing to change")?;
        }
    }
    Ok(0)
}

/// The progress line of an import stage (the bar adds the count done).
fn import_stage(p: squad_memory::ImportProgress) -> String {
    use squad_memory::ImportStage;
    let what = match p.stage {
        ImportStage::Read => "reading files",
        ImportStage::Load => "reading memory",
        ImportStage::Place => "placing sections",
        ImportStage::Check => "checking every line is kept",
        ImportStage::Write => "writing",
        _ => "importing",
    };
    format!("memory import: {what} (of {})", p.total)
}

fn add(a: &AddArgs, ctx: &Ctx, store: &FsStore) -> CmdResult {
    agent(&a.input.agent)?;
    let body = match (&a.input.body, &a.body_file) {
        (Some(b), _) => b.clone(),
        (None, Some(f)) => read_text(ctx, f, "a body")?,
        (None, None) => String::new(),
    };
    let added = add_entry(&a.input, body, now(a.now.as_deref())?, ctx, store)?;
    if ctx.json {
        json(ctx, &added)?;
    } else {
        outln!(ctx, "{}", added.id)?;
    }
    Ok(0)
}

/// `memory add` without its printing: adds the entry with `body` (the CLI reads `--body-file`
/// first) dated `at`, and returns it (the `--json` document).
pub(crate) fn add_entry(
    a: &AddInput,
    body: String,
    at: Timestamp,
    ctx: &Ctx,
    store: &FsStore,
) -> Result<Entry, CliError> {
    let who = agent(&a.agent)?;
    if a.title.trim().is_empty() {
        return Err(CliError::usage("--title must not be empty"));
    }
    let entry = Entry::new(at, a.kind.into(), &a.title).with_body(body);
    squad_memory::add(store, &who, entry, &Budget::default()).map_err(|e| lib_error(ctx, store, &e))
}

/// The clock as `memory add` records it (whole seconds).
pub(crate) fn now_secs() -> Result<Timestamp, CliError> {
    now(None)
}

fn id(text: &str) -> Result<MemoryId, CliError> {
    MemoryId::new(text).map_err(|e| CliError::usage(e.to_string()))
}

fn supersede(a: &SupersedeArgs, ctx: &Ctx, store: &FsStore) -> CmdResult {
    let found = squad_memory::supersede(store, &id(&a.id)?, &id(&a.by)?)
        .map_err(|e| lib_error(ctx, store, &e))?;
    if ctx.json {
        json(ctx, &found)?;
    } else {
        outln!(
            ctx,
            "{} is superseded by {} ({})",
            a.id,
            a.by,
            display_path(ctx, store, &found.path)
        )?;
    }
    Ok(0)
}

fn search(a: &SearchInput, ctx: &Ctx, store: &FsStore) -> CmdResult {
    let hits = search_hits(a, ctx, store)?;
    if ctx.json {
        json(ctx, &hits)?;
    } else {
        for h in &hits {
            outln!(
                ctx,
                "{:>6.2}  {:<7} {}  {}:{}  {}{}",
                h.score,
                h.tier.as_str(),
                h.id.as_deref().unwrap_or("-"),
                display_path(ctx, store, &h.path),
                h.line,
                h.title,
                if h.superseded { " (superseded)" } else { "" }
            )?;
        }
        if hits.is_empty() {
            outln!(ctx, "no match")?;
        }
    }
    Ok(0)
}

/// `memory search` without its printing: the ranked hits (the `--json` document).
pub(crate) fn search_hits(
    a: &SearchInput,
    ctx: &Ctx,
    store: &FsStore,
) -> Result<Vec<squad_memory::Hit>, CliError> {
    let who = agent(&a.agent)?;
    if !(1..=MAX_LIMIT).contains(&a.limit) {
        return Err(CliError::usage(format!(
            "--limit: {} is out of range (1 to {MAX_LIMIT})",
            a.limit
        )));
    }
    let tiers: Vec<Tier> = a.tier.iter().map(|t| (*t).into()).collect();
    let limit = usize::try_from(a.limit).unwrap_or(usize::MAX);
    squad_memory::search(store, &who, &a.query, &tiers, limit)
        .map_err(|e| lib_error(ctx, store, &e))
}

/// The serialized form of a library value, for `--json` and tool results.
pub(crate) fn to_json(value: &impl serde::Serialize) -> Result<serde_json::Value, CliError> {
    serde_json::to_value(value)
        .map_err(|e| CliError::failure(format!("cannot encode the output: {e}")))
}

fn show(a: &ShowArgs, ctx: &Ctx, store: &FsStore) -> CmdResult {
    let found = squad_memory::show(store, &id(&a.id)?).map_err(|e| lib_error(ctx, store, &e))?;
    if ctx.json {
        let mut v = serde_json::to_value(&found.entry)
            .map_err(|e| CliError::failure(format!("cannot encode the entry: {e}")))?;
        if let Some(o) = v.as_object_mut() {
            o.insert("tier".into(), serde_json::json!(found.tier));
            o.insert("path".into(), serde_json::json!(found.path));
        }
        ctx.print_json(&v)?;
    } else {
        outln!(
            ctx,
            "{} ({} tier, {})",
            found.entry.id,
            found.tier.as_str(),
            display_path(ctx, store, &found.path)
        )?;
        ctx.out(format_args!("{}", found.entry.prompt_text()))?;
    }
    Ok(0)
}
