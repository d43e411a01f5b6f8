//! Channels: how a gate reaches a human and how the human's signals come back.

use std::collections::VecDeque;
use std::fmt;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use squad_model::{ChannelKind, Timestamp};

use crate::clock::Clock;
use crate::error::{Error, ErrorKind, Result};
use crate::gate::{Gate, Responder};
use crate::signal::{ChatLines, NotCommand, Parsed};

/// What a signal carries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "value", rename_all = "kebab-case")]
pub enum SignalBody {
    /// A comment body or an in-chat line (parsed by [`crate::parse_comment`]).
    Text(String),
    /// A label added to the approval issue (parsed by [`crate::parse_label`]).
    Label(String),
}

/// A candidate signal, as a channel saw it. Channels never decide authorization: every signal
/// goes through the parser, the [`crate::Authorizer`] and the gate's state machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Signal {
    /// Who sent it (login, numeric id, bot flag).
    pub responder: Responder,
    /// When the channel saw it.
    pub at: Timestamp,
    /// The channel it came through.
    pub source: ChannelKind,
    /// The text or label.
    pub body: SignalBody,
    /// Where it lives (comment id, label event id), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
}

/// What a channel did with a notification.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Delivery {
    /// The channel that delivered it.
    pub channel: ChannelKind,
    /// The approval reference for the log (`in-chat`, `webhook (outbound only)`, `#12 owner/repo`).
    pub approval_ref: String,
    /// A unique id of this delivery, when the channel has one (the webhook's delivery id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery_id: Option<String>,
    /// Where the notification lives, machine-readable and channel-specific (for example the
    /// number of the approval issue). Stored with the pending gate, so that a fresh process can
    /// poll the same thread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locator: Option<String>,
    /// How many attempts it took.
    pub attempts: u32,
}

/// What a channel can do. Backend differences are declared here, never silent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Capabilities {
    /// It can tell a human that a gate is waiting.
    pub outbound: bool,
    /// It can bring a human's signal back.
    pub inbound: bool,
}

/// The result of one poll.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Polled {
    /// New candidate signals, oldest first.
    pub signals: Vec<Signal>,
    /// `true` when this channel will never produce another signal (end of in-chat input, or an
    /// outbound-only channel).
    pub exhausted: bool,
    /// Command signals the channel itself refused before they could count (for example a GitHub
    /// comment edited after creation, written by a bot, or by an account without write access),
    /// with the reason. The host records them ([`crate::Approvals::note_ignored`]); they never
    /// decide anything.
    pub ignored: Vec<crate::Ignored>,
    /// Locators that advanced during the poll (for example the GitHub poll state with new
    /// ETags), by channel: the host stores each with the gate's delivery of that channel
    /// ([`crate::Approvals::update_locator`]) so that a fresh process resumes from it.
    pub locators: Vec<(ChannelKind, String)>,
    /// The pause the channel asks for before its next poll (GitHub's `x-poll-interval`), when
    /// it asked. A rate limit comes back as an error instead, with [`Error::retry_after`].
    pub next_poll_after: Option<Duration>,
}

/// A bidirectional approval surface: send a notification for a gate, poll for signals.
///
/// # Contract
///
/// - A channel never decides: it returns *candidate* signals with the responder's identity, and
///   the caller runs them through [`crate::parse_comment`], [`crate::authorize`] and
///   [`Gate::apply`].
/// - A channel never fabricates a send: when it cannot deliver, `notify` returns an error of kind
///   [`ErrorKind::Unavailable`] (nothing configured here) or [`ErrorKind::Delivery`] (the remote
///   end failed after bounded retries). The caller then degrades to in-chat and says so.
/// - Secrets (URLs, tokens) are read when needed and never appear in a `Delivery`, an error or a
///   log line.
///
/// # Behavior
///
/// - `notify`: at most once per call from the caller's view; a channel may retry internally
///   (bounded) and reports the number of attempts.
/// - `poll`: returns each signal once (a later poll returns only newer ones), oldest first; it
///   does not block for long (the host sleeps between polls). Outbound-only channels return
///   no signals and `exhausted: true`.
///
/// # Implementing
///
/// Implement the four methods; held as `Arc<dyn ApprovalChannel>`, hence `async-trait`.
/// A GitHub-issue channel posts or reuses the approval issue in `notify` and returns new
/// comments (`SignalBody::Text`) and label events (`SignalBody::Label`) with the author's login,
/// numeric id and bot flag in `poll`.
///
/// # Wrappers
///
/// [`FanOut`] sends to several channels and merges their signals; the first valid decision wins
/// because the gate is decided once.
#[async_trait::async_trait]
#[diagnostic::on_unimplemented(
    note = "implement `kind`, `capabilities`, `notify` and `poll` (see the trait's # Implementing section)"
)]
pub trait ApprovalChannel: Send + Sync + fmt::Debug {
    /// Which kind of channel this is.
    fn kind(&self) -> ChannelKind;
    /// What it can do.
    fn capabilities(&self) -> Capabilities;
    /// Tells a human that `gate` waits for a decision.
    async fn notify(&self, gate: &Gate) -> Result<Delivery>;
    /// New candidate signals for `gate`. `gate.deliveries` holds what `notify` returned (for
    /// example the issue number in `locator`), also in a fresh process.
    async fn poll(&self, gate: &Gate) -> Result<Polled>;
    /// Shows the outcome of the decided `gate` where the human saw the notification (the
    /// GitHub channel comments the outcome and closes or relabels the issue). Returns what was
    /// done, in one line for `notifications.md`, or `None` when there is nothing to do. The
    /// default does nothing.
    async fn resolve(&self, gate: &Gate) -> Result<Option<String>> {
        let _ = gate;
        Ok(None)
    }
}

