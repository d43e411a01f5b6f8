//! Schema validation: each rejection names the field and the rule.

use serde_json::{Value, json};
use squad_model::schema::{Schema, validate_note_entry, validate_notify};
use squad_model::{Error, NoteEntry};

fn valid_entry() -> Value {
    json!({
        "id": "01ARZ3NDEKTSV4RRFFQ69G5FAV",
        "agent": "data",
        "timestamp": "2026-03-23T14:00:00Z",
        "type": "decision",
        "decision": "Use JWT RS256",
        "promote_to_permanent": true
    })
}

/// Validates `v` and returns (field, rule) pairs plus the Display text.
fn violations(v: &Value) -> (Vec<(String, String)>, String) {
    match validate_note_entry(v) {
        Ok(()) => panic!("accepted: {v}"),
        Err(Error::Schema(s)) => {
            let msg = Error::Schema(s.clone()).to_string();
            (
                s.violations
                    .into_iter()
                    .map(|v| (v.field, v.rule))
                    .collect(),
                msg,
            )
        }
        Err(e) => panic!("unexpected error kind: {e}"),
    }
}

#[test]
fn valid_entry_passes() {
    validate_note_entry(&valid_entry()).unwrap();
    NoteEntry::from_value(valid_entry()).unwrap();
}

#[test]
fn missing_agent() {
    let mut v = valid_entry();
    v.as_object_mut().unwrap().remove("agent");
    let (found, msg) = violations(&v);
    assert_eq!(found, [("/agent".to_owned(), "required".to_owned())]);
    assert!(
        msg.contains("field `agent` breaks rule `required`"),
        "{msg}"
    );
}

#[test]
fn timestamp_not_rfc3339() {
    for bad in [
        "yesterday",
        "2026-03-23 14:00:00",
        "2026-03-23T14:00:00+02:00",
        "2026-02-30T10:00:00Z",
    ] {
        let mut v = valid_entry();
        v["timestamp"] = json!(bad);
        let (found, msg) = violations(&v);
        assert!(
            found.iter().all(|(f, _)| f == "/timestamp"),
            "{bad}: {found:?}"
        );
        assert!(
            found.iter().any(|(_, r)| r == "format" || r == "pattern"),
            "{bad}: {found:?}"
        );
        assert!(msg.contains("field `timestamp`"), "{msg}");
    }
}

#[test]
fn unknown_type() {
    let mut v = valid_entry();
    v["type"] = json!("gossip");
    let (found, msg) = violations(&v);
    assert_eq!(found, [("/type".to_owned(), "enum".to_owned())]);
    assert!(msg.contains("field `type` breaks rule `enum`"), "{msg}");
}

#[test]
fn promote_not_boolean() {
    for bad in [json!("true"), json!(1), json!(null)] {
        let mut v = valid_entry();
        v["promote_to_permanent"] = bad.clone();
        let (found, msg) = violations(&v);
        assert_eq!(
            found,
            [("/promote_to_permanent".to_owned(), "type".to_owned())],
            "{bad}"
        );
        assert!(
            msg.contains("field `promote_to_permanent` breaks rule `type`"),
            "{msg}"
        );
    }
}

#[test]
fn entry_not_an_object() {
    for bad in [json!([1, 2]), json!("text"), json!(3), json!(null)] {
        let (found, msg) = violations(&bad);
        assert_eq!(found, [(String::new(), "type".to_owned())], "{bad}");
        assert!(
            msg.contains("field `(document)` breaks rule `type`"),
            "{msg}"
        );
    }
}

#[test]
fn more_rejections_name_their_field() {
    let cases = [
        ("id", json!("not-a-ulid"), "pattern"),
        ("agent", json!("Data"), "pattern"),
        ("confidence", json!("certain"), "enum"),
        ("archive_on_close", json!("yes"), "type"),
        ("effort_hours", json!(-1), "minimum"),
        ("alternatives_considered", json!("HS256"), "type"),
    ];
    for (field, value, rule) in cases {
        let mut v = valid_entry();
        v[field] = value;
        let (found, _) = violations(&v);
        assert_eq!(found, [(format!("/{field}"), rule.to_owned())], "{field}");
    }
}

#[test]
fn several_violations_are_all_reported() {
    let v = json!({"id": "01ARZ3NDEKTSV4RRFFQ69G5FAV", "timestamp": 5, "type": "x"});
    let (found, _) = violations(&v);
    let fields: Vec<&str> = found.iter().map(|(f, _)| f.as_str()).collect();
    for f in ["/agent", "/timestamp", "/type"] {
        assert!(fields.contains(&f), "{f} missing from {fields:?}");
    }
}

#[test]
fn notify_schema() {
    validate_notify(&json!({"approvalChannel": "in-chat", "enabled": false, "email": ""})).unwrap();
    validate_notify(&json!({
        "approvalChannel": "github-issue", "enabled": true,
        "github": {"handle": "octocat", "repo": "owner/repo"}, "newKey": [1]
    }))
    .unwrap();
    let bad = [
        (
            json!({"approvalChannel": "email", "enabled": true}),
            "/approvalChannel",
            "enum",
        ),
        (json!({"enabled": true}), "/approvalChannel", "required"),
        (
            json!({"approvalChannel": "webhook", "enabled": "yes"}),
            "/enabled",
            "type",
        ),
        (
            json!({"approvalChannel": "github-issue", "enabled": true, "github": {"handle": "-bad-", "repo": "o/r"}}),
            "/github/handle",
            "pattern",
        ),
        (
            json!({"approvalChannel": "github-issue", "enabled": true, "github": {"handle": "ok", "repo": "norepo"}}),
            "/github/repo",
            "pattern",
        ),
        (
            json!({"approvalChannel": "webhook", "enabled": true, "webhookUrl": "https://hooks.example/x"}),
            "",
            "not",
        ),
    ];
    for (v, field, rule) in bad {
        let Err(Error::Schema(s)) = validate_notify(&v) else {
            panic!("accepted {v}")
        };
        assert!(
            s.violations
                .iter()
                .any(|x| x.field == field && x.rule == rule),
            "{v}: {:?}",
            s.violations
        );
    }
}

#[test]
fn shipped_files_match_embedded_text() {
    for s in Schema::ALL {
        let path = format!(
            "{}/schemas/{}.schema.json",
            env!("CARGO_MANIFEST_DIR"),
            s.name()
        );
        assert_eq!(std::fs::read_to_string(path).unwrap(), s.text());
    }
}
