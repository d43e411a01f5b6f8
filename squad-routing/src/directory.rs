//! The [`Directory`] trait (the engine's view of the world) and [`InMemoryDirectory`].

use std::collections::HashMap;
use std::hash::BuildHasher;

use foldhash::fast::FixedState;
use hashbrown::HashTable;
use squad_model::{
    Agent, AgentId, Assignee, Autopilot, AutopilotId, CommentId, Issue, IssueId, IssueStatus,
    MemberRef, Squad, SquadId, SquadMember, Task, TaskId, TaskStatus, UserId, WorkspaceId,
};

use crate::records::{Comment, EvaluationOutcome, Membership, User, Workspace, WorkspaceRole};

type Map<K, V> = HashMap<K, V, FixedState>;

/// The engine's view of squads, members, agents (with their invocation targets), issues, tasks,
/// comments and autopilots, plus the few writes the rules' effects need.
///
/// # Contract
///
/// Reads are pure: calling one twice without a write in between gives the same answer. The
/// decision engine only reads; [`apply`](crate::apply) performs the writes a decision implies, and
/// [`trace::load_entity`](crate::trace::load_entity) the writes of a trace's entity records.
///
/// # Behavior
///
/// The conformance suite (`squad_routing::conformance`, feature `conformance`) checks each of
/// these sentences.
///
/// - Every `Option`-returning lookup returns `None` for an unknown id; slice and list lookups
///   return an empty list. Nothing panics on unknown ids, nor on ids that are not valid ids
///   ([`squad_by_str`](Self::squad_by_str), [`agent_by_str`](Self::agent_by_str)).
/// - Writes are upserts keyed by id (a membership row by squad and member, a workspace role by
///   workspace and user) and take effect for the next read; replacing a record keeps its place
///   in every creation order.
/// - [`squad_members`](Self::squad_members) lists rows in creation order (the roster's order).
/// - [`children`](Self::children) lists an issue's children in creation order;
///   [`autopilot_issues`](Self::autopilot_issues) the issues whose origin is the autopilot, in
///   creation order; [`squad_issues`](Self::squad_issues) the issues currently assigned to the
///   squad, in any order; [`squad_autopilots`](Self::squad_autopilots) the autopilots assigned to
///   the squad, sorted by id.
/// - [`pending_task`](Self::pending_task) returns the queued or dispatched task of the agent on
///   the issue (a running task is not pending). The engine never makes a second one for an
///   (issue, agent), and a directory may refuse one (`PostgresDirectory` does, with a unique
///   index: its `put_task` then fails and the error is kept); [`latest_task`](Self::latest_task) the agent's
///   newest task on the issue (the last one inserted), whatever its status.
/// - [`active_tasks`](Self::active_tasks) lists the tasks on the issue that are not finished
///   (queued, dispatched, running, waiting for a directory, deferred), oldest first.
/// - [`tasks_triggered_by`](Self::tasks_triggered_by) lists the tasks created with the comment as
///   their trigger, oldest first, whether the comment was stored before or after them.
/// - [`update_issue`](Self::update_issue) and [`set_task_status`](Self::set_task_status) ignore
///   unknown ids; [`update_issue`](Self::update_issue) with `Some(None)` clears the assignee.
/// - [`delete_issue`](Self::delete_issue) removes the issue from every list (its parent's
///   children, its squad's issues); the tasks stay readable by id but no longer count for the
///   issue id (pending, latest, active), even if an issue with that id is created again.
/// - [`id_seq`](Self::id_seq) only grows: [`advance_id_seq`](Self::advance_id_seq) with a smaller
///   value changes nothing.
/// - Invocation targets are part of [`Agent`]; a host whose target lookup can fail must return the
///   agent with no targets, which denies (the reference's fail-closed rule).
/// - Records are indexed under a parent issue (children) or an issue (tasks) only when that issue
///   is stored first; put parents before children, as the engine and traces do.
///
/// # Implementing
///
/// Lookups return references, so an implementation owns the records it serves: load the rows an
/// event touches into memory (or keep a cache) and answer from there. [`InMemoryDirectory`] is the
/// fast reference implementation (its source is a guide to the indexes that keep every read
/// O(1)); [`SimpleDirectory`](crate::SimpleDirectory) is the readable one (plain maps, scans); `SqliteDirectory` (feature
/// `sqlite`) keeps everything in an embedded database and serves references from a per-event
/// arena. Run the conformance suite on yours.
///
/// # Wrappers
///
/// A wrapper (for example one counting reads) forwards every method to the inner directory, as
/// the implementation for `Box<D>` does.
#[diagnostic::on_unimplemented(
    note = "implement `Directory` for your storage, or use `InMemoryDirectory`"
)]
pub trait Directory {
    /// A workspace.
    fn workspace(&self, id: &WorkspaceId) -> Option<&Workspace>;
    /// A user.
    fn user(&self, id: &UserId) -> Option<&User>;
    /// The user's role in the workspace, or `None` when they are not a member.
    fn workspace_role(&self, workspace: &WorkspaceId, user: &UserId) -> Option<WorkspaceRole>;
    /// A squad (archived ones too).
    fn squad(&self, id: &SquadId) -> Option<&Squad>;
    /// A squad's membership rows, in creation order.
    fn squad_members(&self, id: &SquadId) -> &[SquadMember];
    /// An agent (archived ones too).
    fn agent(&self, id: &AgentId) -> Option<&Agent>;
    /// [`squad`](Self::squad) for an id given as text (a mention's target, a request field):
    /// `None` when it is not a valid [`SquadId`] or no squad has it. The default parses it and
    /// calls `squad`; a directory whose index can be searched by `&str` should answer from it
    /// without building the id.
    fn squad_by_str(&self, id: &str) -> Option<&Squad> {
        SquadId::new(id).ok().and_then(|s| self.squad(&s))
    }
    /// [`agent`](Self::agent) for an id given as text, like
    /// [`squad_by_str`](Self::squad_by_str).
    fn agent_by_str(&self, id: &str) -> Option<&Agent> {
        AgentId::new(id).ok().and_then(|a| self.agent(&a))
    }
    /// An issue.
    fn issue(&self, id: &IssueId) -> Option<&Issue>;
    /// An issue's number within its workspace, for identifiers like `SQ-12`.
    fn issue_number(&self, id: &IssueId) -> Option<u64>;
    /// The children of an issue, in creation order.
    fn children(&self, parent: &IssueId) -> &[IssueId];
    /// Issues currently assigned to the squad.
    fn squad_issues(&self, squad: &SquadId) -> Vec<IssueId>;
    /// Issues created by the autopilot, oldest first.
    fn autopilot_issues(&self, autopilot: &AutopilotId) -> &[IssueId];
    /// A task.
    fn task(&self, id: &TaskId) -> Option<&Task>;
    /// The agent's queued or dispatched task on the issue.
    fn pending_task(&self, issue: &IssueId, agent: &AgentId) -> Option<&Task>;
    /// The agent's newest task on the issue.
    fn latest_task(&self, issue: &IssueId, agent: &AgentId) -> Option<&Task>;
    /// Unfinished tasks on the issue, oldest first.
    fn active_tasks(&self, issue: &IssueId) -> Vec<&Task>;
    /// A comment.
    fn comment(&self, id: &CommentId) -> Option<&Comment>;
    /// The tasks a comment triggered (created with it as trigger), oldest first.
    fn tasks_triggered_by(&self, comment: &CommentId) -> Vec<&Task>;
    /// An autopilot.
    fn autopilot(&self, id: &AutopilotId) -> Option<&Autopilot>;
    /// Autopilots assigned to the squad.
    fn squad_autopilots(&self, squad: &SquadId) -> Vec<AutopilotId>;
    /// The evaluation a leader recorded for a task.
    fn evaluation(&self, task: &TaskId) -> Option<EvaluationOutcome>;
    /// A counter for minting ids: it grows by one for every task or comment the engine creates.
    fn id_seq(&self) -> u64;

