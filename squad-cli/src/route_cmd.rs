//! `squad route`: replay routing traces, print leader briefings, generate synthetic traces.

use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};

use squad_routing::generate::{GenConfig, generate};
use squad_routing::{Directory, Engine, Replay, RoutingPolicy, SqliteDirectory};

use crate::ctx::{CliError, CmdResult, Ctx, bounded, outln};

/// The longest trace line read (16 MiB): a longer one is refused rather than held in memory.
const MAX_LINE_BYTES: u64 = 16 << 20;
/// The largest policy file read (1 MiB).
const MAX_POLICY_BYTES: u64 = 1 << 20;

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
        after_help = "Trace lines are at most 16 MiB long. With --db, nothing is written unless the \
                      whole trace replays.\n\nExample:\n  squad route replay trace.jsonl > decisions.jsonl\n  \
                      squad route generate --squads 10 --events 100 | squad route replay -\n  \
                      squad route replay --db state.db day1.jsonl && squad route replay --db state.db day2.jsonl"
    )]
    Replay {
        /// The trace (JSON Lines), or `-` for stdin.
        #[arg(value_name = "trace.jsonl|-")]
        trace: PathBuf,
        /// A JSON object with policy choices (RoutingPolicy fields; absent fields keep their
        /// defaults, unknown fields are refused). At most 1 MiB.
        #[arg(long, value_name = "FILE")]
        policy: Option<PathBuf>,
        /// Keep the directory in this SQLite database (created if missing): the trace is
        /// replayed on the state it holds, and the final state is written back, all or nothing.
        #[arg(long, value_name = "FILE")]
        db: Option<PathBuf>,
    },
    /// Prints the leader briefing for a squad in the trace's final state.
    #[command(
        after_help = "Example:\n  squad route briefing --trace trace.jsonl --squad 0000-... --owns-status\n  squad route briefing --db state.db --squad 0000-..."
    )]
    Briefing(crate::route_briefing_cmd::BriefingArgs),
    /// Prints a synthetic trace (JSON Lines) for benchmarks and experiments.
    #[command(
        after_help = "Example:\n  squad route generate --squads 1000 --events 100000 --seed 7 > trace.jsonl"
    )]
    Generate {
        /// Number of squads: 0 to 100000.
        #[arg(long, default_value_t = 10, allow_negative_numbers = true,
              value_parser = bounded(0, GenConfig::MAX_SQUADS as u64))]
        squads: u64,
        /// Number of events: 0 to 2000000.
        #[arg(long, default_value_t = 100, allow_negative_numbers = true,
              value_parser = bounded(0, GenConfig::MAX_EVENTS as u64))]
        events: u64,
        /// Background issues per squad: 0 to 100 (and squads × issues at most 1000000).
        #[arg(long, default_value_t = 4, allow_negative_numbers = true,
              value_parser = bounded(0, GenConfig::MAX_ISSUES_PER_SQUAD as u64))]
        issues_per_squad: u64,
        /// Seed of the pseudo-random choices: 0 to 18446744073709551615.
        #[arg(long, default_value_t = 1, allow_negative_numbers = true,
              value_parser = bounded(0, u64::MAX))]
        seed: u64,
    },
}

