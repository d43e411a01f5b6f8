//! state.json: replace semantics, schema, unknown keys, atomicity, concurrent writers.

use std::sync::Arc;

use serde_json::json;
use squad_model::{ChannelKind, NotifySettings};
use squad_notify::*;

use crate::common::*;

fn settings(v: serde_json::Value) -> NotifySettings {
    NotifySettings::from_value(v).unwrap()
}

#[test]
fn configure_replaces_notify_and_keeps_every_other_key() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(".squad");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("state.json"),
        r#"{"schemaVersion":"1.3","roster":["a","b"],"notify":{"approvalChannel":"github-issue","enabled":true,"email":"a@b.c","github":{"handle":"octocat","repo":"o/r"},"future":1},"approval":{"futureKey":{"x":1}}}"#,
    )
    .unwrap();
    let a = Approvals::new(StateDir::new(&dir), clock());
    a.configure(settings(
        json!({"approvalChannel": "in-chat", "enabled": false}),
    ))
    .unwrap();
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("state.json")).unwrap()).unwrap();
    assert_eq!(v["schemaVersion"], "1.3");
    assert_eq!(v["roster"], json!(["a", "b"]));
    // Replace semantics: the old github target, email and unknown notify key are gone.
    assert_eq!(
        v["notify"],
        json!({"approvalChannel": "in-chat", "enabled": false, "email": ""})
    );
    assert_eq!(
        v["approval"]["futureKey"],
        json!({"x": 1}),
        "unknown approval keys survive"
    );
    // Key order of the untouched keys is kept.
    let text = std::fs::read_to_string(dir.join("state.json")).unwrap();
    assert!(text.find("schemaVersion").unwrap() < text.find("roster").unwrap());
}

#[test]
fn invalid_settings_are_refused_and_nothing_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let a = Approvals::new(StateDir::new(tmp.path()), clock());
    let mut bad = NotifySettings::default();
    bad.extra.insert(
        "webhookUrl".into(),
        json!("https://hooks.example.invalid/x"),
    );
    let e = a.configure(bad).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    let bad = NotifySettings {
        email: "not an email".into(),
        ..Default::default()
    };
    assert_eq!(
        a.configure(bad).unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
    assert!(!tmp.path().join("state.json").exists());
}

#[test]
fn torn_or_invalid_state_is_reported_as_corrupt_not_overwritten() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = StateDir::new(tmp.path());
    for text in [
        "{\"notify\": {\"approvalChannel\": \"in-chat\", \"enab",
        "[]",
        r#"{"notify": {"approvalChannel": "carrier-pigeon", "enabled": true}}"#,
        r#"{"notify": {"approvalChannel": "webhook", "enabled": true, "webhookUrl": "x"}}"#,
        r#"{"approval": {"pendingGate": {"id": "nope"}}}"#,
    ] {
        std::fs::write(dir.state_path(), text).unwrap();
        let e = squad_notify::store::read(&dir).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Corrupt, "{text}");
        let a = Approvals::new(dir.clone(), clock());
        assert!(a.configure(NotifySettings::default()).is_err());
        assert_eq!(
            std::fs::read_to_string(dir.state_path()).unwrap(),
            text,
            "untouched"
        );
    }
}