    /// Inserts or replaces a workspace.
    fn put_workspace(&mut self, workspace: Workspace);
    /// Inserts or replaces a user.
    fn put_user(&mut self, user: User);
    /// Records a user's role in a workspace (replacing an earlier role).
    fn put_membership(&mut self, membership: Membership);
    /// Inserts or replaces a squad.
    fn put_squad(&mut self, squad: Squad);
    /// Inserts or replaces a membership row (keyed by squad and member).
    fn put_member(&mut self, member: SquadMember);
    /// Removes a membership row.
    fn remove_member(&mut self, squad: &SquadId, member: &MemberRef);
    /// Inserts or replaces an agent.
    fn put_agent(&mut self, agent: Agent);
    /// Inserts or replaces an issue.
    fn put_issue(&mut self, issue: Issue);
    /// Sets an issue's status and/or assignee (`Some(None)` clears the assignee); an unknown issue
    /// is ignored.
    fn update_issue(
        &mut self,
        id: &IssueId,
        status: Option<IssueStatus>,
        assignee: Option<Option<Assignee>>,
    );
    /// Sets an issue's number (for identifiers such as `SQ-12`).
    fn set_issue_number(&mut self, id: &IssueId, number: u64);
    /// Deletes an issue.
    fn delete_issue(&mut self, id: &IssueId);
    /// Inserts or replaces a task.
    fn put_task(&mut self, task: Task);
    /// Sets a task's status; an unknown task is ignored.
    fn set_task_status(&mut self, id: &TaskId, status: TaskStatus);
    /// Inserts or replaces a comment.
    fn put_comment(&mut self, comment: Comment);
    /// Inserts or replaces an autopilot.
    fn put_autopilot(&mut self, autopilot: Autopilot);
    /// Records a leader evaluation.
    fn put_evaluation(&mut self, task: TaskId, outcome: EvaluationOutcome);
    /// Raises the id counter to at least `seq`.
    fn advance_id_seq(&mut self, seq: u64);
}

