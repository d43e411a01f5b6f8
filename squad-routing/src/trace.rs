//! Traces: JSON Lines of an optional schema version, entity records, then event records; and
//! their replay.
//!
//! ```text
//! {"kind":"schema_version","version":2}
//! {"kind":"workspace","id":"w1","issue_prefix":"SQ"}
//! {"kind":"user","id":"u1","name":"Sam"}
//! {"kind":"membership","workspace_id":"w1","user_id":"u1","role":"owner"}
//! {"kind":"agent", ...squad_model::Agent}
//! {"kind":"squad", ...squad_model::Squad}
//! {"kind":"member", ...squad_model::SquadMember}
//! {"kind":"issue", ...squad_model::Issue, "number": 12}
//! {"kind":"task", ...}  {"kind":"comment", ...}  {"kind":"autopilot", ...}
//! {"kind":"event","at":"2026-11-30T10:00:00Z","event":{"type":"update_issue", ...}}
//! ```
//!
//! The JSON Schema is `schemas/trace.schema.json` ([`TRACE_SCHEMA`]). Replaying checks what the
//! schema cannot: the schema version comes first, entity records come before events, ids are
//! defined once, and every id an event acts on exists. Errors name the 1-based line.
//!
//! # Versions
//!
//! A trace without a `schema_version` record is version 1 (traces written before the record
//! existed). Version 2 ([`SCHEMA_VERSION`]) adds agent `instructions`, task `context`
//! (quick-create), autopilots without an assignee or created by an agent (`creator_type`), and the
//! `quick_create` event. Each version is a superset of the one before, so a reader accepts every
//! version up to its own and refuses a newer one (it could not tell what the new fields mean).

use serde::Serialize;
use serde_json::Value;
use squad_model::{
    Agent, AgentId, Autopilot, Issue, IssueId, Squad, SquadMember, Task, TaskId, Timestamp, UserId,
    WorkspaceId,
};

use crate::apply::apply;
use crate::directory::{Directory, InMemoryDirectory};
use crate::engine::{Decisions, Engine};
use crate::error::{Error, ErrorKind, Result};
use crate::event::*;
use crate::records::{Comment, Membership, Principal, User, Workspace};

/// The JSON Schema of one trace line.
pub const TRACE_SCHEMA: &str = include_str!("../schemas/trace.schema.json");

/// The trace schema version this crate writes, and the newest it reads.
pub const SCHEMA_VERSION: u32 = 2;

/// An issue record with its optional number.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct IssueRecord {
    /// The issue.
    #[serde(flatten)]
    pub issue: Issue,
    /// Its number in the workspace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub number: Option<u64>,
}

/// One line of a trace.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum TraceLine {
    /// The schema version of the trace (first record; absent means version 1).
    SchemaVersion {
        /// The version, 1 to [`SCHEMA_VERSION`].
        version: u32,
    },
    /// A workspace.
    Workspace(Workspace),
    /// A user.
    User(User),
    /// A workspace membership.
    Membership(Membership),
    /// An agent.
    Agent(Agent),
    /// A squad.
    Squad(Squad),
    /// A squad membership row.
    Member(SquadMember),
    /// An issue.
    Issue(IssueRecord),
    /// A task.
    Task(Task),
    /// A comment.
    Comment(Comment),
    /// An autopilot.
    Autopilot(Autopilot),
    /// An event, at a time (default: the previous event's time).
    Event {
        /// When it happens.
        #[serde(skip_serializing_if = "Option::is_none")]
        at: Option<Timestamp>,
        /// What happens.
        event: Event,
    },
}

impl TraceLine {
    /// The line as compact JSON (no trailing newline).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

const ENTITY_KINDS: [&str; 10] = [
    "workspace",
    "user",
    "membership",
    "agent",
    "squad",
    "member",
    "issue",
    "task",
    "comment",
    "autopilot",
];

fn invalid(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidTrace, msg)
}

/// Where a replay's clock starts when no event gives a time: 2026-01-01T00:00:00Z.
pub(crate) fn default_clock() -> Timestamp {
    Timestamp::from_unix_seconds(1_767_225_600).unwrap_or_else(|_| Timestamp::now())
}

/// The order of a trace's records, as a replay checks it: the schema version before every other
/// record, entity records before the first event.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Order {
    /// Whether a record came (the schema version must come first).
    started: bool,
    /// Whether an event came.
    in_events: bool,
}

impl Order {
    /// The order after a schema version, entities and, with `events`, at least one event.
    pub(crate) fn after(events: bool) -> Self {
        Self {
            started: true,
            in_events: events,
        }
    }