#[test]
fn concurrent_processes_lose_no_update() {
    // Threads stand in for processes: each holds the file lock for its read-modify-write.
    let tmp = tempfile::tempdir().unwrap();
    let dir = Arc::new(StateDir::new(tmp.path()));
    let handles: Vec<_> = (0..8)
        .map(|i| {
            let dir = dir.clone();
            std::thread::spawn(move || {
                for j in 0..10 {
                    let lock = squad_notify::store::lock(&dir).unwrap();
                    let mut doc = squad_notify::store::read(&dir).unwrap();
                    doc.other.insert(format!("k{i}-{j}"), json!(j));
                    squad_notify::store::write(&dir, &doc, &lock).unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(squad_notify::store::read(&dir).unwrap().other.len(), 80);
}

#[tokio::test]
async fn the_pending_gate_and_runs_are_in_state_json() {
    let e = env();
    let g = e.open(Mode::Autopilot, Trigger::FinalOutcome).await;
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(e.approvals.dir().state_path()).unwrap())
            .unwrap();
    let p = &v["approval"]["pendingGates"][0];
    assert!(v["approval"].get("pendingGate").is_none());
    assert_eq!(p["id"], g.id.as_str());
    assert_eq!(p["state"], "pending");
    assert_eq!(p["trigger"], "final-outcome");
    assert_eq!(p["digest"], g.digest);
    assert_eq!(v["approval"]["currentRun"], g.run.as_str());
    assert!(
        v["approval"]["logHead"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );
    assert_eq!(e.phone.sent()[0].id, g.id);
    let _ = ChannelKind::InChat;
}

/// A `state.json` written by the single-gate format (captured from the binary before gates
/// were kept per run), with its log.
fn legacy_dir() -> (tempfile::TempDir, StateDir) {
    let src =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/legacy-pending-gate");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("state");
    std::fs::create_dir_all(&dir).unwrap();
    for f in ["state.json", "notifications.md"] {
        std::fs::copy(src.join(f), dir.join(f)).unwrap();
    }
    (tmp, StateDir::new(dir))
}

#[tokio::test]
async fn a_legacy_pending_gate_is_read_and_upgraded_on_the_next_write() {
    let (_tmp, dir) = legacy_dir();
    let raw: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.state_path()).unwrap()).unwrap();
    squad_model::schema::Schema::ApprovalState
        .validate(&raw["approval"])
        .unwrap();
    let legacy_id = raw["approval"]["pendingGate"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    // A clock before the fixture's expiry, so the gate is still pending.
    let created: squad_model::Timestamp = raw["approval"]["pendingGate"]["created"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let clock = Arc::new(FixedClock::at_unix_seconds(0));
    clock.set(created.plus_seconds(60));
    let svc = Approvals::new(dir.clone(), clock.clone());
    let doc = svc.state().unwrap();
    assert_eq!(doc.approval.pending_gates.len(), 1);
    let legacy = doc.approval.pending_gates[0].clone();
    assert_eq!(legacy.id.as_str(), legacy_id);
    assert!(legacy.digest_matches(), "the old record keeps its digest");
    // Its run still refuses a second gate; another run opens one, and the write upgrades.
    let chat = Arc::new(InMemoryChannel::new(ChannelKind::InChat));
    let fan = FanOut::new().with(chat);
    let req = request(Mode::Autopilot, Trigger::RiskGate);
    let err = svc
        .request(&req, Some(legacy.run.clone()), 600, &fan)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Conflict);
    let RequestOutcome::Opened { gate, .. } = svc
        .request(&req, Some(RunId::new("r-next").unwrap()), 600, &fan)
        .await
        .unwrap()
    else {
        panic!("a risk gate pings")
    };
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.state_path()).unwrap()).unwrap();
    assert!(v["approval"].get("pendingGate").is_none(), "{v:#}");
    let ids: Vec<&str> = v["approval"]["pendingGates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [legacy_id.as_str(), gate.id.as_str()]);
    squad_model::schema::Schema::ApprovalState
        .validate(&v["approval"])
        .unwrap();
    // The hash chain runs on from the old log across both runs.
    let log = std::fs::read_to_string(dir.log_path()).unwrap();
    verify_log(&log, v["approval"]["logHead"].as_str()).unwrap();
    // The old gate is decided as any other.
    let mut s = signal("in-chat", None, false, ChannelKind::InChat, "/approve");
    s.at = clock.now();
    let done = svc
        .consume_gate(
            &legacy.id,
            &[s],
            &ApproverRules::default(),
            &StaticAuthorizer::new(),
        )
        .await
        .unwrap();
    assert_eq!(done.decided.unwrap().state, GateState::Approved);
}
