//! Issues (§3, §7): assignment validation, the run decision, cancellation, child-done with the
//! stage barrier; plus task status, claims (§5) and agent changes.

use squad_model::{
    Actor, AgentId, Assignee, Issue, IssueId, IssueStatus, RuntimeBinding, RuntimeId, SquadId,
    TaskId, TaskStatus, UserId, WorkspaceId,
};

use std::borrow::Cow;

use super::{Cx, IdKind, IssueView, NewTask, bound, online};
use crate::decision::{Decision, NoopReason, TriggerSource};
use crate::event::Event;
use crate::invoke::can_invoke_agent;
use crate::mention::MentionKind;
use crate::records::{Comment, Principal};

pub(super) fn decide(cx: &mut Cx<'_>, event: &Event) {
    match event {
        Event::CreateIssue {
            actor,
            task_id,
            workspace_id,
            issue_id,
            number,
            title,
            status,
            assignee_type,
            assignee_id,
            parent_issue_id,
            stage,
            suppress_run,
        } => {
            let originator = cx.request_originator(actor, task_id.as_ref(), None);
            let assignee = match validate_assignee(
                cx,
                workspace_id,
                actor,
                originator.as_ref(),
                assignee_type.as_deref(),
                assignee_id.as_deref(),
            ) {
                Ok(a) => a,
                Err((code, msg)) => return cx.reject(code, msg),
            };
            let issue = Issue {
                id: issue_id.clone(),
                workspace_id: workspace_id.clone(),
                title: title.clone(),
                status: status.unwrap_or(IssueStatus::Todo),
                assignee,
                parent_issue_id: parent_issue_id.clone(),
                stage: *stage,
                origin: match actor {
                    Principal::Agent(_) => task_id.as_ref().map(|t| squad_model::Origin {
                        kind: "agent_create".to_owned(),
                        id: Some(t.as_str().to_owned()),
                    }),
                    _ => None,
                },
                creator: match actor {
                    Principal::Member(u) => Some(Actor::Member(u.clone())),
                    Principal::Agent(a) => Some(Actor::Agent(a.clone())),
                    Principal::System => None,
                },
                created_at: cx.at,
            };
            if let Some(a) = &issue.assignee {
                run(
                    cx,
                    &issue,
                    issue.status,
                    a,
                    TriggerSource::Assign,
                    *suppress_run,
                    None,
                    originator,
                );
            }
            // The record goes first in the output: its effect must precede the task's.
            cx.out.insert(
                0,
                Decision::CreateIssue {
                    issue: Box::new(issue),
                    number: *number,
                },
            );
        }
        Event::UpdateIssue {
            actor,
            task_id,
            issue_id,
            status,
            assignee_type,
            assignee_id,
            unassign,
            suppress_run,
        } => {
            let dir = cx.dir;
            let Some(issue) = dir.issue(issue_id) else {
                return cx.reject(404, "issue not found");
            };
            let Some(change) = validated_change(
                cx,
                &issue.workspace_id,
                actor,
                task_id.as_ref(),
                Some(issue),
                (assignee_type.as_deref(), assignee_id.as_deref(), *unassign),
            ) else {
                return;
            };
            if let Some(done) = update_one(
                cx,
                actor,
                task_id.as_ref(),
                issue,
                (issue.status, &issue.assignee),
                *status,
                change,
                *suppress_run,
            ) {
                wake_parent(cx, &[done]);
            }
        }
        Event::BatchUpdate {
            actor,
            task_id,
            issue_ids,
            status,
            assignee_type,
            assignee_id,
            suppress_run,
        } => {
            cx.overlay_all = true;
            let mut completed = Vec::new();
            let dir = cx.dir;
            for id in issue_ids {
                // An issue this batch already updated builds on its overlay (only a changed
                // assignee is copied out of it); the others are read from the directory.
                let (issue, cur_status, cur_assignee) = if let Some(p) = cx.patched(id) {
                    p
                } else if let Some(i) = dir.issue(id) {
                    (i, i.status, None)
                } else {
                    return cx.reject(404, "issue not found");
                };
                let cur_assignee = cur_assignee.as_ref().unwrap_or(&issue.assignee);
                let Some(change) = validated_change(
                    cx,
                    &issue.workspace_id,
                    actor,
                    task_id.as_ref(),
                    Some(issue),
                    (assignee_type.as_deref(), assignee_id.as_deref(), false),
                ) else {
                    // A refused assignment refuses the whole batch: drop what the earlier issues
                    // decided and keep only the rejection.
                    let reject = cx.out.pop();
                    cx.out.clear();
                    cx.out.extend(reject);
                    return;
                };
                if let Some(done) = update_one(
                    cx,
                    actor,
                    task_id.as_ref(),
                    issue,
                    (cur_status, cur_assignee),
                    *status,
                    change,
                    *suppress_run,
                ) {
                    completed.push(done);
                }
            }
            if let [c] = completed.as_slice() {
                // One completed issue: its group is itself, no grouping needed.
                if cx.issue(c).is_some_and(|i| i.parent_issue_id.is_some()) {
                    wake_parent(cx, &completed);
                }
                return;
            }
            // Child-done runs after every write, grouped by parent.
            let mut groups: Vec<(IssueId, Vec<&IssueId>)> = Vec::new();
            for c in &completed {
                let Some(p) = cx.issue(c).and_then(|i| i.parent_issue_id.clone()) else {
                    continue;
                };
                match groups.iter_mut().find(|(q, _)| q == &p) {
                    Some((_, g)) => g.push(c),
                    None => groups.push((p, vec![c])),
                }
            }
            for (_, group) in groups {
                wake_parent(cx, &group);
            }
        }
        Event::DeleteIssue { issue_id, .. } => {
            cx.cancel_active(issue_id, "issue_deleted");
            cx.push(Decision::DeleteIssue {
                issue_id: issue_id.clone(),
            });
        }
        Event::TaskStatus { task_id, status } => {
            // Tasks only move forward: a finished task stays finished, and a task that left the
            // queue never becomes pending again (a retry is a new task). This keeps "at most one
            // pending task per (issue, agent)" true whatever the runtime reports.
            if let Some(old) = cx.dir.task(task_id) {
                if old.status.is_terminal() && old.status != *status {
                    return cx.reject(409, "task is already finished");
                }
                if status.is_pending() && old.status == TaskStatus::Deferred {
                    // A deferred escalation comes due: if the agent meanwhile has a pending task
                    // on the issue, that task absorbs it.
                    if let Some(issue) = &old.issue_id
                        && cx.has_pending(issue, &old.agent_id)
                    {
                        return cx.push(Decision::Cancel {
                            task_id: task_id.clone(),
                            reason: "coalesced",
                        });
                    }
                } else if status.is_pending() && !old.status.is_pending() {
                    return cx.reject(409, "task cannot return to the queue");
                }
            }
            cx.push(Decision::SetTaskStatus {
                task_id: task_id.clone(),
                status: *status,
            });
        }
        Event::Claim { task_id } => claim(cx, task_id),
        Event::SetRuntime { agent_id, runtime } => {
            let runtime = runtime.map(|status| RuntimeBinding {
                runtime_id: cx
                    .dir
                    .agent(agent_id)
                    .and_then(|a| a.runtime.as_ref())
                    .map_or_else(
                        || {
                            RuntimeId::new(format!("runtime-{agent_id}"))
                                .expect("an id without whitespace stays valid")
                        },
                        |r| r.runtime_id.clone(),
                    ),
                status,
                last_seen_at: Some(cx.at),
            });
            cx.push(Decision::SetRuntime {
                agent_id: agent_id.clone(),
                runtime,
            });
        }
        Event::ArchiveAgent { agent_id } => cx.push(Decision::ArchiveAgent {
            agent_id: agent_id.clone(),
            archived_at: cx.at,
        }),
        _ => {}
    }
}

