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

/// How the engine mints the ids of the tasks, comments and issues an event creates, and so
/// which ids a trace's later events name.
///
/// - `Counter` (the default): one counter for the whole directory ([`Directory::id_seq`]); the
///   ids depend on every event before, so events must be handled one at a time, in order.
/// - `Position` (`{"kind":"schema_version","version":2,"ids":"position"}`): the ids come from the
///   event's position, [`id_base`]: the same whatever order independent events are handled in,
///   which is what many workers sharing one database need. [`to_position_ids`] rewrites a
///   counter trace into this form.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Ids {
    /// One counter for the directory.
    #[default]
    Counter,
    /// Derived from the event's position in the trace.
    Position,
}

impl Ids {
    fn is_counter(&self) -> bool {
        *self == Self::Counter
    }
}

/// The most ids one event may mint under [`Ids::Position`].
pub const IDS_PER_EVENT: u64 = (1 << 16) - 1;
/// The most events of one trace (epoch) under [`Ids::Position`].
pub const MAX_POSITION: u64 = u32::MAX as u64;

/// The id counter ([`Directory::id_seq`]) the engine starts from for the event at 1-based
/// `position` of replay `epoch`, under [`Ids::Position`]: `epoch << 48 | position << 16`. The
/// event's n-th minted id ends in `position << 16 | n` and carries the epoch in its second group,
/// so that no two events, of one trace or of two, mint the same id.
///
/// ```
/// use squad_routing::trace::id_base;
/// assert_eq!(id_base(0, 1), 1 << 16);
/// assert_eq!(id_base(2, 3), (2 << 48) | (3 << 16));
/// ```
pub const fn id_base(epoch: u16, position: u32) -> u64 {
    ((epoch as u64) << 48) | ((position as u64) << 16)
}

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
        /// How the trace's events name the ids the engine mints (`"ids"`, absent for a
        /// counter).
        #[serde(default, skip_serializing_if = "Ids::is_counter")]
        ids: Ids,
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
            let ids = match obj.remove("ids") {
                None => Ids::Counter,
                Some(Value::String(s)) if s == "counter" => Ids::Counter,
                Some(Value::String(s)) if s == "position" => Ids::Position,
                Some(_) => {
                    return Err(invalid(
                        "\"ids\" in schema_version record must be \"counter\" or \"position\"",
                    ));
                }
            };
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
                    ids,
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
    ids: Ids,
    epoch: u16,
    events: u64,
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
            ids: Ids::Counter,
            epoch: 0,
            events: 0,
        }
    }

    /// Mints ids from event positions ([`Ids::Position`], with this epoch) whatever the trace
    /// declares: what a replay on a shared database does, so that its ids match a many-worker
    /// replay's.
    #[must_use]
    pub fn with_position_ids(mut self, epoch: u16) -> Self {
        self.ids = Ids::Position;
        self.epoch = epoch;
        self
    }

    /// How this replay mints ids (the trace's `schema_version` record may switch it to
    /// [`Ids::Position`]).
    pub fn ids(&self) -> Ids {
        self.ids
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
        if let TraceLine::SchemaVersion { version, ids } = record {
            self.version = version;
            if ids == Ids::Position {
                self.ids = Ids::Position;
            }
            return Ok(None);
        }
        if let TraceLine::Event { at, event } = record {
            check_event(&self.dir, &event)?;
            let base = match self.ids {
                Ids::Counter => None,
                Ids::Position => {
                    let position = u32::try_from(self.events + 1)
                        .map_err(|_| invalid("more events than position ids allow (2^32 - 1)"))?;
                    let base = id_base(self.epoch, position);
                    if self.dir.id_seq() > base {
                        return Err(invalid(
                            "position ids need a directory whose id counter is below the event's \
                             (this directory holds ids minted after this position)",
                        ));
                    }
                    Some(base)
                }
            };
            if let Some(at) = at {
                self.clock = at;
            }
            if let Some(base) = base {
                self.dir.advance_id_seq(base);
            }
            let decisions = self.engine.decide(&self.dir, self.clock, &event);
            if let Some(base) = base
                && decisions.id_seq > base + IDS_PER_EVENT
            {
                return Err(invalid(format!(
                    "the event mints more than {IDS_PER_EVENT} ids (position ids allow no more)"
                )));
            }
            self.events += 1;
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

/// Rewrites a counter trace ([`Ids::Counter`]) into the same trace under [`Ids::Position`]
/// (epoch 0): the `schema_version` record says `"ids":"position"`, and every id the engine minted
/// that a later event names is replaced by the id position minting gives it. Each event is
/// replayed once in memory (default policy) to learn which ids it mints. A trace already in
/// position form is returned as it is.
///
/// ```
/// use squad_routing::generate::{GenConfig, generate};
/// use squad_routing::trace::to_position_ids;
///
/// let trace = generate(&GenConfig { squads: 2, events: 50, ..GenConfig::default() })?;
/// let lines: Vec<String> = trace.lines().collect();
/// let converted = to_position_ids(lines.iter().map(String::as_str))?;
/// assert!(converted[0].contains(r#""ids":"position""#));
/// assert_eq!(converted.len(), lines.len());
/// # Ok::<(), squad_routing::Error>(())
/// ```
///
/// # Errors
///
/// Any error of replaying the trace ([`Replay::feed_line`]), with its line.
pub fn to_position_ids<'l>(lines: impl IntoIterator<Item = &'l str>) -> Result<Vec<String>> {
    let mut replay = Replay::new(Engine::default());
    let mut map: std::collections::HashMap<String, String> = std::collections::HashMap::new();
    let mut out = Vec::new();
    let mut position: u32 = 0;
    let mut lines = lines.into_iter();
    while let Some(line) = lines.next() {
        let first = replay.line == 0;
        let before = replay.dir.id_seq();
        let fed = replay.feed_line(line)?;
        if replay.ids == Ids::Position {
            // Already converted: nothing to rewrite.
            return Ok(out
                .into_iter()
                .chain(std::iter::once(line.to_owned()))
                .chain(lines.map(str::to_owned))
                .collect());
        }
        let Some(output) = fed else {
            if first && !line.trim().is_empty() {
                match parse_line(line)? {
                    TraceLine::SchemaVersion { version, .. } => {
                        out.push(
                            TraceLine::SchemaVersion {
                                version,
                                ids: Ids::Position,
                            }
                            .to_json(),
                        );
                        continue;
                    }
                    _ => out.push(
                        TraceLine::SchemaVersion {
                            version: 1,
                            ids: Ids::Position,
                        }
                        .to_json(),
                    ),
                }
            }
            out.push(line.to_owned());
            continue;
        };
        position = position
            .checked_add(1)
            .ok_or_else(|| invalid("more events than position ids allow (2^32 - 1)"))?;
        // Rewrite the ids this event names, then learn the ones it minted.
        let mut value: Value = serde_json::from_str(line)
            .map_err(|e| invalid(format!("invalid JSON: {e}")).at_line(output.line))?;
        rewrite_ids(&mut value, &map);
        out.push(value.to_string());
        let base = id_base(0, position);
        for d in &output.decisions.decisions {
            let minted = match d {
                crate::Decision::Enqueue { task, .. } => task.id.as_str(),
                crate::Decision::PostComment { comment, .. } => comment.id.as_str(),
                crate::Decision::CreateIssue { issue, .. } => issue.id.as_str(),
                _ => continue,
            };
            let Some(seq) = minted_seq(minted) else {
                continue;
            };
            if seq > before && seq <= output.decisions.id_seq {
                let n = seq - before;
                if n > IDS_PER_EVENT {
                    return Err(invalid(format!(
                        "line {}: the event mints more than {IDS_PER_EVENT} ids",
                        output.line
                    )));
                }
                let pos = base | n;
                let new = format!("{}-0000-4000-8000-{:012x}", &minted[..8], pos);
                map.insert(minted.to_owned(), new);
            }
        }
    }
    Ok(out)
}

/// The kinds (first group) of the ids the engine mints.
pub(crate) const MINTED_KINDS: [&str; 3] = ["7a5c0000", "0c030000", "15500000"];

/// The counter of a minted id (`<kind>-0000-4000-8000-<12 hex digits>`, with a kind the engine
/// mints: a trace's own ids of that shape are not minted ones).
fn minted_seq(id: &str) -> Option<u64> {
    let kind = id.get(..8)?;
    if !MINTED_KINDS.contains(&kind) {
        return None;
    }
    let tail = id.strip_prefix(kind)?.strip_prefix("-0000-4000-8000-")?;
    if tail.len() != 12 {
        return None;
    }
    u64::from_str_radix(tail, 16).ok()
}

/// Replaces, in every string of `v`, the ids `map` names.
fn rewrite_ids(v: &mut Value, map: &std::collections::HashMap<String, String>) {
    match v {
        Value::String(s) => {
            if let Some(new) = map.get(s.as_str()) {
                s.clone_from(new);
            } else if s.len() > 36 && s.contains("-4000-8000-") {
                // Ids inside text (a mention of a minted issue): each UUID-shaped run, found by
                // its `-4000-8000-` (13 bytes into the id).
                let mut text = String::with_capacity(s.len());
                let mut done = 0;
                for (i, _) in s.match_indices("-4000-8000-") {
                    let Some(start) = i.checked_sub(13) else {
                        continue;
                    };
                    let end = start + 36;
                    if start < done {
                        continue;
                    }
                    if let Some(new) = s.get(start..end).and_then(|old| map.get(old)) {
                        text.push_str(&s[done..start]);
                        text.push_str(new);
                        done = end;
                    }
                }
                if done > 0 {
                    text.push_str(&s[done..]);
                    *s = text;
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| rewrite_ids(x, map)),
        Value::Object(o) => o.values_mut().for_each(|x| rewrite_ids(x, map)),
        _ => {}
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
