//! squad-notify on its own, with the in-memory channel: open a gate, feed the approver's answer,
//! and let the wait step consume it.
//!
//! A tool needs one dependency, `squad-notify` (no feature: the GitHub and webhook channels are
//! the features `github` and `webhook`); the vocabulary comes with it as
//! `squad_notify::squad_model`. The library never waits by itself: the host calls
//! [`Waiter::step`] and pauses as it says; here a `FixedClock` is moved instead of sleeping.
//!
//! Run with `cargo run -p squad-examples --example notify_in_memory`.

use std::io::Write;
use std::sync::Arc;

use anyhow::{bail, ensure};
use squad_notify::squad_model::ChannelKind;
use squad_notify::{
    Approvals, ApproverRules, Clock as _, FanOut, FixedClock, GateRequest, GateState, Identity,
    InMemoryChannel, Mode, Next, PacerOptions, RequestOutcome, Responder, Signal, SignalBody,
    StateDir, StaticAuthorizer, Trigger, Waiter,
};

fn main() -> anyhow::Result<()> {
    run(&mut std::io::stdout().lock())
}

/// Opens a risk gate, answers it on the in-memory channel, waits for the decision, and reports on
/// `out`.
pub(crate) fn run(out: &mut impl Write) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?; // state.json and notifications.md live here (`.squad/`)
    let clock = Arc::new(FixedClock::at_unix_seconds(1_800_000_000));
    let approvals = Approvals::new(StateDir::new(dir.path()), clock.clone());
    let phone = Arc::new(InMemoryChannel::new(ChannelKind::GithubIssue));
    let channels = FanOut::new().with(phone.clone());

    let request = GateRequest {
        mode: Mode::Autopilot,
        trigger: Trigger::RiskGate,
        topic: "Drop the legacy sessions table".into(),
        awaiting: "approve the drop".into(),
        detail: "No service has read it since March.".into(),
    };
    let RequestOutcome::Opened { gate, .. } =
        block_on(approvals.request(&request, None, 3600, &channels))?
    else {
        bail!("a risk gate always opens");
    };
    writeln!(out, "gate {} opened: {}", gate.id, gate.topic)?;

    let rules = ApproverRules {
        approver: Some(Identity::login("octocat")),
        own_identities: vec![],
    };
    let options = PacerOptions::default();
    let mut waiter = Waiter::new(
        approvals,
        gate,
        &channels,
        rules,
        Arc::new(StaticAuthorizer::new()),
        &options,
    );
    let Next::Pause(pause) = block_on(waiter.step())?.next else {
        bail!("nothing was answered yet")
    };
    writeln!(out, "nothing yet; the host pauses {} s", pause.as_secs())?;
    clock.advance_seconds(i64::try_from(pause.as_secs())?);

    let answer = format!("/approve {}", waiter.gate().id);
    phone.push(Signal {
        responder: Responder {
            login: "octocat".into(),
            id: None,
            bot: false,
        },
        at: clock.now(),
        source: ChannelKind::GithubIssue,
        body: SignalBody::Text(answer.clone()),
        reference: None,
    });
    writeln!(out, "octocat answers {answer:?}")?;
    let Next::Done(end) = block_on(waiter.step())?.next else {
        bail!("the answer was not consumed")
    };
    ensure!(
        end.gate().state == GateState::Approved,
        "the gate was not approved"
    );
    writeln!(out, "gate {} is {}", end.gate().id, end.gate().state)?;
    Ok(())
}

/// Drives a future that never waits on I/O (the in-memory channel, local files) to completion; a
/// host with real channels runs `step` on its own runtime.
fn block_on<F: std::future::Future>(f: F) -> F::Output {
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    let mut f = std::pin::pin!(f);
    loop {
        if let std::task::Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
}