/// The assignee change a request asks for: `None` = unchanged, `Some(None)` = unassign.
type Change = Option<Option<Assignee>>;

/// Validates the request's assignee fields; on refusal pushes the rejection and returns `None`.
fn validated_change(
    cx: &mut Cx<'_>,
    ws: &WorkspaceId,
    actor: &Principal,
    task_id: Option<&TaskId>,
    issue: Option<&Issue>,
    (ty, id, unassign): (Option<&str>, Option<&str>, bool),
) -> Option<Change> {
    if unassign {
        return Some(Some(None));
    }
    if ty.is_none() && id.is_none() {
        return Some(None);
    }
    let originator = cx.request_originator_ref(actor, task_id, issue);
    match validate_assignee(cx, ws, actor, originator, ty, id) {
        Ok(a) => Some(Some(a)),
        Err((code, msg)) => {
            cx.reject(code, msg);
            None
        }
    }
}

/// `validateAssigneePair` (§3.1).
pub(super) fn validate_assignee(
    cx: &Cx<'_>,
    ws: &WorkspaceId,
    actor: &Principal,
    originator: Option<&UserId>,
    ty: Option<&str>,
    id: Option<&str>,
) -> Result<Option<Assignee>, (u16, &'static str)> {
    let (ty, id) = match (ty, id) {
        (None, None) => return Ok(None),
        (Some(t), Some(i)) => (t, i),
        _ => {
            return Err((
                400,
                "assignee_type and assignee_id must be provided together",
            ));
        }
    };
    match ty {
        "squad" => {
            let squad = cx.squad_in_str(id, ws).ok_or((
                400,
                "assignee_id does not refer to a squad in this workspace",
            ))?;
            if squad.is_archived() {
                return Err((400, "cannot assign to an archived squad"));
            }
            let leader = cx
                .dir
                .agent(&squad.leader_id)
                .filter(|a| !a.is_archived())
                .ok_or((400, "squad leader is archived; cannot assign to this squad"))?;
            if !can_invoke_agent(cx.dir, leader, actor, originator) {
                return Err((403, "cannot assign to squad with private leader"));
            }
            Ok(Some(Assignee::Squad(squad.id.clone())))
        }
        "agent" => {
            let agent = cx.agent_in_str(id, ws).ok_or((
                400,
                "assignee_id does not refer to an agent in this workspace",
            ))?;
            if agent.is_archived() {
                return Err((400, "cannot assign to archived agent"));
            }
            if !can_invoke_agent(cx.dir, agent, actor, originator) {
                return Err((403, "cannot assign to private agent"));
            }
            Ok(Some(Assignee::Agent(agent.id.clone())))
        }
        "member" => {
            let user = UserId::new(id)
                .ok()
                .filter(|u| cx.dir.workspace_role(ws, u).is_some())
                .ok_or((
                    400,
                    "assignee_id does not refer to a member of this workspace",
                ))?;
            Ok(Some(Assignee::Member(user)))
        }
        _ => Err((400, "assignee_type must be 'member', 'agent', or 'squad'")),
    }
}