#[async_trait::async_trait]
#[deny(clippy::missing_trait_methods)]
impl<T: ApprovalChannel + ?Sized> ApprovalChannel for Arc<T> {
    fn kind(&self) -> ChannelKind {
        (**self).kind()
    }
    fn capabilities(&self) -> Capabilities {
        (**self).capabilities()
    }
    async fn notify(&self, gate: &Gate) -> Result<Delivery> {
        (**self).notify(gate).await
    }
    async fn poll(&self, gate: &Gate) -> Result<Polled> {
        (**self).poll(gate).await
    }
    async fn resolve(&self, gate: &Gate) -> Result<Option<String>> {
        (**self).resolve(gate).await
    }
}

#[async_trait::async_trait]
#[deny(clippy::missing_trait_methods)]
impl<T: ApprovalChannel + ?Sized> ApprovalChannel for Box<T> {
    fn kind(&self) -> ChannelKind {
        (**self).kind()
    }
    fn capabilities(&self) -> Capabilities {
        (**self).capabilities()
    }
    async fn notify(&self, gate: &Gate) -> Result<Delivery> {
        (**self).notify(gate).await
    }
    async fn poll(&self, gate: &Gate) -> Result<Polled> {
        (**self).poll(gate).await
    }
    async fn resolve(&self, gate: &Gate) -> Result<Option<String>> {
        (**self).resolve(gate).await
    }
}

/// The notification payload as Markdown (the contract's list, plus the gate id and digest, and the
/// how-to-respond block).
pub fn render_payload(gate: &Gate) -> String {
    let mut s = String::new();
    s.push_str(&format!(
        "Squad approval needed: {} — {}\n\n",
        gate.trigger, gate.topic
    ));
    s.push_str(&format!("- Mode: {}\n", gate.mode));
    s.push_str(&format!("- Trigger: {}\n", gate.trigger));
    s.push_str(&format!("- Topic: {}\n", gate.topic));
    s.push_str(&format!("- Awaiting: {}\n", gate.awaiting));
    let detail = gate.detail.replace('\n', "\n  ");
    s.push_str(&format!("- Detail: {detail}\n"));
    s.push_str("- State: see .squad/state.json and .squad/notifications.md\n");
    s.push_str(&format!(
        "- Gate: {} (run {}, digest {}, expires {})\n\n",
        gate.id,
        gate.run,
        gate.short_digest(),
        gate.expires
    ));
    s.push_str("How to respond:\n");
    s.push_str("- Approve this action: /approve\n");
    s.push_str("- Approve and pre-authorize later impactful actions this run: /approve-all\n");
    s.push_str("- Request changes: /changes: <what to change>\n");
    s.push_str("- Stop the run: /stop\n");
    s.push_str(&format!(
        "(Add the gate id to bind your answer to this gate, e.g. /approve {}. Only these keywords act; other text is a note, not a command. An empty line never approves.)\n",
        gate.id
    ));
    s
}

#[derive(Debug, Default)]
struct Inbox {
    lines: VecDeque<String>,
    reader: ChatLines,
    closed: bool,
}

/// The in-chat channel: the notification is written to the session, and each line the human
/// types is a candidate signal. An explicit keyword is required; an empty line never approves.
///
/// The host feeds lines (`feed`) from wherever the chat is (the CLI reads stdin on a thread, an
/// MCP server the answers to its elicitations) and calls `close` at the end of input. Each line
/// outside a Markdown block is one message; the Markdown state is kept across lines with the
/// comment parser's rules ([`ChatLines`]), so a command inside a fenced block (```` ``` ```` or
/// `~~~`), a quote or an HTML comment spread over several lines never counts.
///
/// Every line counts as coming from the person at the session: whoever controls the chat input
/// is the approver. That is the point of in-chat for an attended run; an unattended run should
/// approve through a channel that identifies its responders (a GitHub issue).
pub struct InChatChannel {
    out: Mutex<Box<dyn Write + Send>>,
    inbox: Mutex<Inbox>,
    clock: Arc<dyn Clock>,
}

