//! Traces: the JSON Schema, replay, generated traces and bad input.

use squad_routing::generate::{GenConfig, generate};
use squad_routing::trace::TRACE_SCHEMA;
use squad_routing::{Engine, ErrorKind, Replay};

fn replay_all(text: &str) -> Result<Vec<serde_json::Value>, squad_routing::Error> {
    let mut r = Replay::new(Engine::default());
    let mut out = Vec::new();
    for line in text.lines() {
        if let Some(o) = r.feed_line(line)? {
            out.push(serde_json::to_value(&o).unwrap());
        }
    }
    Ok(out)
}

#[test]
fn generated_traces_validate_against_the_schema_and_replay() {
    let g = generate(&GenConfig {
        squads: 4,
        issues_per_squad: 4,
        events: 200,
        seed: 3,
    })
    .unwrap();
    let text = g.to_jsonl();
    let schema: serde_json::Value = serde_json::from_str(TRACE_SCHEMA).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    for (n, line) in text.lines().enumerate() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let errors: Vec<String> = validator.iter_errors(&v).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "line {}: {line}\n{errors:?}", n + 1);
    }
    let out = replay_all(&text).unwrap();
    assert_eq!(out.len(), 200);
    // The schema version, then the entities.
    assert_eq!(
        text.lines().next(),
        Some(r#"{"kind":"schema_version","version":2}"#)
    );
    let entity_lines = g.entities.len();
    assert_eq!(out[0]["line"], entity_lines + 2);
    // The generated episodes exercise enqueues, coalescing, child-done comments and rejections
    // never happen.
    let kinds: Vec<&str> = out
        .iter()
        .flat_map(|o| o["decisions"].as_array().unwrap().iter())
        .map(|d| d["type"].as_str().unwrap())
        .collect();
    for k in [
        "enqueue",
        "post_comment",
        "update_issue",
        "claim",
        "create_issue",
    ] {
        assert!(kinds.contains(&k), "no {k} in {kinds:?}");
    }
    assert!(!kinds.contains(&"reject"));
}

#[test]
fn the_schema_rejects_what_the_parser_rejects() {
    let schema: serde_json::Value = serde_json::from_str(TRACE_SCHEMA).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    for bad in [
        r#"{"kind":"frob"}"#,
        r#"{"kind":"event","event":{"type":"frobnicate"}}"#,
        r#"{"kind":"event","event":{"type":"claim"}}"#,
        r#"{"kind":"user","id":"u1"}"#,
    ] {
        let v: serde_json::Value = serde_json::from_str(bad).unwrap();
        assert!(!validator.is_valid(&v), "{bad}");
        assert!(replay_all(bad).is_err(), "{bad}");
    }
}

const HEAD: &str = r#"{"kind":"workspace","id":"w1"}
{"kind":"user","id":"u1","name":"Sam"}
{"kind":"membership","workspace_id":"w1","user_id":"u1","role":"owner"}
"#;

#[test]
fn bad_input_is_line_numbered() {
    let cases = [
        (
            "{not json",
            ErrorKind::InvalidTrace,
            "line 4: invalid JSON: ",
        ),
        (
            "[1,2]",
            ErrorKind::InvalidTrace,
            "line 4: a trace line must be a JSON object",
        ),
        (
            r#"{"id":"x"}"#,
            ErrorKind::InvalidTrace,
            "line 4: missing \"kind\"",
        ),
        (
            r#"{"kind":"robot"}"#,
            ErrorKind::InvalidTrace,
            "line 4: unknown record kind \"robot\"",
        ),
        (
            r#"{"kind":"event","event":{"type":"frobnicate"}}"#,
            ErrorKind::UnknownEventKind,
            "line 4: unknown event kind \"frobnicate\"",
        ),
        (
            r#"{"kind":"event","event":{"type":"claim"}}"#,
            ErrorKind::InvalidTrace,
            "line 4: invalid claim event: missing field `task_id`",
        ),
        (
            r#"{"kind":"event","event":{"type":"claim","task_id":"t9"}}"#,
            ErrorKind::UnknownReference,
            "line 4: unknown task \"t9\"",
        ),
        (
            r#"{"kind":"event","event":{"type":"archive_squad","actor":"u1","squad_id":"s9"}}"#,
            ErrorKind::UnknownReference,
            "line 4: unknown squad \"s9\"",
        ),
        (
            r#"{"kind":"event","event":{"type":"comment","comment_id":"c1","issue_id":"i9","author":{"type":"member","id":"u1"}}}"#,
            ErrorKind::UnknownReference,
            "line 4: unknown issue \"i9\"",
        ),
        (
            r#"{"kind":"event","event":{"type":"archive_squad","actor":"u7","squad_id":"s9"}}"#,
            ErrorKind::UnknownReference,
            "line 4: unknown user \"u7\"",
        ),
        (
            r#"{"kind":"user","id":"u1","name":"Again"}"#,
            ErrorKind::UnknownReference,
            "line 4: user \"u1\" is defined twice",
        ),
        (
            r#"{"kind":"squad","id":"s1","workspace_id":"w2","name":"S","leader_id":"a","creator_id":"u1","created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z"}"#,
            ErrorKind::UnknownReference,
            "line 4: unknown workspace \"w2\"",
        ),
        (
            r#"{"kind":"event","at":"yesterday","event":{"type":"claim","task_id":"t"}}"#,
            ErrorKind::InvalidTrace,
            "line 4: invalid event time record",
        ),
    ];
    for (line, kind, prefix) in cases {
        let text = format!("{HEAD}{line}\n");
        let err = replay_all(&text).unwrap_err();
        assert_eq!(err.kind(), kind, "{line}");
        assert_eq!(err.line(), Some(4), "{line}");
        assert!(err.to_string().starts_with(prefix), "{line}: {err}");
    }
}