/// Forwards every method to the boxed directory, so that `Box<dyn Directory>` is a directory.
#[deny(clippy::missing_trait_methods)]
impl<D: Directory + ?Sized> Directory for Box<D> {
    fn workspace(&self, id: &WorkspaceId) -> Option<&Workspace> {
        (**self).workspace(id)
    }
    fn user(&self, id: &UserId) -> Option<&User> {
        (**self).user(id)
    }
    fn workspace_role(&self, workspace: &WorkspaceId, user: &UserId) -> Option<WorkspaceRole> {
        (**self).workspace_role(workspace, user)
    }
    fn squad(&self, id: &SquadId) -> Option<&Squad> {
        (**self).squad(id)
    }
    fn squad_members(&self, id: &SquadId) -> &[SquadMember] {
        (**self).squad_members(id)
    }
    fn agent(&self, id: &AgentId) -> Option<&Agent> {
        (**self).agent(id)
    }
    fn squad_by_str(&self, id: &str) -> Option<&Squad> {
        (**self).squad_by_str(id)
    }
    fn agent_by_str(&self, id: &str) -> Option<&Agent> {
        (**self).agent_by_str(id)
    }
    fn issue(&self, id: &IssueId) -> Option<&Issue> {
        (**self).issue(id)
    }
    fn issue_number(&self, id: &IssueId) -> Option<u64> {
        (**self).issue_number(id)
    }
    fn children(&self, parent: &IssueId) -> &[IssueId] {
        (**self).children(parent)
    }
    fn squad_issues(&self, squad: &SquadId) -> Vec<IssueId> {
        (**self).squad_issues(squad)
    }
    fn autopilot_issues(&self, autopilot: &AutopilotId) -> &[IssueId] {
        (**self).autopilot_issues(autopilot)
    }
    fn task(&self, id: &TaskId) -> Option<&Task> {
        (**self).task(id)
    }
    fn pending_task(&self, issue: &IssueId, agent: &AgentId) -> Option<&Task> {
        (**self).pending_task(issue, agent)
    }
    fn latest_task(&self, issue: &IssueId, agent: &AgentId) -> Option<&Task> {
        (**self).latest_task(issue, agent)
    }
    fn active_tasks(&self, issue: &IssueId) -> Vec<&Task> {
        (**self).active_tasks(issue)
    }
    fn comment(&self, id: &CommentId) -> Option<&Comment> {
        (**self).comment(id)
    }
    fn tasks_triggered_by(&self, comment: &CommentId) -> Vec<&Task> {
        (**self).tasks_triggered_by(comment)
    }
    fn autopilot(&self, id: &AutopilotId) -> Option<&Autopilot> {
        (**self).autopilot(id)
    }
    fn squad_autopilots(&self, squad: &SquadId) -> Vec<AutopilotId> {
        (**self).squad_autopilots(squad)
    }
    fn evaluation(&self, task: &TaskId) -> Option<EvaluationOutcome> {
        (**self).evaluation(task)
    }
    fn id_seq(&self) -> u64 {
        (**self).id_seq()
    }
    fn put_workspace(&mut self, workspace: Workspace) {
        (**self).put_workspace(workspace)
    }
    fn put_user(&mut self, user: User) {
        (**self).put_user(user)
    }
    fn put_membership(&mut self, membership: Membership) {
        (**self).put_membership(membership)
    }
    fn put_squad(&mut self, squad: Squad) {
        (**self).put_squad(squad)
    }
    fn put_member(&mut self, member: SquadMember) {
        (**self).put_member(member)
    }
    fn remove_member(&mut self, squad: &SquadId, member: &MemberRef) {
        (**self).remove_member(squad, member)
    }
    fn put_agent(&mut self, agent: Agent) {
        (**self).put_agent(agent)
    }
    fn put_issue(&mut self, issue: Issue) {
        (**self).put_issue(issue)
    }
    fn update_issue(
        &mut self,
        id: &IssueId,
        status: Option<IssueStatus>,
        assignee: Option<Option<Assignee>>,
    ) {
        (**self).update_issue(id, status, assignee)
    }
    fn set_issue_number(&mut self, id: &IssueId, number: u64) {
        (**self).set_issue_number(id, number)
    }
    fn delete_issue(&mut self, id: &IssueId) {
        (**self).delete_issue(id)
    }
    fn put_task(&mut self, task: Task) {
        (**self).put_task(task)
    }
    fn set_task_status(&mut self, id: &TaskId, status: TaskStatus) {
        (**self).set_task_status(id, status)
    }
    fn put_comment(&mut self, comment: Comment) {
        (**self).put_comment(comment)
    }
    fn put_autopilot(&mut self, autopilot: Autopilot) {
        (**self).put_autopilot(autopilot)
    }
    fn put_evaluation(&mut self, task: TaskId, outcome: EvaluationOutcome) {
        (**self).put_evaluation(task, outcome)
    }
    fn advance_id_seq(&mut self, seq: u64) {
        (**self).advance_id_seq(seq)
    }
}

/// A task's position in [`InMemoryDirectory::tasks`]: the indexes hold handles, not ids, so
/// that indexing a task allocates nothing.
type TaskIx = u32;

/// Records by handle, in chunks of fixed size: growing never moves (copies) the records already
/// stored, which a single `Vec` of a million tasks would do at every doubling.
#[derive(Debug, Clone)]
struct Chunked<T> {
    chunks: Vec<Vec<T>>,
    len: usize,
}

impl<T> Default for Chunked<T> {
    fn default() -> Self {
        Self {
            chunks: Vec::new(),
            len: 0,
        }
    }
}

impl<T> Chunked<T> {
    const CHUNK_BITS: u32 = 12;
    const CHUNK: usize = 1 << Self::CHUNK_BITS;

    fn len(&self) -> usize {
        self.len
    }

    /// The handle the next record gets. More than `u32::MAX` records do not fit in memory anyway.
    fn next_handle(&self) -> u32 {
        u32::try_from(self.len).unwrap_or(u32::MAX)
    }

    fn get(&self, ix: u32) -> Option<&T> {
        let ix = ix as usize;
        self.chunks
            .get(ix >> Self::CHUNK_BITS)?
            .get(ix & (Self::CHUNK - 1))
    }

    fn get_mut(&mut self, ix: u32) -> Option<&mut T> {
        let ix = ix as usize;
        self.chunks
            .get_mut(ix >> Self::CHUNK_BITS)?
            .get_mut(ix & (Self::CHUNK - 1))
    }

    fn push(&mut self, record: T) {
        match self.chunks.last_mut() {
            Some(c) if c.len() < Self::CHUNK => c.push(record),
            _ => {
                // The first chunk grows as usual, so that a small directory stays small; the
                // next ones are allocated whole.
                let mut c = if self.chunks.is_empty() {
                    Vec::new()
                } else {
                    Vec::with_capacity(Self::CHUNK)
                };
                c.push(record);
                self.chunks.push(c);
            }
        }
        self.len += 1;
    }