impl fmt::Debug for InChatChannel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InChatChannel").finish_non_exhaustive()
    }
}

impl InChatChannel {
    /// A channel writing notifications to `out`.
    pub fn new(out: Box<dyn Write + Send>, clock: Arc<dyn Clock>) -> Self {
        Self {
            out: Mutex::new(out),
            inbox: Mutex::new(Inbox::default()),
            clock,
        }
    }

    /// Reads one line typed by the human. A line that is part of a Markdown block (a fence, a
    /// quote, a list, an HTML block) is no message of its own and is dropped; the others are
    /// queued as signals.
    /// Returns what the line is: a command, or why it is not (for the host to tell the human,
    /// for example that a `/approve` inside a fence does not count).
    pub fn feed(&self, line: &str) -> Parsed {
        let line = line.trim_end_matches(['\r', '\n']);
        let Ok(mut inbox) = self.inbox.lock() else {
            return Parsed::Note(NotCommand::Prose);
        };
        let parsed = inbox.reader.push(line);
        if parsed != Parsed::Note(NotCommand::InsideBlock) {
            inbox.lines.push_back(line.to_owned());
        }
        parsed
    }

    /// Marks the end of input: once the queue is drained, `poll` reports `exhausted`.
    pub fn close(&self) {
        if let Ok(mut inbox) = self.inbox.lock() {
            inbox.closed = true;
        }
    }
}

#[async_trait::async_trait]
impl ApprovalChannel for InChatChannel {
    fn kind(&self) -> ChannelKind {
        ChannelKind::InChat
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            outbound: true,
            inbound: true,
        }
    }
    async fn notify(&self, gate: &Gate) -> Result<Delivery> {
        let text = render_payload(gate);
        let mut out = self
            .out
            .lock()
            .map_err(|_| Error::new(ErrorKind::Io, "in-chat.notify", "chat output is poisoned"))?;
        out.write_all(text.as_bytes())
            .and_then(|()| out.flush())
            .map_err(|e| Error::io("in-chat.notify", "cannot write to the chat", e))?;
        Ok(Delivery {
            channel: ChannelKind::InChat,
            approval_ref: "in-chat".to_owned(),
            delivery_id: None,
            locator: None,
            attempts: 1,
        })
    }
    async fn poll(&self, _gate: &Gate) -> Result<Polled> {
        let mut inbox = self
            .inbox
            .lock()
            .map_err(|_| Error::new(ErrorKind::Io, "in-chat.poll", "chat input is poisoned"))?;
        let now = self.clock.now();
        let signals = inbox
            .lines
            .drain(..)
            .map(|line| Signal {
                responder: Responder::in_chat(),
                at: now,
                source: ChannelKind::InChat,
                body: SignalBody::Text(line),
                reference: None,
            })
            .collect();
        Ok(Polled {
            signals,
            exhausted: inbox.closed,
            ..Polled::default()
        })
    }
}

/// An in-memory channel: records every notified gate and returns the signals pushed into it.
/// The reference implementation for tests and for hosts that bring signals themselves.
#[derive(Debug)]
pub struct InMemoryChannel {
    kind: ChannelKind,
    sent: Mutex<Vec<Gate>>,
    inbox: Mutex<VecDeque<Signal>>,
}

impl InMemoryChannel {
    /// A channel that reports itself as `kind`.
    pub fn new(kind: ChannelKind) -> Self {
        Self {
            kind,
            sent: Mutex::new(Vec::new()),
            inbox: Mutex::new(VecDeque::new()),
        }
    }

    /// Queues a signal for the next poll.
    pub fn push(&self, signal: Signal) {
        if let Ok(mut q) = self.inbox.lock() {
            q.push_back(signal);
        }
    }