/// Applies one issue update and its run decision. `issue` is the stored record and `current`
/// its status and assignee as this event has left them so far. Returns the issue's id when the
/// update completed it (non-terminal to terminal), for child-done.
#[allow(
    clippy::too_many_arguments,
    reason = "the request's fields and the issue's state"
)]
fn update_one<'a>(
    cx: &mut Cx<'a>,
    actor: &Principal,
    task_id: Option<&TaskId>,
    issue: &'a Issue,
    current: (IssueStatus, &Option<Assignee>),
    status: Option<IssueStatus>,
    change: Change,
    suppress_run: bool,
) -> Option<&'a IssueId> {
    let (old_status, old_assignee) = current;
    let new_status = status.unwrap_or(old_status);
    let assignee_changed = change.as_ref().is_some_and(|a| a != old_assignee);
    let set_assignee = change.is_some();
    // The decision takes the requested assignee; an unchanged one is borrowed from the issue.
    let (requested, next_assignee) = match change {
        Some(a) => (a.clone(), Cow::Owned(a)),
        None => (None, Cow::Borrowed(old_assignee)),
    };
    let completed = !old_status.is_terminal() && new_status.is_terminal();
    if completed || cx.overlay_all {
        // Child-done and batch updates read this issue back in its new state: a field overlay,
        // which copies the assignee only when it differs from the stored record's.
        let assignee = match &next_assignee {
            Cow::Borrowed(a) if std::ptr::eq(*a, &issue.assignee) => None,
            a => Some(Option::clone(a)),
        };
        cx.patch_issue(issue, new_status, assignee);
    }
    cx.push(Decision::UpdateIssue {
        issue_id: issue.id.clone(),
        status,
        set_assignee,
        assignee: requested,
    });
    if assignee_changed && cx.policy.cancel_tasks_on_reassign {
        cx.cancel_active(&issue.id, "reassigned");
    }
    if new_status == IssueStatus::Cancelled
        && old_status != IssueStatus::Cancelled
        && cx.policy.cancel_tasks_on_issue_cancelled
    {
        cx.cancel_active(&issue.id, "issue_cancelled");
    }
    if let Some(a) = &*next_assignee {
        if assignee_changed {
            let originator = cx.request_originator(actor, task_id, Some(issue));
            run(
                cx,
                issue,
                new_status,
                a,
                TriggerSource::Assign,
                suppress_run,
                Some(actor),
                originator,
            );
        } else if old_status == IssueStatus::Backlog
            && new_status != IssueStatus::Backlog
            && !new_status.is_terminal()
        {
            let self_loop = matches!(actor, Principal::Agent(_))
                && task_id
                    .and_then(|t| cx.dir.task(t))
                    .is_some_and(|t| t.issue_id.as_ref() == Some(&issue.id));
            if self_loop {
                cx.noop(NoopReason::SelfLoop);
            } else {
                let originator = cx.request_originator(actor, task_id, Some(issue));
                run(
                    cx,
                    issue,
                    new_status,
                    a,
                    TriggerSource::Status,
                    suppress_run,
                    Some(actor),
                    originator,
                );
            }
        }
    }
    completed.then_some(&issue.id)
}

