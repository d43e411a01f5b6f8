//! The approval service: opens gates, notifies, consumes signals, keeps `state.json` and
//! `notifications.md` in step.

use std::sync::Arc;

use squad_model::{ChannelKind, NotifySettings};

use crate::auth::{Allowed, ApproverRules, Authorizer, Refusal, authorize};
use crate::channel::{ChannelReport, FanOut, Signal, SignalBody};
use crate::clock::Clock;
use crate::error::{Error, ErrorKind, Result};
use crate::gate::{
    Applied, Counted, Gate, GateId, GatePolicy, GateRequest, GateState, PolicyDecision, Responder,
    RunId,
};
use crate::log::{LogEntry, render_acknowledgement, verify_log};
use crate::signal::Command;
use crate::signal::{parse_comment, parse_label};
use crate::store::{self, RunRecord, StateDoc, TamperRecord, Txn};
use squad_fs::StateDir;

/// What `request` did.
#[derive(Debug)]
pub enum RequestOutcome {
    /// The mode does not ping at this trigger: no gate, nothing recorded.
    NoGate {
        /// Why, in one sentence.
        reason: &'static str,
    },
    /// An earlier `/approve-all` of the run covers this gate: recorded as approved, no ping.
    PreApproved(Gate),
    /// A pending gate was opened and the channels were notified.
    Opened {
        /// The gate.
        gate: Gate,
        /// What each channel did (failures included: the gate stays pending, in-chat remains).
        deliveries: Vec<ChannelReport>,
    },
}

/// A signal that was ignored, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ignored {
    /// The signal.
    pub signal: Signal,
    /// Why it did not count.
    pub reason: String,
}

/// What consuming a batch of signals did.
#[derive(Debug, Default)]
pub struct Consumed {
    /// The gate, when it left `pending` (decided or expired).
    pub decided: Option<Gate>,
    /// Command signals that did not count (refused, or naming another gate), also logged.
    pub ignored: Vec<Ignored>,
}

/// Gates over one state directory.
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
/// # let tmp = std::env::temp_dir().join(format!("squad-notify-doc-{}", std::process::id()));
/// let clock = Arc::new(FixedClock::at_unix_seconds(1_800_000_000));
/// let approvals = Approvals::new(StateDir::new(&tmp), clock.clone());
/// let chat = Arc::new(InMemoryChannel::new(ChannelKind::InChat));
/// let channels = FanOut::new().with(chat.clone());
/// let request = GateRequest {
///     mode: Mode::Autopilot,
///     trigger: Trigger::ImpactfulAction,
///     topic: "Deploy to staging".into(),
///     awaiting: "approve the deploy".into(),
///     detail: "Migrations are ready.".into(),
/// };
/// let RequestOutcome::Opened { gate, .. } = block_on(approvals.request(&request, None, 3600, &channels))? else {
///     panic!("autopilot pings at impactful actions");
/// };
/// chat.push(Signal {
///     responder: Responder::in_chat(),
///     at: clock.now(),
///     source: ChannelKind::InChat,
///     body: SignalBody::Text("/approve".into()),
///     reference: None,
/// });
/// let polled = block_on(channels.poll(&gate))?;
/// let done = block_on(approvals.consume(&polled.signals, &ApproverRules::default(), &StaticAuthorizer::new()))?;
/// assert_eq!(done.decided.map(|g| g.state), Some(GateState::Approved));
/// # std::fs::remove_dir_all(&tmp).ok();
/// # Ok::<(), squad_notify::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Approvals {
    pub(crate) dir: StateDir,
    pub(crate) clock: Arc<dyn Clock>,
    policy: GatePolicy,
}

fn who(r: &Responder) -> String {
    match r.id {
        Some(id) => format!("@{} (id {id})", r.login),
        None if r.login == "in-chat" => "in-chat".to_owned(),
        None => format!("@{}", r.login),
    }
}

fn allowed_as(a: Allowed) -> String {
    match a {
        Allowed::ChatSession => "the chat session".to_owned(),
        Allowed::RegisteredApprover => "the registered approver".to_owned(),
        Allowed::Collaborator(role) => format!("collaborator ({role})"),
    }
}

fn gate_line(g: &Gate) -> String {
    format!("{} (run {}, digest {})", g.id, g.run, g.digest)
}

