//! The attack list: each one a test. None of them decides the gate.

use squad_model::ChannelKind;
use squad_notify::*;

use crate::common::*;

async fn refused(signal: Signal, auth: StaticAuthorizer, why: &str) {
    let e = env();
    let gate = e.open(Mode::Autopilot, Trigger::ImpactfulAction).await;
    let out = e.consume(&[signal], &rules(), &auth).await;
    assert!(out.decided.is_none(), "{why}: must not decide");
    assert_eq!(out.ignored.len(), 1, "{why}");
    assert!(
        out.ignored[0].reason.contains(why),
        "{}",
        out.ignored[0].reason
    );
    let pending = e
        .approvals
        .state()
        .unwrap()
        .approval
        .pending_gates
        .first()
        .cloned()
        .unwrap();
    assert_eq!(pending.id, gate.id);
    assert_eq!(pending.state, GateState::Pending);
    // Ignored and logged.
    let log = e.log();
    assert!(log.contains("ignored-signal"), "{log}");
    assert!(log.contains(&format!(
        "ignored ({}",
        out.ignored[0].reason.split(' ').next().unwrap()
    )));
    assert!(
        verify_log(
            &log,
            e.approvals.state().unwrap().approval.log_head.as_deref()
        )
        .is_ok()
    );
}

#[tokio::test]
async fn an_unauthorized_user_is_ignored() {
    refused(
        gh("mallory", 666, "/approve"),
        StaticAuthorizer::new(),
        "unauthorized",
    )
    .await;
}

#[tokio::test]
async fn read_and_triage_collaborators_are_ignored() {
    refused(
        gh("reader", 5, "/approve"),
        StaticAuthorizer::new().with("reader", Role::Read),
        "role read",
    )
    .await;
    refused(
        gh("triager", 6, "/approve"),
        StaticAuthorizer::new().with("triager", Role::Triage),
        "role triage",
    )
    .await;
}

#[tokio::test]
async fn a_bot_is_ignored_even_with_write_rights_or_the_approvers_login() {
    let auth = StaticAuthorizer::new().with("relay[bot]", Role::Admin);
    refused(
        signal(
            "relay[bot]",
            Some(41898282),
            true,
            ChannelKind::GithubIssue,
            "/approve",
        ),
        auth,
        "bots",
    )
    .await;
    refused(
        signal(
            "octocat",
            Some(583231),
            true,
            ChannelKind::GithubIssue,
            "/approve",
        ),
        StaticAuthorizer::new(),
        "bots",
    )
    .await;
    // A bot is refused even when it claims to be the chat session.
    refused(
        signal("in-chat", None, true, ChannelKind::InChat, "/approve"),
        StaticAuthorizer::new(),
        "bots",
    )
    .await;
}

#[tokio::test]
async fn self_approval_is_refused_even_for_the_registered_approvers_account() {
    let auth = StaticAuthorizer::new().with("squad-bot-account", Role::Admin);
    refused(
        gh("squad-bot-account", 777, "/approve"),
        auth,
        "own identity",
    )
    .await;
    // The squad runs with the approver's own login (gh auth login on the VM): still refused.
    let mut r = rules();
    r.own_identities.push(Identity {
        login: "octocat".into(),
        id: Some(583231),
    });
    let e = env();
    e.open(Mode::Autopilot, Trigger::RiskGate).await;
    let out = e
        .consume(
            &[gh("octocat", 583231, "/approve")],
            &r,
            &StaticAuthorizer::new(),
        )
        .await;
    assert!(out.decided.is_none());
    assert!(out.ignored[0].reason.contains("own identity"));
}

#[tokio::test]
async fn a_renamed_account_reusing_the_approvers_login_is_not_the_approver() {
    // Ids win over logins when both are known.
    refused(
        gh("octocat", 999_999, "/approve"),
        StaticAuthorizer::new(),
        "unauthorized",
    )
    .await;
}