/// The run decision (§3.2) and the enqueue (§3.3). `gate_actor` is `Some` on the update path,
/// which re-checks `canInvokeAgent`; the create path has no second gate.
#[allow(clippy::too_many_arguments, reason = "the inputs of the run decision")]
fn run(
    cx: &mut Cx<'_>,
    issue: &Issue,
    status: IssueStatus,
    assignee: &Assignee,
    source: TriggerSource,
    suppress_run: bool,
    gate_actor: Option<&Principal>,
    originator: Option<UserId>,
) {
    if matches!(assignee, Assignee::Member(_)) {
        return;
    }
    if status == IssueStatus::Backlog {
        return cx.noop(NoopReason::Backlog);
    }
    if suppress_run {
        return cx.noop(NoopReason::SuppressRun);
    }
    match assignee {
        Assignee::Squad(sid) => {
            let dir = cx.dir;
            let Some(squad) = cx.squad_in(sid, &issue.workspace_id) else {
                return cx.noop(NoopReason::LeaderNotReady);
            };
            let Some(leader) = dir.agent(&squad.leader_id).filter(|a| online(a)) else {
                return cx.noop_for(NoopReason::LeaderNotReady, &squad.leader_id);
            };
            let originator = match gate_actor {
                Some(actor) => {
                    let gate_originator = match actor {
                        Principal::Member(u) => Some(u.clone()),
                        _ => cx.provenance_originator(issue),
                    };
                    if !can_invoke_agent(dir, leader, actor, gate_originator.as_ref()) {
                        return cx.noop_for(NoopReason::InvocationDenied, &leader.id);
                    }
                    gate_originator
                }
                None => originator,
            };
            if cx.has_pending(&issue.id, &leader.id) {
                return cx.noop_for(NoopReason::PendingTask, &leader.id);
            }
            cx.enqueue(NewTask {
                agent: &leader.id,
                issue: Some(&issue.id),
                leader_of: Some(&squad.id),
                trigger: None,
                originator,
                source,
                delay_seconds: None,
            });
        }
        Assignee::Agent(aid) => {
            let Some(agent) = cx.agent_in(aid, &issue.workspace_id).filter(|a| bound(a)) else {
                return cx.noop_for(NoopReason::AgentNotReady, aid);
            };
            if cx.has_pending(&issue.id, &agent.id) {
                return cx.noop_for(NoopReason::PendingTask, &agent.id);
            }
            cx.enqueue(NewTask {
                agent: &agent.id,
                issue: Some(&issue.id),
                leader_of: None,
                trigger: None,
                originator,
                source,
                delay_seconds: None,
            });
        }
        Assignee::Member(_) => {}
    }
}

