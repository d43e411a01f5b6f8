//! Waiting for a decision, one step at a time, on the host's schedule.
//!
//! The library never sleeps: a host drives the wait. [`Waiter::step`] polls every channel once,
//! stores what advanced (the GitHub poll state), logs what was ignored, consumes the signals, and
//! says what comes next: pause for a while ([`Next::Pause`]), or the wait is over
//! ([`Next::Done`]: decided, expired, timed out, or the end of the input). The host pauses as it
//! likes, typically racing the pause against new input:
//!
//! - the `squad` CLI races a `tokio::time::sleep` against the next line of stdin, which it feeds
//!   to the [`InChatChannel`](crate::InChatChannel);
//! - an MCP server bounds the wait with [`PacerOptions::timeout`], and for an in-chat gate feeds
//!   the human's answer to an elicitation instead of stdin;
//! - a test moves a [`FixedClock`](crate::FixedClock) by the pause and steps again: a day of
//!   waiting takes no time.
//!
//! How long to pause is decided by [`Pacer`], pure arithmetic on the clock's time: the polling
//! interval (longer when a channel asks, as GitHub's `x-poll-interval` does), one jittered
//! exponential backoff after transient failures, the wait a rate limit asked for, never past the
//! deadline of the wait nor past the gate's expiry.

use std::sync::Arc;
use std::time::Duration;

use squad_model::{ChannelKind, Timestamp};

use crate::approvals::{Approvals, Ignored};
use crate::auth::{ApproverRules, Authorizer};
use crate::channel::{ApprovalChannel, FanOut, Polled};
use crate::error::{Error, ErrorKind, Result};
use crate::gate::{Gate, GateState};

/// How a wait paces its polls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PacerOptions {
    /// The pause between two polls that found nothing (default 30 s, a polite pace for GitHub).
    /// A channel's own request for a longer pause wins.
    pub interval: Duration,
    /// Give up after this long on the clock, leaving the gate pending (`None`: wait until a
    /// decision, the gate's expiry or the end of the input).
    pub timeout: Option<Duration>,
    /// The longest pause after repeated transient failures (default 15 minutes).
    pub max_backoff: Duration,
    /// Seed of the backoff jitter (default: from the clock), for reproducible tests.
    pub jitter_seed: Option<u64>,
}

impl Default for PacerOptions {
    fn default() -> Self {
        Self {
            interval: Duration::from_secs(30),
            timeout: None,
            max_backoff: Duration::from_secs(15 * 60),
            jitter_seed: None,
        }
    }
}

/// A small deterministic generator for backoff jitter (splitmix64); not for secrets.
#[derive(Debug, Clone)]
struct Jitter(u64);

impl Jitter {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A duration drawn uniformly from `[low, high]` (millisecond resolution).
    fn between(&mut self, low: Duration, high: Duration) -> Duration {
        let (lo, hi) = (low.as_millis(), high.as_millis().max(low.as_millis()));
        let span = u64::try_from(hi - lo).unwrap_or(u64::MAX).saturating_add(1);
        let pick = u128::from(self.next() % span);
        Duration::from_millis(u64::try_from(lo + pick).unwrap_or(u64::MAX))
    }
}

/// How long to pause between polls: pure arithmetic on the clock's time (see the module docs).
///
/// ```
/// use std::time::Duration;
/// use squad_notify::{Error, ErrorKind, Pacer, PacerOptions};
///
/// let t0: squad_model::Timestamp = "2026-11-30T10:00:00Z".parse()?;
/// let options = PacerOptions {
///     interval: Duration::from_secs(10),
///     timeout: Some(Duration::from_secs(25)),
///     jitter_seed: Some(1),
///     ..PacerOptions::default()
/// };
/// let mut pacer = Pacer::new(t0, &options);
/// assert_eq!(pacer.after_poll(t0, None, None), Duration::from_secs(10));
/// // A transient failure backs off (jittered, between 10 and 20 s here)...
/// let down = Error::new(ErrorKind::Delivery, "poll", "HTTP 502");
/// let pause = pacer.after_poll(t0, Some(&down), None);
/// assert!(pause >= Duration::from_secs(10) && pause <= Duration::from_secs(20));
/// // ...and no pause goes past the deadline.
/// let t20 = t0.plus_seconds(20);
/// assert_eq!(pacer.after_poll(t20, None, None), Duration::from_secs(5));
/// assert!(pacer.timed_out(t0.plus_seconds(25)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct Pacer {
    deadline: Option<Timestamp>,
    wake_at: Option<Timestamp>,
    interval: Duration,
    max_backoff: Duration,
    failures: u32,
    jitter: Jitter,
}