#[tokio::test]
async fn an_approval_for_another_gate_id_is_ignored() {
    let e = env();
    let gate = e.open(Mode::Autopilot, Trigger::ImpactfulAction).await;
    let out = e
        .consume(
            &[gh("octocat", 583231, "/approve g-aaaaaaaaaaaa")],
            &rules(),
            &StaticAuthorizer::new(),
        )
        .await;
    assert!(out.decided.is_none());
    assert!(
        out.ignored[0].reason.contains("names gate g-aaaaaaaaaaaa"),
        "{:?}",
        out.ignored
    );
    // The right id, in another case, counts.
    let upper = gate
        .id
        .as_str()
        .to_ascii_uppercase()
        .replacen("G-", "g-", 1);
    let out = e
        .consume(
            &[gh("octocat", 583231, &format!("/approve {upper}"))],
            &rules(),
            &StaticAuthorizer::new(),
        )
        .await;
    assert_eq!(out.decided.unwrap().state, GateState::Approved);
}

#[tokio::test]
async fn a_second_decision_after_the_first_does_not_count() {
    let e = env();
    e.open(Mode::Autopilot, Trigger::ImpactfulAction).await;
    let auth = StaticAuthorizer::new().with("hubot-human", Role::Write);
    // Both in one batch: the first valid one wins, the stop is never applied.
    let out = e
        .consume(
            &[
                gh("octocat", 583231, "/approve"),
                gh("hubot-human", 9, "/stop"),
            ],
            &rules(),
            &auth,
        )
        .await;
    assert_eq!(out.decided.as_ref().unwrap().state, GateState::Approved);
    // And in a later batch: no gate is pending any more.
    let err = e
        .approvals
        .consume(&[gh("octocat", 583231, "/stop")], &rules(), &auth)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound);
    let st = e.approvals.state().unwrap();
    assert_eq!(
        st.approval.recent.last().unwrap().state,
        GateState::Approved
    );
    assert!(
        st.approval.runs[0].stopped.is_none(),
        "the late /stop did not stop the run"
    );
}

#[tokio::test]
async fn a_decision_on_an_expired_gate_does_not_count() {
    let e = env();
    e.open(Mode::Autopilot, Trigger::RiskGate).await;
    e.clock.advance_seconds(3600);
    let out = e
        .consume(
            &[gh("octocat", 583231, "/approve")],
            &rules(),
            &StaticAuthorizer::new(),
        )
        .await;
    let g = out.decided.unwrap();
    assert_eq!(g.state, GateState::Expired);
    assert!(!g.state.proceeds());
    assert!(e.log().contains("Resolved: expired"));
    assert!(
        e.approvals
            .state()
            .unwrap()
            .approval
            .pending_gates
            .first()
            .cloned()
            .is_none()
    );
}

#[tokio::test]
async fn an_empty_in_chat_line_never_approves() {
    let e = env();
    e.open(Mode::Interactive, Trigger::StepPlan).await;
    let chat = InChatChannel::new(Box::new(std::io::sink()), e.clock.clone());
    for line in [
        "",
        " ",
        "\t",
        "\r",
        "y",
        "yes",
        "ok",
        "approve",
        "> /approve",
        "`/approve`",
    ] {
        chat.feed(line);
    }
    chat.close();
    let polled = chat.poll(&e.approvals.target(None).unwrap()).await.unwrap();
    // The quote and the inline-code line that continues it (a lazy continuation) are no
    // messages of their own.
    assert_eq!(polled.signals.len(), 8);
    assert!(polled.exhausted);
    let out = e
        .consume(&polled.signals, &rules(), &StaticAuthorizer::new())
        .await;
    assert!(out.decided.is_none());
    assert_eq!(
        e.approvals
            .state()
            .unwrap()
            .approval
            .pending_gates
            .first()
            .cloned()
            .unwrap()
            .state,
        GateState::Pending
    );
}

#[tokio::test]
async fn a_failed_role_lookup_fails_closed() {
    #[derive(Debug)]
    struct Down;
    #[async_trait::async_trait]
    impl Authorizer for Down {
        async fn role(&self, _who: &Responder) -> Result<Role> {
            Err(Error::new(ErrorKind::Unavailable, "test", "api down"))
        }
    }
    let e = env();
    e.open(Mode::Autopilot, Trigger::RiskGate).await;
    let out = e
        .approvals
        .consume(&[gh("someone", 3, "/approve")], &rules(), &Down)
        .await
        .unwrap();
    assert!(out.decided.is_none());
    assert!(out.ignored[0].reason.contains("lookup failed"));
}

