//! `squad route migrate` and `squad route replay --db postgres://… --workers n --stats` against a
//! real server. They run when `SQUAD_TEST_POSTGRES_URL` names one (`.ci/run` sets it); each test
//! creates its own database and drops it. The unreachable-server test always runs.

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use squad_test_support::postgres::{TestDb, server};

use crate::route::run;

/// The routing state of `db`, sorted lines.
fn state(db: &TestDb) -> Vec<String> {
    squad_routing::PostgresDirectory::connect(&db.url)
        .unwrap()
        .state_snapshot()
        .unwrap()
}

fn ok(out: &Output) -> String {
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn generate(dir: &std::path::Path, events: &str) {
    let out = run(
        &[
            "route", "generate", "--ids", "position", "--squads", "8", "--events", events,
            "--seed", "11",
        ],
        None,
        dir,
    );
    std::fs::write(dir.join("t.jsonl"), ok(&out)).unwrap();
}

fn sorted(text: &str) -> Vec<String> {
    let mut v: Vec<String> = text.lines().map(str::to_owned).collect();
    v.sort();
    v
}

#[test]
fn migrate_then_replay_with_many_workers() {
    let Some(server) = server() else { return };
    let tmp = tempfile::tempdir().unwrap();
    generate(tmp.path(), "400");
    let (a, b) = (
        TestDb::new(&server, "squad_cli_test"),
        TestDb::new(&server, "squad_cli_test"),
    );
    // Never migrated: exit 1, one error line naming the command, nothing written.
    let out = run(
        &["route", "replay", "--db", &a.url, "t.jsonl"],
        None,
        tmp.path(),
    );
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(
        err.lines().filter(|l| l.starts_with("error:")).count(),
        1,
        "{err}"
    );
    assert!(err.contains("squad route migrate"), "{err}");
    assert!(out.stdout.is_empty());
    for db in [&a, &b] {
        let text = ok(&run(
            &["route", "migrate", "--db", &db.url],
            None,
            tmp.path(),
        ));
        assert_eq!(text, "schema version 2 (was 0)\n");
    }
    let text = ok(&run(
        &["route", "migrate", "--db", &a.url, "--json"],
        None,
        tmp.path(),
    ));
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v, serde_json::json!({"from": 2, "to": 2}));
    // One worker, then four with --stats: the same decisions and the same final state.
    let one = run(
        &["route", "replay", "--db", &a.url, "t.jsonl"],
        None,
        tmp.path(),
    );
    let four = run(
        &[
            "route",
            "replay",
            "--db",
            &b.url,
            "--workers",
            "4",
            "--stats",
            "t.jsonl",
        ],
        None,
        tmp.path(),
    );
    let (one_out, four_out) = (ok(&one), ok(&four));
    assert_eq!(one_out.lines().count(), 400);
    assert_eq!(sorted(&one_out), sorted(&four_out));
    assert!(one.stderr.is_empty(), "no --stats, nothing on stderr");
    let stats = String::from_utf8(four.stderr).unwrap();
    assert_eq!(stats.lines().count(), 1, "{stats}");
    assert!(
        stats.starts_with("route replay: workers 4, events 400, seconds ")
            && stats.contains(", events per second "),
        "{stats}"
    );
    assert_eq!(state(&a), state(&b));
    // The in-memory replay of the same trace decides the same.
    let mem = ok(&run(&["route", "replay", "t.jsonl"], None, tmp.path()));
    assert_eq!(mem, one_out);
}

/// A replay killed with SIGKILL mid-way, then run again, ends in the state of an uninterrupted
/// replay: no event lost, no task twice.
#[test]
fn a_killed_replay_rerun_loses_nothing() {
    let Some(server) = server() else { return };
    let tmp = tempfile::tempdir().unwrap();
    generate(tmp.path(), "1500");
    let (killed, whole) = (
        TestDb::new(&server, "squad_cli_test"),
        TestDb::new(&server, "squad_cli_test"),
    );
    for db in [&killed, &whole] {
        ok(&run(
            &["route", "migrate", "--db", &db.url],
            None,
            tmp.path(),
        ));
    }
    let mut child = Command::new(env!("CARGO_BIN_EXE_squad"))
        .args([
            "route",
            "replay",
            "--db",
            &killed.url,
            "--workers",
            "3",
            "t.jsonl",
        ])
        .current_dir(tmp.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let mut done = 0;
    while started.elapsed() < Duration::from_secs(120) {
        done = killed.count("SELECT count(*) FROM processed_events");
        if done >= 200 {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let at_kill = killed.count("SELECT count(*) FROM processed_events");
    assert!(
        done >= 200 && at_kill < 1500,
        "killed after {at_kill} events"
    );
    let rerun = ok(&run(
        &[
            "route",
            "replay",
            "--db",
            &killed.url,
            "--workers",
            "3",
            "t.jsonl",
        ],
        None,
        tmp.path(),
    ));
    let reference = ok(&run(
        &["route", "replay", "--db", &whole.url, "t.jsonl"],
        None,
        tmp.path(),
    ));
    assert_eq!(rerun, reference, "the rerun prints every decision once");
    assert_eq!(state(&killed), state(&whole));
    assert_eq!(killed.count("SELECT count(*) FROM processed_events"), 1500);
    assert_eq!(
        killed.count(
            "SELECT count(*) FROM (SELECT issue_id, agent_id FROM tasks WHERE live AND status \
             IN ('queued', 'dispatched') GROUP BY 1, 2 HAVING count(*) > 1) d"
        ),
        0
    );
}

/// An unreachable server: exit 1 within 10 s, one `error:` line, no password anywhere.
#[test]
fn an_unreachable_server_is_one_error_line_without_the_password() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("t.jsonl"), "").unwrap();
    for args in [
        &[
            "route",
            "replay",
            "--db",
            "postgres://ann:s3cret@127.0.0.1:1/routing",
            "t.jsonl",
        ][..],
        &[
            "route",
            "replay",
            "--db",
            "postgres://ann:s3cret@127.0.0.1:1/routing",
            "--workers",
            "2",
            "t.jsonl",
        ],
        &[
            "route",
            "migrate",
            "--db",
            "postgresql://ann:s3cret@127.0.0.1:1/routing",
        ],
    ] {
        let started = Instant::now();
        let out = run(args, None, tmp.path());
        assert!(started.elapsed() < Duration::from_secs(10), "{args:?}");
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.starts_with("error: "), "{err}");
        assert!(!err.contains("s3cret") && err.contains("***@"), "{err}");
        assert!(out.stdout.is_empty());
    }
    // Bad input is exit 2: --workers out of range or without a PostgreSQL database, a migrate
    // of something that is not a PostgreSQL URL.
    for args in [
        &["route", "replay", "--workers", "2", "t.jsonl"][..],
        &[
            "route",
            "replay",
            "--db",
            "s.db",
            "--workers",
            "2",
            "t.jsonl",
        ],
        &[
            "route",
            "replay",
            "--db",
            "postgres://u@h/d",
            "--workers",
            "0",
            "t.jsonl",
        ],
        &[
            "route",
            "replay",
            "--db",
            "postgres://u@h/d",
            "--workers",
            "257",
            "t.jsonl",
        ],
        &["route", "migrate", "--db", "state.db"],
    ] {
        let out = run(args, None, tmp.path());
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(err.starts_with("error: "), "{args:?}: {err}");
    }
    assert!(!tmp.path().join("s.db").exists());
}
