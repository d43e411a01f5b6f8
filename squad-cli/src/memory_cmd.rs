//! `squad memory spawn|scribe|validate`: tiered agent memory (squad-memory).

use squad_memory::{
    Budget, ErrorKind, ExtractiveSummarizer, FsStore, LoadPlan, Problem, Scribe, ScribeConfig,
    Situation, TopicName, Touch,
};
use squad_model::{AgentName, Timestamp};

use crate::ctx::{CliError, CmdResult, Ctx, outln};

/// Arguments of `squad memory`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Example:\n  squad memory spawn --agent data --situation resuming --task \"finish the login fix\""
)]
pub(crate) struct Args {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Debug, clap::Subcommand)]
enum Cmd {
    /// Print the `## Memory Context` block for a spawn prompt (hot tier, plus what the situation
    /// or the flags add), within budget.
    #[command(
        after_help = "Example:\n  squad memory spawn --agent data --situation implementing-spec --include-wiki auth --json"
    )]
    Spawn(SpawnArgs),
    /// End of session: hot -> cold, TTL sweep to the archive, cold -> wiki promotion. Never
    /// deletes an entry; one Scribe at a time.
    #[command(
        after_help = "Example:\n  squad memory scribe --agent data --now 2026-11-30T18:00:00Z --json"
    )]
    Scribe(ScribeArgs),
    /// Check every memory file: names, markup, sizes. Exit 2 with one `file:line: problem` line
    /// per problem.
    #[command(after_help = "Example:\n  squad memory validate")]
    Validate,
}

#[derive(Debug, clap::Args)]
struct SpawnArgs {
    /// The agent being spawned.
    #[arg(long, value_name = "name")]
    agent: String,
    /// new-task (default), resuming, debugging, implementing-spec, onboarding, post-incident.
    #[arg(long, value_name = "s", default_value = "new-task")]
    situation: String,
    /// Load the cold tier whatever the situation.
    #[arg(long)]
    include_cold: bool,
    /// Load this wiki topic (repeatable).
    #[arg(long, value_name = "topic")]
    include_wiki: Vec<String>,
    /// The task text, used to rank cold entries and wiki documents.
    #[arg(long, value_name = "text")]
    task: Option<String>,
    /// Read-only: do not record `last_loaded` on the cold entries loaded (no TTL refresh).
    #[arg(long)]
    no_touch: bool,
    /// The time recorded as `last_loaded` (RFC 3339 UTC; default: now).
    #[arg(long, value_name = "rfc3339")]
    now: Option<String>,
}

#[derive(Debug, clap::Args)]
struct ScribeArgs {
    /// The agent whose session ends.
    #[arg(long, value_name = "name")]
    agent: String,
    /// The Scribe's clock (RFC 3339 UTC; default: now).
    #[arg(long, value_name = "rfc3339")]
    now: Option<String>,
}

pub(crate) fn run(args: &Args, ctx: &Ctx) -> CmdResult {
    let state_dir = match &args.cmd {
        Cmd::Scribe(_) => ctx.state_dir()?,
        Cmd::Spawn(_) | Cmd::Validate => ctx.existing_state_dir()?,
    };
    let root = state_dir.join("memory");
    let store = FsStore::new(&root);
    match &args.cmd {
        Cmd::Spawn(a) => spawn(a, ctx, &store),
        Cmd::Scribe(a) => scribe(a, ctx, &store),
        Cmd::Validate => validate(ctx, &store),
    }
}

fn display_path(ctx: &Ctx, store: &FsStore, file: &str) -> String {
    let full = store.root().join(file);
    full.strip_prefix(&ctx.dir)
        .unwrap_or(&full)
        .display()
        .to_string()
}

fn problem_line(ctx: &Ctx, store: &FsStore, p: &Problem) -> String {
    format!(
        "{}:{}: {}",
        display_path(ctx, store, &p.file),
        p.line,
        p.message
    )
}

fn lib_error(ctx: &Ctx, store: &FsStore, e: &squad_memory::Error) -> CliError {
    let message = if e.problems().is_empty() {
        e.to_string()
    } else {
        let lines: Vec<String> = e
            .problems()
            .iter()
            .map(|p| problem_line(ctx, store, p))
            .collect();
        format!("malformed memory file\n{}", lines.join("\n"))
    };
    match e.kind() {
        ErrorKind::Locked => CliError::failure(message)
            .with_hint("another `squad memory scribe` is running; try again when it finishes"),
        _ if e.is_user_error() => CliError::usage(message),
        _ => CliError::failure(format!("{e:#}")),
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
        None => Ok(Timestamp::now()),
    }
}

fn spawn(a: &SpawnArgs, ctx: &Ctx, store: &FsStore) -> CmdResult {
    let who = agent(&a.agent)?;
    let situation: Situation = a
        .situation
        .parse()
        .map_err(|e: squad_memory::Error| CliError::usage(e.to_string()))?;
    let mut plan = LoadPlan::new(situation);
    plan.include_cold = a.include_cold;
    for t in &a.include_wiki {
        let topic = TopicName::new(t.as_str()).map_err(|e| CliError::usage(e.to_string()))?;
        plan = plan.include_wiki(topic);
    }
    plan.task = a.task.clone();
    let touch = if a.no_touch {
        Touch::No
    } else {
        Touch::At(now(a.now.as_deref())?)
    };
    let out = squad_memory::spawn(store, &who, &plan, &Budget::default(), touch)
        .map_err(|e| lib_error(ctx, store, &e))?;
    if ctx.json {
        let v = serde_json::to_value(&out)
            .map_err(|e| CliError::failure(format!("cannot encode the manifest: {e}")))?;
        ctx.print_json(&v)?;
    } else {
        ctx.out(format_args!("{}", out.prompt))?;
    }
    Ok(0)
}

fn scribe(a: &ScribeArgs, ctx: &Ctx, store: &FsStore) -> CmdResult {
    let who = agent(&a.agent)?;
    let at = now(a.now.as_deref())?;
    let summarizer = ExtractiveSummarizer::default();
    let report = Scribe::new(store, &summarizer, ScribeConfig::default())
        .run(&who, at)
        .map_err(|e| lib_error(ctx, store, &e))?;
    if ctx.json {
        let v = serde_json::to_value(&report)
            .map_err(|e| CliError::failure(format!("cannot encode the report: {e}")))?;
        ctx.print_json(&v)?;
    } else {
        let moved: Vec<String> = report
            .moved
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        outln!(
            ctx,
            "entries before {} = kept {} + moved {} + merged {}; created {} from {} hot line(s); after {}",
            report.before,
            report.kept,
            report.moved_total(),
            report.merged,
            report.created,
            report.summarized_lines,
            report.after
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
    let problems =
        squad_memory::validate(store, &Budget::default()).map_err(|e| lib_error(ctx, store, &e))?;
    if ctx.json {
        let list: Vec<serde_json::Value> = problems
            .iter()
            .map(|p| {
                serde_json::json!({
                    "file": display_path(ctx, store, &p.file),
                    "line": p.line,
                    "message": p.message,
                })
            })
            .collect();
        ctx.print_json(&serde_json::json!({ "ok": problems.is_empty(), "problems": list }))?;
    } else {
        for p in &problems {
            outln!(ctx, "{}", problem_line(ctx, store, p))?;
        }
    }
    if problems.is_empty() {
        Ok(0)
    } else {
        Err(CliError::usage(format!(
            "{} problem(s) in memory files",
            problems.len()
        )))
    }
}