/// `stageBarrierClosed` for a stage `s` (or the implicit stage when `s` is `None`).
pub(crate) fn barrier_closed(children: &[IssueView<'_>], completed_stage: Option<u32>) -> bool {
    let staged = children.iter().any(|c| c.stage.is_some());
    if !staged {
        return children.iter().all(|c| c.status.is_terminal());
    }
    let Some(s) = completed_stage else {
        return false;
    };
    children
        .iter()
        .filter(|c| c.stage.is_some_and(|cs| cs <= s))
        .all(|c| c.status.is_terminal())
}

/// The per-stage progress of the children, sorted by stage, and the next stage (0 when none).
struct Progress {
    /// (stage, done, total).
    stages: Vec<(u32, usize, usize)>,
    next: u32,
}

impl Progress {
    fn new(children: &[IssueView<'_>], closed: u32) -> Self {
        let mut stages: Vec<(u32, usize, usize)> = Vec::new();
        for c in children {
            let Some(s) = c.stage else { continue };
            let done = usize::from(c.status.is_terminal());
            match stages.iter_mut().find(|(st, _, _)| *st == s) {
                Some(e) => {
                    e.1 += done;
                    e.2 += 1;
                }
                None => stages.push((s, done, 1)),
            }
        }
        stages.sort_unstable_by_key(|e| e.0);
        let next = stages
            .iter()
            .find(|(s, d, t)| *s > closed && d < t)
            .map_or(0, |e| e.0);
        Self { stages, next }
    }
}

impl Progress {
    /// Appends `Stage 1: 3/3 done; Stage 2: 0/4 done (next)`.
    fn push_to(&self, out: &mut String) {
        for (i, (s, d, t)) in self.stages.iter().enumerate() {
            if i > 0 {
                out.push_str("; ");
            }
            out.push_str("Stage ");
            push_decimal(out, u64::from(*s));
            out.push_str(": ");
            push_decimal(out, *d as u64);
            out.push('/');
            push_decimal(out, *t as u64);
            out.push_str(" done");
            if *s == self.next {
                out.push_str(" (next)");
            }
        }
    }
}

/// Appends the decimal digits of `n`. The child-done comment is built with `push_str` and this
/// rather than `format!`: the formatting machinery cost more than the rest of the event.
fn push_decimal(out: &mut String, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        // `n % 10` is below 10, so the cast keeps it.
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for &d in &digits[i..] {
        out.push(char::from(d));
    }
}

/// Child-done (§7) for the children of one parent that this event completed (in order).
fn wake_parent(cx: &mut Cx<'_>, completed: &[&IssueId]) {
    let (parent, content, originator, then) = match plan_wake(cx, completed) {
        Wake::Nothing => return,
        Wake::Noop(reason) => return cx.noop(reason),
        Wake::Comment {
            parent,
            content,
            originator,
            then,
        } => (parent, content, originator, then),
    };
    let comment = Comment {
        id: squad_model::CommentId::new(cx.mint(IdKind::Comment)).expect("minted ids are valid"),
        issue_id: parent.clone(),
        author: Principal::System,
        parent_id: None,
        content,
        source_task_id: None,
        created_at: cx.at,
    };
    let comment_id = comment.id.clone();
    cx.push(Decision::PostComment {
        comment: Box::new(comment),
        system: true,
    });
    match then {
        Then::Noop(reason) => cx.noop(reason),
        Then::NoopFor(reason, agent) => cx.noop_for(reason, &agent),
        Then::Enqueue { agent, squad } => {
            cx.enqueue(NewTask {
                agent,
                issue: Some(&parent),
                leader_of: squad,
                trigger: Some(&comment_id),
                originator,
                source: TriggerSource::ChildDone,
                delay_seconds: None,
            });
        }
    }
}

/// What child-done decides, worked out by reading only (no issue record is copied).
enum Wake<'a> {
    /// No completed child with a parent.
    Nothing,
    /// No comment: the parent is missing, closed, parked, human-assigned, or the stage is open.
    Noop(NoopReason),
    /// The system comment on the parent, then `then`.
    Comment {
        parent: IssueId,
        content: String,
        originator: Option<UserId>,
        then: Then<'a>,
    },
}

/// What follows the child-done comment (the agent and squad to wake are borrowed from the
/// directory).
enum Then<'a> {
    Noop(NoopReason),
    NoopFor(NoopReason, AgentId),
    Enqueue {
        agent: &'a AgentId,
        squad: Option<&'a SquadId>,
    },
}

