//! The decision state machine, on the `Gate` record and through `Approvals`.

use squad_model::{ChannelKind, Timestamp};
use squad_notify::*;

use crate::common::*;

fn gate() -> Gate {
    Gate::open(
        &request(Mode::Autopilot, Trigger::ImpactfulAction),
        RunId::new("run-1").unwrap(),
        Timestamp::from_unix_seconds(1_800_000_000).unwrap(),
        60,
    )
    .unwrap()
}

fn at(secs: i64) -> Timestamp {
    Timestamp::from_unix_seconds(1_800_000_000 + secs).unwrap()
}

#[test]
fn each_command_moves_pending_to_its_terminal_state() {
    let cases = [
        (Command::Approve, GateState::Approved),
        (Command::ApproveAll, GateState::ApproveAll),
        (Command::Changes("note".into()), GateState::ChangesRequested),
        (Command::Stop, GateState::Stopped),
    ];
    for (command, want) in cases {
        let mut g = gate();
        let applied = g
            .apply(
                &command,
                Some(Responder::in_chat()),
                Some(ChannelKind::InChat),
                None,
                at(1),
            )
            .unwrap();
        assert_eq!(applied, Applied::Decided(want));
        assert_eq!(g.state, want);
        assert!(g.state.is_terminal());
        assert_eq!(
            g.state.proceeds(),
            matches!(want, GateState::Approved | GateState::ApproveAll)
        );
        let d = g.decision.as_ref().unwrap();
        assert_eq!(d.at, at(1));
        assert_eq!(
            d.note.as_deref(),
            if want == GateState::ChangesRequested {
                Some("note")
            } else {
                None
            }
        );
        // Decided once: every later command is a conflict and changes nothing.
        for again in [
            Command::Approve,
            Command::ApproveAll,
            Command::Stop,
            Command::Changes(String::new()),
        ] {
            let before = g.clone();
            let err = g.apply(&again, None, None, None, at(2)).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::Conflict);
            assert!(err.to_string().contains("already decided"), "{err}");
            assert_eq!(g, before);
        }
    }
}

#[test]
fn expiry_fails_closed() {
    let mut g = gate();
    assert!(!g.expire_if_due(at(59)));
    assert_eq!(g.state, GateState::Pending);
    // At the expiry instant a decision no longer counts.
    let applied = g
        .apply(
            &Command::Approve,
            Some(Responder::in_chat()),
            None,
            None,
            at(60),
        )
        .unwrap();
    assert_eq!(applied, Applied::Expired);
    assert_eq!(g.state, GateState::Expired);
    assert!(!g.state.proceeds());
    assert_eq!(
        g.apply(&Command::Approve, None, None, None, at(61))
            .unwrap_err()
            .kind(),
        ErrorKind::Conflict
    );
}

#[test]
fn opening_validates_texts_and_lifetime() {
    let base = request(Mode::Autopilot, Trigger::RiskGate);
    let bad = [
        GateRequest {
            topic: String::new(),
            ..base.clone()
        },
        GateRequest {
            topic: "   ".into(),
            ..base.clone()
        },
        GateRequest {
            topic: "two\nlines".into(),
            ..base.clone()
        },
        GateRequest {
            awaiting: "tab\there".into(),
            ..base.clone()
        },
        GateRequest {
            topic: "x".repeat(MAX_LINE_CHARS + 1),
            ..base.clone()
        },
        GateRequest {
            detail: "x".repeat(MAX_DETAIL_CHARS + 1),
            ..base.clone()
        },
        GateRequest {
            detail: "l\n".repeat(9),
            ..base.clone()
        },
        GateRequest {
            detail: "bell\u{7}".into(),
            ..base.clone()
        },
    ];
    for r in bad {
        let e = Gate::open(&r, RunId::new("r").unwrap(), at(0), 60).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{r:?}");
    }
    assert_eq!(
        Gate::open(&base, RunId::new("r").unwrap(), at(0), 0)
            .unwrap_err()
            .kind(),
        ErrorKind::InvalidInput
    );
    for bad_run in ["", "has space", "x/y", &"r".repeat(65)] {
        assert!(RunId::new(bad_run).is_err(), "{bad_run:?}");
    }
}

#[test]
fn the_digest_binds_the_payload() {
    let g = gate();
    assert!(g.digest.starts_with("sha256:") && g.digest.len() == 7 + 64);
    assert!(g.digest_matches());
    assert_eq!(g.short_digest().len(), 12);
    let mut changed = g.clone();
    changed.topic.push('!');
    assert!(!changed.digest_matches());
    let mut changed = g.clone();
    changed.expires = at(10_000);
    assert!(!changed.digest_matches());
    let other = gate();
    assert_ne!(g.id, other.id, "fresh gate ids");
    assert_ne!(g.digest, other.digest, "the digest covers the gate id");
}