    /// Checks that `record` may come next, and counts it.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidTrace`] for a schema version that is not first or an entity after
    /// the first event.
    pub(crate) fn check(&mut self, record: &TraceLine) -> Result<()> {
        let first = !self.started;
        self.started = true;
        match record {
            TraceLine::SchemaVersion { .. } if !first => Err(invalid(
                "the schema_version record must come before every other record",
            )),
            TraceLine::SchemaVersion { .. } => Ok(()),
            TraceLine::Event { .. } => {
                self.in_events = true;
                Ok(())
            }
            _ if self.in_events => Err(invalid("entity records must come before the first event")),
            _ => Ok(()),
        }
    }
}

fn unknown_ref(what: &str, id: impl std::fmt::Display) -> Error {
    Error::new(
        ErrorKind::UnknownReference,
        format!("unknown {what} \"{id}\""),
    )
}

fn duplicate(what: &str, id: impl std::fmt::Display) -> Error {
    Error::new(
        ErrorKind::UnknownReference,
        format!("{what} \"{id}\" is defined twice"),
    )
}

/// Parses one non-blank line.
///
/// # Errors
///
/// [`ErrorKind::InvalidTrace`] for malformed JSON or records, [`ErrorKind::UnknownEventKind`] for
/// an event type this crate does not know. The error carries no line number; [`Replay`] adds it.
pub fn parse_line(line: &str) -> Result<TraceLine> {
    let mut value: Value =
        serde_json::from_str(line).map_err(|e| invalid(format!("invalid JSON: {e}")))?;
    let obj = value
        .as_object_mut()
        .ok_or_else(|| invalid("a trace line must be a JSON object"))?;
    let kind = match obj.remove("kind") {
        Some(Value::String(k)) => k,
        Some(_) => return Err(invalid("\"kind\" must be a string")),
        None => return Err(invalid("missing \"kind\"")),
    };
    fn typed<T: serde::de::DeserializeOwned>(kind: &str, v: Value) -> Result<T> {
        serde_json::from_value(v).map_err(|e| invalid(format!("invalid {kind} record: {e}")))
    }
    Ok(match kind.as_str() {
        "schema_version" => {
            let version = match obj.remove("version") {
                Some(Value::Number(n)) => n.as_u64(),
                Some(_) => None,
                None => return Err(invalid("missing \"version\" in schema_version record")),
            };
            if let Some(extra) = obj.keys().next() {
                return Err(invalid(format!(
                    "unknown field \"{extra}\" in schema_version record"
                )));
            }
            match version {
                Some(v @ 1..) if v <= u64::from(SCHEMA_VERSION) => TraceLine::SchemaVersion {
                    version: u32::try_from(v).unwrap_or(SCHEMA_VERSION),
                },
                Some(v) if v > u64::from(SCHEMA_VERSION) => {
                    return Err(Error::new(
                        ErrorKind::UnsupportedVersion,
                        format!(
                            "trace schema version {v} is newer than this build reads (1 to {SCHEMA_VERSION})"
                        ),
                    ));
                }
                _ => {
                    return Err(invalid(
                        "\"version\" in schema_version record must be a positive integer",
                    ));
                }
            }
        }
        "workspace" => TraceLine::Workspace(typed(&kind, value)?),
        "user" => TraceLine::User(typed(&kind, value)?),
        "membership" => TraceLine::Membership(typed(&kind, value)?),
        "agent" => TraceLine::Agent(typed(&kind, value)?),
        "squad" => TraceLine::Squad(typed(&kind, value)?),
        "member" => TraceLine::Member(typed(&kind, value)?),
        "issue" => TraceLine::Issue(typed(&kind, value)?),
        "task" => TraceLine::Task(typed(&kind, value)?),
        "comment" => TraceLine::Comment(typed(&kind, value)?),
        "autopilot" => TraceLine::Autopilot(typed(&kind, value)?),
        "event" => {
            let at = match obj.remove("at") {
                None | Some(Value::Null) => None,
                Some(v) => Some(typed::<Timestamp>("event time", v)?),
            };
            let event = obj
                .remove("event")
                .ok_or_else(|| invalid("missing \"event\""))?;
            if let Some(extra) = obj.keys().next() {
                return Err(invalid(format!(
                    "unknown field \"{extra}\" in event record"
                )));
            }
            let ty = match event.get("type") {
                Some(Value::String(t)) => t.clone(),
                _ => return Err(invalid("event without a string \"type\"")),
            };
            if !Event::KINDS.contains(&ty.as_str()) {
                return Err(Error::new(
                    ErrorKind::UnknownEventKind,
                    format!("unknown event kind \"{ty}\""),
                ));
            }
            let event = serde_json::from_value(event)
                .map_err(|e| invalid(format!("invalid {ty} event: {e}")))?;
            TraceLine::Event { at, event }
        }
        other => {
            return Err(invalid(format!(
                "unknown record kind \"{other}\" (expected schema_version, one of {}, or event)",
                ENTITY_KINDS.join(", ")
            )));
        }
    })
}

