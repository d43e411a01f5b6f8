//! Gates, runs, the gate policy and the decision state machine (pure, synchronous, I/O-free).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use squad_model::{ChannelKind, Timestamp};

use crate::error::{Error, ErrorKind, Result};
use crate::signal::Command;

/// How the squad runs, which decides when a gate pings (see [`GatePolicy`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Unattended: pings only at impactful actions, risk gates and the final outcome.
    Autopilot,
    /// The default: the human approves every step gate.
    Interactive,
    /// The narrow validator loop: pings on its mandatory escalations only.
    Autonomous,
}

impl Mode {
    /// Every mode.
    pub const ALL: [Mode; 3] = [Mode::Autopilot, Mode::Interactive, Mode::Autonomous];

    /// The wire name (`autopilot`, `interactive`, `autonomous`).
    pub fn as_str(&self) -> &'static str {
        match self {
            Mode::Autopilot => "autopilot",
            Mode::Interactive => "interactive",
            Mode::Autonomous => "autonomous",
        }
    }
}

/// Why a gate is being raised.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Trigger {
    /// The pipeline finished review; the final outcome is ready to validate.
    #[serde(rename = "final-outcome")]
    FinalOutcome,
    /// An Impactful-Action Gate (may be pre-approved by `/approve-all`).
    #[serde(rename = "impactful-action")]
    ImpactfulAction,
    /// A Risk Gate: always stops, never covered by `/approve-all`.
    #[serde(rename = "risk-gate")]
    RiskGate,
    /// Research complete, ready for review.
    #[serde(rename = "step:research")]
    StepResearch,
    /// Plan ready for approval.
    #[serde(rename = "step:plan")]
    StepPlan,
    /// Pre-implementation council verdict ready.
    #[serde(rename = "step:council")]
    StepCouncil,
    /// Implementation complete, ready for review.
    #[serde(rename = "step:implement")]
    StepImplement,
    /// Review complete, ready for sign-off.
    #[serde(rename = "step:review")]
    StepReview,
    /// A mandatory escalation of the autonomous validator loop.
    #[serde(rename = "escalation")]
    Escalation,
}

impl Trigger {
    /// Every trigger.
    pub const ALL: [Trigger; 9] = [
        Trigger::FinalOutcome,
        Trigger::ImpactfulAction,
        Trigger::RiskGate,
        Trigger::StepResearch,
        Trigger::StepPlan,
        Trigger::StepCouncil,
        Trigger::StepImplement,
        Trigger::StepReview,
        Trigger::Escalation,
    ];

    /// The wire name (`final-outcome`, `step:plan`, ...).
    pub fn as_str(&self) -> &'static str {
        match self {
            Trigger::FinalOutcome => "final-outcome",
            Trigger::ImpactfulAction => "impactful-action",
            Trigger::RiskGate => "risk-gate",
            Trigger::StepResearch => "step:research",
            Trigger::StepPlan => "step:plan",
            Trigger::StepCouncil => "step:council",
            Trigger::StepImplement => "step:implement",
            Trigger::StepReview => "step:review",
            Trigger::Escalation => "escalation",
        }
    }

    /// `true` for the five `step:*` triggers.
    pub fn is_step(&self) -> bool {
        self.as_str().starts_with("step:")
    }
}

macro_rules! wire_enum {
    ($ty:ty, $what:literal) => {
        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
        impl FromStr for $ty {
            type Err = Error;
            fn from_str(s: &str) -> Result<Self> {
                <$ty>::ALL
                    .into_iter()
                    .find(|v| v.as_str() == s)
                    .ok_or_else(|| {
                        Error::invalid(
                            "parse",
                            format!(
                                "unknown {} {:?}: expected one of {}",
                                $what,
                                s,
                                <$ty>::ALL.map(|v| v.as_str()).join(", ")
                            ),
                        )
                    })
            }
        }
    };
}
wire_enum!(Mode, "mode");
wire_enum!(Trigger, "trigger");

/// Whether a trigger pings in a mode, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PolicyDecision {
    /// Open a gate and notify the human.
    Ping,
    /// Do not open a gate; the reason is one sentence for the `no gate: ...` message.
    NoGate(&'static str),
}