    fn iter(&self) -> impl Iterator<Item = &T> {
        self.chunks.iter().flatten()
    }
}

/// An index from ids to handles that stores no id: the table holds (hash, handle) pairs and the
/// id is read from the record the handle points to. Indexing copies no key, and growing the
/// table hashes no id again (the stored hashes move with the entries).
#[derive(Debug, Clone, Default)]
struct Handles(HashTable<(u64, u32)>);

impl Handles {
    fn hash(id: &str) -> u64 {
        FixedState::default().hash_one(id)
    }

    /// The handle whose record `is` the one looked for, among those with this hash.
    fn find(&self, hash: u64, is: impl Fn(u32) -> bool) -> Option<u32> {
        self.0
            .find(hash, |&(h, ix)| h == hash && is(ix))
            .map(|&(_, ix)| ix)
    }

    /// Indexes a handle whose id is not indexed yet.
    fn insert(&mut self, hash: u64, ix: u32) {
        self.0.insert_unique(hash, (hash, ix), |&(h, _)| h);
    }
}

/// Issues by handle, found by id through [`Handles`]; a deleted issue's handle is reused.
#[derive(Debug, Clone, Default)]
struct IssueTable {
    entries: Chunked<Option<IssueEntry>>,
    ix: Handles,
    free: Vec<u32>,
    len: usize,
}

impl IssueTable {
    fn handle(&self, id: &IssueId) -> Option<u32> {
        self.ix.find(
            Handles::hash(id.as_str()),
            |ix| matches!(self.entries.get(ix), Some(Some(e)) if &e.issue.id == id),
        )
    }

    fn get(&self, id: &IssueId) -> Option<&IssueEntry> {
        self.entries.get(self.handle(id)?)?.as_ref()
    }

    fn get_mut(&mut self, id: &IssueId) -> Option<&mut IssueEntry> {
        let ix = self.handle(id)?;
        self.entries.get_mut(ix)?.as_mut()
    }

    /// Adds an entry whose id the table does not hold.
    fn insert_new(&mut self, entry: IssueEntry) {
        let hash = Handles::hash(entry.issue.id.as_str());
        let ix = match self.free.pop() {
            Some(ix) => {
                if let Some(slot) = self.entries.get_mut(ix) {
                    *slot = Some(entry);
                }
                ix
            }
            None => {
                let ix = self.entries.next_handle();
                self.entries.push(Some(entry));
                ix
            }
        };
        self.ix.insert(hash, ix);
        self.len += 1;
    }

    fn remove(&mut self, id: &IssueId) -> Option<IssueEntry> {
        let hash = Handles::hash(id.as_str());
        let entries = &self.entries;
        let found = self
            .ix
            .0
            .find_entry(hash, |&(h, ix)| {
                h == hash && matches!(entries.get(ix), Some(Some(e)) if &e.issue.id == id)
            })
            .ok()?;
        let ((_, ix), _) = found.remove();
        self.free.push(ix);
        self.len -= 1;
        self.entries.get_mut(ix)?.take()
    }

    fn values(&self) -> impl Iterator<Item = &IssueEntry> {
        self.entries.iter().flatten()
    }

    fn len(&self) -> usize {
        self.len
    }
}

/// The tasks a comment triggered, the first one inline (most comments trigger one task).
#[derive(Debug, Clone)]
struct Triggered {
    first: TaskIx,
    rest: Vec<TaskIx>,
}

impl Triggered {
    fn push(list: &mut Option<Self>, ix: TaskIx) {
        match list {
            Some(t) => t.rest.push(ix),
            None => {
                *list = Some(Self {
                    first: ix,
                    rest: Vec::new(),
                });
            }
        }
    }

    fn iter(&self) -> impl Iterator<Item = TaskIx> + '_ {
        std::iter::once(self.first).chain(self.rest.iter().copied())
    }
}

/// A comment and the tasks it triggered (kept with it: no second map keyed by comment id).
#[derive(Debug, Clone)]
struct CommentEntry {
    comment: Comment,
    triggered: Option<Triggered>,
}

#[derive(Debug, Clone)]
struct AgentSlot {
    agent: AgentId,
    latest: TaskIx,
    pending: Option<TaskIx>,
}

#[derive(Debug, Clone)]
struct IssueEntry {
    issue: Issue,
    number: Option<u64>,
    children: Vec<IssueId>,
    slots: Vec<AgentSlot>,
    active: Vec<TaskIx>,
}

/// The reference [`Directory`]: every record in hash maps with the indexes the rules need.
///
/// ```
/// use squad_routing::{Directory, InMemoryDirectory};
/// use squad_model::SquadId;
///
/// let dir = InMemoryDirectory::new();
/// assert!(dir.squad(&SquadId::new("nope").unwrap()).is_none());
/// assert!(dir.squad_members(&SquadId::new("nope").unwrap()).is_empty());
/// ```
#[derive(Debug, Clone, Default)]
pub struct InMemoryDirectory {
    workspaces: Map<WorkspaceId, Workspace>,
    users: Map<UserId, User>,
    roles: Map<WorkspaceId, Map<UserId, WorkspaceRole>>,
    squads: Map<SquadId, Squad>,
    members: Map<SquadId, Vec<SquadMember>>,
    agents: Map<AgentId, Agent>,
    issues: IssueTable,
    squad_issues: Map<SquadId, Vec<IssueId>>,
    autopilot_issues: Map<AutopilotId, Vec<IssueId>>,
    /// Tasks by handle (tasks are never removed), indexed by id in `task_ix`.
    tasks: Chunked<Task>,
    task_ix: Handles,
    /// Comments by handle (comments are never removed), indexed by id in `comment_ix`.
    comments: Chunked<CommentEntry>,
    comment_ix: Handles,
    /// Tasks triggered by comments the directory does not hold (yet).
    orphan_triggered: Map<CommentId, Option<Triggered>>,
    autopilots: Map<AutopilotId, Autopilot>,
    evaluations: Map<TaskId, EvaluationOutcome>,
    seq: u64,
}

