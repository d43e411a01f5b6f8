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
    });
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
    let entity_lines = g.entities.len();
    assert_eq!(out[0]["line"], entity_lines + 1);
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