/// The entry of a gate: heading `<at> <trigger>`, mode, channel, approval ref, gate, topic,
/// awaiting (callers add the rest).
pub(crate) fn gate_entry(
    g: &Gate,
    channel: ChannelKind,
    approval_ref: &str,
    at: squad_model::Timestamp,
) -> LogEntry {
    LogEntry::new(at, g.trigger.as_str())
        .field("Mode", g.mode.as_str())
        .field("Channel", channel.as_str())
        .field("Approval Ref", approval_ref)
        .field("Gate", &gate_line(g))
        .field("Topic", &g.topic)
        .field("Awaiting", &g.awaiting)
}

fn resolution(g: &Gate) -> String {
    let Some(d) = &g.decision else {
        return g.state.to_string();
    };
    let by = if d.pre_approved {
        "pre-approved by /approve-all of this run".to_owned()
    } else {
        d.by.as_ref()
            .map_or_else(|| "by nobody".to_owned(), |r| format!("by {}", who(r)))
    };
    format!("{} ({by}, at {})", g.state, d.at)
}

/// Whether a value looks like a URL or a token (never echoed back).
fn looks_like_secret(v: &str) -> bool {
    let l = v.trim().to_ascii_lowercase();
    l.contains("://")
        || [
            "ghp_",
            "gho_",
            "ghu_",
            "ghs_",
            "ghr_",
            "github_pat_",
            "xox",
            "glpat-",
        ]
        .iter()
        .any(|p| l.starts_with(p))
}

/// The architecture's rule that no secret is stored: `notify` never holds a URL or a token
/// (the webhook URL and tokens are read from the environment at send time).
fn refuse_secrets(settings: &NotifySettings) -> Result<()> {
    let mut fields = vec![("email", settings.email.as_str())];
    if let Some(g) = &settings.github {
        fields.push(("github.handle", g.handle.as_str()));
        fields.push(("github.repo", g.repo.as_str()));
    }
    for (name, value) in fields {
        if looks_like_secret(value) {
            // Never echo the value: it may be a secret.
            return Err(Error::invalid(
                "notify.configure",
                format!(
                    "notify.{name} looks like a URL or a token; the notify settings never hold a webhook URL or a token (they are read from SQUAD_WEBHOOK_URL, SQUAD_WEBHOOK_SECRET, GITHUB_TOKEN at send time)"
                ),
            ));
        }
    }
    Ok(())
}

impl Approvals {
    /// A service over `dir`, reading time from `clock`.
    pub fn new(dir: StateDir, clock: Arc<dyn Clock>) -> Self {
        Self {
            dir,
            clock,
            policy: GatePolicy::standard(),
        }
    }

    /// The state directory.
    pub fn dir(&self) -> &StateDir {
        &self.dir
    }

    /// The clock.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// Reads `state.json` as it is (no lock, no repair).
    ///
    /// # Errors
    ///
    /// As [`store::read`].
    pub fn state(&self) -> Result<StateDoc> {
        store::read(&self.dir)
    }

    /// Reads `notifications.md` as it is (`None` when it does not exist).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Corrupt`] when it is a symbolic link, not a regular file, too large or not
    /// UTF-8; [`ErrorKind::Io`] when it cannot be read.
    pub fn log_text(&self) -> Result<Option<String>> {
        match self
            .dir
            .read_capped(store::LOG_FILE, crate::log::MAX_LOG_BYTES)?
        {
            None => Ok(None),
            Some(b) => String::from_utf8(b)
                .map(Some)
                .map_err(|_| Error::corrupt("log.read", "notifications.md is not valid UTF-8")),
        }
    }

    fn begin(&self) -> Result<Txn> {
        Txn::begin(&self.dir, self.clock.now())
    }

    /// Replaces the `notify` object (replace semantics; validated by the schema; other keys kept).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidInput`] when `settings` breaks the schema or holds something that
    /// looks like a URL or a token in a handle, repository or email (nothing is written; the
    /// value is never repeated).
    ///
    /// A quorum ([`NotifySettings::quorum`]) must be 1 to [`crate::MAX_QUORUM`], and above 1
    /// only with the github-issue channel (in-chat has one human and no identity).
    pub fn configure(&self, settings: NotifySettings) -> Result<()> {
        refuse_secrets(&settings)?;
        let quorum = settings.quorum().map_err(|e| {
            Error::invalid("notify.configure", format!("notify.quorum is invalid: {e}"))
        })?;
        crate::gate::check_quorum(quorum)?;
        if quorum > 1 && settings.approval_channel != ChannelKind::GithubIssue {
            return Err(Error::invalid(
                "notify.configure",
                format!(
                    "a quorum of {quorum} needs the github-issue channel: {} has one human and no identity to count",
                    settings.approval_channel
                ),
            ));
        }
        squad_model::schema::validate_notify(&settings.to_value())?;
        let mut txn = self.begin()?;
        txn.doc.notify = Some(settings);
        txn.save()
    }

