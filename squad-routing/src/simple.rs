//! [`SimpleDirectory`]: the readable reference [`Directory`]: plain maps, and every question
//! about tasks answered by a scan.

use std::collections::BTreeMap;

use squad_model::{
    Agent, AgentId, Assignee, Autopilot, AutopilotId, CommentId, Issue, IssueId, IssueStatus,
    MemberRef, Squad, SquadId, SquadMember, Task, TaskId, TaskStatus, UserId, WorkspaceId,
};

use crate::directory::Directory;
use crate::records::{Comment, EvaluationOutcome, Membership, User, Workspace, WorkspaceRole};

/// A [`Directory`] written to be read rather than to be fast: one map per record type, tasks in
/// one list in creation order, and no index. The pending, latest and active tasks of an issue,
/// and the tasks a comment triggered, are found by scanning every task.
///
/// It is the reference the conformance suite and the property tests compare the fast
/// [`InMemoryDirectory`](crate::InMemoryDirectory) (and any host's directory) with: the engine
/// must decide the same on both. Use it to read what each method means, not for large traces.
///
/// ```
/// use squad_routing::{Directory, SimpleDirectory};
/// use squad_model::{AgentId, IssueId};
///
/// let dir = SimpleDirectory::new();
/// let (i, a) = (IssueId::new("i1").unwrap(), AgentId::new("a1").unwrap());
/// assert!(dir.pending_task(&i, &a).is_none());
/// assert!(dir.active_tasks(&i).is_empty());
/// ```
#[derive(Debug, Clone, Default)]
pub struct SimpleDirectory {
    workspaces: BTreeMap<WorkspaceId, Workspace>,
    users: BTreeMap<UserId, User>,
    roles: BTreeMap<(WorkspaceId, UserId), WorkspaceRole>,
    squads: BTreeMap<SquadId, Squad>,
    /// Membership rows of each squad, in creation order.
    members: BTreeMap<SquadId, Vec<SquadMember>>,
    agents: BTreeMap<AgentId, Agent>,
    issues: BTreeMap<IssueId, Issue>,
    numbers: BTreeMap<IssueId, u64>,
    /// The children of each issue, in creation order (a list, since the trait lends a slice).
    children: BTreeMap<IssueId, Vec<IssueId>>,
    /// The issues each autopilot created, in creation order.
    autopilot_issues: BTreeMap<AutopilotId, Vec<IssueId>>,
    /// Every task in creation order, with whether it still counts for its issue (a deleted
    /// issue's tasks do not).
    tasks: Vec<(Task, bool)>,
    comments: BTreeMap<CommentId, Comment>,
    autopilots: BTreeMap<AutopilotId, Autopilot>,
    evaluations: BTreeMap<TaskId, EvaluationOutcome>,
    seq: u64,
}

impl SimpleDirectory {
    /// An empty directory.
    pub fn new() -> Self {
        Self::default()
    }
}

