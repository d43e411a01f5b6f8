//! Issues (§3): assignment validation, the run decision, cancellation on reassignment; creation,
//! updates, batch updates and deletion. Child-done runs from here (see `child_done.rs`).

use squad_model::{
    Actor, Agent, Assignee, Issue, IssueId, IssueStatus, Squad, TaskId, UserId, WorkspaceId,
};

use std::borrow::Cow;

use super::child_done::wake_parent;
use super::{Cx, NewTask, bound, online};
use crate::decision::{Decision, NoopReason, Rule, TriggerSource};
use crate::directory::Directory;
use crate::event::{BatchUpdate, CreateIssue, DeleteIssue, UpdateIssue};
use crate::invoke::can_invoke_agent;
use crate::records::Principal;

/// Creates an issue (§3): assignment validation, then the run decision (no second gate).
pub(super) fn create_issue(cx: &mut Cx<'_>, e: &CreateIssue) {
    let CreateIssue {
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
    } = e;
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
            &Run {
                issue: &issue,
                status: issue.status,
                assignee: a,
                source: TriggerSource::Assign,
                suppress_run: *suppress_run,
                gate: Gate::Checked(originator),
            },
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

/// Updates one issue (§3): validation, cancellation, the run decision, then child-done.
pub(super) fn update_issue(cx: &mut Cx<'_>, e: &UpdateIssue) {
    let dir = cx.dir;
    let Some(issue) = dir.issue(&e.issue_id) else {
        return cx.reject(404, "issue not found");
    };
    let req = Request {
        actor: &e.actor,
        task_id: e.task_id.as_ref(),
        status: e.status,
        suppress_run: e.suppress_run,
    };
    let Some(change) = validated_change(
        cx,
        &req,
        issue,
        (
            e.assignee_type.as_deref(),
            e.assignee_id.as_deref(),
            e.unassign,
        ),
    ) else {
        return;
    };
    if let Some(done) = update_one(cx, &req, issue, (issue.status, &issue.assignee), change) {
        wake_parent(cx, &[done]);
    }
}

/// Applies one update to several issues (§3, §7.1): a refused assignment refuses the whole batch,
/// and child-done runs after every write, once per parent.
pub(super) fn batch_update(cx: &mut Cx<'_>, e: &BatchUpdate) {
    cx.overlay_all = true;
    let req = Request {
        actor: &e.actor,
        task_id: e.task_id.as_ref(),
        status: e.status,
        suppress_run: e.suppress_run,
    };
    let mut completed = Vec::new();
    let dir = cx.dir;
    for id in &e.issue_ids {
        // An issue this batch already updated builds on its overlay (only a changed assignee is
        // copied out of it); the others are read from the directory.
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
            &req,
            issue,
            (e.assignee_type.as_deref(), e.assignee_id.as_deref(), false),
        ) else {
            // A refused assignment refuses the whole batch: drop what the earlier issues decided
            // and keep only the rejection.
            let reject = cx.out.pop();
            cx.out.clear();
            cx.out.extend(reject);
            return;
        };
        if let Some(done) = update_one(cx, &req, issue, (cur_status, cur_assignee), change) {
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

/// Deletes an issue: every task on it is cancelled, in every era.
pub(super) fn delete_issue(cx: &mut Cx<'_>, e: &DeleteIssue) {
    cx.rule = Rule::DeleteCancels;
    cx.cancel_active(&e.issue_id, "issue_deleted");
    cx.push(Decision::DeleteIssue {
        issue_id: e.issue_id.clone(),
    });
}

/// The fields of an update request that every updated issue shares.
struct Request<'r> {
    actor: &'r Principal,
    task_id: Option<&'r TaskId>,
    status: Option<IssueStatus>,
    suppress_run: bool,
}

/// The assignee change a request asks for: `None` = unchanged, `Some(None)` = unassign.
type Change = Option<Option<Assignee>>;

/// Validates the request's assignee fields; on refusal pushes the rejection and returns `None`.
fn validated_change(
    cx: &mut Cx<'_>,
    req: &Request<'_>,
    issue: &Issue,
    (ty, id, unassign): (Option<&str>, Option<&str>, bool),
) -> Option<Change> {
    if unassign {
        return Some(Some(None));
    }
    if ty.is_none() && id.is_none() {
        return Some(None);
    }
    let originator = cx.request_originator_ref(req.actor, req.task_id, Some(issue));
    match validate_assignee(cx, &issue.workspace_id, req.actor, originator, ty, id) {
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
            assignable_leader(cx.dir, squad, actor, originator)?;
            Ok(Some(Assignee::Squad(squad.id.clone())))
        }
        "agent" => {
            let agent = cx.agent_in_str(id, ws).ok_or((
                400,
                "assignee_id does not refer to an agent in this workspace",
            ))?;
            check_assignable_agent(cx.dir, agent, actor, originator)?;
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

/// The leader of a squad the caller found, when `actor` may assign to the squad (§3.1): the
/// squad is not archived, its leader exists and is not archived, and the actor (or the request's
/// originator) may invoke the leader.
///
/// # Errors
///
/// The rejection's code and message.
pub(super) fn assignable_leader<'a>(
    dir: &'a dyn Directory,
    squad: &Squad,
    actor: &Principal,
    originator: Option<&UserId>,
) -> Result<&'a Agent, (u16, &'static str)> {
    if squad.is_archived() {
        return Err((400, "cannot assign to an archived squad"));
    }
    let leader = dir
        .agent(&squad.leader_id)
        .filter(|a| !a.is_archived())
        .ok_or((400, "squad leader is archived; cannot assign to this squad"))?;
    if !can_invoke_agent(dir, leader, actor, originator) {
        return Err((403, "cannot assign to squad with private leader"));
    }
    Ok(leader)
}

/// Whether `actor` may assign to an agent the caller found (§3.1): the agent is not archived
/// and the actor (or the request's originator) may invoke it.
///
/// # Errors
///
/// The rejection's code and message.
pub(super) fn check_assignable_agent(
    dir: &dyn Directory,
    agent: &Agent,
    actor: &Principal,
    originator: Option<&UserId>,
) -> Result<(), (u16, &'static str)> {
    if agent.is_archived() {
        return Err((400, "cannot assign to archived agent"));
    }
    if !can_invoke_agent(dir, agent, actor, originator) {
        return Err((403, "cannot assign to private agent"));
    }
    Ok(())
}

/// Applies one issue update and its run decision. `issue` is the stored record and `current`
/// its status and assignee as this event has left them so far. Returns the issue's id when the
/// update completed it (non-terminal to terminal), for child-done.
fn update_one<'a>(
    cx: &mut Cx<'a>,
    req: &Request<'_>,
    issue: &'a Issue,
    current: (IssueStatus, &Option<Assignee>),
    change: Change,
) -> Option<&'a IssueId> {
    let Request {
        actor,
        task_id,
        status,
        suppress_run,
    } = *req;
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
        cx.rule = Rule::ReassignCancels;
        cx.cancel_active(&issue.id, "reassigned");
    }
    if new_status == IssueStatus::Cancelled
        && old_status != IssueStatus::Cancelled
        && cx.policy.cancel_tasks_on_issue_cancelled
    {
        cx.rule = Rule::IssueCancelledCancels;
        cx.cancel_active(&issue.id, "issue_cancelled");
    }
    if let Some(a) = &*next_assignee {
        let source = if assignee_changed {
            Some(TriggerSource::Assign)
        } else if old_status == IssueStatus::Backlog
            && new_status != IssueStatus::Backlog
            && !new_status.is_terminal()
        {
            let self_loop = matches!(actor, Principal::Agent(_))
                && task_id
                    .and_then(|t| cx.dir.task(t))
                    .is_some_and(|t| t.issue_id.as_ref() == Some(&issue.id));
            if self_loop {
                cx.rule = Rule::Promote;
                cx.noop(NoopReason::SelfLoop);
                None
            } else {
                Some(TriggerSource::Status)
            }
        } else {
            None
        };
        if let Some(source) = source {
            run(
                cx,
                &Run {
                    issue,
                    status: new_status,
                    assignee: a,
                    source,
                    suppress_run,
                    gate: Gate::Update {
                        actor,
                        originator: cx.request_originator(actor, task_id, Some(issue)),
                    },
                },
            );
        }
    }
    completed.then_some(&issue.id)
}