fn plan_wake<'a>(cx: &Cx<'a>, completed: &[&IssueId]) -> Wake<'a> {
    // The completed issues are in this event's overlay, so re-reading them is cheap: no list.
    let completed = || completed.iter().filter_map(|id| cx.issue(id));
    let Some(last) = completed().next_back() else {
        return Wake::Nothing;
    };
    let Some(parent_id) = &last.parent_issue_id else {
        return Wake::Nothing;
    };
    let Some(parent) = cx.issue(parent_id) else {
        return Wake::Noop(NoopReason::NoParent);
    };
    if parent.status.is_terminal() {
        return Wake::Noop(NoopReason::ParentClosed);
    }
    if parent.status == IssueStatus::Backlog {
        return Wake::Noop(NoopReason::ParentBacklog);
    }
    if matches!(parent.assignee, Some(Assignee::Member(_))) {
        return Wake::Noop(NoopReason::ParentHumanAssigned);
    }
    let dir = cx.dir;
    let children: Vec<IssueView<'_>> = dir
        .children(parent_id)
        .iter()
        .filter_map(|c| cx.issue(c))
        .collect();
    let staged = children.iter().any(|c| c.stage.is_some());
    // The stage to report: the implicit one, or the highest completed stage whose barrier is
    // closed in the final state.
    let (closed, child) = if staged {
        let mut best: Option<(u32, IssueView<'_>)> = None;
        for c in completed() {
            if let Some(s) = c.stage
                && barrier_closed(&children, Some(s))
                && best.is_none_or(|(b, _)| s >= b)
            {
                best = Some((s, c));
            }
        }
        match best {
            Some((s, c)) => (Some(s), c),
            None => return Wake::Noop(NoopReason::StageOpen),
        }
    } else if barrier_closed(&children, None) {
        (None, last)
    } else {
        return Wake::Noop(NoopReason::StageOpen);
    };
    let content = child_done_comment(
        cx,
        parent,
        child,
        &children,
        closed,
        completed().nth(1).is_some(),
    );
    let originator = cx.provenance_originator(parent.issue);
    let then = match parent.assignee {
        None | Some(Assignee::Member(_)) => Then::Noop(NoopReason::ParentUnassigned),
        Some(Assignee::Agent(aid)) => match dir.agent(aid).filter(|a| bound(a)) {
            None => Then::NoopFor(NoopReason::AgentNotReady, aid.clone()),
            Some(agent) if cx.has_pending(&parent.id, &agent.id) => {
                Then::NoopFor(NoopReason::PendingTask, agent.id.clone())
            }
            Some(agent) => Then::Enqueue {
                agent: &agent.id,
                squad: None,
            },
        },
        Some(Assignee::Squad(sid)) => {
            // No self-trigger guard and no invocation gate here (MUL-3969, MUL-4063).
            match dir.squad(sid) {
                None => Then::Noop(NoopReason::SquadNotFound),
                Some(squad) => match dir.agent(&squad.leader_id).filter(|a| bound(a)) {
                    None => Then::NoopFor(NoopReason::LeaderNotReady, squad.leader_id.clone()),
                    Some(leader) if cx.has_pending(&parent.id, &leader.id) => {
                        Then::NoopFor(NoopReason::PendingTask, leader.id.clone())
                    }
                    Some(leader) => Then::Enqueue {
                        agent: &leader.id,
                        squad: Some(&squad.id),
                    },
                },
            }
        }
    };
    Wake::Comment {
        parent: parent.id.clone(),
        content,
        originator,
        then,
    }
}