/// When a gate pings, per mode (the table of the approval contract).
///
/// | trigger | autopilot | interactive | autonomous |
/// |---|---|---|---|
/// | `impactful-action` | ping | - | - |
/// | `risk-gate` | ping | ping | ping |
/// | `final-outcome` | ping | - | - |
/// | `step:*` (five) | - | ping | - |
/// | `escalation` | - | - | ping |
///
/// A risk gate pings in every mode: a Risk Gate always stops, so it is always a mandatory
/// escalation. [`GatePolicy::covered_by_approve_all`] says which gates a run's `/approve-all`
/// pre-approves: impactful-action gates only, never a risk gate.
///
/// ```
/// use squad_notify::{GatePolicy, Mode, PolicyDecision, Trigger};
///
/// let p = GatePolicy::standard();
/// assert_eq!(p.decide(Mode::Autopilot, Trigger::ImpactfulAction), PolicyDecision::Ping);
/// assert!(matches!(p.decide(Mode::Autopilot, Trigger::StepPlan), PolicyDecision::NoGate(_)));
/// assert!(!p.covered_by_approve_all(Trigger::RiskGate));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GatePolicy {
    _private: (),
}

impl GatePolicy {
    /// The contract's table.
    pub fn standard() -> Self {
        Self { _private: () }
    }

    /// Whether `trigger` opens a gate in `mode`.
    pub fn decide(&self, mode: Mode, trigger: Trigger) -> PolicyDecision {
        use Mode::*;
        use Trigger::*;
        match (mode, trigger) {
            (_, RiskGate) => PolicyDecision::Ping,
            (Autopilot, ImpactfulAction | FinalOutcome) => PolicyDecision::Ping,
            (Autopilot, Escalation) => PolicyDecision::NoGate(
                "autopilot pings only at impactful actions, risk gates and the final outcome",
            ),
            (Autopilot, _) => PolicyDecision::NoGate(
                "autopilot does not ping at step gates; it pings at impactful actions, risk gates and the final outcome",
            ),
            (Interactive, t) if t.is_step() => PolicyDecision::Ping,
            (Interactive, _) => PolicyDecision::NoGate(
                "interactive mode pings at its step gates (step:research, step:plan, step:council, step:implement, step:review) and risk gates",
            ),
            (Autonomous, Escalation) => PolicyDecision::Ping,
            (Autonomous, _) => PolicyDecision::NoGate(
                "autonomous mode pings only on its mandatory escalations (escalation, risk-gate)",
            ),
        }
    }

    /// `true` when an earlier `/approve-all` of the same run pre-approves a gate of `trigger`:
    /// impactful-action gates only. A risk gate always stops.
    pub fn covered_by_approve_all(&self, trigger: Trigger) -> bool {
        trigger == Trigger::ImpactfulAction
    }
}

fn short_hex_id(prefix: &str, seed: &str) -> String {
    // UUIDv7 carries 74 random bits; hashing it with the seed gives a short, well-spread id.
    let fresh = squad_model::EntryId::generate();
    let mut h = Sha256::new();
    h.update(fresh.as_str().as_bytes());
    h.update(seed.as_bytes());
    let hex = hex::encode(h.finalize());
    format!("{prefix}{}", &hex[..12])
}

fn check_token(what: &'static str, value: &str) -> Result<()> {
    let ok = !value.is_empty()
        && value.len() <= 64
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if ok {
        Ok(())
    } else {
        Err(Error::invalid(
            "parse",
            format!(
                "invalid {what} {value:?}: use 1 to 64 characters of A-Z, a-z, 0-9, '-', '_', '.'"
            ),
        ))
    }
}

/// The id of a gate: `g-` and 12 lowercase hex digits, short enough to type on a phone.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct GateId(String);

impl GateId {
    /// A fresh random id.
    pub fn generate() -> Self {
        Self(short_hex_id("g-", "gate"))
    }