#[test]
fn entities_after_events_and_blank_lines() {
    let text = format!(
        "{HEAD}\n{}\n{}\n",
        r#"{"kind":"event","event":{"type":"set_runtime","agent_id":"a1","runtime":null}}"#,
        r#"{"kind":"user","id":"u2","name":"Late"}"#
    );
    let err = replay_all(&text).unwrap_err();
    // Line 4 is blank; line 5 names an unknown agent.
    assert_eq!(err.to_string(), "line 5: unknown agent \"a1\"");
    let text = format!(
        "{HEAD}{}\n{}\n",
        r#"{"kind":"event","event":{"type":"create_squad","actor":"u1","workspace_id":"w1","squad_id":"s1","name":"S","leader_id":""}}"#,
        r#"{"kind":"user","id":"u2","name":"Late"}"#
    );
    let err = replay_all(&text).unwrap_err();
    assert_eq!(
        err.to_string(),
        "line 5: entity records must come before the first event"
    );
}

#[test]
fn rule_errors_are_decisions_not_trace_errors() {
    let text = format!(
        "{HEAD}{}\n",
        r#"{"kind":"event","event":{"type":"create_squad","actor":"u1","workspace_id":"w1","squad_id":"s1","name":"S","leader_id":"00000000-0000-4000-8000-000000000009"}}"#
    );
    let out = replay_all(&text).unwrap();
    assert_eq!(out.len(), 1);
    assert_eq!(
        out[0],
        serde_json::json!({
            "line": 4,
            "event": "create_squad",
            "decisions": [{"type": "reject", "code": 400, "message": "leader must be a valid agent in this workspace"}]
        })
    );
}

/// The schema version record: first or not at all, a positive integer no newer than this build.
#[test]
fn schema_version_records() {
    let ok = format!("{{\"kind\":\"schema_version\",\"version\":2}}\n{HEAD}");
    let mut r = Replay::new(Engine::default());
    for line in ok.lines() {
        r.feed_line(line).unwrap();
    }
    assert_eq!(r.schema_version(), 2);
    let mut r = Replay::new(Engine::default());
    r.feed_line(HEAD.lines().next().unwrap()).unwrap();
    assert_eq!(r.schema_version(), 1, "no record: version 1");
    let cases = [
        (
            "\n{\"kind\":\"schema_version\",\"version\":1}\n".to_owned(),
            ErrorKind::InvalidTrace,
            "",
        ),
        (
            format!("{HEAD}{{\"kind\":\"schema_version\",\"version\":2}}\n"),
            ErrorKind::InvalidTrace,
            "line 4: the schema_version record must come before every other record",
        ),
        (
            "{\"kind\":\"schema_version\",\"version\":3}\n".to_owned(),
            ErrorKind::UnsupportedVersion,
            "line 1: trace schema version 3 is newer than this build reads (1 to 2)",
        ),
        (
            "{\"kind\":\"schema_version\",\"version\":0}\n".to_owned(),
            ErrorKind::InvalidTrace,
            "line 1: \"version\" in schema_version record must be a positive integer",
        ),
        (
            "{\"kind\":\"schema_version\",\"version\":\"2\"}\n".to_owned(),
            ErrorKind::InvalidTrace,
            "line 1: \"version\" in schema_version record must be a positive integer",
        ),
        (
            "{\"kind\":\"schema_version\"}\n".to_owned(),
            ErrorKind::InvalidTrace,
            "line 1: missing \"version\"",
        ),
        (
            "{\"kind\":\"schema_version\",\"version\":2,\"extra\":1}\n".to_owned(),
            ErrorKind::InvalidTrace,
            "line 1: unknown field \"extra\"",
        ),
    ];
    for (text, kind, prefix) in cases {
        match replay_all(&text) {
            // A blank line first is fine: the record is still the first one.
            Ok(_) if prefix.is_empty() => {}
            Ok(_) => panic!("accepted: {text}"),
            Err(e) => {
                assert_eq!(e.kind(), kind, "{text}");
                assert!(e.to_string().starts_with(prefix), "{text}: {e}");
            }
        }
    }
}