/// The result of one replayed event.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EventOutput {
    /// The 1-based line of the event.
    pub line: usize,
    /// The event's type.
    pub event: &'static str,
    /// What the engine decided.
    #[serde(flatten)]
    pub decisions: Decisions,
    /// For a claim: the instructions the agent runs with
    /// ([`briefing::claim_instructions`](crate::briefing::claim_instructions)).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
}

/// Replays a trace line by line into a directory: an [`InMemoryDirectory`] by default, or any
/// other ([`Replay::with_directory`]), for example a `SqliteDirectory` that keeps the state.
///
/// ```
/// use squad_routing::{Replay, Engine};
///
/// let mut r = Replay::new(Engine::default());
/// r.feed_line(r#"{"kind":"workspace","id":"w1"}"#).unwrap();
/// let err = r.feed_line(r#"{"kind":"event","event":{"type":"frobnicate"}}"#).unwrap_err();
/// assert_eq!(err.to_string(), "line 2: unknown event kind \"frobnicate\"");
/// ```
#[derive(Debug)]
pub struct Replay<D = InMemoryDirectory> {
    engine: Engine,
    dir: D,
    clock: Timestamp,
    line: usize,
    order: Order,
    version: u32,
}

impl Replay {
    /// A replay with an empty in-memory directory; the clock starts at 2026-01-01T00:00:00Z.
    pub fn new(engine: Engine) -> Self {
        Self::with_directory(engine, InMemoryDirectory::new())
    }
}

impl<D: Directory> Replay<D> {
    /// A replay into `dir`, which may already hold records (a later replay continuing an earlier
    /// one); the clock starts at 2026-01-01T00:00:00Z.
    pub fn with_directory(engine: Engine, dir: D) -> Self {
        Self {
            engine,
            dir,
            clock: default_clock(),
            line: 0,
            order: Order::default(),
            version: 1,
        }
    }

    /// The trace's schema version: 1 until a `schema_version` record says otherwise.
    pub fn schema_version(&self) -> u32 {
        self.version
    }

    /// The directory in its current state.
    pub fn directory(&self) -> &D {
        &self.dir
    }

    /// The directory, for writes outside the replay (a database transaction, say).
    pub fn directory_mut(&mut self) -> &mut D {
        &mut self.dir
    }

    /// The directory, ending the replay.
    pub fn into_directory(self) -> D {
        self.dir
    }

    /// Feeds the next line. Blank lines and entity records return `Ok(None)`.
    ///
    /// # Errors
    ///
    /// Any [`parse_line`] error, or [`ErrorKind::UnknownReference`] for an id defined twice or an
    /// event acting on an id the trace never defined, or an entity after the first event; all
    /// with the line number. The directory is unchanged by a failed line.
    pub fn feed_line(&mut self, line: &str) -> Result<Option<EventOutput>> {
        self.line += 1;
        let n = self.line;
        if line.trim().is_empty() {
            return Ok(None);
        }
        let record = parse_line(line).map_err(|e| e.at_line(n))?;
        self.feed(record).map_err(|e| e.at_line(n))
    }

    /// Feeds one parsed record. Its output reports the number of lines fed through
    /// [`Self::feed_line`] so far.
    ///
    /// # Errors
    ///
    /// As [`Self::feed_line`], without the line number.
    pub fn feed(&mut self, record: TraceLine) -> Result<Option<EventOutput>> {
        self.order.check(&record)?;
        if let TraceLine::SchemaVersion { version } = record {
            self.version = version;
            return Ok(None);
        }
        if let TraceLine::Event { at, event } = record {
            check_event(&self.dir, &event)?;
            if let Some(at) = at {
                self.clock = at;
            }
            let decisions = self.engine.decide(&self.dir, self.clock, &event);
            let instructions = decisions
                .decisions
                .iter()
                .find_map(|d| crate::briefing::claim_instructions(&self.dir, d));
            apply(&mut self.dir, &decisions);
            return Ok(Some(EventOutput {
                line: self.line,
                event: event.kind(),
                decisions,
                instructions,
            }));
        }
        load_entity(&mut self.dir, record)?;
        Ok(None)
    }
}