    /// Checks `value` (`g-` + 12 hex digits; uppercase is folded to lowercase).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidInput`] naming the value.
    pub fn new(value: &str) -> Result<Self> {
        let v = value.to_ascii_lowercase();
        let ok =
            v.len() == 14 && v.starts_with("g-") && v[2..].bytes().all(|b| b.is_ascii_hexdigit());
        if ok {
            Ok(Self(v))
        } else {
            Err(Error::invalid(
                "parse",
                format!("invalid gate id {value:?}: expected g- and 12 hex digits"),
            ))
        }
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for GateId {
    type Error = Error;
    fn try_from(s: String) -> Result<Self> {
        Self::new(&s)
    }
}
impl From<GateId> for String {
    fn from(g: GateId) -> String {
        g.0
    }
}
impl fmt::Display for GateId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The id of a run: one unattended squad run, grouping its gates. Ends with `/stop`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct RunId(String);

impl RunId {
    /// A fresh random id (`r-` and 12 hex digits).
    pub fn generate() -> Self {
        Self(short_hex_id("r-", "run"))
    }

    /// Checks `value`: 1 to 64 characters of `A-Z a-z 0-9 - _ .`.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidInput`] naming the value.
    pub fn new(value: &str) -> Result<Self> {
        check_token("run id", value)?;
        Ok(Self(value.to_owned()))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for RunId {
    type Error = Error;
    fn try_from(s: String) -> Result<Self> {
        Self::new(&s)
    }
}
impl From<RunId> for String {
    fn from(r: RunId) -> String {
        r.0
    }
}
impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The state of a gate. `Pending` is the only state that accepts a decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GateState {
    /// Waiting for an authorized decision.
    Pending,
    /// `/approve`: this one gated action may proceed.
    Approved,
    /// `/approve-all`: proceed, and later impactful-action gates of the run are pre-approved.
    ApproveAll,
    /// `/changes`: re-enter the pipeline with the note as data.
    ChangesRequested,
    /// `/stop`: the run halts.
    Stopped,
    /// The gate outlived `expires`; never approves.
    Expired,
}

impl GateState {
    /// The wire name (`pending`, `approved`, `approve-all`, `changes-requested`, `stopped`, `expired`).
    pub fn as_str(&self) -> &'static str {
        match self {
            GateState::Pending => "pending",
            GateState::Approved => "approved",
            GateState::ApproveAll => "approve-all",
            GateState::ChangesRequested => "changes-requested",
            GateState::Stopped => "stopped",
            GateState::Expired => "expired",
        }
    }

    /// `true` for `approved` and `approve-all`: the gated action may proceed.
    pub fn proceeds(&self) -> bool {
        matches!(self, GateState::Approved | GateState::ApproveAll)
    }

    /// `true` for every state but `pending`.
    pub fn is_terminal(&self) -> bool {
        *self != GateState::Pending
    }
}

impl fmt::Display for GateState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Who sent a signal, as the channel saw them.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Responder {
    /// The login (GitHub handle), or `in-chat` for the person at the chat session.
    pub login: String,
    /// The numeric account id, when the channel knows it (GitHub does).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<u64>,
    /// `true` for bot accounts (`user.type == "Bot"` on GitHub).
    #[serde(default)]
    pub bot: bool,
}

impl Responder {
    /// The person at the chat session (the in-chat channel's only responder).
    pub fn in_chat() -> Self {
        Self {
            login: "in-chat".to_owned(),
            id: None,
            bot: false,
        }
    }
}

/// The decision recorded on a gate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DecisionRecord {
    /// Who decided; `None` for expiry and for pre-approval by an earlier `/approve-all`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<Responder>,
    /// When the decision was applied.
    pub at: Timestamp,
    /// The channel the signal came through (absent for expiry).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<ChannelKind>,
    /// The `/changes` note (data, never a command), capped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Where the signal lives (a comment id, a delivery id), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    /// `true` when an earlier `/approve-all` of the run covered this gate.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pre_approved: bool,
}

/// What a human is asked to decide: the payload of the notification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GateRequest {
    /// The mode of the squad.
    pub mode: Mode,
    /// Why the gate is raised.
    pub trigger: Trigger,
    /// One-line summary of the work.
    pub topic: String,
    /// The decision the human must make (one line).
    pub awaiting: String,
    /// A short summary: what happened, what is about to happen, any conditions (at most 8 lines).
    pub detail: String,
}

/// Most characters in `topic` and `awaiting`.
pub const MAX_LINE_CHARS: usize = 200;
/// Most characters in `detail`.
pub const MAX_DETAIL_CHARS: usize = 2000;

impl GateRequest {
    /// Checks the texts: `topic` and `awaiting` are one non-empty line of at most
    /// [`MAX_LINE_CHARS`] characters; `detail` is at most [`MAX_DETAIL_CHARS`] characters and 8
    /// lines; none holds control characters other than newlines in `detail`.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidInput`] naming the field and the rule.
    pub fn validate(&self) -> Result<()> {
        for (name, v) in [("topic", &self.topic), ("awaiting", &self.awaiting)] {
            if v.trim().is_empty() {
                return Err(Error::invalid("gate.request", format!("{name} is empty")));
            }
            if v.chars().any(char::is_control) {
                return Err(Error::invalid(
                    "gate.request",
                    format!("{name} must be one line without control characters"),
                ));
            }
            if v.chars().count() > MAX_LINE_CHARS {
                return Err(Error::invalid(
                    "gate.request",
                    format!("{name} is longer than {MAX_LINE_CHARS} characters"),
                ));
            }
        }
        if self.detail.chars().any(|c| c.is_control() && c != '\n') {
            return Err(Error::invalid(
                "gate.request",
                "detail must not hold control characters other than newlines",
            ));
        }
        if self.detail.chars().count() > MAX_DETAIL_CHARS || self.detail.lines().count() > 8 {
            return Err(Error::invalid(
                "gate.request",
                format!("detail is longer than {MAX_DETAIL_CHARS} characters or 8 lines"),
            ));
        }
        Ok(())
    }
}

/// A gate: one decision a human must make, bound to its payload by a digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Gate {
    /// The gate id, shown in the ping and accepted in replies (`/approve g-...`).
    pub id: GateId,
    /// The run the gate belongs to.
    pub run: RunId,
    /// The mode of the squad.
    pub mode: Mode,
    /// Why the gate was raised.
    pub trigger: Trigger,
    /// One-line summary of the work.
    pub topic: String,
    /// The decision awaited.
    pub awaiting: String,
    /// The short summary.
    pub detail: String,
    /// `sha256:<hex>` of the canonical payload ([`Gate::canonical_payload`]).
    pub digest: String,
    /// When the gate was opened.
    pub created: Timestamp,
    /// When the gate expires (fails closed).
    pub expires: Timestamp,
    /// The current state.
    pub state: GateState,
    /// The decision, once there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<DecisionRecord>,
    /// What each channel that delivered the notification returned (not covered by the digest).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deliveries: Vec<crate::channel::Delivery>,
    /// How many distinct authorized approvers must approve (1 to [`MAX_QUORUM`]; covered by
    /// the digest when above 1).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub quorum: u32,
    /// The approvals counted so far toward [`Gate::quorum`], oldest first, one per approver.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approvals: Vec<Vote>,
}