fn millis_between(from: Timestamp, to: Timestamp) -> Duration {
    Duration::from_millis(u64::try_from(to.unix_millis() - from.unix_millis()).unwrap_or(0))
}

impl Pacer {
    /// A pacer for a wait that starts `now`.
    pub fn new(now: Timestamp, options: &PacerOptions) -> Self {
        let deadline = options
            .timeout
            .map(|t| now.plus_seconds(i64::try_from(t.as_secs()).unwrap_or(i64::MAX)));
        let seed = options
            .jitter_seed
            .unwrap_or_else(|| now.unix_millis().unsigned_abs());
        Self {
            deadline,
            wake_at: None,
            interval: options.interval.max(Duration::from_millis(1)),
            max_backoff: options.max_backoff.max(options.interval),
            failures: 0,
            jitter: Jitter(seed),
        }
    }

    /// Never pauses past `at` (a gate's expiry, so that it is recorded when it happens).
    pub fn wake_at(mut self, at: Timestamp) -> Self {
        self.wake_at = Some(at);
        self
    }

    /// When the wait gives up, if it does.
    pub fn deadline(&self) -> Option<Timestamp> {
        self.deadline
    }

    /// Whether the wait's timeout ran out at `now`.
    pub fn timed_out(&self, now: Timestamp) -> bool {
        self.deadline.is_some_and(|d| now >= d)
    }

    /// Transient failures in a row so far.
    pub fn failures(&self) -> u32 {
        self.failures
    }

    /// The pause after a poll at `now`: the interval after a good poll (or `hint`, the pause a
    /// channel asked for, when longer); after a rate limit, the wait it asked for
    /// ([`Error::retry_after`], else a minute) plus up to a tenth more; after another failure,
    /// an exponential backoff from twice the interval up to the maximum, jittered between half
    /// and all of it. Never past the deadline or [`Pacer::wake_at`].
    pub fn after_poll(
        &mut self,
        now: Timestamp,
        failure: Option<&Error>,
        hint: Option<Duration>,
    ) -> Duration {
        let pause = match failure {
            Some(e) if e.kind() == ErrorKind::RateLimited => {
                let base = e.retry_after().unwrap_or(Duration::from_secs(60));
                base + self
                    .jitter
                    .between(Duration::ZERO, base / 10 + Duration::from_secs(1))
            }
            Some(_) => {
                self.failures = self.failures.saturating_add(1);
                let grown = self
                    .interval
                    .saturating_mul(1u32 << self.failures.min(10))
                    .min(self.max_backoff);
                self.jitter.between(grown / 2, grown)
            }
            None => {
                self.failures = 0;
                hint.filter(|h| *h > self.interval).unwrap_or(self.interval)
            }
        };
        let mut pause = pause;
        if let Some(d) = self.deadline {
            pause = pause.min(millis_between(now, d));
        }
        if let Some(w) = self.wake_at.filter(|w| *w > now) {
            pause = pause.min(millis_between(now, w));
        }
        pause
    }
}

/// How a wait ended.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum WaitEnd {
    /// The gate left `pending`: decided here or by another process, or expired (its state says
    /// which).
    Decided(Gate),
    /// The timeout ran out; the gate stays pending (a timeout never approves).
    TimedOut(Gate),
    /// Every inbound channel ended (the in-chat input was closed); the gate stays pending.
    InputEnded(Gate),
}

impl WaitEnd {
    /// The gate, as it stands at the end.
    pub fn gate(&self) -> &Gate {
        match self {
            Self::Decided(g) | Self::TimedOut(g) | Self::InputEnded(g) => g,
        }
    }
}

/// What to do after a [`Waiter::step`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
#[expect(
    clippy::large_enum_variant,
    reason = "one value per poll, moved once: boxing the gate would cost an allocation for nothing"
)]
pub enum Next {
    /// Step again after this pause, or earlier when new input arrives (a line for the in-chat
    /// channel).
    Pause(Duration),
    /// The wait is over.
    Done(WaitEnd),
}

/// What one [`Waiter::step`] did.
#[derive(Debug, Clone)]
pub struct Turn {
    /// What comes next.
    pub next: Next,
    /// Command signals that did not count this step, with the reason (already logged in
    /// `notifications.md`): for the host to show.
    pub ignored: Vec<Ignored>,
    /// Problems that did not end the wait (a channel failed and is retried after a backoff; the
    /// outcome could not be shown where the human answered): for the host to show.
    pub warnings: Vec<String>,
}

