//! The decision engine: pure and synchronous.

mod agents;
mod autopilot;
mod child_done;
mod comments;
mod issues;
mod squads;
mod tasks;

use serde::Serialize;
use squad_model::{
    Agent, AgentId, Assignee, CommentId, Issue, IssueId, IssueStatus, Squad, SquadId, Task, TaskId,
    TaskStatus, Timestamp, UserId, WorkspaceId,
};

use crate::decision::{Decision, NoopReason, Rule, TriggerSource};
use crate::directory::Directory;
use crate::event::Event;
use crate::policy::RoutingPolicy;
use crate::records::Principal;

/// The decisions for one event, plus the id counter after minting new ids.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Decisions {
    /// The decisions, in order. Effects ([`apply`](crate::apply)) follow this order.
    pub decisions: Vec<Decision>,
    /// The directory's id counter after this event ([`Directory::id_seq`]).
    #[serde(skip)]
    pub id_seq: u64,
}

impl Decisions {
    /// The first rejection, if the request was refused.
    pub fn rejection(&self) -> Option<(u16, &str)> {
        self.decisions.iter().find_map(|d| match d {
            Decision::Reject { code, message } => Some((*code, message.as_str())),
            _ => None,
        })
    }

    /// The tasks enqueued.
    pub fn enqueued(&self) -> impl Iterator<Item = &Task> {
        self.decisions.iter().filter_map(Decision::enqueued)
    }
}

/// The routing rules over a [`Directory`], parameterised by a [`RoutingPolicy`].
///
/// [`decide`](Self::decide) only reads the directory; [`apply`](crate::apply) writes the effects,
/// so that later events see them.
///
/// ```
/// use squad_routing::{Engine, Event, InMemoryDirectory};
/// use squad_routing::event::CreateSquad;
/// use squad_model::{SquadId, Timestamp, UserId, WorkspaceId};
///
/// let dir = InMemoryDirectory::new();
/// let event = Event::CreateSquad(CreateSquad {
///     actor: UserId::new("u1").unwrap(),
///     workspace_id: WorkspaceId::new("w1").unwrap(),
///     squad_id: SquadId::new("s1").unwrap(),
///     name: "Core".into(), description: String::new(), instructions: String::new(),
///     leader_id: String::new(), avatar_url: None,
/// });
/// let out = Engine::default().decide(&dir, Timestamp::from_unix_seconds(0).unwrap(), &event);
/// // u1 is not a member of w1.
/// assert_eq!(out.rejection(), Some((404, "workspace not found")));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Engine {
    /// The policy choices.
    pub policy: RoutingPolicy,
}

impl Engine {
    /// An engine with this policy.
    pub fn new(policy: RoutingPolicy) -> Self {
        Self { policy }
    }

    /// Decides what `event`, happening at `at`, leads to.
    pub fn decide(&self, dir: &dyn Directory, at: Timestamp, event: &Event) -> Decisions {
        let mut out = Decisions {
            decisions: Vec::new(),
            id_seq: 0,
        };
        self.decide_into(dir, at, event, &mut out);
        out
    }