#[tokio::test]
async fn a_fresh_process_resumes_at_the_exact_gate() {
    let e = env();
    let gate = e.open(Mode::Autopilot, Trigger::RiskGate).await;
    // A new service over the same directory (a fresh process) sees the same pending gate.
    let fresh = Approvals::new(StateDir::new(e.approvals.dir().root()), e.clock.clone());
    let resumed = fresh
        .state()
        .unwrap()
        .approval
        .pending_gates
        .first()
        .cloned()
        .unwrap();
    assert_eq!(resumed, gate);
    assert!(resumed.digest_matches());
    assert_eq!(fresh.target(None).unwrap().id, gate.id);
    let done = fresh
        .consume(
            &[gh("octocat", 583231, "/approve")],
            &rules(),
            &StaticAuthorizer::new(),
        )
        .await
        .unwrap();
    assert_eq!(done.decided.unwrap().state, GateState::Approved);
}

#[tokio::test]
async fn approve_all_pre_approves_later_impactful_actions_of_the_run_only() {
    let e = env();
    e.open(Mode::Autopilot, Trigger::ImpactfulAction).await;
    let d = e
        .consume(
            &[gh("octocat", 583231, "/approve-all")],
            &rules(),
            &StaticAuthorizer::new(),
        )
        .await;
    assert_eq!(d.decided.unwrap().state, GateState::ApproveAll);

    // A later impactful action of the same run: approved without a ping.
    let sent_before = e.phone.sent().len();
    let out = e
        .approvals
        .request(
            &request(Mode::Autopilot, Trigger::ImpactfulAction),
            None,
            3600,
            &e.channels,
        )
        .await
        .unwrap();
    let RequestOutcome::PreApproved(g) = out else {
        panic!("{out:?}")
    };
    assert_eq!(g.state, GateState::Approved);
    assert!(g.decision.as_ref().unwrap().pre_approved);
    assert_eq!(e.phone.sent().len(), sent_before, "no ping");
    assert_eq!(
        e.approvals.target(None).unwrap().id,
        g.id,
        "wait reports the pre-approved gate"
    );

    // A risk gate still stops.
    let risk = e.open(Mode::Autopilot, Trigger::RiskGate).await;
    assert_eq!(risk.state, GateState::Pending);
    e.consume(
        &[gh("octocat", 583231, "/approve")],
        &rules(),
        &StaticAuthorizer::new(),
    )
    .await;

    // Another run is not covered.
    let out = e
        .approvals
        .request(
            &request(Mode::Autopilot, Trigger::ImpactfulAction),
            Some(RunId::new("other-run").unwrap()),
            3600,
            &e.channels,
        )
        .await
        .unwrap();
    assert!(matches!(out, RequestOutcome::Opened { .. }), "{out:?}");
}

#[tokio::test]
async fn request_refuses_while_pending_and_after_stop_and_records_nothing() {
    let e = env();
    let g = e.open(Mode::Interactive, Trigger::StepPlan).await;
    let state_before = std::fs::read(e.approvals.dir().state_path()).unwrap();
    let log_before = e.log();
    let err = e.refused(Mode::Interactive, Trigger::StepReview).await;
    assert_eq!(err.kind(), ErrorKind::Conflict);
    assert!(err.to_string().contains(g.id.as_str()), "{err}");
    assert_eq!(
        std::fs::read(e.approvals.dir().state_path()).unwrap(),
        state_before
    );
    assert_eq!(e.log(), log_before);

    e.consume(
        &[gh("octocat", 583231, "/stop")],
        &rules(),
        &StaticAuthorizer::new(),
    )
    .await;
    let state = e.approvals.state().unwrap();
    let run = state.approval.run(&g.run).unwrap();
    assert!(run.stopped.is_some());
    let state_before = std::fs::read(e.approvals.dir().state_path()).unwrap();
    let err = e.refused(Mode::Interactive, Trigger::StepReview).await;
    assert_eq!(err.kind(), ErrorKind::Conflict);
    assert!(err.to_string().contains("stopped"), "{err}");
    assert_eq!(
        std::fs::read(e.approvals.dir().state_path()).unwrap(),
        state_before
    );
    // A new run may start.
    let out = e
        .approvals
        .request(
            &request(Mode::Interactive, Trigger::StepReview),
            Some(RunId::new("run-2").unwrap()),
            60,
            &e.channels,
        )
        .await
        .unwrap();
    assert!(matches!(out, RequestOutcome::Opened { .. }));
}

#[tokio::test]
async fn no_gate_records_nothing() {
    let e = env();
    let out = e
        .approvals
        .request(
            &request(Mode::Autopilot, Trigger::StepPlan),
            None,
            60,
            &e.channels,
        )
        .await
        .unwrap();
    assert!(matches!(out, RequestOutcome::NoGate { .. }));
    assert!(!e.approvals.dir().state_path().exists());
    assert!(!e.approvals.dir().log_path().exists());
    assert!(e.phone.sent().is_empty());
}