fn one() -> u32 {
    1
}

#[allow(clippy::trivially_copy_pass_by_ref)]
fn is_one(n: &u32) -> bool {
    *n == 1
}

/// Most approvers a quorum may ask for.
pub const MAX_QUORUM: u32 = 100;

/// Checks a quorum: 1 to [`MAX_QUORUM`].
///
/// # Errors
///
/// [`ErrorKind::InvalidInput`] naming the range.
pub fn check_quorum(n: u32) -> Result<()> {
    if (1..=MAX_QUORUM).contains(&n) {
        Ok(())
    } else {
        Err(Error::invalid(
            "gate.quorum",
            format!("quorum {n} is out of range (1 to {MAX_QUORUM})"),
        ))
    }
}

/// One authorized approval of a gate that needs a quorum.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Vote {
    /// Who approved.
    pub by: Responder,
    /// When the approval was counted.
    pub at: Timestamp,
    /// `true` for `/approve-all`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub all: bool,
    /// Where the signal lives (a comment id), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
}

/// What counting one authorized approval did ([`Gate::vote`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counted {
    /// The approver had already approved: it counts once, nothing changed.
    Again,
    /// Counted; this many approvals of the quorum are in, the gate stays pending.
    Partial(u32),
    /// The quorum is reached: the gate is decided (approved, or approve-all when every counted
    /// approval was `/approve-all`).
    Decided(GateState),
    /// The gate had expired: it is now `expired` and the approval did not count.
    Expired,
}

/// Default lifetime of a gate: one day.
pub const DEFAULT_EXPIRES_IN_SECS: u64 = 86_400;

/// Longest lifetime of a gate: one year (365 days).
pub const MAX_EXPIRES_IN_SECS: u64 = 365 * 24 * 60 * 60;