/// Loads one entity record into a directory, checking that its id is new and its references
/// exist.
///
/// # Errors
///
/// [`ErrorKind::UnknownReference`] for a duplicate id or a dangling reference.
pub fn load_entity(dir: &mut dyn Directory, record: TraceLine) -> Result<()> {
    match record {
        TraceLine::Workspace(w) => {
            if dir.workspace(&w.id).is_some() {
                return Err(duplicate("workspace", &w.id));
            }
            dir.put_workspace(w);
        }
        TraceLine::User(u) => {
            if dir.user(&u.id).is_some() {
                return Err(duplicate("user", &u.id));
            }
            dir.put_user(u);
        }
        TraceLine::Membership(m) => {
            need_workspace(dir, &m.workspace_id)?;
            need_user(dir, &m.user_id)?;
            dir.put_membership(m);
        }
        TraceLine::Agent(a) => {
            if dir.agent(&a.id).is_some() {
                return Err(duplicate("agent", &a.id));
            }
            need_workspace(dir, &a.workspace_id)?;
            dir.put_agent(a);
        }
        TraceLine::Squad(s) => {
            if dir.squad(&s.id).is_some() {
                return Err(duplicate("squad", &s.id));
            }
            need_workspace(dir, &s.workspace_id)?;
            dir.put_squad(s);
        }
        TraceLine::Member(m) => {
            if dir.squad(&m.squad_id).is_none() {
                return Err(unknown_ref("squad", &m.squad_id));
            }
            if dir
                .squad_members(&m.squad_id)
                .iter()
                .any(|r| r.member == m.member)
            {
                return Err(duplicate("squad member", m.member.id_str()));
            }
            dir.put_member(m);
        }
        TraceLine::Issue(r) => {
            if dir.issue(&r.issue.id).is_some() {
                return Err(duplicate("issue", &r.issue.id));
            }
            need_workspace(dir, &r.issue.workspace_id)?;
            if let Some(p) = &r.issue.parent_issue_id {
                need_issue(dir, p)?;
            }
            let id = r.issue.id.clone();
            dir.put_issue(r.issue);
            if let Some(n) = r.number {
                dir.set_issue_number(&id, n);
            }
        }
        TraceLine::Task(t) => {
            if dir.task(&t.id).is_some() {
                return Err(duplicate("task", &t.id));
            }
            need_agent(dir, &t.agent_id)?;
            if let Some(i) = &t.issue_id {
                need_issue(dir, i)?;
            }
            dir.put_task(t);
        }
        TraceLine::Comment(c) => {
            if dir.comment(&c.id).is_some() {
                return Err(duplicate("comment", &c.id));
            }
            need_issue(dir, &c.issue_id)?;
            dir.put_comment(c);
        }
        TraceLine::Autopilot(a) => {
            if dir.autopilot(&a.id).is_some() {
                return Err(duplicate("autopilot", &a.id));
            }
            need_workspace(dir, &a.workspace_id)?;
            dir.put_autopilot(a);
        }
        TraceLine::SchemaVersion { .. } | TraceLine::Event { .. } => {}
    }
    Ok(())
}

fn need_workspace(dir: &dyn Directory, id: &WorkspaceId) -> Result<()> {
    dir.workspace(id)
        .map(|_| ())
        .ok_or_else(|| unknown_ref("workspace", id))
}
fn need_user(dir: &dyn Directory, id: &UserId) -> Result<()> {
    dir.user(id)
        .map(|_| ())
        .ok_or_else(|| unknown_ref("user", id))
}
fn need_agent(dir: &dyn Directory, id: &AgentId) -> Result<()> {
    dir.agent(id)
        .map(|_| ())
        .ok_or_else(|| unknown_ref("agent", id))
}
fn need_issue(dir: &dyn Directory, id: &IssueId) -> Result<()> {
    dir.issue(id)
        .map(|_| ())
        .ok_or_else(|| unknown_ref("issue", id))
}
fn need_task(dir: &dyn Directory, id: &TaskId) -> Result<()> {
    dir.task(id)
        .map(|_| ())
        .ok_or_else(|| unknown_ref("task", id))
}
fn need_principal(dir: &dyn Directory, p: &Principal) -> Result<()> {
    match p {
        Principal::Member(u) => need_user(dir, u),
        Principal::Agent(a) => need_agent(dir, a),
        Principal::System => Ok(()),
    }
}
fn need_squad(dir: &dyn Directory, id: &squad_model::SquadId) -> Result<()> {
    dir.squad(id)
        .map(|_| ())
        .ok_or_else(|| unknown_ref("squad", id))
}