/// A trace written before the schema had versions (no version record; autopilots with a member
/// `creator_id` and an assignee; no instructions, contexts or quick-create) still replays, with
/// the same decisions as before.
#[test]
fn an_old_format_trace_still_replays() {
    let old = OLD_FORMAT_TRACE;
    let schema: serde_json::Value = serde_json::from_str(TRACE_SCHEMA).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    for line in old.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert!(validator.is_valid(&v), "{line}");
    }
    let out = replay_all(old).unwrap();
    let types: Vec<Vec<&str>> = out
        .iter()
        .map(|o| {
            o["decisions"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d["type"].as_str().unwrap())
                .collect()
        })
        .collect();
    assert_eq!(
        types,
        [
            vec!["create_issue", "enqueue"],
            vec!["set_task_status", "claim"],
            vec!["create_issue", "autopilot_run", "enqueue"],
            vec!["set_task_status"],
        ]
    );
    let claim = &out[1]["decisions"][1];
    assert_eq!(claim["is_leader_task"], true);
    assert_eq!(claim["owns_issue_status"], true);
    assert!(
        out[1]["instructions"]
            .as_str()
            .unwrap()
            .starts_with("## Squad Operating Protocol")
    );
}

/// The new records of version 2 validate against the schema and replay: an autopilot without an
/// assignee, one created by an agent, agent instructions, a quick-create and its claim, a retry.
#[test]
fn a_version_2_trace_says_what_hosts_record() {
    let trace = VERSION_2_TRACE;
    let schema: serde_json::Value = serde_json::from_str(TRACE_SCHEMA).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    for line in trace.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let errors: Vec<String> = validator.iter_errors(&v).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{line}: {errors:?}");
    }
    let out = replay_all(trace).unwrap();
    assert_eq!(
        out[0]["decisions"][0]["reason"],
        "autopilot has no assignee"
    );
    assert_eq!(out[1]["decisions"][2]["source"], "autopilot_create_issue");
    let quick = &out[2]["decisions"][0];
    assert_eq!(quick["source"], "quick_create");
    assert_eq!(quick["task"]["context"]["type"], "quick_create");
    let claim = &out[3]["decisions"][1];
    assert_eq!(claim["squad_name"], "Core");
    assert_eq!(claim["owns_issue_status"], false);
    assert!(
        out[3]["instructions"]
            .as_str()
            .unwrap()
            .starts_with("You lead the core team.\n\n## Squad Operating Protocol")
    );
    let retry = &out[4]["decisions"][1];
    assert_eq!(retry["source"], "retry");
    assert_eq!(retry["task"]["attempt"], 2);
    assert_eq!(retry["task"]["context"]["prompt"], "old");
}

/// A scenario trace (also replayed on PostgreSQL by `postgres.rs`).
pub(crate) const OLD_FORMAT_TRACE: &str = r#"{"kind":"workspace","id":"w1","issue_prefix":"SQ"}
{"kind":"user","id":"u1","name":"Sam"}
{"kind":"membership","workspace_id":"w1","user_id":"u1","role":"owner"}
{"kind":"agent","id":"00000000-0000-4000-8000-0000000000a1","workspace_id":"w1","name":"Lead","owner_id":"u1","runtime":{"runtime_id":"rt1","status":"online"},"created_at":"2026-01-01T00:00:00Z"}
{"kind":"squad","id":"00000000-0000-4000-8000-0000000005a1","workspace_id":"w1","name":"Core","leader_id":"00000000-0000-4000-8000-0000000000a1","creator_id":"u1","created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z"}
{"kind":"member","id":"m1","squad_id":"00000000-0000-4000-8000-0000000005a1","member_type":"agent","member_id":"00000000-0000-4000-8000-0000000000a1","role":"leader","created_at":"2026-01-01T00:00:00Z"}
{"kind":"autopilot","id":"ap1","workspace_id":"w1","title":"Nightly","assignee_type":"squad","assignee_id":"00000000-0000-4000-8000-0000000005a1","execution_mode":"create_issue","creator_id":"u1"}
{"kind":"event","at":"2026-01-02T00:00:00Z","event":{"type":"create_issue","actor":{"type":"member","id":"u1"},"workspace_id":"w1","issue_id":"i1","title":"Fix login","assignee_type":"squad","assignee_id":"00000000-0000-4000-8000-0000000005a1"}}
{"kind":"event","event":{"type":"claim","task_id":"7a5c0000-0000-4000-8000-000000000001"}}
{"kind":"event","event":{"type":"trigger_autopilot","autopilot_id":"ap1","trigger":"schedule"}}
{"kind":"event","event":{"type":"task_status","task_id":"7a5c0000-0000-4000-8000-000000000001","status":"completed"}}
"#;