/// Checks a gate lifetime: 1 second to [`MAX_EXPIRES_IN_SECS`].
///
/// # Errors
///
/// [`ErrorKind::InvalidInput`] naming the limit.
pub(crate) fn check_expires_in(secs: u64) -> Result<()> {
    if (1..=MAX_EXPIRES_IN_SECS).contains(&secs) {
        Ok(())
    } else {
        Err(Error::invalid(
            "gate.open",
            format!(
                "expires-in {secs} is out of range (1 to {MAX_EXPIRES_IN_SECS} seconds, one year)"
            ),
        ))
    }
}

/// How a decision attempt ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Applied {
    /// The gate moved to this terminal state.
    Decided(GateState),
    /// The gate had expired: it is now `expired` and the decision did not count.
    Expired,
}

impl Gate {
    /// Opens a pending gate for `request` in `run`, created `now`, expiring after `expires_in_secs`.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidInput`] when the request's texts break [`GateRequest::validate`],
    /// `expires_in_secs` is outside 1 to [`MAX_EXPIRES_IN_SECS`], or the expiry would not be
    /// later than `now` (a clock at the end of the supported range).
    pub fn open(
        request: &GateRequest,
        run: RunId,
        now: Timestamp,
        expires_in_secs: u64,
    ) -> Result<Self> {
        request.validate()?;
        check_expires_in(expires_in_secs)?;
        let secs = i64::try_from(expires_in_secs).unwrap_or(i64::MAX);
        if now.plus_seconds(secs) <= now {
            return Err(Error::invalid(
                "gate.open",
                format!("a gate opened at {now} cannot expire {expires_in_secs} seconds later"),
            ));
        }
        let mut gate = Gate {
            id: GateId::generate(),
            run,
            mode: request.mode,
            trigger: request.trigger,
            topic: request.topic.trim().to_owned(),
            awaiting: request.awaiting.trim().to_owned(),
            detail: request.detail.trim_end().to_owned(),
            digest: String::new(),
            created: now,
            expires: now.plus_seconds(secs),
            state: GateState::Pending,
            decision: None,
            deliveries: Vec::new(),
            quorum: 1,
            approvals: Vec::new(),
        };
        gate.digest = gate.compute_digest();
        Ok(gate)
    }

    /// The gate with a quorum of `n` approvers (the digest is computed again).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidInput`] when `n` is outside 1 to [`MAX_QUORUM`].
    pub fn with_quorum(mut self, n: u32) -> Result<Self> {
        check_quorum(n)?;
        self.quorum = n;
        self.digest = self.compute_digest();
        Ok(self)
    }

    /// The logins of the approvals counted so far, oldest first.
    pub fn approvers(&self) -> Vec<&str> {
        self.approvals.iter().map(|v| v.by.login.as_str()).collect()
    }

    /// Counts one (already authorized) approval by `by` toward the quorum: the same approver
    /// (same account id, else same login ignoring case) counts once. When the quorum is
    /// reached the gate is decided, by the approver whose approval completed it.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Conflict`] when the gate is no longer pending (nothing changes).
    pub fn vote(
        &mut self,
        by: Responder,
        all: bool,
        via: Option<ChannelKind>,
        reference: Option<String>,
        now: Timestamp,
    ) -> Result<Counted> {
        if self.state != GateState::Pending {
            return Err(Error::new(
                ErrorKind::Conflict,
                "gate.decide",
                format!("gate {} is already decided ({})", self.id, self.state),
            ));
        }
        if self.expire_if_due(now) {
            return Ok(Counted::Expired);
        }
        let same = |v: &Vote| match (v.by.id, by.id) {
            (Some(a), Some(b)) => a == b,
            _ => v.by.login.eq_ignore_ascii_case(&by.login),
        };
        if self.approvals.iter().any(same) {
            return Ok(Counted::Again);
        }
        self.approvals.push(Vote {
            by: by.clone(),
            at: now,
            all,
            reference: reference.clone(),
        });
        let n = u32::try_from(self.approvals.len()).unwrap_or(u32::MAX);
        if n < self.quorum {
            return Ok(Counted::Partial(n));
        }
        let command = if self.approvals.iter().all(|v| v.all) {
            Command::ApproveAll
        } else {
            Command::Approve
        };
        match self.apply(&command, Some(by), via, reference, now)? {
            Applied::Decided(state) => Ok(Counted::Decided(state)),
            Applied::Expired => Ok(Counted::Expired),
        }
    }