impl Directory for SimpleDirectory {
    fn workspace(&self, id: &WorkspaceId) -> Option<&Workspace> {
        self.workspaces.get(id)
    }
    fn user(&self, id: &UserId) -> Option<&User> {
        self.users.get(id)
    }
    fn workspace_role(&self, workspace: &WorkspaceId, user: &UserId) -> Option<WorkspaceRole> {
        self.roles.get(&(workspace.clone(), user.clone())).copied()
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
    fn issue(&self, id: &IssueId) -> Option<&Issue> {
        self.issues.get(id)
    }
    fn issue_number(&self, id: &IssueId) -> Option<u64> {
        self.numbers.get(id).copied()
    }
    fn children(&self, parent: &IssueId) -> &[IssueId] {
        self.children.get(parent).map_or(&[], Vec::as_slice)
    }
    fn squad_issues(&self, squad: &SquadId) -> Vec<IssueId> {
        self.issues
            .values()
            .filter(|i| matches!(&i.assignee, Some(Assignee::Squad(s)) if s == squad))
            .map(|i| i.id.clone())
            .collect()
    }
    fn autopilot_issues(&self, autopilot: &AutopilotId) -> &[IssueId] {
        self.autopilot_issues
            .get(autopilot)
            .map_or(&[], Vec::as_slice)
    }
    fn task(&self, id: &TaskId) -> Option<&Task> {
        self.tasks.iter().map(|(t, _)| t).find(|t| &t.id == id)
    }
    fn pending_task(&self, issue: &IssueId, agent: &AgentId) -> Option<&Task> {
        self.tasks
            .iter()
            .rev()
            .find(|(t, live)| {
                *live
                    && t.issue_id.as_ref() == Some(issue)
                    && &t.agent_id == agent
                    && t.status.is_pending()
            })
            .map(|(t, _)| t)
    }
    fn latest_task(&self, issue: &IssueId, agent: &AgentId) -> Option<&Task> {
        self.tasks
            .iter()
            .rev()
            .find(|(t, live)| *live && t.issue_id.as_ref() == Some(issue) && &t.agent_id == agent)
            .map(|(t, _)| t)
    }
    fn active_tasks(&self, issue: &IssueId) -> Vec<&Task> {
        self.tasks
            .iter()
            .filter(|(t, live)| {
                *live && t.issue_id.as_ref() == Some(issue) && !t.status.is_terminal()
            })
            .map(|(t, _)| t)
            .collect()
    }
    fn comment(&self, id: &CommentId) -> Option<&Comment> {
        self.comments.get(id)
    }
    fn tasks_triggered_by(&self, comment: &CommentId) -> Vec<&Task> {
        self.tasks
            .iter()
            .map(|(t, _)| t)
            .filter(|t| t.trigger_comment_id.as_ref() == Some(comment))
            .collect()
    }
    fn autopilot(&self, id: &AutopilotId) -> Option<&Autopilot> {
        self.autopilots.get(id)
    }
    fn squad_autopilots(&self, squad: &SquadId) -> Vec<AutopilotId> {
        // A BTreeMap iterates in id order.
        self.autopilots
            .values()
            .filter(|a| matches!(&a.assignee, Some(Assignee::Squad(s)) if s == squad))
            .map(|a| a.id.clone())
            .collect()
    }
    fn evaluation(&self, task: &TaskId) -> Option<EvaluationOutcome> {
        self.evaluations.get(task).copied()
    }
    fn id_seq(&self) -> u64 {
        self.seq
    }

    fn put_workspace(&mut self, workspace: Workspace) {
        self.workspaces.insert(workspace.id.clone(), workspace);
    }
    fn put_user(&mut self, user: User) {
        self.users.insert(user.id.clone(), user);
    }
    fn put_membership(&mut self, m: Membership) {
        self.roles.insert((m.workspace_id, m.user_id), m.role);
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
        let old_parent = self
            .issues
            .get(&issue.id)
            .map(|i| i.parent_issue_id.clone());
        let is_new = old_parent.is_none();
        if old_parent.flatten() != issue.parent_issue_id {
            for kids in self.children.values_mut() {
                kids.retain(|k| k != &issue.id);
            }
            if let Some(p) = &issue.parent_issue_id
                && self.issues.contains_key(p)
            {
                self.children
                    .entry(p.clone())
                    .or_default()
                    .push(issue.id.clone());
            }
        }
        if is_new
            && let Some(origin) = &issue.origin
            && origin.kind == "autopilot"
            && let Some(ap) = origin.id.as_deref().and_then(|i| AutopilotId::new(i).ok())
        {
            self.autopilot_issues
                .entry(ap)
                .or_default()
                .push(issue.id.clone());
        }
        self.issues.insert(issue.id.clone(), issue);
    }
    fn update_issue(
        &mut self,
        id: &IssueId,
        status: Option<IssueStatus>,
        assignee: Option<Option<Assignee>>,
    ) {
        let Some(issue) = self.issues.get_mut(id) else {
            return;
        };
        if let Some(s) = status {
            issue.status = s;
        }
        if let Some(a) = assignee {
            issue.assignee = a;
        }
    }
    fn set_issue_number(&mut self, id: &IssueId, number: u64) {
        if self.issues.contains_key(id) {
            self.numbers.insert(id.clone(), number);
        }
    }
    fn delete_issue(&mut self, id: &IssueId) {
        if self.issues.remove(id).is_none() {
            return;
        }
        self.numbers.remove(id);
        self.children.remove(id);
        for kids in self.children.values_mut() {
            kids.retain(|k| k != id);
        }
        for (t, live) in &mut self.tasks {
            if t.issue_id.as_ref() == Some(id) {
                *live = false;
            }
        }
    }
    fn put_task(&mut self, task: Task) {
        if let Some((t, _)) = self.tasks.iter_mut().find(|(t, _)| t.id == task.id) {
            *t = task;
            return;
        }
        // A task counts for its issue only if the issue is stored.
        let live = task
            .issue_id
            .as_ref()
            .is_some_and(|i| self.issues.contains_key(i));
        self.tasks.push((task, live));
    }
    fn set_task_status(&mut self, id: &TaskId, status: TaskStatus) {
        if let Some((t, _)) = self.tasks.iter_mut().find(|(t, _)| &t.id == id) {
            t.status = status;
        }
    }
    fn put_comment(&mut self, comment: Comment) {
        self.comments.insert(comment.id.clone(), comment);
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
