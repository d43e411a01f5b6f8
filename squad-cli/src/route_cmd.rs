//! `squad route`: replay routing traces, print leader briefings, generate synthetic traces,
//! compare policies (`simulate`, in `route_cmd/simulate.rs`).

mod simulate;

use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};

use squad_routing::generate::{GenConfig, Workload, WorkloadConfig, generate_workload};
use squad_routing::{Directory, Engine, Replay, RoutingPolicy, SqliteDirectory};

use crate::ctx::{CliError, CmdResult, Ctx, bounded, errln, outln};

/// The longest trace line read (16 MiB): a longer one is refused rather than held in memory.
const MAX_LINE_BYTES: u64 = 16 << 20;
/// The largest policy file read (1 MiB).
const MAX_POLICY_BYTES: u64 = 1 << 20;

/// Arguments of `squad route`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Example:\n  squad route replay trace.jsonl\n  \
                        squad route briefing --trace trace.jsonl --squad <id> --owns-status\n  \
                        squad route simulate --policy default.json --policy barrier.json trace.jsonl")]
pub(crate) struct Args {
    #[command(subcommand)]
    command: Sub,
}

#[derive(Debug, clap::Subcommand)]
enum Sub {
    /// Replays a routing trace; prints one JSON decision document per event (JSON Lines).
    #[command(
        after_help = "Trace lines are at most 16 MiB long. With --db, nothing is written unless the \
                      whole trace replays.\n\nWith --db postgres://..., each event is one transaction on \
                      the server (run `squad route migrate --db <url>` once first), --workers \
                      connections handle events at once, ids derive from event positions, and a \
                      rerun of the same trace continues it (events already handled change nothing).\n\n\
                      Example:\n  squad route replay trace.jsonl > decisions.jsonl\n  \
                      squad route generate --squads 10 --events 100 | squad route replay -\n  \
                      squad route replay --db state.db day1.jsonl && squad route replay --db state.db day2.jsonl\n  \
                      squad route generate --ids position --events 1000 > t.jsonl && \
                      squad route replay --db postgres://postgres@127.0.0.1/routing --workers 4 --stats t.jsonl"
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
        /// Or a PostgreSQL URL (postgres://user@host/db), migrated with `squad route migrate`.
        #[arg(long, value_name = "FILE|URL")]
        db: Option<PathBuf>,
        /// With --db postgres://...: events handled at once, each on its own connection: 1 to
        /// 256.
        #[arg(long, value_name = "N", allow_negative_numbers = true,
              value_parser = bounded(1, squad_routing::postgres::MAX_WORKERS as u64))]
        workers: Option<u64>,
        /// Print one summary line on stderr: workers, events, seconds, events per second.
        #[arg(long)]
        stats: bool,
    },
    /// Creates or upgrades the routing schema of a PostgreSQL database (idempotent).
    #[command(
        after_help = "The schema is versioned (table squad_schema_version); migrations are \
                            embedded in squad and applied under an advisory lock, so concurrent \
                            runs wait for each other. A replay refuses a database that was never \
                            migrated or holds an older schema.\n\n\
                            Example:\n  squad route migrate --db postgres://postgres@127.0.0.1:5432/routing"
    )]
    Migrate {
        /// The database: postgres://user[:password]@host[:port]/db (the password is never
        /// printed).
        #[arg(long, value_name = "URL")]
        db: String,
    },
    /// Prints the leader briefing for a squad in the trace's final state.
    #[command(
        after_help = "Example:\n  squad route briefing --trace trace.jsonl --squad 0000-... --owns-status\n  squad route briefing --db state.db --squad 0000-... --commands commands.json\n\nThe briefing tells the leader to run two commands of the host: recording its evaluation\nof each turn, and moving an issue it owns to in_review. By default they are worded as\nmultica's (multica squad activity <issue-id> <outcome> --reason \"<short reason>\",\nmultica issue status <issue-id> <status>); --commands names a JSON file with the host's\nown templates, each one line with its placeholders:\n  {\"activity\": \"acme log <issue-id> <outcome> --why '<reason>'\",\n   \"set_status\": \"acme move <issue-id> <status>\"}"
    )]
    Briefing(crate::route_briefing_cmd::BriefingArgs),
    /// Prints a synthetic trace (JSON Lines) for benchmarks and experiments.
    #[command(after_help = "Workloads (--workload):\n  \
        episodes      parents walked through the rules (default; the benches' trace)\n  \
        steady        a steady backlog: an issue every --arrival-seconds, delegated, reported on, \
        closed; --late-comment-percent of closed issues get a late comment (wakes after the end)\n  \
        review-storm  --reporters members report on one parent --report-gap-seconds apart (the \
        leader barrier)\n  \
        chatter       two agents mention each other back and forth with --loop-percent chance, \
        up to --max-rounds mentions (agent loops)\n  \
        mentions      mention-heavy threads: up to --mentions-per-comment mentions, \
        --reply-percent replies, escalations\n\n\
        A knob applies to its workload only. The same flags and seed write the same bytes.\n\n\
        Example:\n  squad route generate --squads 1000 --events 100000 --seed 7 > trace.jsonl\n  \
        squad route generate --workload review-storm --reporters 8 --events 5000 > storm.jsonl")]
    Generate {
        /// The shape of the trace: episodes, steady, review-storm, chatter, mentions.
        #[arg(long, value_name = "NAME", default_value = "episodes",
              value_parser = ["episodes", "steady", "review-storm", "chatter", "mentions"])]
        workload: String,
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
        /// steady: seconds between two new issues: 1 to 86400 (default 120).
        #[arg(long, value_name = "N", allow_negative_numbers = true,
              value_parser = bounded(1, u64::from(WorkloadConfig::MAX_SECONDS)))]
        arrival_seconds: Option<u64>,
        /// steady: percent of closed issues that get a late comment: 0 to 100 (default 10).
        #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = bounded(0, 100))]
        late_comment_percent: Option<u64>,
        /// review-storm: members asked for a review, each reporting on the parent: 1 to 32
        /// (default 5).
        #[arg(long, value_name = "N", allow_negative_numbers = true,
              value_parser = bounded(1, WorkloadConfig::MAX_REPORTERS as u64))]
        reporters: Option<u64>,
        /// review-storm: seconds between two reports: 0 to 3600 (default 10).
        #[arg(long, value_name = "N", allow_negative_numbers = true,
              value_parser = bounded(0, u64::from(WorkloadConfig::MAX_GAP_SECONDS)))]
        report_gap_seconds: Option<u64>,
        /// chatter: percent chance that an agent mentions the other back: 0 to 100 (default 50).
        #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = bounded(0, 100))]
        loop_percent: Option<u64>,
        /// chatter: the most mentions in one conversation: 1 to 100 (default 12).
        #[arg(long, value_name = "N", allow_negative_numbers = true,
              value_parser = bounded(1, WorkloadConfig::MAX_ROUNDS as u64))]
        max_rounds: Option<u64>,
        /// mentions: percent of people's comments that reply to an earlier one: 0 to 100
        /// (default 50).
        #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = bounded(0, 100))]
        reply_percent: Option<u64>,
        /// How later events name the ids the engine mints: `counter` (one counter, the default)
        /// or `position` (from the minting event's position: what a replay on PostgreSQL uses).
        #[arg(long, value_name = "SCHEME", default_value = "counter",
              value_parser = ["counter", "position"])]
        ids: String,
        /// mentions: the most mentions in one top-level comment: 1 to 8 (default 2).
        #[arg(long, value_name = "N", allow_negative_numbers = true,
              value_parser = bounded(1, WorkloadConfig::MAX_MENTIONS_PER_COMMENT as u64))]
        mentions_per_comment: Option<u64>,
    },
    /// Replays a trace once per policy, in parallel, and compares them: wakes, redundant wakes,
    /// wakes after the end, agent loops, time to first wake, cost.
    #[command(after_help = simulate::AFTER_HELP)]
    Simulate(simulate::Args),
}