/// One wait for a decision on one gate (see the module docs).
///
/// ```
/// use std::sync::Arc;
/// use squad_model::ChannelKind;
/// use squad_notify::*;
///
/// # fn block_on<F: std::future::Future>(f: F) -> F::Output {
/// #     let waker = std::task::Waker::noop();
/// #     let mut cx = std::task::Context::from_waker(&waker);
/// #     let mut f = std::pin::pin!(f);
/// #     loop { if let std::task::Poll::Ready(v) = f.as_mut().poll(&mut cx) { return v; } }
/// # }
/// # let tmp = std::env::temp_dir().join(format!("squad-notify-wait-doc-{}", std::process::id()));
/// let clock = Arc::new(FixedClock::at_unix_seconds(1_800_000_000));
/// let approvals = Approvals::new(StateDir::new(&tmp), clock.clone());
/// let chat = Arc::new(InChatChannel::new(Box::new(std::io::sink()), clock.clone()));
/// let channels = FanOut::new().with(chat.clone());
/// let request = GateRequest {
///     mode: Mode::Autopilot,
///     trigger: Trigger::RiskGate,
///     topic: "Drop the legacy table".into(),
///     awaiting: "approve the drop".into(),
///     detail: String::new(),
/// };
/// let RequestOutcome::Opened { gate, .. } = block_on(approvals.request(&request, None, 3600, &channels))? else {
///     unreachable!("a risk gate always pings");
/// };
/// let options = PacerOptions { interval: std::time::Duration::from_secs(5), ..PacerOptions::default() };
/// let mut waiter = Waiter::new(
///     approvals.clone(), gate, &channels, ApproverRules::default(),
///     Arc::new(StaticAuthorizer::new()), &options,
/// );
/// // Nothing typed yet: pause (the host sleeps, or moves its clock).
/// let Next::Pause(pause) = block_on(waiter.step())?.next else { unreachable!() };
/// clock.advance_seconds(pause.as_secs() as i64);
/// // The human answers.
/// chat.feed("/approve");
/// let Next::Done(end) = block_on(waiter.step())?.next else { unreachable!() };
/// assert_eq!(end.gate().state, GateState::Approved);
/// # std::fs::remove_dir_all(&tmp).ok();
/// # Ok::<(), squad_notify::Error>(())
/// ```
#[derive(Debug)]
pub struct Waiter {
    approvals: Approvals,
    gate: Gate,
    channels: Vec<Arc<dyn ApprovalChannel>>,
    rules: ApproverRules,
    authorizer: Arc<dyn Authorizer>,
    pacer: Pacer,
}

impl Waiter {
    /// A wait on `gate` (as [`Approvals::target`] found it) over the inbound channels of
    /// `channels`, authorizing signals with `rules` and `authorizer` (for the github-issue
    /// channel: its `approver_rules` and the channel itself), paced by `options` from now on.
    pub fn new(
        approvals: Approvals,
        gate: Gate,
        channels: &FanOut,
        rules: ApproverRules,
        authorizer: Arc<dyn Authorizer>,
        options: &PacerOptions,
    ) -> Self {
        let now = approvals.clock().now();
        let pacer = Pacer::new(now, options).wake_at(gate.expires);
        Self {
            approvals,
            gate,
            channels: channels
                .channels()
                .iter()
                .filter(|c| c.capabilities().inbound)
                .cloned()
                .collect(),
            rules,
            authorizer,
            pacer,
        }
    }

    /// The gate waited on.
    pub fn gate(&self) -> &Gate {
        &self.gate
    }

    /// When the wait gives up, if it does.
    pub fn deadline(&self) -> Option<Timestamp> {
        self.pacer.deadline()
    }