/// `SQ-12` from the workspace prefix and the issue number, else the id (written without an
/// intermediate string).
struct Identifier<'c> {
    prefix: Option<&'c str>,
    number: Option<u64>,
    id: &'c IssueId,
}

impl<'c> Identifier<'c> {
    fn new(cx: &Cx<'c>, issue: &'c Issue) -> Self {
        Self {
            prefix: cx
                .dir
                .workspace(&issue.workspace_id)
                .map(|w| w.issue_prefix.as_str()),
            number: cx.dir.issue_number(&issue.id),
            id: &issue.id,
        }
    }
}

impl Identifier<'_> {
    fn push_to(&self, out: &mut String) {
        match (self.prefix, self.number) {
            (Some(p), Some(n)) => {
                out.push_str(p);
                out.push('-');
                push_decimal(out, n);
            }
            _ => out.push_str(self.id.as_str()),
        }
    }
}

/// The mention of the parent's assignee and a space (`[@Name](mention://agent/<id>) `), or
/// nothing: the label is the name without `]`, or `assignee` when that leaves nothing.
struct AssigneeMention<'c>(Option<(MentionKind, &'c str, &'c str)>);

impl AssigneeMention<'_> {
    fn push_to(&self, out: &mut String) {
        let Some((kind, id, name)) = self.0 else {
            return;
        };
        out.push_str("[@");
        if !name.is_empty() && !name.as_bytes().contains(&b']') {
            out.push_str(name);
        } else if name.chars().all(|c| c == ']') {
            out.push_str("assignee");
        } else {
            for part in name.split(']') {
                out.push_str(part);
            }
        }
        out.push_str("](mention://");
        out.push_str(kind.as_str());
        out.push('/');
        out.push_str(id);
        out.push_str(") ");
    }
}

/// A title with its mention links defused (`](mention://` becomes `] (mention-stripped://`).
struct Defused<'c>(&'c str);

impl Defused<'_> {
    fn push_to(&self, out: &mut String) {
        // Most titles have no `]` at all: skip the substring search.
        if !self.0.as_bytes().contains(&b']') {
            return out.push_str(self.0);
        }
        for (i, part) in self.0.split("](mention://").enumerate() {
            if i > 0 {
                out.push_str("] (mention-stripped://");
            }
            out.push_str(part);
        }
    }
}

/// What the leader is told to do after a stage closed.
struct Advance<'c> {
    next: u32,
    parent_ref: &'c Identifier<'c>,
}

impl Advance<'_> {
    fn push_to(&self, out: &mut String) {
        if self.next > 0 {
            out.push_str(" Stage ");
            push_decimal(out, u64::from(self.next));
            out.push_str(" is next: check the layout with `multica issue children ");
            self.parent_ref.push_to(out);
            out.push_str(
                "`, then move that stage's `backlog` sub-issues to `todo` once their dependencies are met.",
            );
        } else {
            out.push_str(
                " Closing this stage does not by itself finish the issue: either mark the parent ready \
                 with `multica issue status ",
            );
            self.parent_ref.push_to(out);
            out.push_str(" in_review`, or create the next stage.");
        }
    }
}

