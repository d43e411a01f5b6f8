//! `PostgresDirectory` and the many-worker replay against a real PostgreSQL server. They run
//! when `SQUAD_TEST_POSTGRES_URL` names one (for example
//! `postgres://postgres@127.0.0.1:5432/test`; `.ci/run` sets it); each test creates its own
//! database and drops it.

use std::sync::atomic::{AtomicUsize, Ordering};

use squad_routing::generate::{GenConfig, Workload, WorkloadConfig, generate_workload};
use squad_routing::postgres::{Isolation, PostgresDirectory, migrate, redact, replay_parallel};
use squad_routing::trace::to_position_ids;
use squad_routing::{Directory, Engine, ErrorKind, Replay, conformance};

/// The server's URL, or `None` (the test then has nothing to run against).
#[expect(
    clippy::print_stderr,
    reason = "a skipped test says so in the test output"
)]
fn server() -> Option<String> {
    match std::env::var("SQUAD_TEST_POSTGRES_URL") {
        Ok(u) if !u.is_empty() => Some(u),
        _ => {
            eprintln!("SQUAD_TEST_POSTGRES_URL is not set: PostgreSQL tests skipped");
            None
        }
    }
}

/// `url` with its database replaced by `db` and, with `schema`, a search path.
fn with_db(url: &str, db: &str, schema: Option<&str>) -> String {
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let scheme_end = base.find("://").map_or(0, |i| i + 3);
    let host_end = base[scheme_end..]
        .find('/')
        .map_or(base.len(), |i| scheme_end + i);
    let mut out = format!("{}/{db}", &base[..host_end]);
    let mut params: Vec<String> = query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(str::to_owned)
        .collect();
    if let Some(s) = schema {
        params.push(format!("options=-csearch_path%3D{s}"));
    }
    if !params.is_empty() {
        out.push('?');
        out.push_str(&params.join("&"));
    }
    out
}

static NEXT: AtomicUsize = AtomicUsize::new(0);

/// A database of its own, dropped at the end of the test.
struct TestDb {
    admin: String,
    name: String,
    url: String,
}

impl TestDb {
    fn new(server: &str) -> Self {
        let name = format!(
            "squad_test_{}_{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let mut c = postgres::Client::connect(server, postgres::NoTls).unwrap();
        c.batch_execute(&format!("DROP DATABASE IF EXISTS {name}"))
            .unwrap();
        c.batch_execute(&format!("CREATE DATABASE {name}")).unwrap();
        let url = with_db(server, &name, None);
        Self {
            admin: server.to_owned(),
            name,
            url,
        }
    }

    /// A fresh schema of this database, migrated: its URL.
    fn schema(&self, schema: &str) -> String {
        let mut c = postgres::Client::connect(&self.url, postgres::NoTls).unwrap();
        c.batch_execute(&format!("CREATE SCHEMA {schema}")).unwrap();
        let url = with_db(&self.admin, &self.name, Some(schema));
        migrate(&url).unwrap();
        url
    }

    fn client(&self) -> postgres::Client {
        postgres::Client::connect(&self.url, postgres::NoTls).unwrap()
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        if let Ok(mut c) = postgres::Client::connect(&self.admin, postgres::NoTls) {
            let _ = c.batch_execute(&format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            ));
        }
    }
}

#[test]
fn postgres_directory_conforms() {
    let Some(server) = server() else { return };
    let db = TestDb::new(&server);
    let mut n = 0;
    let mut fresh = || {
        n += 1;
        PostgresDirectory::connect(&db.schema(&format!("c{n}"))).unwrap()
    };
    conformance::run_all(&mut fresh);
    conformance::run_all(|| Box::new(fresh()) as Box<dyn Directory>);
    // Inside a transaction too, with no storage error left behind.
    for (name, scenario) in conformance::SCENARIOS {
        let mut d = fresh();
        d.begin().unwrap();
        scenario(&mut d);
        d.commit().unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

/// `migrate` creates the schema once and then changes nothing; a database never migrated, or
/// with a newer schema, is refused by `connect` with the command to run.
#[test]
fn migrations_are_versioned_and_idempotent() {
    let Some(server) = server() else { return };
    let db = TestDb::new(&server);
    let err = PostgresDirectory::connect(&db.url).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Storage);
    assert!(
        err.to_string().contains("squad route migrate"),
        "never migrated: {err}"
    );
    let first = migrate(&db.url).unwrap();
    assert_eq!(
        (first.from, first.to),
        (0, PostgresDirectory::SCHEMA_VERSION)
    );
    let again = migrate(&db.url).unwrap();
    assert_eq!(
        (again.from, again.to),
        (1, 1),
        "a second migrate is a no-op"
    );
    PostgresDirectory::connect(&db.url).unwrap();
    let versions: i64 = db
        .client()
        .query_one("SELECT count(*) FROM squad_schema_version", &[])
        .unwrap()
        .get(0);
    assert_eq!(versions, 1);
    // An emptied version table reads as never migrated; a newer version is refused.
    db.client()
        .batch_execute("DELETE FROM squad_schema_version")
        .unwrap();
    let err = PostgresDirectory::connect(&db.url).unwrap_err();
    assert!(err.to_string().contains("squad route migrate"), "{err}");
    db.client()
        .batch_execute("INSERT INTO squad_schema_version (version) VALUES (99)")
        .unwrap();
    let err = PostgresDirectory::connect(&db.url).unwrap_err();
    assert!(err.to_string().contains("newer"), "{err}");
    let err = migrate(&db.url).unwrap_err();
    assert!(err.to_string().contains("newer"), "{err}");
}

/// Concurrent `migrate` calls wait for each other: all succeed, one applies the schema.
#[test]
fn concurrent_migrations_apply_once() {
    let Some(server) = server() else { return };
    let db = TestDb::new(&server);
    let froms: Vec<i32> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..4)
            .map(|_| s.spawn(|| migrate(&db.url).unwrap().from))
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(froms.iter().filter(|f| **f == 0).count(), 1, "{froms:?}");
}