    /// The canonical payload the digest covers: a JSON object with keys in this fixed order —
    /// `gate`, `run`, `mode`, `trigger`, `topic`, `awaiting`, `detail`, `created`, `expires` —
    /// no whitespace, UTF-8.
    ///
    /// A gate with a quorum above 1 adds `quorum` last (so the digest of every gate without one
    /// is what it always was).
    pub fn canonical_payload(&self) -> String {
        let mut v = serde_json::json!({
            "gate": self.id.as_str(),
            "run": self.run.as_str(),
            "mode": self.mode.as_str(),
            "trigger": self.trigger.as_str(),
            "topic": self.topic,
            "awaiting": self.awaiting,
            "detail": self.detail,
            "created": self.created.to_string(),
            "expires": self.expires.to_string(),
        });
        // A quorum of one is left out, so that gates written before quorums keep their digest.
        if self.quorum != 1 {
            v["quorum"] = serde_json::json!(self.quorum);
        }
        v.to_string()
    }

    /// `sha256:<hex>` of [`Gate::canonical_payload`].
    pub fn compute_digest(&self) -> String {
        format!(
            "sha256:{}",
            hex::encode(Sha256::digest(self.canonical_payload().as_bytes()))
        )
    }

    /// The first 12 hex digits of the digest, shown in pings.
    pub fn short_digest(&self) -> &str {
        let hex = self.digest.strip_prefix("sha256:").unwrap_or(&self.digest);
        hex.get(..12).unwrap_or(hex)
    }

    /// `true` when the stored digest matches the payload (the record was not altered).
    pub fn digest_matches(&self) -> bool {
        self.digest == self.compute_digest()
    }

    /// `true` when the gate is past its expiry at `now`.
    pub fn is_expired_at(&self, now: Timestamp) -> bool {
        now >= self.expires
    }

    /// Moves a pending gate past its expiry to `expired`. Returns `true` when it did.
    pub fn expire_if_due(&mut self, now: Timestamp) -> bool {
        if self.state == GateState::Pending && self.is_expired_at(now) {
            self.state = GateState::Expired;
            self.decision = Some(DecisionRecord {
                by: None,
                at: now,
                via: None,
                note: None,
                reference: None,
                pre_approved: false,
            });
            true
        } else {
            false
        }
    }

    /// Applies an (already authorized) command at `now`: the state machine
    /// `pending -> approved | approve-all | changes-requested | stopped | expired`.
    ///
    /// A gate is decided once. A gate past its expiry becomes `expired` and the command does not
    /// count (expiry fails closed: a timeout never approves).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Conflict`] when the gate is no longer pending (nothing changes).
    pub fn apply(
        &mut self,
        command: &Command,
        by: Option<Responder>,
        via: Option<ChannelKind>,
        reference: Option<String>,
        now: Timestamp,
    ) -> Result<Applied> {
        if self.state != GateState::Pending {
            return Err(Error::new(
                ErrorKind::Conflict,
                "gate.decide",
                format!("gate {} is already decided ({})", self.id, self.state),
            ));
        }
        if *command == Command::RevokeAll {
            return Err(Error::invalid(
                "gate.decide",
                "/revoke-all is not a decision: it ends the run's /approve-all",
            ));
        }
        if self.expire_if_due(now) {
            return Ok(Applied::Expired);
        }
        let (state, note) = match command {
            Command::Approve => (GateState::Approved, None),
            Command::ApproveAll => (GateState::ApproveAll, None),
            Command::Changes(note) => (GateState::ChangesRequested, Some(note.clone())),
            Command::Stop | Command::RevokeAll => (GateState::Stopped, None),
        };
        self.state = state;
        self.decision = Some(DecisionRecord {
            by,
            at: now,
            via,
            note,
            reference,
            pre_approved: false,
        });
        Ok(Applied::Decided(state))
    }

    /// Records a pre-approval by an earlier `/approve-all` of the run (no ping was sent).
    pub(crate) fn pre_approve(&mut self, now: Timestamp) {
        self.state = GateState::Approved;
        self.decision = Some(DecisionRecord {
            by: None,
            at: now,
            via: None,
            note: None,
            reference: None,
            pre_approved: true,
        });
    }
}
