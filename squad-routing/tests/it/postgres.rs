//! `PostgresDirectory` and the many-worker replay against a real PostgreSQL server. They run
//! when `SQUAD_TEST_POSTGRES_URL` names one (for example
//! `postgres://postgres@127.0.0.1:5432/test`; `.ci/run` sets it); each test creates its own
//! database and drops it.

use squad_routing::generate::{GenConfig, Workload, WorkloadConfig, generate_workload};
use squad_routing::postgres::{Isolation, PostgresDirectory, migrate, redact, replay_parallel};
use squad_routing::trace::to_position_ids;
use squad_routing::{Directory, Engine, ErrorKind, Replay, conformance};
use squad_test_support::postgres::{TestDb, server};

/// A fresh schema of `db`, migrated: its URL.
fn migrated(db: &TestDb, schema: &str) -> String {
    let url = db.schema(schema);
    migrate(&url).unwrap();
    url
}

/// Stores the entities of the version-2 trace (a replay of its lines that are not events) in
/// the database at `url`: the engine to decide the events the test sends next.
fn with_entities(url: &str) -> Engine {
    let trace = to_position_ids(crate::replay::VERSION_2_TRACE.lines()).unwrap();
    let entities: Vec<&str> = trace
        .iter()
        .map(String::as_str)
        .filter(|l| !l.contains(r#""kind":"event""#))
        .collect();
    let engine = Engine::default();
    replay_parallel(url, &engine, &entities, 1).unwrap();
    engine
}

#[test]
fn postgres_directory_conforms() {
    let Some(server) = server() else { return };
    let db = TestDb::new(&server, "squad_test");
    let mut n = 0;
    let mut fresh = || {
        n += 1;
        PostgresDirectory::connect(&migrated(&db, &format!("c{n}"))).unwrap()
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
    let db = TestDb::new(&server, "squad_test");
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
        (2, 2),
        "a second migrate is a no-op"
    );
    PostgresDirectory::connect(&db.url).unwrap();
    let versions: i64 = db
        .client()
        .query_one("SELECT count(*) FROM squad_schema_version", &[])
        .unwrap()
        .get(0);
    assert_eq!(versions, 2);
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
    let db = TestDb::new(&server, "squad_test");
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
    let db = TestDb::new(&server, "squad_test");
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
    let db = TestDb::new(&server, "squad_test");
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
            let url = migrated(&db, &format!("w{n}"));
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
    let db = TestDb::new(&server, "squad_test");
    let url = migrated(&db, "r");
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
    let db = TestDb::new(&server, "squad_test");
    let url = migrated(&db, "race");
    // Entities only, then racing comments.
    let engine = with_entities(&url);
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

/// A database at schema version 1 upgrades to 2 (the configuration version and its triggers),
/// and the version 2 migration may run again on a database that has it; then every statement
/// that writes a configuration table bumps the version, and one that writes an issue does not.
#[test]
fn version_1_upgrades_and_configuration_writes_bump_the_version() {
    let Some(server) = server() else { return };
    let db = TestDb::new(&server, "squad_test");
    migrate(&db.url).unwrap();
    let mut c = db.client();
    // Back to version 1.
    c.batch_execute(
        "DROP TABLE squad_config_version; DROP FUNCTION squad_bump_config_version() CASCADE; \
         DELETE FROM squad_schema_version WHERE version = 2",
    )
    .unwrap();
    let err = PostgresDirectory::connect(&db.url).unwrap_err();
    assert!(err.to_string().contains("squad route migrate"), "{err}");
    let up = migrate(&db.url).unwrap();
    assert_eq!((up.from, up.to), (1, 2));
    // The migration itself is idempotent.
    c.batch_execute("DELETE FROM squad_schema_version WHERE version = 2")
        .unwrap();
    assert_eq!(migrate(&db.url).unwrap().from, 1);
    let version = |c: &mut postgres::Client| -> i64 {
        c.query_one("SELECT version FROM squad_config_version", &[])
            .unwrap()
            .get(0)
    };
    let v0 = version(&mut c);
    for (i, sql) in [
        "INSERT INTO workspaces (id, record) VALUES ('w9', '{}')",
        "INSERT INTO users (id, record) VALUES ('u9', '{}')",
        "INSERT INTO memberships (workspace_id, user_id, role) VALUES ('w9', 'u9', 'owner')",
        "INSERT INTO squads (id, record) VALUES ('s9', '{}')",
        "INSERT INTO squad_members (squad_id, member_key, record) VALUES ('s9', 'agent:a9', '{}')",
        "INSERT INTO agents (id, record) VALUES ('a9', '{}')",
        "INSERT INTO autopilots (id, record) VALUES ('p9', '{}')",
        "DELETE FROM squad_members WHERE squad_id = 's9'",
    ]
    .iter()
    .enumerate()
    {
        c.batch_execute(sql).unwrap();
        assert_eq!(version(&mut c), v0 + i as i64 + 1, "{sql}");
    }
    let v1 = version(&mut c);
    c.batch_execute("INSERT INTO issues (id, record) VALUES ('i9', '{}')")
        .unwrap();
    assert_eq!(version(&mut c), v1, "an issue is not configuration");
    // One transaction bumps it once, however many statements it runs.
    c.batch_execute(
        "BEGIN; INSERT INTO agents (id, record) VALUES ('a10', '{}'); \
         INSERT INTO agents (id, record) VALUES ('a11', '{}'); \
         UPDATE squads SET record = '{\"x\": 1}'; COMMIT",
    )
    .unwrap();
    assert_eq!(version(&mut c), v1 + 1);
}

/// Two handles take turns on one database: each event is handled by the other handle than the
/// one before, so a handle that kept a squad's rows from an earlier event must see that the other
/// archived it meanwhile. The decisions equal the in-memory replay's.
#[test]
fn a_handle_sees_configuration_another_changed() {
    let Some(server) = server() else { return };
    let db = TestDb::new(&server, "squad_test");
    let url = migrated(&db, "cfg");
    let squad = "00000000-0000-4000-8000-0000000005a1";
    let mut lines: Vec<String> = crate::replay::VERSION_2_TRACE
        .lines()
        .filter(|l| !l.contains(r#""kind":"event""#))
        .map(str::to_owned)
        .collect();
    let create = |n: u32| {
        format!(
            r#"{{"kind":"event","event":{{"type":"create_issue","actor":{{"type":"member","id":"u1"}},"workspace_id":"w1","issue_id":"i{n}","title":"Work {n}","status":"todo","assignee_type":"squad","assignee_id":"{squad}"}}}}"#
        )
    };
    lines.push(create(1));
    lines.push(format!(
        r#"{{"kind":"event","event":{{"type":"update_squad","actor":"u1","squad_id":"{squad}","leader_id":"00000000-0000-4000-8000-0000000000a2"}}}}"#
    ));
    lines.push(create(2));
    lines.push(format!(
        r#"{{"kind":"event","event":{{"type":"archive_squad","actor":"u1","squad_id":"{squad}"}}}}"#
    ));
    lines.push(create(3));
    let lines = to_position_ids(lines.iter().map(String::as_str)).unwrap();
    let want = in_memory(&lines);
    // The entities, through a replay of no events; then the events, one handle each in turn.
    let entities: Vec<&str> = lines
        .iter()
        .map(String::as_str)
        .filter(|l| !l.contains(r#""kind":"event""#))
        .collect();
    let engine = Engine::default();
    let epoch = u64::from(replay_parallel(&url, &engine, &entities, 1).unwrap().epoch);
    let mut handles = [
        PostgresDirectory::connect(&url).unwrap(),
        PostgresDirectory::connect(&url).unwrap(),
    ];
    let at = squad_model::Timestamp::from_unix_seconds(1_767_312_000).unwrap();
    let mut got = Vec::new();
    let events = lines.iter().filter(|l| l.contains(r#""kind":"event""#));
    for (i, l) in events.enumerate() {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        let event: squad_routing::Event = serde_json::from_value(v["event"].clone()).unwrap();
        let line = lines.iter().position(|x| x == l).unwrap() + 1;
        // Handle 0 takes the issues, handle 1 the squad changes.
        let h = &mut handles[i % 2];
        let done = h
            .handle_event(&engine, (epoch << 32) | (i as u64 + 1), line, at, &event)
            .unwrap();
        got.push(done.output);
    }
    // Timestamps aside (the in-memory replay's clock is the trace's).
    let strip = |s: &String| {
        let mut v: serde_json::Value = serde_json::from_str(s).unwrap();
        strip_times(&mut v);
        v
    };
    assert_eq!(
        got.iter().map(strip).collect::<Vec<_>>(),
        want.iter().map(strip).collect::<Vec<_>>()
    );
    assert!(
        want[2] != want[4].replace("i3", "i2"),
        "the archive changes the decision"
    );
}

fn strip_times(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(m) => {
            for k in ["created_at", "updated_at", "archived_at"] {
                m.remove(k);
            }
            m.values_mut().for_each(strip_times);
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(strip_times),
        _ => {}
    }
}

/// Inside `handle_event`, an event whose configuration rows are kept takes two round trips:
/// one to begin (with the `processed_events` check and the records it names) and one to write
/// and commit; text with quotes and backslashes is stored as it was.
#[test]
fn a_warm_event_takes_two_round_trips() {
    let Some(server) = server() else { return };
    let db = TestDb::new(&server, "squad_test");
    let url = migrated(&db, "rt");
    let engine = with_entities(&url);
    let mut d = PostgresDirectory::connect(&url).unwrap();
    let at = squad_model::Timestamp::from_unix_seconds(1_767_225_600).unwrap();
    let event = |json: &str| -> squad_routing::Event { serde_json::from_str(json).unwrap() };
    d.handle_event(
        &engine,
        1_000,
        1,
        at,
        &event(
            r#"{"type":"create_issue","actor":{"type":"member","id":"u1"},"workspace_id":"w1","issue_id":"i1","title":"Quotes","status":"todo"}"#,
        ),
    )
    .unwrap();
    let content = r#"O'Brien's \\ '' \' "; DROP TABLE tasks; -- ok"#;
    let comment = |id: &str| {
        event(&format!(
            r#"{{"type":"comment","comment_id":"{id}","issue_id":"i1","author":{{"type":"member","id":"u1"}},"content":{}}}"#,
            serde_json::to_string(content).unwrap()
        ))
    };
    // The first comment reads the user's rows; the second finds them kept.
    d.handle_event(&engine, 1_001, 2, at, &comment("c1"))
        .unwrap();
    let before = d.round_trips();
    let done = d
        .handle_event(&engine, 1_002, 3, at, &comment("c2"))
        .unwrap();
    assert_eq!(d.round_trips() - before, 2, "{}", done.output);
    let stored: String = db
        .client()
        .query_one(
            "SELECT record->>'content' FROM rt.comments WHERE id = 'c2'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(stored, content);
    // The stored line is the one printed, and a rerun returns it.
    let again = d
        .handle_event(&engine, 1_002, 3, at, &comment("c2"))
        .unwrap();
    assert!(again.already);
    assert_eq!(again.output, done.output);
    // A NUL cannot be stored: the event fails with a storage error and changes nothing.
    let nul = event(
        r#"{"type":"comment","comment_id":"c3","issue_id":"i1","author":{"type":"member","id":"u1"},"content":"a\u0000b"}"#,
    );
    let err = d.handle_event(&engine, 1_003, 4, at, &nul).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Storage, "{err}");
    let n: i64 = db
        .client()
        .query_one("SELECT count(*) FROM rt.comments WHERE id = 'c3'", &[])
        .unwrap()
        .get(0);
    assert_eq!(n, 0);
}
