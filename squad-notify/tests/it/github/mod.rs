//! Tests of the GitHub REST layer against the emulator.

mod attacks;
mod channel;
mod happy;
mod props;
mod sim;
mod units;

use std::time::Duration;

use squad_notify::github::{
    CandidateContent, Decision, GithubClient, IssuePayload, OpenedGate, Outcome, Parsed, PollState,
    RejectReason, Rejection, SignalParser,
};
use squad_notify::{Clock, Pacer, PacerOptions};
use squad_test_support::github as emulator;

use emulator::SimClock;

/// The test's own minimal command parser (the crate's Markdown-aware parser is not part of this
/// layer): the first line of the comment, `/approve`, `/approve-all`, `/stop`, `/changes: note`,
/// each optionally followed by a gate id; the `squad/*` labels.
pub(crate) fn parse(content: &CandidateContent) -> Option<Parsed<(Outcome, Option<String>)>> {
    match content {
        CandidateContent::Label(l) => {
            let outcome = match l.as_str() {
                "squad/approved" => Outcome::Approved,
                "squad/approve-all" => Outcome::ApproveAll,
                "squad/changes" => Outcome::ChangesRequested,
                "squad/stop" => Outcome::Stopped,
                _ => return None,
            };
            Some(Parsed {
                signal: (outcome, None),
                gate: None,
            })
        }
        CandidateContent::Comment(body) => {
            let line = body.lines().next()?.trim();
            let (head, note) = match line.split_once(':') {
                Some((h, n)) => (h.trim(), Some(n.trim().to_owned())),
                None => (line, None),
            };
            let mut words = head.split_whitespace();
            let outcome = match words.next()? {
                "/approve" => Outcome::Approved,
                "/approve-all" => Outcome::ApproveAll,
                "/stop" => Outcome::Stopped,
                "/changes" => Outcome::ChangesRequested,
                _ => return None,
            };
            let gate = words.next().map(str::to_owned);
            Some(Parsed {
                signal: (
                    outcome,
                    note.filter(|_| outcome == Outcome::ChangesRequested),
                ),
                gate,
            })
        }
    }
}

pub(crate) fn payload() -> IssuePayload {
    IssuePayload {
        mode: "autopilot".into(),
        trigger: "impactful-action".into(),
        topic: "Deploy the billing service".into(),
        awaiting: "Approve the production deploy".into(),
        detail: "All checks pass.\nThe deploy runs the schema migration.".into(),
    }
}

pub(crate) async fn open(client: &GithubClient) -> OpenedGate {
    client
        .open_gate("run-1", "g-0001", "sha256-1c9e77", &payload())
        .await
        .unwrap()
}

/// Waits up to `secs` simulated seconds with a 30 s interval.
pub(crate) fn opts(secs: u64) -> PacerOptions {
    PacerOptions {
        interval: Duration::from_secs(30),
        timeout: Some(Duration::from_secs(secs)),
        jitter_seed: Some(7),
        ..PacerOptions::default()
    }
}

/// How a test wait ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum WaitOutcome<S> {
    Decided(Decision<S>),
    TimedOut,
}

/// What a test wait saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WaitReport<S> {
    pub(crate) outcome: WaitOutcome<S>,
    pub(crate) rejected: Vec<Rejection>,
    pub(crate) polls: u64,
    pub(crate) requests: u64,
    pub(crate) not_modified: u64,
    pub(crate) backoffs: u64,
}

/// A host's wait on the GitHub layer alone: `GithubClient::step` repeated, paused by the crate's
/// `Pacer` on the emulator's simulated clock (a pause moves the clock; nothing sleeps).
pub(crate) async fn wait<S>(
    client: &GithubClient,
    clock: &SimClock,
    state: &mut PollState,
    parser: &dyn SignalParser<S>,
    options: &PacerOptions,
) -> squad_notify::Result<WaitReport<S>> {
    let mut pacer = Pacer::new(clock.now(), options);
    let mut report = WaitReport {
        outcome: WaitOutcome::TimedOut,
        rejected: Vec::new(),
        polls: 0,
        requests: 0,
        not_modified: 0,
        backoffs: 0,
    };
    loop {
        if pacer.timed_out(clock.now()) {
            return Ok(report);
        }
        report.polls += 1;
        let pause = match client.step(state, parser).await {
            Ok(step) => {
                report.requests += u64::from(step.requests);
                report.not_modified += u64::from(step.not_modified);
                report.rejected.extend(step.rejected);
                if let Some(decision) = step.decision {
                    report.outcome = WaitOutcome::Decided(decision);
                    return Ok(report);
                }
                pacer.after_poll(clock.now(), None, step.wait_hint)
            }
            Err(e) if e.is_retryable() => {
                report.backoffs += 1;
                pacer.after_poll(clock.now(), Some(&e), None)
            }
            Err(e) => return Err(e),
        };
        clock.sleep(pause);
    }
}

/// The rejection reasons, leaving out the squad's own `squad-approval` label event of the
/// issue's creation (rejected as before the gate in every scenario).
pub(crate) fn reasons<S>(report: &WaitReport<S>) -> Vec<RejectReason> {
    rejected(report).into_iter().map(|r| r.reason).collect()
}

/// The rejections, leaving out the same creation event as [`reasons`].
pub(crate) fn rejected<S>(report: &WaitReport<S>) -> Vec<Rejection> {
    report
        .rejected
        .iter()
        .filter(|r| {
            !(r.reason == RejectReason::BeforeGate
                && r.candidate.content == CandidateContent::Label("squad-approval".into()))
        })
        .cloned()
        .collect()
}