/// The inputs of the run decision (§3.2).
struct Run<'r> {
    issue: &'r Issue,
    /// The status after the write.
    status: IssueStatus,
    assignee: &'r Assignee,
    source: TriggerSource,
    suppress_run: bool,
    gate: Gate<'r>,
}

/// Who the enqueue gate (§3.3) checks.
enum Gate<'r> {
    /// The create path: assignment validation already ran the gate; the task takes this
    /// originator.
    Checked(Option<UserId>),
    /// The update path re-checks `canInvokeAgent` for a squad's leader with this actor, taking
    /// the issue's provenance as the originator of an agent or system actor; an agent assignee's
    /// task takes the request's originator.
    Update {
        actor: &'r Principal,
        originator: Option<UserId>,
    },
}

/// The run decision (§3.2) and the enqueue (§3.3).
fn run(cx: &mut Cx<'_>, r: &Run<'_>) {
    let Run {
        issue,
        status,
        assignee,
        source,
        suppress_run,
        ref gate,
    } = *r;
    cx.rule = if source == TriggerSource::Status {
        Rule::Promote
    } else {
        Rule::Assign
    };
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
            let originator = match gate {
                Gate::Update { actor, .. } => {
                    let gate_originator = match actor {
                        Principal::Member(u) => Some(u.clone()),
                        _ => cx.provenance_originator(issue),
                    };
                    if !can_invoke_agent(dir, leader, actor, gate_originator.as_ref()) {
                        return cx.noop_for(NoopReason::InvocationDenied, &leader.id);
                    }
                    gate_originator
                }
                Gate::Checked(originator) => originator.clone(),
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
            let originator = match gate {
                Gate::Checked(originator) | Gate::Update { originator, .. } => originator.clone(),
            };
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
