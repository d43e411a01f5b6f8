//! The wait step in the library (issue 19): every test runs on a `FixedClock` that the test moves
//! by the pause the step asks for. Nothing sleeps.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use squad_model::ChannelKind;
use squad_notify::*;

use crate::common::*;

/// A remote channel whose polls answer from a script: an error, or signals.
#[derive(Debug)]
struct Scripted {
    script: Mutex<VecDeque<Result<Polled>>>,
}

impl Scripted {
    fn new(script: Vec<Result<Polled>>) -> Arc<Self> {
        Arc::new(Self {
            script: Mutex::new(script.into()),
        })
    }
}

#[async_trait::async_trait]
impl ApprovalChannel for Scripted {
    fn kind(&self) -> ChannelKind {
        ChannelKind::GithubIssue
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            outbound: true,
            inbound: true,
        }
    }
    async fn notify(&self, _gate: &Gate) -> Result<Delivery> {
        Ok(Delivery {
            channel: ChannelKind::GithubIssue,
            approval_ref: "#7 acme/widgets".into(),
            delivery_id: None,
            locator: Some("{\"v\":0}".into()),
            attempts: 1,
        })
    }
    async fn poll(&self, _gate: &Gate) -> Result<Polled> {
        self.script
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or_else(|| Ok(Polled::default()))
    }
}

struct Rig {
    e: Env,
    chat: Arc<InChatChannel>,
    gate: Gate,
}

async fn rig(remote: Option<Arc<Scripted>>, expires_in: u64) -> Rig {
    let e = env();
    let chat = Arc::new(InChatChannel::new(
        Box::new(std::io::sink()),
        e.clock.clone(),
    ));
    let mut fan = FanOut::new();
    if let Some(r) = remote {
        fan = fan.with(r);
    }
    let fan = fan.with(chat.clone());
    let RequestOutcome::Opened { gate, .. } = e
        .approvals
        .request(
            &request(Mode::Autopilot, Trigger::RiskGate),
            None,
            expires_in,
            &fan,
        )
        .await
        .unwrap()
    else {
        panic!("a risk gate pings")
    };
    Rig { e, chat, gate }
}

fn options(interval: u64, timeout: Option<u64>) -> PacerOptions {
    PacerOptions {
        interval: Duration::from_secs(interval),
        timeout: timeout.map(Duration::from_secs),
        jitter_seed: Some(3),
        ..PacerOptions::default()
    }
}

impl Rig {
    fn waiter(&self, channels: &FanOut, options: &PacerOptions) -> Waiter {
        Waiter::new(
            self.e.approvals.clone(),
            self.gate.clone(),
            channels,
            rules(),
            Arc::new(StaticAuthorizer::new()),
            options,
        )
    }

    /// Steps until done, moving the clock by each pause; returns the end and the pauses.
    async fn run(&self, waiter: &mut Waiter) -> (WaitEnd, Vec<Duration>, Vec<String>) {
        let mut pauses = Vec::new();
        let mut warnings = Vec::new();
        for _ in 0..10_000 {
            let turn = waiter.step().await.unwrap();
            warnings.extend(turn.warnings);
            match turn.next {
                Next::Done(end) => return (end, pauses, warnings),
                Next::Pause(d) => {
                    pauses.push(d);
                    self.e.clock.advance_millis(d.as_millis() as i64);
                }
                other => panic!("{other:?}"),
            }
        }
        panic!("the wait never ended")
    }
}

trait AdvanceMillis {
    fn advance_millis(&self, ms: i64);
}
impl AdvanceMillis for FixedClock {
    fn advance_millis(&self, ms: i64) {
        let now = self.now().unix_millis();
        self.set(squad_model::Timestamp::from_unix_millis(now + ms).unwrap());
    }
}

