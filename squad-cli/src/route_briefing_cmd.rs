//! `squad route briefing`: the leader briefing for a squad, from a trace's final state or from
//! a database that `squad route replay --db` keeps. Also the MCP tool `route_briefing`.

use std::path::{Path, PathBuf};

use squad_model::SquadId;
use squad_routing::briefing::BriefingCommands;
use squad_routing::{Directory, Engine, Replay, SqliteDirectory};

use crate::ctx::{CliError, CmdResult, Ctx, outln};

/// Arguments of `squad route briefing`, and the input of the MCP tool `route_briefing`.
#[derive(Debug, clap::Args, serde::Deserialize, schemars::JsonSchema)]
#[command(group(clap::ArgGroup::new("source").required(true).args(["trace", "db"])))]
#[serde(deny_unknown_fields)]
pub(crate) struct BriefingArgs {
    /// The trace (JSON Lines; at the command line `-` reads stdin): the briefing in its final
    /// state. Give trace or db.
    #[arg(long, value_name = "FILE")]
    #[serde(default)]
    trace: Option<PathBuf>,
    /// A database that `squad route replay --db` wrote: the briefing in the state it holds
    /// (read only). Give trace or db.
    #[arg(long, value_name = "FILE")]
    #[serde(default)]
    db: Option<PathBuf>,
    /// The squad's id.
    #[arg(long, value_name = "ID")]
    squad: String,
    /// Use the variant for an issue assigned to the squad (the leader owns its status).
    #[arg(long)]
    #[serde(default)]
    owns_status: bool,
    /// A JSON file with the wording of the commands the briefing tells the leader to run:
    /// {"activity": "<cmd> <issue-id> <outcome> ...", "set_status": "<cmd> <issue-id> <status>"}
    /// (at most 64 KiB; a template left out keeps its default, multica's wording).
    #[arg(long, value_name = "FILE")]
    #[serde(default)]
    commands: Option<PathBuf>,
}

/// The largest `--commands` file read (64 KiB).
const MAX_COMMANDS_BYTES: u64 = 64 * 1024;

/// Reads `--commands`: any problem with the file is bad input (exit 2) naming it.
fn read_commands(path: &Path) -> Result<BriefingCommands, CliError> {
    use std::io::Read as _;
    let bad = |why: String| {
        CliError::usage(format!("--commands '{}': {why}", path.display())).with_hint(
            "a JSON object {\"activity\": \"<cmd> <issue-id> <outcome> ...\", \"set_status\": \"<cmd> <issue-id> <status>\"}",
        )
    };
    let file = std::fs::File::open(path).map_err(|e| bad(format!("cannot read it: {e}")))?;
    let mut bytes = Vec::new();
    file.take(MAX_COMMANDS_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| bad(format!("cannot read it: {e}")))?;
    if bytes.len() as u64 > MAX_COMMANDS_BYTES {
        return Err(bad("larger than the limit of 64 KiB".to_owned()));
    }
    let text = String::from_utf8(bytes).map_err(|_| bad("not UTF-8".to_owned()))?;
    BriefingCommands::from_json(&text).map_err(|e| bad(e.message().to_owned()))
}

/// Where `route briefing` may read its trace from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stdin {
    /// `-` reads stdin (the CLI).
    Allowed,
    /// `-` is refused (an MCP server's stdin is the protocol).
    Refused,
}

pub(crate) fn run(args: &BriefingArgs, ctx: &Ctx) -> CmdResult {
    let doc = briefing_of(args, ctx, Stdin::Allowed)?;
    if ctx.json {
        ctx.print_json(&doc)?;
    } else {
        let text = doc["briefing"].as_str().unwrap_or_default();
        outln!(ctx, "{text}")?;
    }
    Ok(0)
}

/// `route briefing` without its printing: `{"squad_id", "owns_issue_status", "briefing"}`.
pub(crate) fn briefing_of(
    args: &BriefingArgs,
    ctx: &Ctx,
    stdin: Stdin,
) -> Result<serde_json::Value, CliError> {
    // The wording is checked before the trace is read.
    let commands = match &args.commands {
        Some(path) => read_commands(&ctx.resolve(path))?,
        None => BriefingCommands::default(),
    };
    match (&args.trace, &args.db) {
        (Some(trace), None) => {
            if stdin == Stdin::Refused && trace.as_os_str() == "-" {
                return Err(CliError::usage(
                    "--trace -: a tool call cannot read stdin; name a file",
                ));
            }
            let mut replay = Replay::new(Engine::default());
            crate::route_cmd::for_each_line(ctx, trace, |line| {
                replay
                    .feed_line(line)
                    .map(|_| ())
                    .map_err(|e| CliError::usage(e.to_string()))
            })?;
            render(replay.directory(), args, &commands)
        }
        (None, Some(db)) => render(&open_db(&ctx.resolve(db))?, args, &commands),
        _ => Err(CliError::usage("give exactly one of --trace and --db")),
    }
}

/// Opens an existing routing database; a missing or empty file is refused rather than created.
fn open_db(path: &Path) -> Result<SqliteDirectory, CliError> {
    let meta = std::fs::metadata(path)
        .map_err(|e| CliError::usage(format!("cannot read '{}': {e}", path.display())))?;
    if !meta.is_file() || meta.len() == 0 {
        return Err(CliError::usage(format!(
            "'{}' is not a squad routing database",
            path.display()
        ))
        .with_hint("squad route replay --db <file> <trace> writes one"));
    }
    SqliteDirectory::open(path).map_err(|e| CliError::failure(format!("{}: {e}", path.display())))
}

fn render(
    dir: &dyn Directory,
    args: &BriefingArgs,
    commands: &BriefingCommands,
) -> Result<serde_json::Value, CliError> {
    let found = SquadId::new(args.squad.as_str())
        .ok()
        .and_then(|s| dir.squad(&s));
    let Some(found) = found else {
        let place = if args.db.is_some() {
            "the database"
        } else {
            "the trace"
        };
        return Err(CliError::usage(format!(
            "unknown squad \"{}\" in {place}",
            args.squad
        )));
    };
    let text = squad_routing::briefing::briefing_with(dir, found, args.owns_status, commands);
    Ok(serde_json::json!({
        "squad_id": found.id,
        "owns_issue_status": args.owns_status,
        "briefing": text,
    }))
}