/// The child-done system comment, built in one string.
fn child_done_comment(
    cx: &Cx<'_>,
    parent: IssueView<'_>,
    child: IssueView<'_>,
    children: &[IssueView<'_>],
    closed: Option<u32>,
    batch: bool,
) -> String {
    let prefix = AssigneeMention(match parent.assignee {
        Some(Assignee::Agent(a)) => Some((
            MentionKind::Agent,
            a.as_str(),
            cx.dir.agent(a).map_or("", |a| a.name.as_str()),
        )),
        Some(Assignee::Squad(s)) => Some((
            MentionKind::Squad,
            s.as_str(),
            cx.dir.squad(s).map_or("", |s| s.name.as_str()),
        )),
        _ => None,
    });
    let ident = Identifier::new(cx, child.issue);
    let title = Defused(&child.title);
    let parent_ref = Identifier::new(cx, parent.issue);
    // Room for the longest wording with typical ids, so that the string is allocated once.
    let mut out = String::with_capacity(640 + child.title.len());
    prefix.push_to(&mut out);
    // The child as `[SQ-12](mention://issue/<id>) — "<title>"`.
    let child_link = |out: &mut String| {
        out.push('[');
        ident.push_to(out);
        out.push_str("](mention://issue/");
        out.push_str(child.id.as_str());
        out.push_str(") — \"");
        title.push_to(out);
        out.push('"');
    };
    match closed {
        None => {
            out.push_str("All sub-issues are complete — the last one, ");
            child_link(&mut out);
            out.push_str(
                ", just finished. Carry the parent forward by pulling the sub-issues' results \
                 together; if nothing is left to do, run `multica issue status ",
            );
            parent_ref.push_to(&mut out);
            out.push_str(" in_review`.");
        }
        Some(s) => {
            let summary = Progress::new(children, s);
            let advance = Advance {
                next: summary.next,
                parent_ref: &parent_ref,
            };
            out.push_str("Stage ");
            push_decimal(&mut out, u64::from(s));
            if batch {
                out.push_str(
                    " of this issue is complete — its sub-issues just finished together in a \
                     batch update, most recently ",
                );
                child_link(&mut out);
                out.push_str(". Stage progress — ");
            } else {
                out.push_str(" of this issue is complete — its last sub-issue ");
                child_link(&mut out);
                out.push_str(" — just finished. Stage progress — ");
            }
            summary.push_to(&mut out);
            out.push('.');
            advance.push_to(&mut out);
        }
    }
    out
}

/// The claim response (§5).
fn claim(cx: &mut Cx<'_>, task_id: &TaskId) {
    let dir = cx.dir;
    let Some(task) = dir.task(task_id) else {
        return;
    };
    if task.status == TaskStatus::Queued {
        cx.push(Decision::SetTaskStatus {
            task_id: task_id.clone(),
            status: TaskStatus::Dispatched,
        });
    }
    let plain = Decision::Claim {
        task_id: task_id.clone(),
        is_leader_task: false,
        squad_id: None,
        owns_issue_status: None,
        leader_role_resolved: true,
    };
    if !task.is_leader_task {
        cx.noop(NoopReason::NotLeaderTask);
        return cx.push(plain);
    }
    let issue = task.issue_id.as_ref().and_then(|i| cx.issue(i));
    let squad = task
        .squad_id
        .as_ref()
        .and_then(|s| dir.squad(s))
        .filter(|s| {
            issue.is_none_or(|i| i.workspace_id == s.workspace_id) && s.leader_id == task.agent_id
        });
    let Some(squad) = squad else {
        return cx.push(plain);
    };
    let owns =
        issue.is_some_and(|i| matches!(i.assignee, Some(Assignee::Squad(s)) if s == &squad.id));
    cx.push(Decision::Claim {
        task_id: task_id.clone(),
        is_leader_task: true,
        squad_id: Some(squad.id.clone()),
        owns_issue_status: Some(owns),
        leader_role_resolved: true,
    });
}