    /// Expires every pending gate that is due; returns them with their log entries.
    fn expire_due(&self, doc: &mut StateDoc) -> Vec<(Gate, LogEntry)> {
        let now = self.clock.now();
        let due: Vec<GateId> = doc
            .approval
            .pending_gates
            .iter()
            .filter(|g| g.is_expired_at(now))
            .map(|g| g.id.clone())
            .collect();
        due.iter()
            .filter_map(|id| self.expire_one(doc, id))
            .collect()
    }

    /// Expires the pending gate `id` when it is due.
    fn expire_one(&self, doc: &mut StateDoc, id: &GateId) -> Option<(Gate, LogEntry)> {
        let now = self.clock.now();
        let gate = doc.approval.pending_mut(id)?;
        if !gate.expire_if_due(now) {
            return None;
        }
        let gate = doc.approval.take_pending(id)?;
        doc.approval.push_recent(gate.clone());
        let entry = gate_entry(&gate, ChannelKind::InChat, "-", now).field(
            "Resolved",
            &format!("expired (at {now}; a decision after expiry does not count)"),
        );
        Some((gate, entry))
    }

    /// Records the expiry of the pending gate `id` when it is due, and returns it (expired);
    /// `None` when it is not pending or not due. Hosts call it before waiting on a gate, so that
    /// an expired gate is reported at once.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Tampered`] while a tampering of the log is not acknowledged;
    /// [`ErrorKind::Corrupt`] or [`ErrorKind::Io`] when the state cannot be used.
    pub fn expire_if_due(&self, id: &GateId) -> Result<Option<Gate>> {
        let mut txn = self.begin()?;
        txn.refuse_if_tampered("gate.expire")?;
        txn.log_text()?;
        let Some((gate, entry)) = self.expire_one(&mut txn.doc, id) else {
            return Ok(None);
        };
        txn.commit("expire", &[entry])?;
        Ok(Some(gate))
    }