impl InMemoryDirectory {
    /// An empty directory.
    pub fn new() -> Self {
        Self::default()
    }

    /// Inserts or replaces a workspace.
    pub fn put_workspace(&mut self, workspace: Workspace) {
        self.workspaces.insert(workspace.id.clone(), workspace);
    }

    /// Inserts or replaces a user.
    pub fn put_user(&mut self, user: User) {
        self.users.insert(user.id.clone(), user);
    }

    /// Records a workspace membership.
    pub fn put_membership(&mut self, m: Membership) {
        self.roles
            .entry(m.workspace_id)
            .or_default()
            .insert(m.user_id, m.role);
    }

    /// Every task, in no particular order.
    pub fn tasks(&self) -> impl Iterator<Item = &Task> {
        self.tasks.iter()
    }

    /// Every issue, in no particular order.
    pub fn issues(&self) -> impl Iterator<Item = &Issue> {
        self.issues.values().map(|e| &e.issue)
    }

    /// Every squad, in no particular order.
    pub fn squads(&self) -> impl Iterator<Item = &Squad> {
        self.squads.values()
    }

    /// Counts of records: (squads, agents, issues, tasks, comments).
    pub fn counts(&self) -> (usize, usize, usize, usize, usize) {
        (
            self.squads.len(),
            self.agents.len(),
            self.issues.len(),
            self.tasks.len(),
            self.comments.len(),
        )
    }

    fn task_handle(&self, id: &TaskId) -> Option<TaskIx> {
        self.task_ix.find(Handles::hash(id.as_str()), |ix| {
            self.tasks.get(ix).is_some_and(|t| &t.id == id)
        })
    }

    fn comment_handle(&self, id: &CommentId) -> Option<u32> {
        self.comment_ix.find(Handles::hash(id.as_str()), |ix| {
            self.comments.get(ix).is_some_and(|e| &e.comment.id == id)
        })
    }

    fn task_at(&self, ix: TaskIx) -> Option<&Task> {
        self.tasks.get(ix)
    }

    /// Lists the issue under the squad (copying the squad id only for the squad's first issue).
    fn index_squad_issue(&mut self, squad: &SquadId, issue: &IssueId) {
        match self.squad_issues.get_mut(squad) {
            Some(v) => v.push(issue.clone()),
            None => {
                self.squad_issues.insert(squad.clone(), vec![issue.clone()]);
            }
        }
    }

    fn unindex_squad_issue(&mut self, issue: &Issue) {
        if let Some(Assignee::Squad(s)) = &issue.assignee
            && let Some(v) = self.squad_issues.get_mut(s)
        {
            v.retain(|i| i != &issue.id);
        }
    }
}

impl Directory for InMemoryDirectory {
    fn put_workspace(&mut self, workspace: Workspace) {
        InMemoryDirectory::put_workspace(self, workspace);
    }
    fn put_user(&mut self, user: User) {
        InMemoryDirectory::put_user(self, user);
    }
    fn put_membership(&mut self, membership: Membership) {
        InMemoryDirectory::put_membership(self, membership);
    }
    fn workspace(&self, id: &WorkspaceId) -> Option<&Workspace> {
        self.workspaces.get(id)
    }
    fn user(&self, id: &UserId) -> Option<&User> {
        self.users.get(id)
    }
    fn workspace_role(&self, workspace: &WorkspaceId, user: &UserId) -> Option<WorkspaceRole> {
        self.roles.get(workspace)?.get(user).copied()
    }
    fn squad(&self, id: &SquadId) -> Option<&Squad> {
        self.squads.get(id)
    }
    fn squad_members(&self, id: &SquadId) -> &[SquadMember] {
        self.members.get(id).map_or(&[], Vec::as_slice)
    }
    fn agent(&self, id: &AgentId) -> Option<&Agent> {
        self.agents.get(id)
    }
    fn squad_by_str(&self, id: &str) -> Option<&Squad> {
        // Ids hash and compare as their string, so the map answers a `&str` directly.
        self.squads.get(id)
    }
    fn agent_by_str(&self, id: &str) -> Option<&Agent> {
        self.agents.get(id)
    }
    fn issue(&self, id: &IssueId) -> Option<&Issue> {
        self.issues.get(id).map(|e| &e.issue)
    }
    fn issue_number(&self, id: &IssueId) -> Option<u64> {
        self.issues.get(id)?.number
    }
    fn children(&self, parent: &IssueId) -> &[IssueId] {
        self.issues
            .get(parent)
            .map_or(&[], |e| e.children.as_slice())
    }
    fn squad_issues(&self, squad: &SquadId) -> Vec<IssueId> {
        self.squad_issues.get(squad).cloned().unwrap_or_default()
    }
    fn autopilot_issues(&self, autopilot: &AutopilotId) -> &[IssueId] {
        self.autopilot_issues
            .get(autopilot)
            .map_or(&[], Vec::as_slice)
    }
    fn task(&self, id: &TaskId) -> Option<&Task> {
        self.task_at(self.task_handle(id)?)
    }
    fn pending_task(&self, issue: &IssueId, agent: &AgentId) -> Option<&Task> {
        let e = self.issues.get(issue)?;
        let slot = e.slots.iter().find(|s| &s.agent == agent)?;
        self.task_at(slot.pending?)
    }
    fn latest_task(&self, issue: &IssueId, agent: &AgentId) -> Option<&Task> {
        let e = self.issues.get(issue)?;
        let slot = e.slots.iter().find(|s| &s.agent == agent)?;
        self.task_at(slot.latest)
    }
    fn active_tasks(&self, issue: &IssueId) -> Vec<&Task> {
        self.issues.get(issue).map_or_else(Vec::new, |e| {
            e.active.iter().filter_map(|&t| self.task_at(t)).collect()
        })
    }
    fn comment(&self, id: &CommentId) -> Option<&Comment> {
        self.comments
            .get(self.comment_handle(id)?)
            .map(|e| &e.comment)
    }
    fn tasks_triggered_by(&self, comment: &CommentId) -> Vec<&Task> {
        let list = match self
            .comment_handle(comment)
            .and_then(|ix| self.comments.get(ix))
        {
            Some(e) => e.triggered.as_ref(),
            None => self.orphan_triggered.get(comment).and_then(Option::as_ref),
        };
        list.map_or_else(Vec::new, |v| {
            v.iter().filter_map(|t| self.task_at(t)).collect()
        })
    }
    fn autopilot(&self, id: &AutopilotId) -> Option<&Autopilot> {
        self.autopilots.get(id)
    }
    fn squad_autopilots(&self, squad: &SquadId) -> Vec<AutopilotId> {
        let mut v: Vec<AutopilotId> = self
            .autopilots
            .values()
            .filter(|a| matches!(&a.assignee, Some(Assignee::Squad(s)) if s == squad))
            .map(|a| a.id.clone())
            .collect();
        v.sort();
        v
    }
    fn evaluation(&self, task: &TaskId) -> Option<EvaluationOutcome> {
        self.evaluations.get(task).copied()
    }
    fn id_seq(&self) -> u64 {
        self.seq
    }