/// Checks that the ids an event acts on exist (and that ids it creates are new).
///
/// # Errors
///
/// [`ErrorKind::UnknownReference`] naming the first offending id.
pub fn check_event(dir: &dyn Directory, event: &Event) -> Result<()> {
    match event {
        Event::CreateSquad(CreateSquad {
            actor,
            workspace_id,
            squad_id,
            ..
        }) => {
            need_user(dir, actor)?;
            need_workspace(dir, workspace_id)?;
            if dir.squad(squad_id).is_some() {
                return Err(duplicate("squad", squad_id));
            }
        }
        Event::UpdateSquad(UpdateSquad {
            actor, squad_id, ..
        })
        | Event::ArchiveSquad(ArchiveSquad { actor, squad_id })
        | Event::AddMember(AddMember {
            actor, squad_id, ..
        })
        | Event::RemoveMember(RemoveMember {
            actor, squad_id, ..
        })
        | Event::SetMemberRole(SetMemberRole {
            actor, squad_id, ..
        }) => {
            need_user(dir, actor)?;
            need_squad(dir, squad_id)?;
        }
        Event::RecordEvaluation(RecordEvaluation {
            agent_id, issue_id, ..
        }) => {
            need_agent(dir, agent_id)?;
            need_issue(dir, issue_id)?;
        }
        Event::CreateIssue(CreateIssue {
            actor,
            task_id,
            workspace_id,
            issue_id,
            parent_issue_id,
            ..
        }) => {
            need_principal(dir, actor)?;
            need_workspace(dir, workspace_id)?;
            if dir.issue(issue_id).is_some() {
                return Err(duplicate("issue", issue_id));
            }
            if let Some(p) = parent_issue_id {
                need_issue(dir, p)?;
            }
            if let Some(t) = task_id {
                need_task(dir, t)?;
            }
        }
        Event::UpdateIssue(UpdateIssue {
            actor,
            task_id,
            issue_id,
            ..
        }) => {
            need_principal(dir, actor)?;
            need_issue(dir, issue_id)?;
            if let Some(t) = task_id {
                need_task(dir, t)?;
            }
        }
        Event::BatchUpdate(BatchUpdate {
            actor,
            task_id,
            issue_ids,
            ..
        }) => {
            need_principal(dir, actor)?;
            for i in issue_ids {
                need_issue(dir, i)?;
            }
            if let Some(t) = task_id {
                need_task(dir, t)?;
            }
        }
        Event::DeleteIssue(DeleteIssue { actor, issue_id }) => {
            need_principal(dir, actor)?;
            need_issue(dir, issue_id)?;
        }
        Event::Comment(PostComment {
            comment_id,
            issue_id,
            author,
            task_id,
            parent_id,
            ..
        }) => {
            need_principal(dir, author)?;
            need_issue(dir, issue_id)?;
            if dir.comment(comment_id).is_some() {
                return Err(duplicate("comment", comment_id));
            }
            if let Some(p) = parent_id
                && dir.comment(p).is_none()
            {
                return Err(unknown_ref("comment", p));
            }
            if let Some(t) = task_id {
                need_task(dir, t)?;
            }
        }
        Event::SaveAutopilot(SaveAutopilot {
            actor,
            task_id,
            workspace_id,
            ..
        }) => {
            need_principal(dir, actor)?;
            need_workspace(dir, workspace_id)?;
            if let Some(t) = task_id {
                need_task(dir, t)?;
            }
        }
        Event::TriggerAutopilot(TriggerAutopilot {
            autopilot_id,
            actor,
            ..
        }) => {
            if dir.autopilot(autopilot_id).is_none() {
                return Err(unknown_ref("autopilot", autopilot_id));
            }
            if let Some(u) = actor {
                need_user(dir, u)?;
            }
        }
        Event::TaskStatus(SetTaskStatus { task_id, .. }) | Event::Claim(ClaimTask { task_id }) => {
            need_task(dir, task_id)?;
        }
        Event::QuickCreate(QuickCreate {
            actor,
            workspace_id,
            ..
        }) => {
            need_user(dir, actor)?;
            need_workspace(dir, workspace_id)?;
        }
        Event::SetRuntime(SetRuntime { agent_id, .. })
        | Event::ArchiveAgent(ArchiveAgent { agent_id }) => {
            need_agent(dir, agent_id)?;
        }
    }
    Ok(())
}
