//! Public value types of the GitHub layer: actors, candidate signals, verdicts, resolutions.

use std::fmt;

use squad_model::Timestamp;

use super::body::GateBlock;

/// The kind of account behind an actor, from the `type` field of GitHub's user object.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ActorKind {
    /// A person (`"User"`).
    User,
    /// A GitHub App or other automation (`"Bot"`, or a login ending in `[bot]`).
    Bot,
    /// Any other type GitHub reports (`"Organization"`, `"Mannequin"`, ...).
    Other(String),
}

/// Who wrote a comment or added a label.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actor {
    /// The login at the time of the event.
    pub login: String,
    /// The numeric account id (stable across renames).
    pub id: u64,
    /// User, bot or other.
    pub kind: ActorKind,
    /// Whether this is the squad's own account (the token's identity).
    pub is_self: bool,
}

impl Actor {
    /// Whether the account is automation (type `Bot` or a login ending in `[bot]`).
    pub fn is_bot(&self) -> bool {
        self.kind == ActorKind::Bot || self.login.to_ascii_lowercase().ends_with("[bot]")
    }
}

/// Where a candidate signal came from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum SignalSource {
    /// An issue comment.
    Comment {
        /// The comment id.
        id: u64,
    },
    /// A `labeled` event of the issue.
    Label {
        /// The issue event id.
        event_id: u64,
    },
}

impl fmt::Display for SignalSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Comment { id } => write!(f, "comment {id}"),
            Self::Label { event_id } => write!(f, "label event {event_id}"),
        }
    }
}

/// What the candidate says: a comment body or a label name. Parsing it into a decision is the
/// caller's job (see [`super::SignalParser`]); the text is data and is never executed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CandidateContent {
    /// The comment's Markdown body.
    Comment(String),
    /// The name of the label that was added.
    Label(String),
}

/// A comment or label event seen on the approval issue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// The comment or the label event.
    pub source: SignalSource,
    /// Who wrote or labelled.
    pub actor: Actor,
    /// When it was created (server time).
    pub created_at: Timestamp,
    /// When it was last updated (server time). For comments, a value other than `created_at`
    /// means the comment was edited; labels events are never updated.
    pub updated_at: Timestamp,
    /// The body or the label name.
    pub content: CandidateContent,
    /// GitHub's `author_association` of a comment (`OWNER`, `MEMBER`, `COLLABORATOR`, `NONE`...),
    /// for the log only: authorization never relies on it.
    pub author_association: Option<String>,
}

impl Candidate {
    /// Whether a comment was edited after it was created.
    pub fn is_edited(&self) -> bool {
        self.updated_at != self.created_at
    }
}

/// Why a candidate does not count.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RejectReason {
    /// Created before the gate opened (a replay from an earlier gate).
    BeforeGate,
    /// A comment edited after it was created (or edited after we first saw it).
    Edited,
    /// Written by a bot.
    Bot,
    /// Written by the squad's own account (no self-approval).
    OwnAccount,
    /// The account was deleted (GitHub shows it as `ghost` or no user at all).
    UnknownActor,
    /// Not a recognized command or label (plain discussion).
    NotACommand,
    /// A command bound to another gate.
    OtherGate {
        /// The gate id the command named.
        named: String,
    },
    /// The actor is neither the registered approver nor a collaborator with write access.
    Unauthorized {
        /// The actor's repository role (`role_name`), `none` when not a collaborator.
        role: String,
    },
    /// At consumption time, the comment was gone, edited, or the label removed.
    Retracted,
}

impl fmt::Display for RejectReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BeforeGate => f.write_str("created before the gate opened"),
            Self::Edited => f.write_str("edited after creation"),
            Self::Bot => f.write_str("written by a bot"),
            Self::OwnAccount => f.write_str("written by the squad's own account"),
            Self::UnknownActor => f.write_str("the account no longer exists"),
            Self::NotACommand => f.write_str("not a command"),
            Self::OtherGate { named } => write!(f, "names another gate ({named})"),
            Self::Unauthorized { role } => write!(f, "not authorized (role {role})"),
            Self::Retracted => f.write_str("retracted before it was consumed"),
        }
    }
}

/// A candidate that does not count, and why: the caller logs these ("ignored and noted").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// The candidate.
    pub candidate: Candidate,
    /// Why it does not count.
    pub reason: RejectReason,
}

/// Why an actor may decide.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AuthorizedAs {
    /// The registered approver handle (matched by numeric id when it is known).
    RegisteredApprover,
    /// A collaborator whose role allows deciding.
    Collaborator {
        /// `role_name` as GitHub reported it (`admin`, `maintain`, `write`, or a custom role
        /// whose legacy `permission` is `write` or `admin`).
        role: String,
    },
}

/// The outcome of an authorization check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The actor may decide.
    Authorized(AuthorizedAs),
    /// The actor may not decide.
    Refused(RejectReason),
}

impl Verdict {
    /// Whether the actor may decide.
    pub fn is_authorized(&self) -> bool {
        matches!(self, Self::Authorized(_))
    }
}

/// A repository role, as read from `GET /repos/{o}/{r}/collaborators/{u}/permission`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CollaboratorRole {
    /// `role_name`: `admin`, `maintain`, `write`, `triage`, `read` or a custom role name; `none`
    /// when the user is no collaborator (404).
    pub role_name: String,
    /// The legacy `permission` field: `admin`, `write`, `read` or `none`.
    pub permission: String,
}

impl CollaboratorRole {
    /// Whether this role may decide a gate: `role_name` is `admin`, `maintain` or `write`, or a
    /// custom role whose legacy `permission` is `admin` or `write`. `triage`, `read` and `none`
    /// may not (triage users can add labels, which is why labels are authorized by their actor).
    pub fn may_decide(&self) -> bool {
        matches!(self.role_name.as_str(), "admin" | "maintain" | "write")
            || (!matches!(self.role_name.as_str(), "triage" | "read" | "none")
                && matches!(self.permission.as_str(), "admin" | "write"))
    }
}

/// The approval issue of a run, with the gate block read from the squad's own body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalIssue {
    /// The issue number.
    pub number: u64,
    /// The web page of the issue (for the `notifications.md` "Approval Ref").
    pub html_url: String,
    /// The title.
    pub title: String,
    /// Whether the issue is open.
    pub open: bool,
    /// The label names on the issue.
    pub labels: Vec<String>,
    /// The gate block, read only from a body the squad's own account wrote.
    pub gate: GateBlock,
    /// GitHub's `updated_at` of the issue (server time).
    pub updated_at: Timestamp,
}

/// What the approver decided, as the issue should show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Outcome {
    /// Approve this gate: the issue is closed.
    Approved,
    /// Approve and pre-approve later impactful-action gates of the run: the issue is closed.
    ApproveAll,
    /// Changes requested: the issue stays open, relabelled `squad/changes-requested`.
    ChangesRequested,
    /// Stop the run: the issue is closed as not planned.
    Stopped,
}

impl Outcome {
    /// The wire name used in the outcome comment and `notifications.md`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Approved => "approved",
            Self::ApproveAll => "approve-all",
            Self::ChangesRequested => "changes-requested",
            Self::Stopped => "stopped",
        }
    }
}

/// A decision to write back to the issue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolution {
    /// The gate that was decided.
    pub gate_id: String,
    /// The decision.
    pub outcome: Outcome,
    /// The login of whoever decided.
    pub by: String,
    /// When the decision was consumed.
    pub at: Timestamp,
    /// The note of a changes request (shown quoted, as data).
    pub note: Option<String>,
}
