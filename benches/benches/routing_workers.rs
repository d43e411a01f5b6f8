//! Routing on PostgreSQL with many workers (issue 23): events per second of one 50k-event
//! generated trace (`episodes`, 1k squads, ids from event positions), replayed in memory (the
//! baseline), into SQLite (one transaction), and into PostgreSQL with 1, 2 and 4 workers (one
//! transaction per event, `postgres::replay_parallel`), all in the same run. Each PostgreSQL
//! sample replays into a fresh, migrated database (created outside the timed section) on the
//! server `SQUAD_BENCH_POSTGRES_URL` or `SQUAD_TEST_POSTGRES_URL` names; without one those
//! arguments are skipped. Run: `cargo bench -p squad-bench --bench routing_workers`.
//!
//! Targets (issue 23, 2-core machine, server on the same machine): at least 3,000 events/s with
//! 4 workers and at least 1.3x one worker. Last run (2026-12-06, 50,000 events, the machine
//! shared with other builds at load average 5 to 7, PostgreSQL 15 local): in memory 100.9k
//! events/s, SQLite 9,844, PostgreSQL 1,144 with 1 worker, 2,448 with 2, 3,790 with 4 (3.3x;
//! a second run right after, load average 4.5: 2,056, 3,313 and 3,856, 1.9x), 2.2 to 2.4 round
//! trips per event (`--stats` and the lines this bench prints show them). See
//! the crate README of `squad-routing` for how an event's round trips are spent.
#![expect(clippy::unwrap_used, reason = "a broken fixture should stop the bench")]

use std::sync::OnceLock;

use squad_routing::generate::{GenConfig, generate};
use squad_routing::postgres::{migrate, replay_parallel};
use squad_routing::trace::to_position_ids;
use squad_routing::{Engine, Replay, SqliteDirectory};
use squad_test_support::postgres::TestDb;

/// Events in the trace: 50,000, or `SQUAD_BENCH_EVENTS` (for a quick look on a loaded machine).
fn events() -> usize {
    std::env::var("SQUAD_BENCH_EVENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50_000)
}

fn main() {
    divan::main();
}

fn trace() -> &'static Vec<String> {
    static T: OnceLock<Vec<String>> = OnceLock::new();
    T.get_or_init(|| {
        let g = generate(&GenConfig {
            squads: 1_000,
            issues_per_squad: 4,
            events: events(),
            seed: 23,
        })
        .unwrap();
        let lines: Vec<String> = g.lines().collect();
        to_position_ids(lines.iter().map(String::as_str)).unwrap()
    })
}

fn server() -> Option<String> {
    ["SQUAD_BENCH_POSTGRES_URL", "SQUAD_TEST_POSTGRES_URL"]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|u| !u.is_empty()))
}

/// A fresh migrated database on the server, dropped with the value.
fn fresh_db(server: &str) -> TestDb {
    let db = TestDb::new(server, "squad_bench");
    migrate(&db.url).unwrap();
    db
}

#[divan::bench(
    args = ["memory", "sqlite", "postgres-1", "postgres-2", "postgres-4"],
    sample_count = 1,
    sample_size = 1
)]
fn replay_50k(bencher: divan::Bencher<'_, '_>, how: &str) {
    let lines = trace();
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    let engine = Engine::default();
    let bencher = bencher.counter(divan::counter::ItemsCount::new(events()));
    match how {
        "memory" => bencher.bench_local(|| {
            let mut r = Replay::new(engine.clone());
            for l in &refs {
                r.feed_line(l).unwrap();
            }
        }),
        "sqlite" => bencher.bench_local(|| {
            let mut dir = SqliteDirectory::open_in_memory().unwrap();
            dir.begin().unwrap();
            let mut r = Replay::with_directory(engine.clone(), dir);
            for l in &refs {
                r.feed_line(l).unwrap();
            }
            r.into_directory().commit().unwrap();
        }),
        _ => {
            let Some(server) = server() else {
                return;
            };
            let workers: usize = how.trim_start_matches("postgres-").parse().unwrap();
            bencher
                .with_inputs(|| fresh_db(&server))
                .bench_local_values(|db| {
                    let r = replay_parallel(&db.url, &engine, &refs, workers).unwrap();
                    assert_eq!(r.events, events());
                    #[expect(
                        clippy::print_stderr,
                        reason = "the bench reports the replay's own figures"
                    )]
                    {
                        eprintln!(
                            "{how}: {} (retries {}, barriers {})",
                            r.stats_line(),
                            r.retries,
                            r.barriers
                        );
                    }
                    drop(db);
                });
        }
    }
}