#[tokio::test]
async fn a_timeout_ends_the_wait_and_never_approves() {
    let r = rig(None, 3600).await;
    let fan = FanOut::new().with(r.chat.clone());
    let mut w = r.waiter(&fan, &options(2, Some(9)));
    let (end, pauses, _) = r.run(&mut w).await;
    assert!(matches!(end, WaitEnd::TimedOut(ref g) if g.state == GateState::Pending));
    // 2 + 2 + 2 + 2, then the last pause only reaches the deadline.
    let total: Duration = pauses.iter().sum();
    assert_eq!(total, Duration::from_secs(9), "{pauses:?}");
    assert_eq!(*pauses.last().unwrap(), Duration::from_secs(1));
    assert_eq!(
        r.e.approvals
            .state()
            .unwrap()
            .approval
            .pending_gates
            .first()
            .cloned()
            .unwrap()
            .id,
        r.gate.id
    );
}

#[tokio::test]
async fn the_gate_expires_while_waiting_and_a_late_answer_does_not_count() {
    let r = rig(None, 30).await;
    let fan = FanOut::new().with(r.chat.clone());
    let mut w = r.waiter(&fan, &options(7, None));
    let (end, pauses, _) = r.run(&mut w).await;
    let WaitEnd::Decided(g) = end else { panic!() };
    assert_eq!(g.state, GateState::Expired);
    assert_eq!(
        pauses.iter().sum::<Duration>(),
        Duration::from_secs(30),
        "woken at expiry"
    );
    r.chat.feed("/approve");
    let mut w = r.waiter(&fan, &options(7, None));
    assert_eq!(r.run(&mut w).await.0.gate().state, GateState::Expired);
    assert!(r.e.log().contains("Resolved: expired"));
}

#[tokio::test]
async fn the_end_of_in_chat_input_ends_the_wait_with_the_gate_pending() {
    let r = rig(None, 3600).await;
    let fan = FanOut::new().with(r.chat.clone());
    let mut w = r.waiter(&fan, &options(2, None));
    r.chat.feed("looks good to me");
    r.chat.close();
    let (end, pauses, _) = r.run(&mut w).await;
    assert!(matches!(end, WaitEnd::InputEnded(_)), "{end:?}");
    assert!(pauses.is_empty());
}

#[tokio::test]
async fn a_fenced_approve_in_chat_waits_on_and_a_plain_one_decides() {
    let r = rig(None, 3600).await;
    let fan = FanOut::new().with(r.chat.clone());
    let mut w = r.waiter(&fan, &options(2, Some(60)));
    for line in [
        "```",
        "/approve",
        "```",
        "~~~~",
        "/stop",
        "~~~",
        "/approve-all",
        "~~~~",
    ] {
        r.chat.feed(line);
    }
    assert!(matches!(w.step().await.unwrap().next, Next::Pause(_)));
    r.chat.feed("/changes: smaller steps");
    let Next::Done(end) = w.step().await.unwrap().next else {
        panic!()
    };
    assert_eq!(end.gate().state, GateState::ChangesRequested);
}

#[tokio::test]
async fn transient_failures_back_off_with_jitter_and_rate_limits_wait_as_asked() {
    let down = || {
        Err(Error::new(
            ErrorKind::Delivery,
            "poll",
            "GitHub is unavailable",
        ))
    };
    let remote = Scripted::new(vec![down(), down(), down(), Ok(Polled::default())]);
    let r = rig(Some(remote.clone()), 86_400).await;
    let fan = FanOut::new().with(remote).with(r.chat.clone());
    let mut w = r.waiter(&fan, &options(10, Some(600)));
    let mut pauses = Vec::new();
    for _ in 0..4 {
        let turn = w.step().await.unwrap();
        let Next::Pause(d) = turn.next else { panic!() };
        pauses.push((d, turn.warnings.len()));
        r.e.clock.advance_millis(d.as_millis() as i64);
    }
    // Twice, four times, eight times the interval, each jittered between half and all of it;
    // then, after a good poll, the interval again.
    for (i, (d, warned)) in pauses[..3].iter().enumerate() {
        let grown = Duration::from_secs(10 << (i + 1));
        assert!(*d >= grown / 2 && *d <= grown, "{i}: {d:?}");
        assert_eq!(*warned, 1);
    }
    assert_eq!(pauses[3], (Duration::from_secs(10), 0));
    // A rate limit waits what GitHub asked, plus at most a tenth and a second.
    let limited = Error::new(ErrorKind::RateLimited, "poll", "rate limited");
    let mut pacer = Pacer::new(r.e.clock.now(), &options(10, None));
    let d = pacer.after_poll(r.e.clock.now(), Some(&limited), None);
    assert!(
        d >= Duration::from_secs(60) && d <= Duration::from_secs(67),
        "{d:?}"
    );
    // A channel's own longer pause (x-poll-interval) wins over the interval.
    assert_eq!(
        pacer.after_poll(r.e.clock.now(), None, Some(Duration::from_secs(90))),
        Duration::from_secs(90)
    );
    assert_eq!(
        pacer.after_poll(r.e.clock.now(), None, Some(Duration::from_secs(5))),
        Duration::from_secs(10)
    );
}

