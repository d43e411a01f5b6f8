//! What the database directories share: the per-event record arena that lets them lend
//! references ([`Cache`]), and the text forms of the enums their columns hold.

use std::cell::{Cell, OnceCell, RefCell};
use std::collections::HashMap;

use squad_model::{
    Agent, Assignee, Autopilot, Issue, IssueId, MemberRef, Squad, SquadMember, Task, TaskStatus,
};

use crate::records::{Comment, EvaluationOutcome, User, Workspace, WorkspaceRole};

pub(crate) fn role_str(role: WorkspaceRole) -> &'static str {
    match role {
        WorkspaceRole::Owner => "owner",
        WorkspaceRole::Admin => "admin",
        WorkspaceRole::Member => "member",
    }
}

pub(crate) fn parse_role(s: &str) -> Option<WorkspaceRole> {
    match s {
        "owner" => Some(WorkspaceRole::Owner),
        "admin" => Some(WorkspaceRole::Admin),
        "member" => Some(WorkspaceRole::Member),
        _ => None,
    }
}

pub(crate) fn status_str(s: TaskStatus) -> &'static str {
    match s {
        TaskStatus::Queued => "queued",
        TaskStatus::Dispatched => "dispatched",
        TaskStatus::Running => "running",
        TaskStatus::Completed => "completed",
        TaskStatus::Failed => "failed",
        TaskStatus::Cancelled => "cancelled",
        TaskStatus::WaitingLocalDirectory => "waiting_local_directory",
        TaskStatus::Deferred => "deferred",
    }
}

pub(crate) fn outcome_str(o: EvaluationOutcome) -> &'static str {
    match o {
        EvaluationOutcome::Action => "action",
        EvaluationOutcome::NoAction => "no_action",
        EvaluationOutcome::Failed => "failed",
    }
}

pub(crate) fn member_key(m: &MemberRef) -> String {
    match m {
        MemberRef::Agent(a) => format!("agent:{a}"),
        MemberRef::Member(u) => format!("member:{u}"),
    }
}

pub(crate) fn squad_of(a: Option<&Assignee>) -> Option<&str> {
    match a {
        Some(Assignee::Squad(s)) => Some(s.as_str()),
        _ => None,
    }
}

/// The records read since the last write, by key: each table copies a row once and lends it
/// until the next write.
#[derive(Default)]
pub(crate) struct Cache {
    pub(crate) workspaces: Table<Workspace>,
    pub(crate) users: Table<User>,
    pub(crate) squads: Table<Squad>,
    pub(crate) members: Table<Vec<SquadMember>>,
    pub(crate) agents: Table<Agent>,
    pub(crate) issues: Table<Issue>,
    pub(crate) id_lists: Table<Vec<IssueId>>,
    pub(crate) tasks: Table<Task>,
    pub(crate) task_lists: Table<Vec<Task>>,
    pub(crate) comments: Table<Comment>,
    pub(crate) autopilots: Table<Autopilot>,
    /// Issue numbers by issue id (absent: no issue or no number).
    #[cfg(feature = "postgres")]
    pub(crate) numbers: Table<u64>,
    /// Evaluation outcomes by task id.
    #[cfg(feature = "postgres")]
    pub(crate) evaluations: Table<EvaluationOutcome>,
}

impl Cache {
    /// Forgets every record (an empty cache allocates nothing).
    pub(crate) fn reset(&mut self) {
        *self = Self::default();
    }
}

/// Records by key, in an arena that only grows while it is shared (`&self`), so the references
/// it lends stay valid; [`Cache::reset`] (which needs `&mut`) empties it.
pub(crate) struct Table<T> {
    arena: Arena<T>,
    index: RefCell<HashMap<String, Option<usize>>>,
}

impl<T> Default for Table<T> {
    fn default() -> Self {
        Self {
            arena: Arena::default(),
            index: RefCell::new(HashMap::new()),
        }
    }
}

impl<T> Table<T> {
    /// The record for `key`, loaded once (absence is remembered too).
    pub(crate) fn get(&self, key: &str, load: impl FnOnce() -> Option<T>) -> Option<&T> {
        let known = self.index.borrow().get(key).copied();
        let slot = match known {
            Some(slot) => slot,
            None => {
                let slot = load().map(|v| self.arena.push(v));
                self.index.borrow_mut().insert(key.to_owned(), slot);
                slot
            }
        };
        self.arena.get(slot?)
    }

    /// The record for `key` when it is known (`Some(None)`: known to be absent), without loading.
    #[cfg(feature = "postgres")]
    pub(crate) fn peek(&self, key: &str) -> Option<Option<&T>> {
        let slot = *self.index.borrow().get(key)?;
        Some(slot.and_then(|s| self.arena.get(s)))
    }

    /// Records `value` (or its absence) for `key`, replacing what was known; references lent
    /// before stay valid.
    #[cfg(feature = "postgres")]
    pub(crate) fn insert(&self, key: &str, value: Option<T>) {
        let slot = value.map(|v| self.arena.push(v));
        self.index.borrow_mut().insert(key.to_owned(), slot);
    }

    /// Forgets the keys `keep` refuses (their records stay in the arena until a reset).
    #[cfg(feature = "postgres")]
    pub(crate) fn retain(&mut self, keep: impl Fn(&str) -> bool) {
        self.index.get_mut().retain(|k, _| keep(k));
    }
}

/// An append-only arena: chunks of cells that are set once, each chunk twice the size of the one
/// before, so that a slot is found in a few steps and a pushed value never moves.
struct Arena<T> {
    first: OnceCell<Box<Chunk<T>>>,
    len: Cell<usize>,
}

struct Chunk<T> {
    slots: Box<[OnceCell<T>]>,
    next: OnceCell<Box<Chunk<T>>>,
}

impl<T> Chunk<T> {
    fn new(size: usize) -> Box<Self> {
        Box::new(Self {
            slots: (0..size).map(|_| OnceCell::new()).collect(),
            next: OnceCell::new(),
        })
    }
}

impl<T> Default for Arena<T> {
    fn default() -> Self {
        Self {
            first: OnceCell::new(),
            len: Cell::new(0),
        }
    }
}

impl<T> Arena<T> {
    fn slot(&self, mut i: usize) -> &OnceCell<T> {
        let mut chunk = self.first.get_or_init(|| Chunk::new(8));
        while i >= chunk.slots.len() {
            i -= chunk.slots.len();
            let size = chunk.slots.len() * 2;
            chunk = chunk.next.get_or_init(|| Chunk::new(size));
        }
        &chunk.slots[i]
    }

    fn push(&self, value: T) -> usize {
        let i = self.len.get();
        self.len.set(i + 1);
        // The slot is fresh: `len` only grows while the arena is shared.
        let _ = self.slot(i).set(value);
        i
    }

    fn get(&self, i: usize) -> Option<&T> {
        if i >= self.len.get() {
            return None;
        }
        self.slot(i).get()
    }
}