    /// Opens a gate for `request` if the mode pings at its trigger, notifies `channels`, and
    /// records the pending gate in `state.json` and an entry in `notifications.md`.
    ///
    /// The run is `run`, else the current run of `state.json`, else a new one. A gate covered by
    /// an earlier `/approve-all` of the run is recorded as approved without a ping.
    ///
    /// Check, then act: `state.json` and `notifications.md` are read and validated before any
    /// channel is notified, and the gate is written to `state.json` before the first ping goes
    /// out (see [`crate::store`]), so no ping ever refers to a gate that is not recorded. When
    /// recording the deliveries fails after the pings were sent, the gate stays recorded; the
    /// next command completes the log entry.
    ///
    /// # Errors
    ///
    /// - [`ErrorKind::InvalidInput`]: bad texts, or `expires_in_secs` outside 1 second to
    ///   [`crate::MAX_EXPIRES_IN_SECS`] (nothing changed);
    /// - [`ErrorKind::Conflict`]: a gate is pending, or the run was stopped (nothing changed);
    /// - [`ErrorKind::Tampered`]: a tampering of `notifications.md` is not yet acknowledged
    ///   (nothing sent, nothing changed but the tampering recorded);
    /// - [`ErrorKind::Corrupt`]: `state.json` or `notifications.md` cannot be used (nothing sent).
    pub async fn request(
        &self,
        request: &GateRequest,
        run: Option<RunId>,
        expires_in_secs: u64,
        channels: &FanOut,
    ) -> Result<RequestOutcome> {
        request.validate()?;
        crate::gate::check_expires_in(expires_in_secs)?;
        if let PolicyDecision::NoGate(reason) = self.policy.decide(request.mode, request.trigger) {
            return Ok(RequestOutcome::NoGate { reason });
        }
        let mut txn = self.begin()?;
        txn.refuse_if_tampered("gate.request")?;
        txn.log_text()?;
        let now = self.clock.now();
        let run_id = match run.or_else(|| txn.doc.approval.current_run.clone()) {
            Some(r) => r,
            None => RunId::generate(),
        };
        if let Some(p) = txn.doc.approval.pending_of(&run_id)
            && !p.is_expired_at(now)
        {
            return Err(Error::new(
                ErrorKind::Conflict,
                "gate.request",
                format!(
                    "gate {} of run {run_id} is still pending; decide it first (squad approval wait --gate {})",
                    p.id, p.id
                ),
            ));
        }
        let quorum = match &txn.doc.notify {
            Some(n) if n.approval_channel == ChannelKind::GithubIssue => {
                n.quorum().unwrap_or(1).clamp(1, crate::gate::MAX_QUORUM)
            }
            _ => 1,
        };
        if txn
            .doc
            .approval
            .run(&run_id)
            .is_some_and(|r| r.stopped.is_some())
        {
            return Err(Error::new(
                ErrorKind::Conflict,
                "gate.request",
                format!("run {run_id} was stopped; start a new run with --run <id>"),
            ));
        }
        let mut gate =
            Gate::open(request, run_id.clone(), now, expires_in_secs)?.with_quorum(quorum)?;
        // Validation passed: from here on the state changes.
        let mut entries: Vec<LogEntry> = self
            .expire_due(&mut txn.doc)
            .into_iter()
            .map(|(_, e)| e)
            .collect();
        let doc = &mut txn.doc;
        if doc.approval.run(&run_id).is_none() {
            doc.approval.runs.push(RunRecord {
                id: run_id.clone(),
                started: now,
                stopped: None,
                approve_all: None,
            });
        }
        doc.approval.current_run = Some(run_id.clone());
        doc.approval.last_gate = Some(gate.id.clone());
        let blanket = doc
            .approval
            .run(&run_id)
            .and_then(|r| r.approve_all.clone());
        if let Some(by_gate) = blanket.filter(|_| self.policy.covered_by_approve_all(gate.trigger))
        {
            gate.pre_approve(now);
            entries.push(
                gate_entry(&gate, ChannelKind::InChat, "none (no ping)", now).field(
                    "Resolved",
                    &format!("approved (pre-approved by /approve-all on gate {by_gate}, at {now})"),
                ),
            );
            doc.approval.push_recent(gate.clone());
            txn.commit("request", &entries)?;
            return Ok(RequestOutcome::PreApproved(gate));
        }
        // Write ahead: the gate is recorded, marked as being notified, before any ping.
        doc.approval.put_pending(gate.clone());
        txn.notifying = Some(gate.id.clone());
        txn.commit("request", &entries)?;
        let deliveries = channels.notify_each(&gate).await;
        let delivered: Vec<_> = deliveries
            .iter()
            .filter_map(|d| d.result.as_ref().ok())
            .collect();
        let channel = delivered
            .iter()
            .map(|d| d.channel)
            .find(|c| *c != ChannelKind::InChat)
            .unwrap_or(ChannelKind::InChat);
        let mut refs: Vec<String> = delivered.iter().map(|d| d.approval_ref.clone()).collect();
        if !refs.iter().any(|r| r == "in-chat") {
            refs.push("in-chat".to_owned());
        }
        let mut entry = gate_entry(&gate, channel, &refs.join("; "), now);
        for d in &deliveries {
            if let Err(e) = &d.result {
                entry = entry.field(
                    "Delivery",
                    &format!(
                        "{} failed: {} (degraded to in-chat)",
                        d.channel,
                        e.message()
                    ),
                );
            }
        }
        entry = entry.field("Resolved", "pending");
        gate.deliveries = delivered.into_iter().cloned().collect();
        txn.doc.approval.put_pending(gate.clone());
        txn.notifying = None;
        txn.commit("request", &[entry])?;
        Ok(RequestOutcome::Opened { gate, deliveries })
    }

    fn ignored_entry(&self, gate: &Gate, signal: &Signal, reason: &str) -> LogEntry {
        let what = match &signal.body {
            SignalBody::Text(t) => t
                .lines()
                .next()
                .unwrap_or_default()
                .chars()
                .take(80)
                .collect(),
            SignalBody::Label(l) => format!("label {l}"),
        };
        let mut entry = LogEntry::new(self.clock.now(), "ignored-signal")
            .field("Channel", signal.source.as_str())
            .field("Gate", &gate_line(gate))
            .field("Signal", &what)
            .field("From", &who(&signal.responder));
        if let Some(r) = &signal.reference {
            entry = entry.field("Signal Ref", r);
        }
        entry.field("Resolved", &format!("ignored ({reason})"))
    }