    fn put_squad(&mut self, squad: Squad) {
        self.squads.insert(squad.id.clone(), squad);
    }
    fn put_member(&mut self, member: SquadMember) {
        let rows = self.members.entry(member.squad_id.clone()).or_default();
        match rows.iter_mut().find(|r| r.member == member.member) {
            Some(r) => *r = member,
            None => rows.push(member),
        }
    }
    fn remove_member(&mut self, squad: &SquadId, member: &MemberRef) {
        if let Some(rows) = self.members.get_mut(squad) {
            rows.retain(|r| &r.member != member);
        }
    }
    fn put_agent(&mut self, agent: Agent) {
        self.agents.insert(agent.id.clone(), agent);
    }
    fn put_issue(&mut self, issue: Issue) {
        if let Some(entry) = self.issues.get_mut(&issue.id) {
            let old_assignee = entry.issue.assignee.take();
            let old_parent = entry.issue.parent_issue_id.take();
            let assignee_changed = old_assignee != issue.assignee;
            let parent_changed = old_parent != issue.parent_issue_id;
            let new_parent = issue.parent_issue_id.clone();
            let new_squad = match &issue.assignee {
                Some(Assignee::Squad(s)) if assignee_changed => Some(s.clone()),
                _ => None,
            };
            let id = issue.id.clone();
            entry.issue = issue;
            if assignee_changed {
                if let Some(Assignee::Squad(s)) = &old_assignee
                    && let Some(v) = self.squad_issues.get_mut(s)
                {
                    v.retain(|i| i != &id);
                }
                if let Some(s) = new_squad {
                    self.index_squad_issue(&s, &id);
                }
            }
            if parent_changed {
                if let Some(p) = &old_parent
                    && let Some(pe) = self.issues.get_mut(p)
                {
                    pe.children.retain(|c| c != &id);
                }
                if let Some(p) = &new_parent
                    && let Some(pe) = self.issues.get_mut(p)
                {
                    pe.children.push(id);
                }
            }
            return;
        }
        if let Some(Assignee::Squad(s)) = &issue.assignee {
            self.index_squad_issue(s, &issue.id);
        }
        if let Some(origin) = &issue.origin
            && origin.kind == "autopilot"
            && let Some(id) = origin.id.as_deref().and_then(|i| AutopilotId::new(i).ok())
        {
            self.autopilot_issues
                .entry(id)
                .or_default()
                .push(issue.id.clone());
        }
        if let Some(p) = &issue.parent_issue_id
            && let Some(pe) = self.issues.get_mut(p)
        {
            pe.children.push(issue.id.clone());
        }
        self.issues.insert_new(IssueEntry {
            issue,
            number: None,
            children: Vec::new(),
            slots: Vec::new(),
            active: Vec::new(),
        });
    }
    fn update_issue(
        &mut self,
        id: &IssueId,
        status: Option<IssueStatus>,
        assignee: Option<Option<Assignee>>,
    ) {
        let Some(e) = self.issues.get_mut(id) else {
            return;
        };
        if let Some(s) = status {
            e.issue.status = s;
        }
        let Some(assignee) = assignee else { return };
        if assignee == e.issue.assignee {
            return;
        }
        let old = std::mem::replace(&mut e.issue.assignee, assignee);
        if let Some(Assignee::Squad(s)) = &old
            && let Some(v) = self.squad_issues.get_mut(s)
        {
            v.retain(|i| i != id);
        }
        if let Some(Some(Assignee::Squad(s))) = self.issues.get(id).map(|e| &e.issue.assignee) {
            let s = s.clone();
            self.index_squad_issue(&s, id);
        }
    }
    fn set_issue_number(&mut self, id: &IssueId, number: u64) {
        if let Some(e) = self.issues.get_mut(id) {
            e.number = Some(number);
        }
    }
    fn delete_issue(&mut self, id: &IssueId) {
        if let Some(e) = self.issues.remove(id) {
            self.unindex_squad_issue(&e.issue);
            if let Some(p) = &e.issue.parent_issue_id
                && let Some(pe) = self.issues.get_mut(p)
            {
                pe.children.retain(|c| c != id);
            }
        }
    }
    fn put_task(&mut self, task: Task) {
        let hash = Handles::hash(task.id.as_str());
        let found = self.task_ix.find(hash, |ix| {
            self.tasks.get(ix).is_some_and(|t| t.id == task.id)
        });
        let (ix, is_new) = match found {
            Some(ix) => (ix, false),
            None => {
                let ix = self.tasks.next_handle();
                self.task_ix.insert(hash, ix);
                (ix, true)
            }
        };
        if let Some(issue) = &task.issue_id
            && let Some(e) = self.issues.get_mut(issue)
        {
            let slot = match e.slots.iter().position(|s| s.agent == task.agent_id) {
                Some(i) => &mut e.slots[i],
                None => {
                    e.slots.push(AgentSlot {
                        agent: task.agent_id.clone(),
                        latest: ix,
                        pending: None,
                    });
                    let last = e.slots.len() - 1;
                    &mut e.slots[last]
                }
            };
            if is_new {
                slot.latest = ix;
            }
            if task.status.is_pending() {
                slot.pending = Some(ix);
            } else if slot.pending == Some(ix) {
                slot.pending = None;
            }
            let active = !task.status.is_terminal();
            let pos = e.active.iter().position(|&t| t == ix);
            match (active, pos) {
                (true, None) => e.active.push(ix),
                (false, Some(i)) => {
                    e.active.remove(i);
                }
                _ => {}
            }
        }
        if is_new {
            if let Some(c) = &task.trigger_comment_id {
                match self
                    .comment_handle(c)
                    .and_then(|cix| self.comments.get_mut(cix))
                {
                    Some(e) => Triggered::push(&mut e.triggered, ix),
                    None => {
                        Triggered::push(self.orphan_triggered.entry(c.clone()).or_default(), ix)
                    }
                }
            }
            self.tasks.push(task);
        } else if let Some(slot) = self.tasks.get_mut(ix) {
            *slot = task;
        }
    }
    fn set_task_status(&mut self, id: &TaskId, status: TaskStatus) {
        let Some(ix) = self.task_handle(id) else {
            return;
        };
        let Some(task) = self.tasks.get_mut(ix) else {
            return;
        };
        let was_pending = task.status.is_pending();
        let was_active = !task.status.is_terminal();
        task.status = status;
        let (pending, active) = (status.is_pending(), !status.is_terminal());
        if was_pending == pending && was_active == active {
            return;
        }
        let Some(e) = task.issue_id.as_ref().and_then(|i| self.issues.get_mut(i)) else {
            return;
        };
        if let Some(slot) = e.slots.iter_mut().find(|s| s.agent == task.agent_id) {
            if pending {
                slot.pending = Some(ix);
            } else if slot.pending == Some(ix) {
                slot.pending = None;
            }
        }
        let pos = e.active.iter().position(|&t| t == ix);
        match (active, pos) {
            (true, None) => e.active.push(ix),
            (false, Some(i)) => {
                e.active.remove(i);
            }
            _ => {}
        }
    }
    fn put_comment(&mut self, comment: Comment) {
        let hash = Handles::hash(comment.id.as_str());
        let found = self.comment_ix.find(hash, |ix| {
            self.comments
                .get(ix)
                .is_some_and(|e| e.comment.id == comment.id)
        });
        if let Some(e) = found.and_then(|ix| self.comments.get_mut(ix)) {
            e.comment = comment;
            return;
        }
        let triggered = if self.orphan_triggered.is_empty() {
            None
        } else {
            self.orphan_triggered.remove(&comment.id).flatten()
        };
        self.comment_ix.insert(hash, self.comments.next_handle());
        self.comments.push(CommentEntry { comment, triggered });
    }
    fn put_autopilot(&mut self, autopilot: Autopilot) {
        self.autopilots.insert(autopilot.id.clone(), autopilot);
    }
    fn put_evaluation(&mut self, task: TaskId, outcome: EvaluationOutcome) {
        self.evaluations.insert(task, outcome);
    }
    fn advance_id_seq(&mut self, seq: u64) {
        self.seq = self.seq.max(seq);
    }
}