pub(crate) fn run(args: &Args, ctx: &Ctx) -> CmdResult {
    match &args.command {
        Sub::Replay {
            trace,
            policy,
            db,
            workers,
            stats,
        } => {
            let policy = match policy {
                Some(p) => read_policy(&ctx.resolve(p))?,
                None => RoutingPolicy::default(),
            };
            let engine = Engine::new(policy);
            let url = db
                .as_deref()
                .and_then(Path::to_str)
                .filter(|u| squad_routing::postgres::is_postgres_url(u));
            if let Some(url) = url {
                let workers = workers.map_or(1, |w| usize::try_from(w).unwrap_or(usize::MAX));
                return replay_postgres(ctx, trace, &engine, url, workers, *stats);
            }
            if workers.is_some() {
                return Err(CliError::usage(
                    "--workers needs --db postgres://... (an SQLite or in-memory replay has one writer)",
                )
                .with_hint("add --db postgres://user@host/db, or drop --workers"));
            }
            let started = std::time::Instant::now();
            // Decisions are printed only once the whole trace is known to be valid (and, with
            // --db, written).
            let out = match db {
                None => replay_all(ctx, trace, Replay::new(engine))?.0,
                Some(path) => replay_into_db(ctx, trace, engine, &ctx.resolve(path))?,
            };
            ctx.out_bytes(&out)?;
            if *stats {
                let events = out.iter().filter(|b| **b == b'\n').count();
                errln!("{}", stats_line(1, events, started.elapsed().as_secs_f64()));
            }
            Ok(0)
        }
        Sub::Migrate { db } => {
            if !squad_routing::postgres::is_postgres_url(db) {
                return Err(CliError::usage(format!(
                    "--db must be a postgres:// or postgresql:// URL, not '{}'",
                    squad_routing::postgres::redact(db)
                ))
                .with_hint("an SQLite file needs no migration: replay creates it"));
            }
            let m = squad_routing::postgres::migrate(db)
                .map_err(|e| CliError::failure(e.to_string()))?;
            if ctx.json {
                ctx.print_json(&serde_json::json!({"from": m.from, "to": m.to}))?;
            } else if m.from == m.to {
                outln!(ctx, "schema version {}: up to date", m.to)?;
            } else {
                outln!(ctx, "schema version {} (was {})", m.to, m.from)?;
            }
            Ok(0)
        }
        Sub::Briefing(a) => crate::route_briefing_cmd::run(a, ctx),
        Sub::Generate {
            workload,
            squads,
            events,
            issues_per_squad,
            seed,
            arrival_seconds,
            late_comment_percent,
            reporters,
            report_gap_seconds,
            loop_percent,
            max_rounds,
            reply_percent,
            mentions_per_comment,
            ids,
        } => {
            fn size(v: u64) -> usize {
                usize::try_from(v).unwrap_or(usize::MAX)
            }
            fn small(v: u64) -> u32 {
                u32::try_from(v).unwrap_or(u32::MAX)
            }
            let workload = Workload::from_name(workload)
                .ok_or_else(|| CliError::usage(format!("unknown workload '{workload}'")))?;
            let mut cfg = WorkloadConfig::new(
                workload,
                GenConfig {
                    squads: size(*squads),
                    issues_per_squad: size(*issues_per_squad),
                    events: size(*events),
                    seed: *seed,
                },
            );
            // Each flag is bounded by its parser; a knob of another workload is refused.
            type Set = fn(&mut WorkloadConfig, u64);
            let knobs: [(&str, Option<u64>, Workload, Set); 8] = [
                (
                    "--arrival-seconds",
                    *arrival_seconds,
                    Workload::Steady,
                    |c, v| {
                        c.arrival_seconds = small(v);
                    },
                ),
                (
                    "--late-comment-percent",
                    *late_comment_percent,
                    Workload::Steady,
                    |c, v| {
                        c.late_comment_percent = small(v);
                    },
                ),
                ("--reporters", *reporters, Workload::ReviewStorm, |c, v| {
                    c.reporters = size(v);
                }),
                (
                    "--report-gap-seconds",
                    *report_gap_seconds,
                    Workload::ReviewStorm,
                    |c, v| {
                        c.report_gap_seconds = small(v);
                    },
                ),
                (
                    "--loop-percent",
                    *loop_percent,
                    Workload::Chatter,
                    |c, v| {
                        c.loop_percent = small(v);
                    },
                ),
                ("--max-rounds", *max_rounds, Workload::Chatter, |c, v| {
                    c.max_rounds = size(v);
                }),
                (
                    "--reply-percent",
                    *reply_percent,
                    Workload::Mentions,
                    |c, v| {
                        c.reply_percent = small(v);
                    },
                ),
                (
                    "--mentions-per-comment",
                    *mentions_per_comment,
                    Workload::Mentions,
                    |c, v| {
                        c.mentions_per_comment = size(v);
                    },
                ),
            ];
            for (flag, value, applies, set) in knobs {
                let Some(value) = value else { continue };
                if applies != workload {
                    return Err(CliError::usage(format!(
                        "{flag} applies to --workload {}, not {}",
                        applies.name(),
                        workload.name()
                    ))
                    .with_hint(format!("add --workload {}", applies.name())));
                }
                set(&mut cfg, value);
            }
            // What is left to check is the product of two sizes.
            let issues = cfg.size.squads.saturating_mul(cfg.size.issues_per_squad);
            if issues > GenConfig::MAX_ISSUES {
                return Err(CliError::usage(format!(
                    "--squads × --issues-per-squad is {issues}, more than the limit of {}",
                    GenConfig::MAX_ISSUES
                ))
                .with_hint("lower --squads or --issues-per-squad"));
            }
            let g = generate_workload(&cfg).map_err(|e| CliError::usage(e.to_string()))?;
            if ids == "position" {
                let lines: Vec<String> = g.lines().collect();
                let converted =
                    squad_routing::trace::to_position_ids(lines.iter().map(String::as_str))
                        .map_err(|e| CliError::failure(e.to_string()))?;
                for line in converted {
                    outln!(ctx, "{line}")?;
                }
                return Ok(0);
            }
            for line in g.lines() {
                outln!(ctx, "{line}")?;
            }
            Ok(0)
        }
        Sub::Simulate(a) => simulate::run(a, ctx),
    }
}