    /// Consumes candidate `signals` against the only pending gate, as
    /// [`Approvals::consume_gate`] does.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::NotFound`] when no gate is pending; [`ErrorKind::InvalidInput`] when several
    /// are (name one with [`Approvals::consume_gate`]); otherwise as
    /// [`Approvals::consume_gate`].
    pub async fn consume(
        &self,
        signals: &[Signal],
        rules: &ApproverRules,
        authorizer: &dyn Authorizer,
    ) -> Result<Consumed> {
        let doc = self.state()?;
        let id = only_pending(&doc.approval.pending_gates, "gate.decide")?;
        self.consume_gate(&id, signals, rules, authorizer).await
    }

    /// Consumes candidate `signals` (oldest first) against the pending gate `id`: parses each,
    /// refuses commands sent before the gate was opened, checks the gate id it names, authorizes
    /// its author (now, at consumption), and applies the commands in order until the gate is
    /// decided. Text that is not a command is skipped; refused commands are logged and ignored.
    ///
    /// - With a quorum above 1, each authorized `/approve` (or `/approve-all`) counts once per
    ///   approver and is logged; the gate is approved when the quorum is reached. One authorized
    ///   `/changes` or `/stop` decides at once.
    /// - An authorized `/revoke-all` ends the run's `/approve-all` pre-authorization (logged);
    ///   the gate stays pending.
    /// - A command after the gate was decided (later in the batch, or on a gate no longer
    ///   pending) changes nothing and is logged as ignored.
    ///
    /// A pending gate past its expiry becomes `expired` first, and nothing counts. Everything is
    /// written as one batch.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::NotFound`] when `id` is not pending (after logging the commands as ignored
    /// when it was decided); [`ErrorKind::Corrupt`] when the pending gate in `state.json` no
    /// longer matches its digest (its payload or expiry was altered after the ping): then no
    /// signal counts; [`ErrorKind::Tampered`] while a tampering of the log is not acknowledged.
    pub async fn consume_gate(
        &self,
        id: &GateId,
        signals: &[Signal],
        rules: &ApproverRules,
        authorizer: &dyn Authorizer,
    ) -> Result<Consumed> {
        let mut txn = self.begin()?;
        let mut out = Consumed::default();
        if let Some(p) = txn.doc.approval.pending(id)
            && !p.digest_matches()
        {
            return Err(Error::corrupt(
                "gate.decide",
                format!(
                    "the pending gate {} in state.json no longer matches its digest: its payload or expiry was altered after the ping; nothing counts",
                    p.id
                ),
            ));
        }
        txn.refuse_if_tampered("gate.decide")?;
        txn.log_text()?;
        if let Some((expired, entry)) = self.expire_one(&mut txn.doc, id) {
            txn.commit("expire", &[entry])?;
            out.decided = Some(expired);
            return Ok(out);
        }
        let Some(mut gate) = txn.doc.approval.pending(id).cloned() else {
            if let Some(done) = txn.doc.approval.gate(id).cloned() {
                let entries = self.ignore_after_decision(&done, signals, &mut out);
                if !entries.is_empty() {
                    txn.commit("decide", &entries)?;
                }
            }
            return Err(Error::new(
                ErrorKind::NotFound,
                "gate.decide",
                format!("gate {id} is not pending"),
            ));
        };
        let mut entries = Vec::new();
        let mut changed = false;
        for (i, signal) in signals.iter().enumerate() {
            if out.decided.is_some() {
                entries.extend(self.ignore_after_decision(&gate, &signals[i..], &mut out));
                break;
            }
            let Some(cmd) = command_of(signal) else {
                continue;
            };
            let refused = if signal.at < gate.created {
                // A reused thread still holds answers to earlier gates: they never count here.
                Some(format!(
                    "sent at {} before gate {} was opened",
                    signal.at, gate.id
                ))
            } else {
                cmd.gate
                    .as_ref()
                    .filter(|named| **named != gate.id)
                    .map(|named| format!("names gate {named}, but the pending gate is {}", gate.id))
            };
            if let Some(reason) = refused {
                entries.push(self.ignored_entry(&gate, signal, &reason));
                out.ignored.push(Ignored {
                    signal: signal.clone(),
                    reason,
                });
                continue;
            }
            let allowed = match authorize(signal, rules, authorizer).await {
                Ok(allowed) => allowed,
                Err(refusal) => {
                    let reason = match &refusal {
                        Refusal::LookupFailed(_) => refusal.to_string(),
                        _ => format!("unauthorized: {refusal}"),
                    };
                    entries.push(self.ignored_entry(&gate, signal, &reason));
                    out.ignored.push(Ignored {
                        signal: signal.clone(),
                        reason,
                    });
                    continue;
                }
            };
            let now = self.clock.now();
            let mut entry = gate_entry(&gate, signal.source, signal.source.as_str(), now)
                .field("Authorized As", &allowed_as(allowed));
            if let Some(r) = &signal.reference {
                entry = entry.field("Signal Ref", r);
            }
            let applied = match &cmd.command {
                Command::RevokeAll => {
                    let revoked = txn
                        .doc
                        .approval
                        .run_mut(&gate.run)
                        .and_then(|r| r.approve_all.take());
                    let what = match revoked {
                        Some(by_gate) => format!(
                            "revoked (the /approve-all of gate {by_gate} no longer covers run {}; later impactful-action gates ping)",
                            gate.run
                        ),
                        None => format!(
                            "revoked (run {} had no /approve-all; nothing changed)",
                            gate.run
                        ),
                    };
                    let mut e = LogEntry::new(now, "revoke-all")
                        .field("Channel", signal.source.as_str())
                        .field("Gate", &gate_line(&gate))
                        .field("Run", gate.run.as_str())
                        .field("Authorized As", &allowed_as(allowed))
                        .field("From", &who(&signal.responder));
                    if let Some(r) = &signal.reference {
                        e = e.field("Signal Ref", r);
                    }
                    entries.push(e.field("Resolved", &what));
                    continue;
                }
                Command::Approve | Command::ApproveAll if gate.quorum > 1 => {
                    let all = cmd.command == Command::ApproveAll;
                    match gate.vote(
                        signal.responder.clone(),
                        all,
                        Some(signal.source),
                        signal.reference.clone(),
                        now,
                    )? {
                        Counted::Again => {
                            let reason = format!(
                                "{} already approved gate {}; the same approver counts once",
                                who(&signal.responder),
                                gate.id
                            );
                            entries.push(self.ignored_entry(&gate, signal, &reason));
                            out.ignored.push(Ignored {
                                signal: signal.clone(),
                                reason,
                            });
                            continue;
                        }
                        Counted::Partial(n) => {
                            changed = true;
                            entries.push(
                                LogEntry::new(now, "approval")
                                    .field("Channel", signal.source.as_str())
                                    .field("Gate", &gate_line(&gate))
                                    .field("Authorized As", &allowed_as(allowed))
                                    .field("From", &who(&signal.responder))
                                    .field("Approvals", &gate.approvers().join(", "))
                                    .field(
                                        "Resolved",
                                        &format!("pending ({n} of {} approvals)", gate.quorum),
                                    ),
                            );
                            continue;
                        }
                        Counted::Decided(state) => Applied::Decided(state),
                        Counted::Expired => Applied::Expired,
                    }
                }
                command => gate.apply(
                    command,
                    Some(signal.responder.clone()),
                    Some(signal.source),
                    signal.reference.clone(),
                    now,
                )?,
            };
            match applied {
                Applied::Decided(GateState::ApproveAll) => {
                    if let Some(r) = txn.doc.approval.run_mut(&gate.run) {
                        r.approve_all = Some(gate.id.clone());
                    }
                }
                Applied::Decided(GateState::Stopped) => {
                    if let Some(r) = txn.doc.approval.run_mut(&gate.run) {
                        r.stopped = Some(now);
                    }
                }
                _ => {}
            }
            if gate.quorum > 1 {
                entry = entry.field("Approvals", &gate.approvers().join(", "));
            }
            if let Some(crate::gate::DecisionRecord { note: Some(n), .. }) = &gate.decision
                && !n.is_empty()
            {
                entry = entry.field("Note", n);
            }
            entries.push(entry.field("Resolved", &resolution(&gate)));
            txn.doc.approval.take_pending(&gate.id);
            txn.doc.approval.push_recent(gate.clone());
            out.decided = Some(gate.clone());
            changed = false;
        }
        if changed {
            txn.doc.approval.put_pending(gate);
        }
        if !entries.is_empty() {
            txn.commit("decide", &entries)?;
        }
        Ok(out)
    }