#[tokio::test]
async fn collaborators_with_write_maintain_or_admin_may_decide() {
    for role in [Role::Write, Role::Maintain, Role::Admin] {
        let e = env();
        e.open(Mode::Autopilot, Trigger::RiskGate).await;
        let auth = StaticAuthorizer::new().with("dev", role);
        let out = e
            .consume(&[gh("dev", 10, "/changes: smaller PR")], &rules(), &auth)
            .await;
        let g = out.decided.unwrap();
        assert_eq!(g.state, GateState::ChangesRequested, "{role}");
        assert_eq!(g.decision.unwrap().note.as_deref(), Some("smaller PR"));
        assert!(
            e.log()
                .contains(&format!("* Authorized As: collaborator ({role})"))
        );
    }
}

#[tokio::test]
async fn labels_are_authorized_like_comments() {
    let e = env();
    e.open(Mode::Autopilot, Trigger::ImpactfulAction).await;
    let mut label = gh("mallory", 666, "");
    label.body = SignalBody::Label("squad/approved".into());
    let out = e
        .consume(&[label.clone()], &rules(), &StaticAuthorizer::new())
        .await;
    assert!(out.decided.is_none());
    label.responder = Responder {
        login: "octocat".into(),
        id: Some(583231),
        bot: false,
    };
    label.body = SignalBody::Label("squad/stop".into());
    let out = e
        .consume(&[label], &rules(), &StaticAuthorizer::new())
        .await;
    assert_eq!(out.decided.unwrap().state, GateState::Stopped);
}

#[tokio::test]
async fn a_gate_altered_in_state_json_after_the_ping_cannot_be_decided() {
    let e = env();
    e.open(Mode::Autopilot, Trigger::ImpactfulAction).await;
    let path = e.approvals.dir().state_path();
    let text = std::fs::read_to_string(&path).unwrap();
    for (what, altered) in [
        (
            "topic",
            text.replace(
                "Deploy the staging migration",
                "Delete the production database",
            ),
        ),
        (
            "expiry",
            text.replace(
                "\"expires\": \"2027-01-15T09:00:00Z\"",
                "\"expires\": \"2099-01-01T00:00:00Z\"",
            ),
        ),
        (
            "trigger",
            text.replace(
                "\"trigger\": \"impactful-action\"",
                "\"trigger\": \"final-outcome\"",
            ),
        ),
    ] {
        assert_ne!(altered, text, "{what}");
        std::fs::write(&path, &altered).unwrap();
        let err = e
            .approvals
            .consume(
                &[gh("octocat", 583231, "/approve")],
                &rules(),
                &StaticAuthorizer::new(),
            )
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Corrupt, "{what}");
        assert!(
            err.to_string().contains("no longer matches its digest"),
            "{err}"
        );
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            altered,
            "nothing written"
        );
    }
}

#[tokio::test]
async fn an_answer_older_than_the_gate_is_a_replay_and_does_not_count() {
    let e = env();
    e.clock.advance_seconds(100);
    let gate = e.open(Mode::Autopilot, Trigger::ImpactfulAction).await;
    // An /approve left on a reused issue for an earlier gate, by the registered approver.
    let old = gh("octocat", 583231, "/approve");
    assert!(old.at < gate.created);
    let out = e.consume(&[old], &rules(), &StaticAuthorizer::new()).await;
    assert!(out.decided.is_none());
    assert!(
        out.ignored[0].reason.contains("before gate"),
        "{:?}",
        out.ignored
    );
    let mut fresh = gh("octocat", 583231, "/approve");
    fresh.at = e.clock.now();
    assert_eq!(
        e.consume(&[fresh], &rules(), &StaticAuthorizer::new())
            .await
            .decided
            .unwrap()
            .state,
        GateState::Approved
    );
}

#[tokio::test]
async fn the_pending_gate_keeps_what_each_channel_returned() {
    let e = env();
    let gate = e.open(Mode::Autopilot, Trigger::RiskGate).await;
    let stored = e
        .approvals
        .state()
        .unwrap()
        .approval
        .pending_gates
        .first()
        .cloned()
        .unwrap();
    assert_eq!(stored.deliveries.len(), 1);
    assert_eq!(stored.deliveries[0].channel, ChannelKind::GithubIssue);
    assert_eq!(stored.id, gate.id);
    assert!(stored.digest_matches(), "deliveries are outside the digest");
}
