//! `squad route`: replay routing traces, print leader briefings, generate synthetic traces.

use std::io::BufRead;
use std::path::{Path, PathBuf};

use squad_model::SquadId;
use squad_routing::generate::{GenConfig, generate};
use squad_routing::{Directory, Engine, Replay, RoutingPolicy};

use crate::ctx::{CliError, CmdResult, Ctx, outln};

/// Arguments of `squad route`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Example:\n  squad route replay trace.jsonl\n  \
                        squad route briefing --trace trace.jsonl --squad <id> --owns-status")]
pub(crate) struct Args {
    #[command(subcommand)]
    command: Sub,
}

#[derive(Debug, clap::Subcommand)]
enum Sub {
    /// Replays a routing trace; prints one JSON decision document per event (JSON Lines).
    #[command(
        after_help = "Example:\n  squad route replay trace.jsonl > decisions.jsonl\n  \
                            squad route generate --squads 10 --events 100 | squad route replay -"
    )]
    Replay {
        /// The trace (JSON Lines), or `-` for stdin.
        #[arg(value_name = "trace.jsonl|-")]
        trace: PathBuf,
        /// A JSON file with policy choices (RoutingPolicy fields; absent fields keep their defaults).
        #[arg(long, value_name = "FILE")]
        policy: Option<PathBuf>,
    },
    /// Prints the leader briefing for a squad in the trace's final state.
    #[command(
        after_help = "Example:\n  squad route briefing --trace trace.jsonl --squad 0000-... --owns-status"
    )]
    Briefing {
        /// The trace (JSON Lines), or `-` for stdin.
        #[arg(long, value_name = "FILE")]
        trace: PathBuf,
        /// The squad's id.
        #[arg(long, value_name = "ID")]
        squad: String,
        /// Use the variant for an issue assigned to the squad (the leader owns its status).
        #[arg(long)]
        owns_status: bool,
    },
    /// Prints a synthetic trace (JSON Lines) for benchmarks and experiments.
    #[command(
        after_help = "Example:\n  squad route generate --squads 1000 --events 100000 --seed 7 > trace.jsonl"
    )]
    Generate {
        /// Number of squads.
        #[arg(long, default_value_t = 10)]
        squads: usize,
        /// Number of events.
        #[arg(long, default_value_t = 100)]
        events: usize,
        /// Background issues per squad.
        #[arg(long, default_value_t = 4)]
        issues_per_squad: usize,
        /// Seed of the pseudo-random choices.
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
}

pub(crate) fn run(args: &Args, ctx: &Ctx) -> CmdResult {
    match &args.command {
        Sub::Replay { trace, policy } => {
            let policy = match policy {
                Some(p) => read_policy(&ctx.resolve(p))?,
                None => RoutingPolicy::default(),
            };
            let mut replay = Replay::new(Engine::new(policy));
            // Decisions are printed only once the whole trace is known to be valid.
            let mut out = Vec::new();
            for_each_line(ctx, trace, |line| {
                if let Some(o) = replay
                    .feed_line(line)
                    .map_err(|e| CliError::usage(e.to_string()))?
                {
                    let json = serde_json::to_string(&o)
                        .map_err(|e| CliError::failure(format!("cannot print JSON: {e}")))?;
                    out.extend_from_slice(json.as_bytes());
                    out.push(b'\n');
                }
                Ok(())
            })?;
            ctx.out_bytes(&out).map(|()| 0)
        }
        Sub::Briefing {
            trace,
            squad,
            owns_status,
        } => {
            let mut replay = Replay::new(Engine::default());
            for_each_line(ctx, trace, |line| {
                replay
                    .feed_line(line)
                    .map(|_| ())
                    .map_err(|e| CliError::usage(e.to_string()))
            })?;
            let dir = replay.directory();
            let found = SquadId::new(squad.as_str())
                .ok()
                .and_then(|s| dir.squad(&s));
            let Some(found) = found else {
                return Err(CliError::usage(format!(
                    "unknown squad \"{squad}\" in the trace"
                )));
            };
            let text = squad_routing::briefing::briefing(dir, found, *owns_status);
            if ctx.json {
                ctx.print_json(&serde_json::json!({
                    "squad_id": found.id,
                    "owns_issue_status": owns_status,
                    "briefing": text,
                }))?;
                Ok(0)
            } else {
                outln!(ctx, "{text}").map(|()| 0)
            }
        }
        Sub::Generate {
            squads,
            events,
            issues_per_squad,
            seed,
        } => {
            let g = generate(&GenConfig {
                squads: *squads,
                issues_per_squad: *issues_per_squad,
                events: *events,
                seed: *seed,
            });
            ctx.out_bytes(g.to_jsonl().as_bytes()).map(|()| 0)
        }
    }
}

fn read_policy(path: &Path) -> Result<RoutingPolicy, CliError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliError::usage(format!("cannot read '{}': {e}", path.display())))?;
    serde_json::from_str(&text)
        .map_err(|e| CliError::usage(format!("invalid policy '{}': {e}", path.display())))
}

/// Calls `f` on each line of the file (or stdin for `-`).
fn for_each_line(
    ctx: &Ctx,
    path: &Path,
    mut f: impl FnMut(&str) -> Result<(), CliError>,
) -> Result<(), CliError> {
    let reader: Box<dyn BufRead> = if path.as_os_str() == "-" {
        Box::new(std::io::stdin().lock())
    } else {
        let p = ctx.resolve(path);
        let file = std::fs::File::open(&p)
            .map_err(|e| CliError::usage(format!("cannot open '{}': {e}", p.display())))?;
        Box::new(std::io::BufReader::new(file))
    };
    for (n, line) in reader.lines().enumerate() {
        let line =
            line.map_err(|e| CliError::usage(format!("line {}: cannot read: {e}", n + 1)))?;
        f(&line)?;
    }
    Ok(())
}