    /// The `ignored-signal` entries of the commands in `signals` that arrived after `gate` was
    /// decided (they change nothing).
    fn ignore_after_decision(
        &self,
        gate: &Gate,
        signals: &[Signal],
        out: &mut Consumed,
    ) -> Vec<LogEntry> {
        let mut entries = Vec::new();
        for signal in signals {
            if command_of(signal).is_none() {
                continue;
            }
            let reason = format!(
                "gate {} is already decided ({}); this changes nothing",
                gate.id, gate.state
            );
            entries.push(self.ignored_entry(gate, signal, &reason));
            out.ignored.push(Ignored {
                signal: signal.clone(),
                reason,
            });
        }
        entries
    }

    /// Records signals a channel refused itself ([`crate::Polled::ignored`]) as `ignored-signal`
    /// entries of `notifications.md` against the pending gate `gate`. Does nothing when the list
    /// is empty or `gate` is no longer pending.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Io`] or [`ErrorKind::Corrupt`] when the state cannot be read or written;
    /// [`ErrorKind::Tampered`] while a tampering of the log is not acknowledged.
    pub fn note_ignored(&self, gate: &GateId, ignored: &[Ignored]) -> Result<()> {
        if ignored.is_empty() {
            return Ok(());
        }
        let mut txn = self.begin()?;
        let Some(pending) = txn.doc.approval.pending(gate).cloned() else {
            return Ok(());
        };
        txn.refuse_if_tampered("gate.note")?;
        let entries: Vec<LogEntry> = ignored
            .iter()
            .map(|i| self.ignored_entry(&pending, &i.signal, &i.reason))
            .collect();
        txn.commit("note-ignored", &entries)
    }