/// The schema itself refuses a second pending task for one (issue, agent).
#[test]
fn the_schema_allows_one_pending_task_per_issue_and_agent() {
    let Some(server) = server() else { return };
    let db = TestDb::new(&server);
    migrate(&db.url).unwrap();
    let mut c = db.client();
    let insert = "INSERT INTO tasks (id, issue_id, agent_id, status, live, record) \
                  VALUES ($1, 'i1', 'a1', $2, true, '{}')";
    c.execute(insert, &[&"t1", &"queued"]).unwrap();
    let err = c.execute(insert, &[&"t2", &"dispatched"]).unwrap_err();
    assert_eq!(
        err.code(),
        Some(&postgres::error::SqlState::UNIQUE_VIOLATION),
        "{err}"
    );
    // Running is not pending, and another agent or issue is another pair.
    c.execute(insert, &[&"t3", &"running"]).unwrap();
    c.execute(
        "INSERT INTO tasks (id, issue_id, agent_id, status, live, record) \
         VALUES ('t4', 'i1', 'a2', 'queued', true, '{}')",
        &[],
    )
    .unwrap();
}

fn generated(workload: Workload, events: usize, seed: u64) -> Vec<String> {
    let mut cfg = WorkloadConfig::new(
        workload,
        GenConfig {
            squads: 6,
            issues_per_squad: 2,
            events,
            seed,
        },
    );
    cfg.reporters = 4;
    let g = generate_workload(&cfg).unwrap();
    let lines: Vec<String> = g.lines().collect();
    to_position_ids(lines.iter().map(String::as_str)).unwrap()
}

/// The in-memory replay's decision lines of a position-id trace.
fn in_memory(lines: &[String]) -> Vec<String> {
    let mut r = Replay::new(Engine::default());
    lines
        .iter()
        .filter_map(|l| r.feed_line(l).unwrap())
        .map(|o| serde_json::to_string(&o).unwrap())
        .collect()
}

/// 1, 2 and 4 workers reach the same final state and the same decisions, ids included, as the
/// in-memory replay, on every generated workload and on the scenario traces.
#[test]
fn many_workers_equal_one_worker() {
    let Some(server) = server() else { return };
    let db = TestDb::new(&server);
    let engine = Engine::default();
    let mut traces: Vec<(String, Vec<String>)> = vec![
        (
            "old format".into(),
            to_position_ids(crate::replay::OLD_FORMAT_TRACE.lines()).unwrap(),
        ),
        (
            "version 2".into(),
            to_position_ids(crate::replay::VERSION_2_TRACE.lines()).unwrap(),
        ),
    ];
    for (w, events) in [
        (Workload::Episodes, 600),
        (Workload::Steady, 300),
        (Workload::ReviewStorm, 300),
        (Workload::Chatter, 300),
        (Workload::Mentions, 300),
    ] {
        traces.push((w.name().to_owned(), generated(w, events, 3)));
    }
    let mut n = 0;
    for (name, lines) in &traces {
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        let want = in_memory(lines);
        let mut states = Vec::new();
        for workers in [1, 2, 4] {
            n += 1;
            let url = db.schema(&format!("w{n}"));
            let r = replay_parallel(&url, &engine, &refs, workers).unwrap();
            assert_eq!(r.events, want.len(), "{name}");
            assert_eq!(r.outputs, want, "{name}, {workers} workers: decisions");
            let mut d = PostgresDirectory::connect(&url).unwrap();
            states.push(d.state_snapshot().unwrap());
        }
        assert!(!states[0].is_empty());
        assert_eq!(states[0], states[1], "{name}: 2 workers");
        assert_eq!(states[0], states[2], "{name}: 4 workers");
    }
}