    /// [`decide`](Self::decide) into `out`, replacing what it held but keeping its buffer: a
    /// replay loop that pairs it with [`apply_drain`](crate::apply_drain) allocates no decision
    /// list per event.
    ///
    /// ```
    /// use squad_routing::{Decisions, Engine, Event, InMemoryDirectory, apply_drain};
    /// use squad_routing::event::SetTaskStatus;
    /// use squad_model::{TaskId, TaskStatus, Timestamp};
    ///
    /// let mut dir = InMemoryDirectory::new();
    /// let mut out = Decisions::default();
    /// let event = Event::TaskStatus(SetTaskStatus { task_id: TaskId::new("t1").unwrap(), status: TaskStatus::Running });
    /// Engine::default().decide_into(&dir, Timestamp::from_unix_seconds(0).unwrap(), &event, &mut out);
    /// assert_eq!(out.decisions.len(), 1);
    /// apply_drain(&mut dir, &mut out);
    /// assert!(out.decisions.is_empty());
    /// ```
    pub fn decide_into(
        &self,
        dir: &dyn Directory,
        at: Timestamp,
        event: &Event,
        out: &mut Decisions,
    ) {
        let mut cx = Cx::new(&self.policy, dir, at);
        cx.rule = match event {
            Event::CreateSquad(_)
            | Event::UpdateSquad(_)
            | Event::ArchiveSquad(_)
            | Event::AddMember(_)
            | Event::RemoveMember(_)
            | Event::SetMemberRole(_)
            | Event::RecordEvaluation(_) => Rule::Squads,
            Event::CreateIssue(_)
            | Event::UpdateIssue(_)
            | Event::BatchUpdate(_)
            | Event::DeleteIssue(_) => Rule::Assign,
            Event::Comment(_) => Rule::CommentMention,
            Event::SaveAutopilot(_) | Event::TriggerAutopilot(_) => Rule::Autopilot,
            Event::TaskStatus(_) => Rule::TaskStatus,
            Event::Claim(_) => Rule::Claim,
            Event::QuickCreate(_) => Rule::QuickCreate,
            Event::SetRuntime(_) | Event::ArchiveAgent(_) => Rule::Agents,
        };
        out.decisions.clear();
        cx.out = std::mem::take(&mut out.decisions);
        let c = &mut cx;
        match event {
            Event::CreateSquad(e) => squads::create_squad(c, e),
            Event::UpdateSquad(e) => squads::update_squad(c, e),
            Event::ArchiveSquad(e) => squads::archive_squad(c, e),
            Event::AddMember(e) => squads::add_member(c, e),
            Event::RemoveMember(e) => squads::remove_member(c, e),
            Event::SetMemberRole(e) => squads::set_member_role(c, e),
            Event::RecordEvaluation(e) => squads::record_evaluation(c, e),
            Event::CreateIssue(e) => issues::create_issue(c, e),
            Event::UpdateIssue(e) => issues::update_issue(c, e),
            Event::BatchUpdate(e) => issues::batch_update(c, e),
            Event::DeleteIssue(e) => issues::delete_issue(c, e),
            Event::Comment(e) => comments::post_comment(c, e),
            Event::SaveAutopilot(e) => autopilot::save_autopilot(c, e),
            Event::TriggerAutopilot(e) => autopilot::trigger_autopilot(c, e),
            Event::TaskStatus(e) => tasks::set_task_status(c, e),
            Event::Claim(e) => tasks::claim(c, e),
            Event::QuickCreate(e) => tasks::quick_create(c, e),
            Event::SetRuntime(e) => agents::set_runtime(c, e),
            Event::ArchiveAgent(e) => agents::archive_agent(c, e),
        }
        out.decisions = cx.out;
        out.id_seq = cx.seq;
    }
}

/// Kinds of minted ids (first UUID group), so minted ids are UUID-shaped and distinct
/// (`trace::MINTED_KINDS` spells them).
#[derive(Clone, Copy)]
pub(crate) enum IdKind {
    Task = 0x7a5c_0000,
    Comment = 0x0c03_0000,
    Issue = 0x1550_0000,
}

/// One decision in progress: the directory plus what this event already decided.
pub(crate) struct Cx<'a> {
    pub(crate) policy: &'a RoutingPolicy,
    pub(crate) dir: &'a dyn Directory,
    pub(crate) at: Timestamp,
    seq: u64,
    pub(crate) out: Vec<Decision>,
    /// Tasks cancelled by this event.
    cancelled: Vec<TaskId>,
    /// Issues as this event left them (batch updates read siblings in their final state).
    issues: Overlays<'a>,
    /// Record every updated issue in `issues` (batch updates), not only completed ones.
    pub(crate) overlay_all: bool,
    /// The rule being evaluated: the reason the next routing decision carries.
    pub(crate) rule: Rule,
}

/// An issue as the current event sees it: a record (stored, or created by this event) with this
/// event's status and assignee changes on top. The other fields are the record's (through
/// `Deref`); `status` and `assignee` shadow the record's, so read them on the view.
#[derive(Clone, Copy)]
pub(crate) struct IssueView<'v> {
    /// The record (its `status` and `assignee` may be stale: use the view's).
    pub(crate) issue: &'v Issue,
    /// The status as this event left it.
    pub(crate) status: IssueStatus,
    /// The assignee as this event left it.
    pub(crate) assignee: &'v Option<Assignee>,
}

impl<'v> IssueView<'v> {
    /// A record as stored.
    pub(crate) fn stored(issue: &'v Issue) -> Self {
        Self {
            issue,
            status: issue.status,
            assignee: &issue.assignee,
        }
    }
}

impl std::ops::Deref for IssueView<'_> {
    type Target = Issue;
    fn deref(&self) -> &Issue {
        self.issue
    }
}

/// The issues this event changed, oldest first; the first is kept inline, as most events change
/// at most one issue.
#[derive(Default)]
struct Overlays<'a> {
    first: Option<Overlay<'a>>,
    more: Vec<Overlay<'a>>,
}