    /// Stores `locator` as the locator of `channel`'s delivery on the pending gate `gate` (for
    /// example the GitHub poll state after a poll), so that a fresh process resumes from it.
    /// Returns `false` (and changes nothing) when `gate` is no longer pending or has no delivery
    /// of that channel.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Io`] or [`ErrorKind::Corrupt`] when the state cannot be read or written.
    pub fn update_locator(
        &self,
        gate: &GateId,
        channel: ChannelKind,
        locator: &str,
    ) -> Result<bool> {
        let mut txn = self.begin()?;
        let Some(pending) = txn.doc.approval.pending_mut(gate) else {
            return Ok(false);
        };
        let Some(d) = pending.deliveries.iter_mut().find(|d| d.channel == channel) else {
            return Ok(false);
        };
        if d.locator.as_deref() == Some(locator) {
            return Ok(true);
        }
        d.locator = Some(locator.to_owned());
        txn.save()?;
        Ok(true)
    }

    /// Appends the resolution entry of the decided `gate` to `notifications.md`: what `channel`
    /// did to show the outcome (`action`, from [`crate::ApprovalChannel::resolve`]) and the
    /// decision (`Resolved: <decision> (by <who>, at <ts>)`).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Io`] or [`ErrorKind::Corrupt`] when the state cannot be read or written;
    /// [`ErrorKind::Tampered`] while a tampering of the log is not acknowledged.
    pub fn record_resolution(
        &self,
        gate: &Gate,
        channel: ChannelKind,
        approval_ref: &str,
        action: &str,
    ) -> Result<()> {
        let mut txn = self.begin()?;
        txn.refuse_if_tampered("gate.resolve")?;
        let entry = gate_entry(gate, channel, approval_ref, self.clock.now())
            .field("Action", action)
            .field("Resolved", &resolution(gate));
        txn.commit("resolve", &[entry])
    }