/// The `--stats` line.
fn stats_line(workers: usize, events: usize, seconds: f64) -> String {
    let rate = if seconds > 0.0 {
        events as f64 / seconds
    } else {
        0.0
    };
    format!(
        "route replay: workers {workers}, events {events}, seconds {seconds:.3}, events per second {rate:.0}"
    )
}

/// Replays into a PostgreSQL database with `workers` connections.
fn replay_postgres(
    ctx: &Ctx,
    trace: &Path,
    engine: &Engine,
    url: &str,
    workers: usize,
    stats: bool,
) -> CmdResult {
    let mut lines = Vec::new();
    for_each_line(ctx, trace, |line| {
        lines.push(line.to_owned());
        Ok(())
    })?;
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    let r = squad_routing::postgres::replay_parallel(url, engine, &refs, workers).map_err(|e| {
        use squad_routing::ErrorKind;
        match e.kind() {
            ErrorKind::Storage => CliError::failure(e.to_string()),
            ErrorKind::UnknownReference => CliError::usage(e.to_string()).with_hint(
                "on PostgreSQL, ids derive from event positions: a trace naming the ids a \
                 counter minted needs `squad route generate --ids position` (or \
                 squad_routing::trace::to_position_ids)",
            ),
            _ => CliError::usage(e.to_string()),
        }
    })?;
    let mut out = Vec::new();
    for line in &r.outputs {
        out.extend_from_slice(line.as_bytes());
        out.push(b'\n');
    }
    ctx.out_bytes(&out)?;
    if stats {
        errln!("{}", r.stats_line());
    }
    Ok(0)
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

pub(crate) fn read_policy(path: &Path) -> Result<RoutingPolicy, CliError> {
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
                 max_attempts, leader_barrier_seconds, reply_falls_back_to_assignee",
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
    // A long trace shows the lines read so far on a terminal (stderr); nothing otherwise.
    let bar = crate::ctx::progress_bar();
    if let Some(bar) = &bar {
        bar.set_message("trace lines read");
    }
    for n in 1u64.. {
        if n % 4096 == 0
            && let Some(bar) = &bar
        {
            bar.set_position(n);
        }
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
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    Ok(())
}
