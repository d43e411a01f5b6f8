//! In-chat, in-memory and fan-out channels; the conformance suite on each.

use std::io::Write;
use std::sync::{Arc, Mutex};

use squad_model::ChannelKind;
use squad_notify::*;

use crate::common::*;

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);
impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn in_chat_shows_the_payload_and_turns_lines_into_signals() {
    let out = Captured::default();
    let e = env();
    let chat = Arc::new(InChatChannel::new(Box::new(out.clone()), e.clock.clone()));
    let fan = FanOut::new().with(chat.clone());
    let RequestOutcome::Opened { gate, deliveries } = e
        .approvals
        .request(
            &request(Mode::Interactive, Trigger::StepReview),
            None,
            60,
            &fan,
        )
        .await
        .unwrap()
    else {
        panic!()
    };
    assert_eq!(deliveries.len(), 1);
    let shown = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
    for needle in [
        "- Mode: interactive",
        "- Trigger: step:review",
        "- Topic: Deploy the staging migration",
        "- Awaiting: approve the migration",
        "- Detail: Schema change on orders.\n  Rollback script ready.",
        gate.id.as_str(),
        gate.short_digest(),
        "/approve-all",
        "/changes: <what to change>",
        "/stop",
    ] {
        assert!(shown.contains(needle), "{needle:?} missing from {shown}");
    }
    chat.feed("hello\r\n");
    chat.feed("/changes: shorter");
    let polled = fan.poll(&gate).await.unwrap();
    assert!(!polled.exhausted);
    assert_eq!(polled.signals.len(), 2);
    assert_eq!(polled.signals[0].body, SignalBody::Text("hello".into()));
    assert_eq!(polled.signals[1].source, ChannelKind::InChat);
    let done = e
        .consume(
            &polled.signals,
            &ApproverRules::default(),
            &StaticAuthorizer::new(),
        )
        .await;
    let g = done.decided.unwrap();
    assert_eq!(g.state, GateState::ChangesRequested);
    assert_eq!(g.decision.unwrap().by, Some(Responder::in_chat()));
    chat.close();
    let polled = fan.poll(&gate).await.unwrap();
    assert!(polled.exhausted && polled.signals.is_empty());
}

#[derive(Debug)]
struct Broken;
#[async_trait::async_trait]
impl ApprovalChannel for Broken {
    fn kind(&self) -> ChannelKind {
        ChannelKind::Webhook
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            outbound: true,
            inbound: false,
        }
    }
    async fn notify(&self, _gate: &Gate) -> Result<Delivery> {
        Err(Error::new(
            ErrorKind::Unavailable,
            "test",
            "SQUAD_WEBHOOK_URL is not set",
        ))
    }
    async fn poll(&self, _gate: &Gate) -> Result<Polled> {
        Ok(Polled {
            exhausted: true,
            ..Polled::default()
        })
    }
}

#[tokio::test]
async fn a_channel_that_cannot_work_degrades_to_in_chat_and_says_so() {
    let e = env();
    let chat = Arc::new(InChatChannel::new(
        Box::new(std::io::sink()),
        e.clock.clone(),
    ));
    let fan = FanOut::new().with(Arc::new(Broken)).with(chat);
    let RequestOutcome::Opened { gate, deliveries } = e
        .approvals
        .request(&request(Mode::Autopilot, Trigger::RiskGate), None, 60, &fan)
        .await
        .unwrap()
    else {
        panic!()
    };
    assert_eq!(gate.state, GateState::Pending);
    assert!(deliveries[0].result.is_err());
    assert!(deliveries[1].result.is_ok());
    let log = e.log();
    assert!(log.contains("* Channel: in-chat"), "{log}");
    assert!(
        log.contains(
            "* Delivery: webhook failed: SQUAD_WEBHOOK_URL is not set (degraded to in-chat)"
        ),
        "{log}"
    );
    // The fan-out's own notify fails only when no channel delivered.
    let only_broken = FanOut::new().with(Arc::new(Broken));
    assert_eq!(
        only_broken.notify(&gate).await.unwrap_err().kind(),
        ErrorKind::Delivery
    );
    assert!(only_broken.poll(&gate).await.unwrap().exhausted);
}