    /// Acknowledges a detected tampering of `notifications.md`: appends a
    /// [`tamper-acknowledged`](crate::ACK_TITLE) entry saying who (`by`) acknowledged what and when,
    /// which restarts the hash chain from the text as it is now, and clears the record so that
    /// gates can be requested again. Returns the acknowledged record, or `None` when nothing
    /// was to acknowledge (the log verifies and no tampering is recorded; nothing changes, so a
    /// repeated call is harmless).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidInput`] for an empty `by`; [`ErrorKind::Corrupt`] when the log is
    /// not a regular UTF-8 file (a symbolic link, a directory: remove it first).
    pub fn acknowledge_tamper(&self, by: &str) -> Result<Option<TamperRecord>> {
        let by = by.trim();
        if by.is_empty() || by.chars().any(char::is_control) {
            return Err(Error::invalid(
                "tamper.acknowledge",
                "who acknowledges must be named (one line)",
            ));
        }
        let mut txn = self.begin()?;
        let Some(record) = txn.doc.approval.tamper.clone() else {
            return Ok(None);
        };
        let now = self.clock.now();
        let (append, head) = render_acknowledgement(
            txn.log_text()?,
            now,
            &[
                ("By", by.to_owned()),
                ("Detected", record.detected.to_string()),
                ("Problem", record.problem.clone()),
            ],
        );
        txn.doc.approval.tamper = None;
        txn.commit_text("acknowledge-tamper", append, head)?;
        // The acknowledgement must make the log verify; if it does not, something else is wrong.
        let text = txn.log_text()?;
        verify_log(text, txn.doc.approval.log_head.as_deref())?;
        // A notification interrupted while the log was tampered with is recorded now.
        txn.complete_notifying(now)?;
        Ok(Some(record))
    }

    /// The gate `wait` should report on: `id` if given (pending or recent), else the only pending
    /// gate, else the gate of the last `request` when an earlier `/approve-all` pre-approved it.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::NotFound`] when there is no such gate; [`ErrorKind::InvalidInput`] when
    /// `id` is `None` and several gates are pending (the message names them).
    pub fn target(&self, id: Option<&GateId>) -> Result<Gate> {
        let doc = self.state()?;
        let a = &doc.approval;
        let found = match id {
            Some(id) => a.gate(id).cloned(),
            None if !a.pending_gates.is_empty() => {
                let only = only_pending(&a.pending_gates, "gate.wait")?;
                a.pending(&only).cloned()
            }
            None => a
                .last_gate
                .as_ref()
                .and_then(|l| a.recent.iter().rev().find(|g| &g.id == l))
                .filter(|g| g.decision.as_ref().is_some_and(|d| d.pre_approved))
                .cloned(),
        };
        found.ok_or_else(|| {
            Error::new(
                ErrorKind::NotFound,
                "gate.wait",
                match id {
                    Some(id) => format!("no gate {id} in state.json"),
                    None => "no gate is pending".to_owned(),
                },
            )
        })
    }

    /// The gate of `run` that `wait --run` reports on: its pending gate, else its newest gate
    /// when an earlier `/approve-all` pre-approved it.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidInput`] when `state.json` knows no run `run`;
    /// [`ErrorKind::NotFound`] when the run has no such gate.
    pub fn target_run(&self, run: &RunId) -> Result<Gate> {
        let doc = self.state()?;
        let a = &doc.approval;
        if a.run(run).is_none() {
            return Err(Error::invalid(
                "gate.wait",
                format!("unknown run {run}: state.json records no such run"),
            ));
        }
        a.pending_of(run)
            .cloned()
            .or_else(|| {
                a.recent
                    .iter()
                    .rev()
                    .find(|g| &g.run == run)
                    .filter(|g| g.decision.as_ref().is_some_and(|d| d.pre_approved))
                    .cloned()
            })
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::NotFound,
                    "gate.wait",
                    format!("run {run} has no pending gate"),
                )
            })
    }
}

/// The command a signal carries, if any.
fn command_of(signal: &Signal) -> Option<crate::ParsedCommand> {
    match &signal.body {
        SignalBody::Text(t) => parse_comment(t).command().cloned(),
        SignalBody::Label(l) => parse_label(l).map(|command| crate::ParsedCommand {
            command,
            gate: None,
            note_truncated: false,
        }),
    }
}

/// The id of the only pending gate.
///
/// # Errors
///
/// [`ErrorKind::NotFound`] when none is pending; [`ErrorKind::InvalidInput`] naming them when
/// several are.
fn only_pending(pending: &[Gate], op: &'static str) -> Result<GateId> {
    match pending {
        [] => Err(Error::new(ErrorKind::NotFound, op, "no gate is pending")),
        [one] => Ok(one.id.clone()),
        many => Err(Error::invalid(
            op,
            format!(
                "{} gates are pending ({}); name one with --gate <id> or --run <id>",
                many.len(),
                many.iter()
                    .map(|g| format!("{} of run {}", g.id, g.run))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )),
    }
}