/// A rerun of a replayed trace changes nothing and prints the same lines; a second trace on the
/// same database gets its own epoch (its ids cannot collide with the first's).
#[test]
fn a_rerun_is_idempotent() {
    let Some(server) = server() else { return };
    let db = TestDb::new(&server);
    let url = db.schema("r");
    let lines = generated(Workload::Episodes, 300, 5);
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    let engine = Engine::default();
    let first = replay_parallel(&url, &engine, &refs, 2).unwrap();
    let before = PostgresDirectory::connect(&url)
        .unwrap()
        .state_snapshot()
        .unwrap();
    let again = replay_parallel(&url, &engine, &refs, 3).unwrap();
    assert_eq!(again.already, again.events);
    assert_eq!(again.outputs, first.outputs);
    assert_eq!(again.epoch, first.epoch);
    let after = PostgresDirectory::connect(&url)
        .unwrap()
        .state_snapshot()
        .unwrap();
    assert_eq!(before, after);
}

/// Two workers racing to wake one agent on one issue (no scheduler between them) leave exactly
/// one pending task: the loser's transaction fails to serialize, runs again, and coalesces.
#[test]
fn racing_workers_never_create_two_pending_tasks() {
    let Some(server) = server() else { return };
    let db = TestDb::new(&server);
    let url = db.schema("race");
    let trace = to_position_ids(crate::replay::VERSION_2_TRACE.lines()).unwrap();
    // Entities only (through a replay of no events), then racing comments.
    let entities: Vec<&str> = trace
        .iter()
        .map(String::as_str)
        .filter(|l| !l.contains(r#""kind":"event""#))
        .collect();
    let engine = Engine::default();
    replay_parallel(&url, &engine, &entities, 1).unwrap();
    let mut c = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let isolations = [Isolation::Serializable, Isolation::RepeatableRead];
    for round in 0..8u64 {
        // Under repeatable read, the loser meets the unique index and runs again.
        let isolation = isolations[usize::from(round >= 4)];
        let issue_id = format!("00000000-0000-4000-8000-00000000{round:04x}");
        // One issue assigned to nobody, then two comments mentioning the same agent at once.
        let mut d = PostgresDirectory::connect(&url).unwrap();
        let create: squad_routing::Event = serde_json::from_str(&format!(
            r#"{{"type":"create_issue","actor":{{"type":"member","id":"u1"}},"workspace_id":"w1","issue_id":"{issue_id}","title":"Race","status":"todo"}}"#
        ))
        .unwrap();
        let at = squad_model::Timestamp::from_unix_seconds(1_767_225_600).unwrap();
        d.handle_event(&engine, 1_000_000 + round * 10, 1, at, &create)
            .unwrap();
        let agent = "00000000-0000-4000-8000-0000000000a1";
        std::thread::scope(|s| {
            for k in 0..2u64 {
                let url = &url;
                let engine = &engine;
                let issue_id = &issue_id;
                s.spawn(move || {
                    let mut d = PostgresDirectory::connect(url).unwrap();
                    d.set_isolation(isolation);
                    let comment: squad_routing::Event = serde_json::from_str(&format!(
                        r#"{{"type":"comment","comment_id":"c-{round}-{k}","issue_id":"{issue_id}","author":{{"type":"member","id":"u1"}},"content":"[@Lead](mention://agent/{agent}) please"}}"#
                    ))
                    .unwrap();
                    d.handle_event(engine, 1_000_001 + round * 10 + k, 2, at, &comment)
                        .unwrap();
                });
            }
        });
        let pending: i64 = c
            .query_one(
                "SELECT count(*) FROM tasks WHERE issue_id = $1 AND agent_id = $2 \
                 AND status IN ('queued', 'dispatched')",
                &[&issue_id, &agent],
            )
            .unwrap()
            .get(0);
        assert_eq!(pending, 1, "round {round}, {isolation:?}");
    }
}

/// An unreachable server is an error within the connect timeout, and no message shows the
/// password.
#[test]
fn an_unreachable_server_fails_fast_without_the_password() {
    let url = "postgres://ann:s3cret-pw@127.0.0.1:1/routing";
    let started = std::time::Instant::now();
    let err = PostgresDirectory::connect(url).unwrap_err();
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    assert_eq!(err.kind(), ErrorKind::Storage);
    let msg = err.to_string();
    assert!(!msg.contains("s3cret"), "{msg}");
    assert!(msg.contains("ann:***@127.0.0.1:1"), "{msg}");
    let err = migrate(url).unwrap_err();
    assert!(!err.to_string().contains("s3cret"));
    // Bad URLs name what is wrong.
    for bad in ["postgres://ann:pw@[::1/x", "postgres://ann:pw@h:notaport/x"] {
        let err = PostgresDirectory::connect(bad).unwrap_err();
        assert!(!err.to_string().contains(":pw@"), "{err}");
    }
    assert_eq!(
        redact("postgresql://u:p@h/d?password=x"),
        "postgresql://u:***@h/d?password=***"
    );
}