    /// One step: poll every channel once, store advanced locators, log refused signals, consume,
    /// and say what comes next. Transient channel failures (a rate limit, GitHub unreachable)
    /// become warnings and a backoff; the gate's expiry, a decision by another process and the
    /// end of the input end the wait.
    ///
    /// # Errors
    ///
    /// A channel's failure that retrying cannot fix (401, 403, a superseded issue); the state's
    /// errors ([`ErrorKind::Tampered`] while a tampering of the log is not acknowledged,
    /// [`ErrorKind::Corrupt`], [`ErrorKind::Io`]).
    pub async fn step(&mut self) -> Result<Turn> {
        let mut turn = Turn {
            next: Next::Pause(Duration::ZERO),
            ignored: Vec::new(),
            warnings: Vec::new(),
        };
        if self.gate.state.is_terminal() {
            turn.next = Next::Done(WaitEnd::Decided(self.gate.clone()));
            return Ok(turn);
        }
        let now = self.approvals.clock().now();
        let mut polled = Polled {
            exhausted: true,
            ..Polled::default()
        };
        let mut failure = None;
        for c in &self.channels {
            match c.poll(&self.gate).await {
                Ok(p) => polled.merge(p),
                Err(e) if e.is_retryable() => {
                    polled.exhausted = false;
                    turn.warnings
                        .push(format!("{} channel: {e}; retrying", c.kind()));
                    failure = Some(e);
                }
                Err(e) => return Err(e),
            }
        }
        for (channel, locator) in &polled.locators {
            self.approvals
                .update_locator(&self.gate.id, *channel, locator)?;
        }
        self.approvals
            .note_ignored(&self.gate.id, &polled.ignored)?;
        turn.ignored = polled.ignored;
        let expired = self.gate.is_expired_at(now);
        if polled.signals.is_empty() && !expired {
            // Nothing to consume: only look whether another process decided the gate (or a
            // tampering was recorded), without taking the lock.
            let doc = self.approvals.state()?;
            if let Some(t) = &doc.approval.tamper {
                return Err(Error::new(
                    ErrorKind::Tampered,
                    "gate.wait",
                    format!(
                        "notifications.md was tampered with (detected {}: {}); run `squad approval acknowledge-tamper` after checking it",
                        t.detected, t.problem
                    ),
                ));
            }
            if doc.approval.pending(&self.gate.id).is_none() {
                let gate = self.approvals.target(Some(&self.gate.id))?;
                turn.next = Next::Done(WaitEnd::Decided(gate));
                return Ok(turn);
            }
        } else {
            match self
                .approvals
                .consume_gate(
                    &self.gate.id,
                    &polled.signals,
                    &self.rules,
                    self.authorizer.as_ref(),
                )
                .await
            {
                Ok(consumed) => {
                    turn.ignored.extend(consumed.ignored);
                    if let Some(decided) = consumed.decided {
                        self.gate = decided.clone();
                        self.resolve(&decided, &mut turn.warnings).await;
                        turn.next = Next::Done(WaitEnd::Decided(decided));
                        return Ok(turn);
                    }
                }
                Err(e) if e.kind() == ErrorKind::NotFound => {
                    // Another process decided the gate meanwhile.
                    let gate = self.approvals.target(Some(&self.gate.id))?;
                    turn.next = Next::Done(WaitEnd::Decided(gate));
                    return Ok(turn);
                }
                Err(e) => return Err(e),
            }
        }
        if polled.exhausted && failure.is_none() {
            turn.next = Next::Done(WaitEnd::InputEnded(self.gate.clone()));
            return Ok(turn);
        }
        let now = self.approvals.clock().now();
        if self.pacer.timed_out(now) {
            turn.next = Next::Done(WaitEnd::TimedOut(self.gate.clone()));
            return Ok(turn);
        }
        turn.next = Next::Pause(self.pacer.after_poll(
            now,
            failure.as_ref(),
            polled.next_poll_after,
        ));
        Ok(turn)
    }

    /// Shows the outcome where the human saw the notification, and logs what was done.
    async fn resolve(&self, gate: &Gate, warnings: &mut Vec<String>) {
        if gate.state == GateState::Expired {
            return;
        }
        for c in &self.channels {
            match c.resolve(gate).await {
                Ok(Some(action)) => {
                    let kind = c.kind();
                    if let Err(e) = self.approvals.record_resolution(
                        gate,
                        kind,
                        &approval_ref(gate, kind),
                        &action,
                    ) {
                        warnings.push(format!("cannot record the resolution: {e}"));
                    }
                }
                Ok(None) => {}
                Err(e) => warnings.push(format!(
                    "{} channel: cannot show the decision: {e}",
                    c.kind()
                )),
            }
        }
    }
}

/// Where `gate` was delivered on `kind`, for the log (`#12 owner/repo`).
fn approval_ref(gate: &Gate, kind: ChannelKind) -> String {
    gate.deliveries
        .iter()
        .rev()
        .find(|d| d.channel == kind)
        .map_or_else(
            || kind.as_str().to_owned(),
            |d| d.approval_ref.trim_end_matches(" (reused)").to_owned(),
        )
}
