//! A conformance suite for [`crate::ApprovalChannel`] implementors (feature
//! `conformance`; exempt from semver).
//!
//! Each scenario takes a fresh channel and checks a sentence of the trait's `# Contract` and
//! `# Behavior`. Run [`run_all`] from your tests.

use squad_model::Timestamp;

use crate::channel::ApprovalChannel;
use crate::error::{Error, ErrorKind, Result};
use crate::gate::{Gate, GateRequest, Mode, RunId, Trigger};

fn sample_gate() -> Result<Gate> {
    let now = Timestamp::from_unix_seconds(1_800_000_000)?;
    Gate::open(
        &GateRequest {
            mode: Mode::Autopilot,
            trigger: Trigger::RiskGate,
            topic: "conformance".to_owned(),
            awaiting: "nothing".to_owned(),
            detail: String::new(),
        },
        RunId::new("conformance")?,
        now,
        60,
    )
}

fn fail(message: String) -> Error {
    Error::new(ErrorKind::InvalidInput, "conformance", message)
}

/// `notify` either delivers (reporting at least one attempt and this channel's kind) or fails with
/// `Unavailable`/`Delivery`: it never fabricates a send.
pub async fn notify_reports_honestly(channel: &dyn ApprovalChannel) -> Result<()> {
    let gate = sample_gate()?;
    match channel.notify(&gate).await {
        Ok(d) if d.attempts >= 1 && d.channel == channel.kind() => Ok(()),
        Ok(d) => Err(fail(format!(
            "a delivery must report its channel and >= 1 attempt: {d:?}"
        ))),
        Err(e) if matches!(e.kind(), ErrorKind::Unavailable | ErrorKind::Delivery) => Ok(()),
        Err(e) => Err(fail(format!("notify failed with kind {}", e.kind()))),
    }
}

/// Outbound-only channels return no signals and `exhausted: true`; inbound ones return each signal
/// once (a second poll right after the first returns nothing new).
pub async fn poll_returns_each_signal_once(channel: &dyn ApprovalChannel) -> Result<()> {
    let gate = sample_gate()?;
    let first = channel.poll(&gate).await?;
    if !channel.capabilities().inbound {
        if !first.signals.is_empty() || !first.exhausted {
            return Err(fail(
                "an outbound-only channel must return no signals, exhausted".into(),
            ));
        }
        return Ok(());
    }
    let second = channel.poll(&gate).await?;
    if first.signals.iter().any(|s| second.signals.contains(s)) {
        return Err(fail("a signal was returned twice".into()));
    }
    Ok(())
}

/// Polled signals come oldest first.
pub async fn signals_are_ordered(channel: &dyn ApprovalChannel) -> Result<()> {
    let gate = sample_gate()?;
    let p = channel.poll(&gate).await?;
    if p.signals.windows(2).any(|w| w[0].at > w[1].at) {
        return Err(fail("signals are not oldest first".into()));
    }
    Ok(())
}

/// Runs every scenario.
///
/// # Errors
///
/// The first scenario that fails, named in the message.
pub async fn run_all(channel: &dyn ApprovalChannel) -> Result<()> {
    notify_reports_honestly(channel).await?;
    poll_returns_each_signal_once(channel).await?;
    signals_are_ordered(channel).await?;
    Ok(())
}