    /// The gates notified so far.
    pub fn sent(&self) -> Vec<Gate> {
        self.sent.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

#[async_trait::async_trait]
impl ApprovalChannel for InMemoryChannel {
    fn kind(&self) -> ChannelKind {
        self.kind
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            outbound: true,
            inbound: true,
        }
    }
    async fn notify(&self, gate: &Gate) -> Result<Delivery> {
        if let Ok(mut s) = self.sent.lock() {
            s.push(gate.clone());
        }
        Ok(Delivery {
            channel: self.kind,
            approval_ref: format!("in-memory {}", self.kind),
            delivery_id: None,
            locator: None,
            attempts: 1,
        })
    }
    async fn poll(&self, _gate: &Gate) -> Result<Polled> {
        let signals = self
            .inbox
            .lock()
            .map(|mut q| q.drain(..).collect())
            .unwrap_or_default();
        Ok(Polled {
            signals,
            ..Polled::default()
        })
    }
}

impl Polled {
    /// Adds what another channel's poll brought: signals (kept oldest first), ignored signals,
    /// locators, the longer pause; exhausted only when both are.
    pub fn merge(&mut self, other: Polled) {
        self.exhausted &= other.exhausted;
        self.signals.extend(other.signals);
        self.signals.sort_by_key(|s| s.at);
        self.ignored.extend(other.ignored);
        self.locators.extend(other.locators);
        self.next_poll_after = self.next_poll_after.max(other.next_poll_after);
    }
}

/// The outcome of notifying one channel of a fan-out.
#[derive(Debug)]
pub struct ChannelReport {
    /// The channel.
    pub channel: ChannelKind,
    /// What happened.
    pub result: Result<Delivery>,
}

/// Several channels as one: notifications go to all, signals from all are merged oldest first.
/// The first valid decision wins, because a gate is decided once.
#[derive(Debug, Default)]
pub struct FanOut {
    channels: Vec<Arc<dyn ApprovalChannel>>,
}

impl FanOut {
    /// An empty fan-out.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a channel.
    pub fn with(mut self, channel: Arc<dyn ApprovalChannel>) -> Self {
        self.channels.push(channel);
        self
    }

    /// The channels, in order.
    pub fn channels(&self) -> &[Arc<dyn ApprovalChannel>] {
        &self.channels
    }

    /// Notifies every channel and reports each outcome (one failure does not stop the others).
    pub async fn notify_each(&self, gate: &Gate) -> Vec<ChannelReport> {
        let mut out = Vec::with_capacity(self.channels.len());
        for c in &self.channels {
            out.push(ChannelReport {
                channel: c.kind(),
                result: c.notify(gate).await,
            });
        }
        out
    }
}

#[async_trait::async_trait]
impl ApprovalChannel for FanOut {
    fn kind(&self) -> ChannelKind {
        self.channels
            .first()
            .map_or(ChannelKind::InChat, |c| c.kind())
    }
    fn capabilities(&self) -> Capabilities {
        self.channels
            .iter()
            .fold(Capabilities::default(), |acc, c| {
                let k = c.capabilities();
                Capabilities {
                    outbound: acc.outbound || k.outbound,
                    inbound: acc.inbound || k.inbound,
                }
            })
    }
    /// Succeeds when at least one channel delivered; the approval refs are joined with `; `.
    async fn notify(&self, gate: &Gate) -> Result<Delivery> {
        let reports = self.notify_each(gate).await;
        let ok: Vec<&Delivery> = reports
            .iter()
            .filter_map(|r| r.result.as_ref().ok())
            .collect();
        match ok.first() {
            Some(first) => Ok(Delivery {
                channel: first.channel,
                approval_ref: ok
                    .iter()
                    .map(|d| d.approval_ref.as_str())
                    .collect::<Vec<_>>()
                    .join("; "),
                delivery_id: first.delivery_id.clone(),
                locator: first.locator.clone(),
                attempts: ok.iter().map(|d| d.attempts).sum(),
            }),
            None => Err(Error::new(
                ErrorKind::Delivery,
                "fan-out.notify",
                "no channel could deliver the notification",
            )),
        }
    }
    /// Merges the signals of every inbound channel, oldest first; exhausted when every inbound
    /// channel is (a channel that fails to poll counts as not exhausted). The locators are
    /// merged, the longest `next_poll_after` wins. A failure is returned only when no channel
    /// brought anything.
    async fn poll(&self, gate: &Gate) -> Result<Polled> {
        let mut out = Polled {
            exhausted: true,
            ..Polled::default()
        };
        let mut last_err = None;
        for c in &self.channels {
            if !c.capabilities().inbound {
                continue;
            }
            match c.poll(gate).await {
                Ok(p) => out.merge(p),
                Err(e) => {
                    out.exhausted = false;
                    last_err = Some(e);
                }
            }
        }
        if out.signals.is_empty()
            && out.ignored.is_empty()
            && let Some(e) = last_err
        {
            return Err(e);
        }
        Ok(out)
    }
    /// Resolves on every channel; the descriptions are joined with `; `. A failing channel does
    /// not stop the others; its error is returned when no channel did anything.
    async fn resolve(&self, gate: &Gate) -> Result<Option<String>> {
        let mut done = Vec::new();
        let mut last_err = None;
        for c in &self.channels {
            match c.resolve(gate).await {
                Ok(Some(d)) => done.push(d),
                Ok(None) => {}
                Err(e) => last_err = Some(e),
            }
        }
        match (done.is_empty(), last_err) {
            (true, Some(e)) => Err(e),
            (true, None) => Ok(None),
            (false, _) => Ok(Some(done.join("; "))),
        }
    }
}