#[cfg(test)]
mod tests {
    use squad_model::{PermissionMode, Timestamp};

    use super::*;
    use crate::records::Principal;

    fn t0() -> Timestamp {
        Timestamp::from_unix_seconds(0).expect("valid time")
    }

    fn task(n: usize, trigger: Option<&str>) -> Task {
        Task {
            id: TaskId::new(format!("t{n}")).expect("valid id"),
            agent_id: AgentId::new("a1").expect("valid id"),
            issue_id: Some(IssueId::new("i1").expect("valid id")),
            status: TaskStatus::Queued,
            is_leader_task: false,
            squad_id: None,
            trigger_comment_id: trigger.map(|c| CommentId::new(c).expect("valid id")),
            originator_user_id: None,
            head_sha: None,
            context: None,
            attempt: 1,
            created_at: t0(),
        }
    }

    fn comment(id: &str, content: &str) -> Comment {
        Comment {
            id: CommentId::new(id).expect("valid id"),
            issue_id: IssueId::new("i1").expect("valid id"),
            author: Principal::System,
            parent_id: None,
            content: content.to_owned(),
            source_task_id: None,
            created_at: t0(),
        }
    }

    fn ids(tasks: Vec<&Task>) -> Vec<&str> {
        tasks.into_iter().map(|t| t.id.as_str()).collect()
    }