impl<'a> Overlays<'a> {
    fn push(&mut self, o: Overlay<'a>) {
        if self.first.is_none() {
            self.first = Some(o);
        } else {
            self.more.push(o);
        }
    }

    /// The newest overlay of the issue.
    fn find(&self, id: &IssueId) -> Option<&Overlay<'a>> {
        self.more
            .iter()
            .rev()
            .chain(self.first.as_ref())
            .find(|o| o.id() == id)
    }
}

/// One issue this event changed: a field overlay on the stored record (no record is copied), or
/// a record the event created.
enum Overlay<'a> {
    /// A stored issue with a new status and, when `Some`, a new assignee.
    Patch {
        base: &'a Issue,
        status: IssueStatus,
        assignee: Option<Option<Assignee>>,
    },
    /// An issue this event created.
    New(Issue),
}

impl Overlay<'_> {
    fn id(&self) -> &IssueId {
        match self {
            Self::Patch { base, .. } => &base.id,
            Self::New(i) => &i.id,
        }
    }

    fn view(&self) -> IssueView<'_> {
        match self {
            Self::Patch {
                base,
                status,
                assignee,
            } => IssueView {
                issue: base,
                status: *status,
                assignee: assignee.as_ref().unwrap_or(&base.assignee),
            },
            Self::New(i) => IssueView::stored(i),
        }
    }
}

/// What a new task looks like, before it gets an id.
pub(crate) struct NewTask<'t> {
    pub(crate) agent: &'t AgentId,
    pub(crate) issue: Option<&'t IssueId>,
    pub(crate) leader_of: Option<&'t SquadId>,
    pub(crate) trigger: Option<&'t CommentId>,
    pub(crate) originator: Option<UserId>,
    pub(crate) source: TriggerSource,
    pub(crate) delay_seconds: Option<u32>,
}

impl<'a> Cx<'a> {
    fn new(policy: &'a RoutingPolicy, dir: &'a dyn Directory, at: Timestamp) -> Self {
        Self {
            policy,
            dir,
            at,
            seq: dir.id_seq(),
            out: Vec::new(),
            cancelled: Vec::new(),
            issues: Overlays::default(),
            overlay_all: false,
            rule: Rule::Squads,
        }
    }

    pub(crate) fn push(&mut self, d: Decision) {
        self.out.push(d);
    }

    pub(crate) fn reject(&mut self, code: u16, message: &str) {
        self.out.push(Decision::reject(code, message));
    }

    pub(crate) fn noop(&mut self, reason: NoopReason) {
        self.out.push(Decision::noop(self.rule, reason));
    }

    pub(crate) fn noop_for(&mut self, reason: NoopReason, agent: &AgentId) {
        self.out.push(Decision::noop_for(self.rule, reason, agent));
    }

    /// A comment merged into the agent's pending task.
    pub(crate) fn coalesce(&mut self, task_id: TaskId, agent_id: AgentId, comment_id: CommentId) {
        self.out.push(Decision::Coalesce {
            task_id,
            agent_id,
            comment_id,
            rule: self.rule,
        });
    }

    /// Mints a UUID-shaped id.
    pub(crate) fn mint(&mut self, kind: IdKind) -> String {
        self.seq += 1;
        // `{kind:08x}-0000-4000-8000-{seq:012x}`, written by hand: this runs for every task.
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut out = String::with_capacity(36);
        let k = kind as u32;
        for shift in (0..8).rev() {
            out.push(char::from(HEX[((k >> (shift * 4)) & 0xf) as usize]));
        }
        // Bits 48..63 (0 for a counter; the epoch of position ids) go in the second group.
        out.push('-');
        for shift in (12..16).rev() {
            out.push(char::from(HEX[((self.seq >> (shift * 4)) & 0xf) as usize]));
        }
        out.push_str("-4000-8000-");
        for shift in (0..12).rev() {
            out.push(char::from(HEX[((self.seq >> (shift * 4)) & 0xf) as usize]));
        }
        out
    }