pub(crate) fn run(args: &Args, ctx: &Ctx) -> CmdResult {
    match &args.command {
        Sub::Replay { trace, policy, db } => {
            let policy = match policy {
                Some(p) => read_policy(&ctx.resolve(p))?,
                None => RoutingPolicy::default(),
            };
            let engine = Engine::new(policy);
            // Decisions are printed only once the whole trace is known to be valid (and, with
            // --db, written).
            let out = match db {
                None => replay_all(ctx, trace, Replay::new(engine))?.0,
                Some(path) => replay_into_db(ctx, trace, engine, &ctx.resolve(path))?,
            };
            ctx.out_bytes(&out).map(|()| 0)
        }
        Sub::Briefing(a) => crate::route_briefing_cmd::run(a, ctx),
        Sub::Generate {
            squads,
            events,
            issues_per_squad,
            seed,
        } => {
            let size = |v: u64| usize::try_from(v).unwrap_or(usize::MAX);
            let cfg = GenConfig {
                squads: size(*squads),
                issues_per_squad: size(*issues_per_squad),
                events: size(*events),
                seed: *seed,
            };
            // Each flag is bounded by its parser; what is left is their product.
            let issues = cfg.squads.saturating_mul(cfg.issues_per_squad);
            if issues > GenConfig::MAX_ISSUES {
                return Err(CliError::usage(format!(
                    "--squads × --issues-per-squad is {issues}, more than the limit of {}",
                    GenConfig::MAX_ISSUES
                ))
                .with_hint("lower --squads or --issues-per-squad"));
            }
            let g = generate(&cfg).map_err(|e| CliError::usage(e.to_string()))?;
            for line in g.lines() {
                outln!(ctx, "{line}")?;
            }
            Ok(0)
        }
    }
}

/// Replays every line; returns the decision lines and the replay (with its directory).
fn replay_all<D: Directory>(
    ctx: &Ctx,
    trace: &Path,
    mut replay: Replay<D>,
) -> Result<(Vec<u8>, Replay<D>), CliError> {
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
    Ok((out, replay))
}

/// Replays into the SQLite database at `path`, in one transaction: committed only when the
/// whole trace replayed.
fn replay_into_db(
    ctx: &Ctx,
    trace: &Path,
    engine: Engine,
    path: &Path,
) -> Result<Vec<u8>, CliError> {
    let db_error = |e: squad_routing::Error| {
        CliError::failure(format!("{}: {e}", path.display()))
            .with_hint("--db names an SQLite file that squad route replay created (or a new one)")
    };
    let mut dir = SqliteDirectory::open(path).map_err(db_error)?;
    dir.begin().map_err(db_error)?;
    let (out, replay) = replay_all(ctx, trace, Replay::with_directory(engine, dir))?;
    // A bad trace returned above: dropping the directory rolls the transaction back.
    let mut dir = replay.into_directory();
    dir.commit().map_err(db_error)?;
    Ok(out)
}

fn read_policy(path: &Path) -> Result<RoutingPolicy, CliError> {
    let file = std::fs::File::open(path)
        .map_err(|e| CliError::usage(format!("cannot read '{}': {e}", path.display())))?;
    let mut text = String::new();
    file.take(MAX_POLICY_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| CliError::usage(format!("cannot read '{}': {e}", path.display())))?;
    if text.len() as u64 > MAX_POLICY_BYTES {
        return Err(CliError::usage(format!(
            "policy '{}' is larger than the limit of 1 MiB",
            path.display()
        )));
    }
    RoutingPolicy::from_json(&text)
        .map_err(|e| CliError::usage(format!("invalid policy '{}': {e}", path.display())))
        .map_err(|e| {
            e.with_hint(
                "a policy is one JSON object of RoutingPolicy fields: cancel_tasks_on_reassign, \
                 cancel_tasks_on_issue_cancelled, escalation_seconds, autopilot_dedup_seconds, \
                 max_attempts",
            )
        })
}

/// Calls `f` on each line of the file (or stdin for `-`).
pub(crate) fn for_each_line(
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
    let mut reader = reader;
    let mut buf = Vec::new();
    for n in 1.. {
        buf.clear();
        let read = (&mut reader)
            .take(MAX_LINE_BYTES + 1)
            .read_until(b'\n', &mut buf)
            .map_err(|e| CliError::usage(format!("line {n}: cannot read: {e}")))?;
        if read == 0 {
            break;
        }
        if buf.last() == Some(&b'\n') {
            buf.pop();
            if buf.last() == Some(&b'\r') {
                buf.pop();
            }
        } else if read as u64 > MAX_LINE_BYTES {
            return Err(CliError::usage(format!(
                "line {n}: longer than the limit of 16 MiB"
            )));
        }
        let line = std::str::from_utf8(&buf)
            .map_err(|_| CliError::usage(format!("line {n}: not valid UTF-8")))?;
        f(line)?;
    }
    Ok(())
}