#[tokio::test]
async fn an_unrecoverable_channel_error_ends_the_wait_with_the_error() {
    let refused = Err(Error::new(
        ErrorKind::Unauthorized,
        "poll",
        "GitHub refused the token",
    ));
    let remote = Scripted::new(vec![refused]);
    let r = rig(Some(remote.clone()), 3600).await;
    let fan = FanOut::new().with(remote).with(r.chat.clone());
    let mut w = r.waiter(&fan, &options(10, None));
    assert_eq!(w.step().await.unwrap_err().kind(), ErrorKind::Unauthorized);
}

#[tokio::test]
async fn locators_are_stored_and_refused_signals_logged_before_consumption() {
    let refused = Ignored {
        signal: gh("mallory", 666, "/approve"),
        reason: "not authorized (role none)".into(),
    };
    let polled = Polled {
        signals: vec![gh("octocat", 583231, "/approve")],
        ignored: vec![refused],
        locators: vec![(ChannelKind::GithubIssue, "{\"v\":1}".into())],
        ..Polled::default()
    };
    let remote = Scripted::new(vec![Ok(polled)]);
    let r = rig(Some(remote.clone()), 3600).await;
    let fan = FanOut::new().with(remote).with(r.chat.clone());
    let mut w = r.waiter(&fan, &options(10, None));
    let turn = w.step().await.unwrap();
    assert_eq!(turn.ignored.len(), 1);
    let Next::Done(WaitEnd::Decided(g)) = turn.next else {
        panic!()
    };
    assert_eq!(g.state, GateState::Approved);
    let log = r.e.log();
    assert!(
        log.contains("ignored (not authorized (role none))"),
        "{log}"
    );
    assert_eq!(
        g.deliveries
            .iter()
            .find(|d| d.channel == ChannelKind::GithubIssue)
            .and_then(|d| d.locator.as_deref()),
        Some("{\"v\":1}"),
        "the advanced poll state was stored before the decision"
    );
    verify_log(
        &log,
        r.e.approvals.state().unwrap().approval.log_head.as_deref(),
    )
    .unwrap();
}

#[tokio::test]
async fn a_gate_decided_by_another_process_ends_the_wait() {
    let r = rig(None, 3600).await;
    let fan = FanOut::new().with(r.chat.clone());
    let mut w = r.waiter(&fan, &options(5, None));
    assert!(matches!(w.step().await.unwrap().next, Next::Pause(_)));
    r.e.consume(
        &[gh("octocat", 583231, "/stop")],
        &rules(),
        &StaticAuthorizer::new(),
    )
    .await;
    let Next::Done(WaitEnd::Decided(g)) = w.step().await.unwrap().next else {
        panic!()
    };
    assert_eq!(g.state, GateState::Stopped);
}

#[tokio::test]
async fn a_day_of_waiting_takes_no_time() {
    let r = rig(None, 86_400).await;
    let fan = FanOut::new().with(r.chat.clone());
    let mut w = r.waiter(&fan, &options(30, None));
    let (end, pauses, _) = r.run(&mut w).await;
    assert_eq!(end.gate().state, GateState::Expired);
    assert_eq!(pauses.len(), 2880);
}