/// A scenario trace (also replayed on PostgreSQL by `postgres.rs`).
pub(crate) const VERSION_2_TRACE: &str = r#"{"kind":"schema_version","version":2}
{"kind":"workspace","id":"w1","issue_prefix":"SQ"}
{"kind":"user","id":"u1","name":"Sam"}
{"kind":"membership","workspace_id":"w1","user_id":"u1","role":"owner"}
{"kind":"agent","id":"00000000-0000-4000-8000-0000000000a1","workspace_id":"w1","name":"Lead","owner_id":"u1","runtime":{"runtime_id":"rt1","status":"online"},"permission_mode":"public_to","invocation_targets":[{"type":"workspace"}],"instructions":"You lead the core team.","created_at":"2026-01-01T00:00:00Z"}
{"kind":"agent","id":"00000000-0000-4000-8000-0000000000a2","workspace_id":"w1","name":"Maker","owner_id":"u1","created_at":"2026-01-01T00:00:00Z"}
{"kind":"squad","id":"00000000-0000-4000-8000-0000000005a1","workspace_id":"w1","name":"Core","leader_id":"00000000-0000-4000-8000-0000000000a1","creator_id":"u1","created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z"}
{"kind":"autopilot","id":"ap-none","workspace_id":"w1","title":"Orphan","execution_mode":"run_only","creator_id":"u1"}
{"kind":"autopilot","id":"ap-agent","workspace_id":"w1","title":"By an agent","assignee_type":"squad","assignee_id":"00000000-0000-4000-8000-0000000005a1","execution_mode":"create_issue","creator_type":"agent","creator_id":"00000000-0000-4000-8000-0000000000a2"}
{"kind":"task","id":"t-old","agent_id":"00000000-0000-4000-8000-0000000000a1","status":"running","context":{"type":"quick_create","squad_id":"00000000-0000-4000-8000-0000000005a1","prompt":"old"},"created_at":"2026-01-01T00:00:00Z"}
{"kind":"event","at":"2026-01-02T00:00:00Z","event":{"type":"trigger_autopilot","autopilot_id":"ap-none","trigger":"schedule"}}
{"kind":"event","event":{"type":"trigger_autopilot","autopilot_id":"ap-agent","trigger":"schedule"}}
{"kind":"event","event":{"type":"quick_create","actor":"u1","workspace_id":"w1","target_type":"squad","target_id":"00000000-0000-4000-8000-0000000005a1","prompt":"Login fails"}}
{"kind":"event","event":{"type":"claim","task_id":"7a5c0000-0000-4000-8000-000000000003"}}
{"kind":"event","event":{"type":"task_status","task_id":"t-old","status":"failed"}}
"#;

/// `to_position_ids` rewrites the ids the engine minted and only those: the converted trace of
/// every workload replays (no event names an id that does not exist) to the same decisions, ids
/// aside, and converting it again changes nothing.
#[test]
fn position_ids_keep_every_decision() {
    use squad_routing::generate::{GenConfig, Workload, WorkloadConfig, generate_workload};
    use squad_routing::trace::to_position_ids;
    let shape = |lines: &[String]| -> Vec<String> {
        let mut r = squad_routing::Replay::new(squad_routing::Engine::default());
        lines
            .iter()
            .filter_map(|l| r.feed_line(l).unwrap())
            .map(|o| {
                // Minted ids differ: keep each decision's kind and rule.
                let v = serde_json::to_value(&o.decisions).unwrap();
                let kinds: Vec<String> = v["decisions"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|d| format!("{}/{}", d["kind"], d["rule"]))
                    .collect();
                format!("{} {}", o.event, kinds.join(","))
            })
            .collect()
    };
    for (seed, events) in [(1, 1000), (11, 3000)] {
        for w in [
            Workload::Episodes,
            Workload::Steady,
            Workload::ReviewStorm,
            Workload::Chatter,
            Workload::Mentions,
        ] {
            let cfg = WorkloadConfig::new(
                w,
                GenConfig {
                    squads: 8,
                    issues_per_squad: 4,
                    events,
                    seed,
                },
            );
            let lines: Vec<String> = generate_workload(&cfg).unwrap().lines().collect();
            let converted = to_position_ids(lines.iter().map(String::as_str)).unwrap();
            assert_eq!(shape(&lines), shape(&converted), "{w:?}, seed {seed}");
            assert_ne!(lines, converted);
            let again = to_position_ids(converted.iter().map(String::as_str)).unwrap();
            assert_eq!(again, converted);
        }
    }
}