    /// The issue as this event has left it so far.
    pub(crate) fn issue(&self, id: &IssueId) -> Option<IssueView<'_>> {
        self.overlaid(id)
            .or_else(|| self.dir.issue(id).map(IssueView::stored))
    }

    /// The issue as this event left it, when this event changed it.
    pub(crate) fn overlaid(&self, id: &IssueId) -> Option<IssueView<'_>> {
        self.issues.find(id).map(Overlay::view)
    }

    /// The stored record of an issue this event changed, with its current status and (when
    /// this event changed it) assignee: what an update of an already updated issue builds on.
    /// `None` when this event did not change a stored issue.
    pub(crate) fn patched(
        &self,
        id: &IssueId,
    ) -> Option<(&'a Issue, IssueStatus, Option<Option<Assignee>>)> {
        match self.issues.find(id)? {
            Overlay::Patch {
                base,
                status,
                assignee,
            } => Some((*base, *status, assignee.clone())),
            Overlay::New(_) => None,
        }
    }

    /// Records a stored issue's new status and (when `Some`) assignee.
    pub(crate) fn patch_issue(
        &mut self,
        base: &'a Issue,
        status: IssueStatus,
        assignee: Option<Option<Assignee>>,
    ) {
        self.issues.push(Overlay::Patch {
            base,
            status,
            assignee,
        });
    }

    /// Records an issue this event created.
    pub(crate) fn set_issue(&mut self, issue: Issue) {
        self.issues.push(Overlay::New(issue));
    }

    /// The pending task of the agent on the issue, counting this event's enqueues and
    /// cancellations.
    pub(crate) fn pending(&self, issue: &IssueId, agent: &AgentId) -> Option<TaskId> {
        if let Some(t) = self.local_tasks(issue).find(|t| &t.agent_id == agent) {
            return Some(t.id.clone());
        }
        self.dir
            .pending_task(issue, agent)
            .filter(|t| !self.cancelled.contains(&t.id))
            .map(|t| t.id.clone())
    }

    /// Whether the agent has a pending task on the issue ([`pending`](Self::pending) without
    /// copying its id).
    pub(crate) fn has_pending(&self, issue: &IssueId, agent: &AgentId) -> bool {
        self.local_tasks(issue).any(|t| &t.agent_id == agent)
            || self
                .dir
                .pending_task(issue, agent)
                .is_some_and(|t| !self.cancelled.contains(&t.id))
    }

    /// Pending tasks this event enqueued on the issue and has not cancelled.
    fn local_tasks<'s>(&'s self, issue: &'s IssueId) -> impl Iterator<Item = &'s Task> + 's {
        self.out.iter().filter_map(move |d| match d {
            Decision::Enqueue { task, .. }
                if task.issue_id.as_ref() == Some(issue)
                    && task.status.is_pending()
                    && !self.cancelled.contains(&task.id) =>
            {
                Some(task.as_ref())
            }
            _ => None,
        })
    }

    /// Cancels every active task on the issue.
    pub(crate) fn cancel_active(&mut self, issue: &IssueId, reason: &'static str) {
        let mut ids: Vec<TaskId> = self
            .dir
            .active_tasks(issue)
            .into_iter()
            .map(|t| t.id.clone())
            .filter(|id| !self.cancelled.contains(id))
            .collect();
        ids.extend(self.local_tasks(issue).map(|t| t.id.clone()));
        for id in ids {
            self.cancelled.push(id.clone());
            self.out.push(Decision::Cancel {
                task_id: id,
                reason,
                rule: self.rule,
            });
        }
    }

    /// Mints the id of a new task.
    pub(crate) fn mint_task_id(&mut self) -> TaskId {
        TaskId::new(self.mint(IdKind::Task)).expect("minted ids are valid")
    }

    /// Enqueues a task and returns its id.
    pub(crate) fn enqueue(&mut self, t: NewTask<'_>) -> TaskId {
        let id = self.mint_task_id();
        let status = if t.delay_seconds.is_some() {
            TaskStatus::Deferred
        } else {
            TaskStatus::Queued
        };
        let task = Task {
            id: id.clone(),
            agent_id: t.agent.clone(),
            issue_id: t.issue.cloned(),
            status,
            is_leader_task: t.leader_of.is_some(),
            squad_id: t.leader_of.cloned(),
            trigger_comment_id: t.trigger.cloned(),
            originator_user_id: t.originator,
            head_sha: None,
            context: None,
            attempt: 1,
            created_at: self.at,
        };
        self.out.push(Decision::Enqueue {
            task: Box::new(task),
            source: t.source,
            delay_seconds: t.delay_seconds,
            rule: self.rule,
        });
        id
    }

    /// The originator named by a request: a member is its own; an agent uses the originator of
    /// the task named in the request, else (MUL-4857) the member who created the autopilot the
    /// issue came from; the system has none.
    pub(crate) fn request_originator(
        &self,
        actor: &Principal,
        task: Option<&TaskId>,
        issue: Option<&Issue>,
    ) -> Option<UserId> {
        self.request_originator_ref(actor, task, issue).cloned()
    }

    /// [`request_originator`](Self::request_originator), borrowed from the request or the
    /// directory.
    pub(crate) fn request_originator_ref<'r>(
        &self,
        actor: &'r Principal,
        task: Option<&TaskId>,
        issue: Option<&'r Issue>,
    ) -> Option<&'r UserId>
    where
        'a: 'r,
    {
        match actor {
            Principal::Agent(_) => {
                let dir: &'a dyn Directory = self.dir;
                self.task_originator_ref(actor, task.and_then(|t| dir.task(t)), issue)
            }
            _ => self.task_originator_ref(actor, None, issue),
        }
    }

    /// [`request_originator_ref`](Self::request_originator_ref) with the request's task already
    /// looked up (`None` when the request names none or an unknown one).
    pub(crate) fn task_originator_ref<'r>(
        &self,
        actor: &'r Principal,
        task: Option<&'a Task>,
        issue: Option<&'r Issue>,
    ) -> Option<&'r UserId>
    where
        'a: 'r,
    {
        let dir: &'a dyn Directory = self.dir;
        match actor {
            Principal::Member(u) => Some(u),
            Principal::System => None,
            Principal::Agent(_) => task
                .and_then(|t| t.originator_user_id.as_ref())
                .or_else(|| {
                    let origin = issue?.origin.as_ref()?;
                    if origin.kind != "autopilot" {
                        return None;
                    }
                    let id = squad_model::AutopilotId::new(origin.id.clone()?).ok()?;
                    match &dir.autopilot(&id)?.creator {
                        squad_model::Actor::Member(u) => Some(u),
                        squad_model::Actor::Agent(_) => None,
                    }
                }),
        }
    }

    /// The originator from an issue's provenance: its member creator; for `agent_create`, the
    /// originator of the creating task; otherwise none.
    pub(crate) fn provenance_originator(&self, issue: &Issue) -> Option<UserId> {
        if let Some(squad_model::Actor::Member(u)) = &issue.creator {
            return Some(u.clone());
        }
        let origin = issue.origin.as_ref()?;
        if origin.kind == "agent_create" {
            let t = TaskId::new(origin.id.clone()?).ok()?;
            return self.dir.task(&t)?.originator_user_id.clone();
        }
        None
    }

    /// The squad, when it belongs to the workspace.
    pub(crate) fn squad_in(&self, id: &SquadId, ws: &WorkspaceId) -> Option<&'a Squad> {
        self.dir.squad(id).filter(|s| &s.workspace_id == ws)
    }

    /// The agent, when it belongs to the workspace.
    pub(crate) fn agent_in(&self, id: &AgentId, ws: &WorkspaceId) -> Option<&'a Agent> {
        self.dir.agent(id).filter(|a| &a.workspace_id == ws)
    }

    /// [`squad_in`](Self::squad_in) for an id given as text.
    pub(crate) fn squad_in_str(&self, id: &str, ws: &WorkspaceId) -> Option<&'a Squad> {
        self.dir.squad_by_str(id).filter(|s| &s.workspace_id == ws)
    }

    /// [`agent_in`](Self::agent_in) for an id given as text.
    pub(crate) fn agent_in_str(&self, id: &str, ws: &WorkspaceId) -> Option<&'a Agent> {
        self.dir.agent_by_str(id).filter(|a| &a.workspace_id == ws)
    }
}

/// Not archived and a runtime bound.
pub(crate) fn bound(agent: &Agent) -> bool {
    !agent.is_archived() && agent.runtime.is_some()
}

/// Not archived, bound and online.
pub(crate) fn online(agent: &Agent) -> bool {
    !agent.is_archived() && agent.is_online()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::directory::InMemoryDirectory;

    #[test]
    fn minted_ids_are_uuid_shaped_and_match_the_format() {
        let dir = InMemoryDirectory::new();
        let policy = RoutingPolicy::default();
        let t = Timestamp::from_unix_seconds(0).expect("valid");
        let mut cx = Cx::new(&policy, &dir, t);
        cx.seq = 0x1234_5678_9abc - 1;
        let id = cx.mint(IdKind::Task);
        assert_eq!(
            id,
            format!(
                "{:08x}-0000-4000-8000-{:012x}",
                IdKind::Task as u32,
                0x1234_5678_9abc_u64
            )
        );
        assert!(crate::mention::is_uuid(&id));
        // A position id: the epoch shows in the second group.
        cx.seq = (3 << 48) | (7 << 16);
        assert_eq!(
            cx.mint(IdKind::Task),
            "7a5c0000-0003-4000-8000-000000070001"
        );
    }
}