    #[test]
    fn triggered_tasks_follow_their_comment_whatever_the_order_of_the_writes() {
        let mut dir = InMemoryDirectory::new();
        let c1 = CommentId::new("c1").expect("valid id");
        // A task whose comment the directory does not hold yet.
        dir.put_task(task(1, Some("c1")));
        assert_eq!(ids(dir.tasks_triggered_by(&c1)), ["t1"]);
        dir.put_comment(comment("c1", "first"));
        dir.put_task(task(2, Some("c1")));
        assert_eq!(ids(dir.tasks_triggered_by(&c1)), ["t1", "t2"]);
        // Replacing the comment keeps its tasks; updating a task does not list it twice.
        dir.put_comment(comment("c1", "edited"));
        dir.put_task(task(1, Some("c1")));
        assert_eq!(ids(dir.tasks_triggered_by(&c1)), ["t1", "t2"]);
        assert_eq!(dir.comment(&c1).map(|c| c.content.as_str()), Some("edited"));
        // Other comments triggered nothing.
        dir.put_comment(comment("c2", "none"));
        let c2 = CommentId::new("c2").expect("valid id");
        assert!(dir.tasks_triggered_by(&c2).is_empty());
    }

    #[test]
    fn tasks_stay_reachable_across_storage_chunks() {
        let mut dir = InMemoryDirectory::new();
        let chunk = Chunked::<Task>::CHUNK;
        let n = chunk * 2 + 3;
        for i in 0..n {
            dir.put_task(task(i, None));
        }
        assert_eq!(dir.tasks().count(), n);
        for i in [0, chunk - 1, chunk, n - 1] {
            let id = TaskId::new(format!("t{i}")).expect("valid id");
            assert_eq!(dir.task(&id).map(|t| &t.id), Some(&id));
        }
        let last = TaskId::new(format!("t{}", n - 1)).expect("valid id");
        dir.set_task_status(&last, TaskStatus::Running);
        assert_eq!(dir.task(&last).map(|t| t.status), Some(TaskStatus::Running));
    }

    fn issue(id: &str, parent: Option<&str>) -> Issue {
        Issue {
            id: IssueId::new(id).expect("valid id"),
            workspace_id: WorkspaceId::new("w1").expect("valid id"),
            title: format!("Issue {id}"),
            status: IssueStatus::Todo,
            assignee: None,
            parent_issue_id: parent.map(|p| IssueId::new(p).expect("valid id")),
            stage: None,
            origin: None,
            creator: None,
            created_at: t0(),
        }
    }

    #[test]
    fn deleted_issues_are_gone_and_their_slot_serves_the_next_issue() {
        let mut dir = InMemoryDirectory::new();
        let id = |s: &str| IssueId::new(s).expect("valid id");
        dir.put_issue(issue("p", None));
        dir.put_issue(issue("a", Some("p")));
        dir.put_issue(issue("b", Some("p")));
        dir.delete_issue(&id("a"));
        assert!(dir.issue(&id("a")).is_none());
        assert_eq!(dir.children(&id("p")), [id("b")]);
        dir.put_issue(issue("c", Some("p")));
        assert_eq!(dir.issue(&id("c")).map(|i| &i.id), Some(&id("c")));
        assert!(dir.issue(&id("a")).is_none());
        assert_eq!(dir.counts().2, 3);
        let mut all: Vec<&str> = dir.issues().map(|i| i.id.as_str()).collect();
        all.sort_unstable();
        assert_eq!(all, ["b", "c", "p"]);
        // Deleting an unknown issue changes nothing; a deleted issue can come back.
        dir.delete_issue(&id("zz"));
        dir.put_issue(issue("a", None));
        assert_eq!(dir.counts().2, 4);
        dir.update_issue(&id("a"), Some(IssueStatus::Done), None);
        assert_eq!(
            dir.issue(&id("a")).map(|i| i.status),
            Some(IssueStatus::Done)
        );
    }

    #[test]
    fn text_lookups_agree_with_the_typed_ones() {
        let mut dir = InMemoryDirectory::new();
        let ws = WorkspaceId::new("w1").expect("valid id");
        let a1 = AgentId::new("a1").expect("valid id");
        dir.put_agent(Agent {
            id: a1.clone(),
            workspace_id: ws.clone(),
            name: "Ada".into(),
            owner_id: None,
            archived_at: None,
            runtime: None,
            permission_mode: PermissionMode::Private,
            invocation_targets: Vec::new(),
            skills: Vec::new(),
            instructions: String::new(),
            created_at: t0(),
        });
        let s1 = SquadId::new("s1").expect("valid id");
        dir.put_squad(Squad {
            id: s1.clone(),
            workspace_id: ws,
            name: "Core".into(),
            description: String::new(),
            leader_id: a1.clone(),
            creator_id: UserId::new("u1").expect("valid id"),
            instructions: String::new(),
            avatar_url: None,
            archived_at: None,
            archived_by: None,
            created_at: t0(),
            updated_at: t0(),
        });
        assert_eq!(dir.agent_by_str("a1").map(|a| &a.id), Some(&a1));
        assert_eq!(dir.squad_by_str("s1").map(|s| &s.id), Some(&s1));
        // Unknown ids and strings that are no valid id at all find nothing.
        for bad in ["a2", "", "a 1", "s1\n"] {
            assert!(dir.agent_by_str(bad).is_none(), "{bad:?}");
            assert!(dir.squad_by_str(bad).is_none(), "{bad:?}");
        }
    }
}