#[tokio::test]
async fn fan_out_merges_signals_oldest_first_and_the_first_valid_decision_wins() {
    let e = env();
    let gh_channel = Arc::new(InMemoryChannel::new(ChannelKind::GithubIssue));
    let chat = Arc::new(InMemoryChannel::new(ChannelKind::InChat));
    let fan = FanOut::new().with(gh_channel.clone()).with(chat.clone());
    let RequestOutcome::Opened { gate, .. } = e
        .approvals
        .request(&request(Mode::Autopilot, Trigger::RiskGate), None, 60, &fan)
        .await
        .unwrap()
    else {
        panic!()
    };
    assert_eq!(gh_channel.sent().len(), 1);
    assert_eq!(chat.sent().len(), 1);
    let mut late = gh("octocat", 583231, "/approve");
    late.at = late.at.plus_seconds(10);
    let mut early = signal("in-chat", None, false, ChannelKind::InChat, "/stop");
    early.at = early.at.plus_seconds(1);
    let mut refused = gh("mallory", 1, "/approve");
    refused.at = refused.at.plus_seconds(0);
    gh_channel.push(late);
    gh_channel.push(refused);
    chat.push(early);
    let polled = fan.poll(&gate).await.unwrap();
    let order: Vec<&str> = polled
        .signals
        .iter()
        .map(|s| s.responder.login.as_str())
        .collect();
    assert_eq!(order, ["mallory", "in-chat", "octocat"]);
    let done = e
        .consume(&polled.signals, &rules(), &StaticAuthorizer::new())
        .await;
    // mallory is refused; octocat's /approve comes after the /stop decided: logged, ignored.
    assert_eq!(done.ignored.len(), 2);
    assert!(
        done.ignored[1].reason.contains("already decided"),
        "{:?}",
        done.ignored
    );
    assert_eq!(done.decided.unwrap().state, GateState::Stopped);
}

#[tokio::test]
async fn the_conformance_suite_passes_for_every_shipped_channel() {
    let c = clock();
    let mem = InMemoryChannel::new(ChannelKind::InChat);
    squad_notify::conformance::run_all(&mem).await.unwrap();
    let boxed: Box<dyn ApprovalChannel> = Box::new(InMemoryChannel::new(ChannelKind::GithubIssue));
    squad_notify::conformance::run_all(&boxed).await.unwrap();
    let chat: Arc<dyn ApprovalChannel> =
        Arc::new(InChatChannel::new(Box::new(std::io::sink()), c.clone()));
    squad_notify::conformance::run_all(&chat).await.unwrap();
    let fan = FanOut::new().with(Arc::new(InMemoryChannel::new(ChannelKind::InChat)));
    squad_notify::conformance::run_all(&fan).await.unwrap();
    let hook = squad_notify::webhook::WebhookChannel::with_env(
        squad_notify::webhook::WebhookConfig::default(),
        c,
        Box::new(|_| None),
    )
    .unwrap();
    squad_notify::conformance::run_all(&hook).await.unwrap();
}

#[tokio::test]
async fn the_static_authorizer_passes_the_authorizer_conformance_suite() {
    use squad_notify::conformance::authorizer::{Accounts, run_all};
    let who = |login: &str, id| Responder {
        login: login.into(),
        id: Some(id),
        bot: false,
    };
    let accounts = Accounts {
        admin: who("ada", 1),
        write: who("wendy", 2),
        read: who("rita", 3),
        unknown: who("nobody", 4),
    };
    let table = StaticAuthorizer::new()
        .with("ada", Role::Admin)
        .with("wendy", Role::Write)
        .with("rita", Role::Triage);
    run_all(&table, &accounts).await.unwrap();
    run_all(&std::sync::Arc::new(table.clone()), &accounts)
        .await
        .unwrap();
    let boxed: Box<dyn Authorizer> = Box::new(table);
    run_all(&boxed, &accounts).await.unwrap();
    // A table that gets a role wrong fails the suite.
    let wrong = StaticAuthorizer::new()
        .with("ada", Role::Admin)
        .with("wendy", Role::Write)
        .with("rita", Role::Write);
    assert!(run_all(&wrong, &accounts).await.is_err());
}
