//! Tasks: status changes and retries, claims (§5) and quick-create.

use squad_model::{Agent, Assignee, Squad, Task, TaskContext, TaskStatus};

use super::issues::{assignable_leader, check_assignable_agent};
use super::{Cx, bound};
use crate::decision::{Decision, NoopReason, Rule, TriggerSource};
use crate::event::{ClaimTask, QuickCreate, SetTaskStatus};
use crate::records::Principal;

/// A task changes status. Tasks only move forward: a finished task stays finished, and a task
/// that left the queue never becomes pending again (a retry is a new task). This keeps "at most
/// one pending task per (issue, agent)" true whatever the runtime reports. A task that fails with
/// attempts left is retried (§1).
pub(super) fn set_task_status(cx: &mut Cx<'_>, e: &SetTaskStatus) {
    let SetTaskStatus { task_id, status } = e;
    let old = cx.dir.task(task_id);
    if let Some(old) = old {
        if old.status.is_terminal() && old.status != *status {
            return cx.reject(409, "task is already finished");
        }
        if status.is_pending() && old.status == TaskStatus::Deferred {
            // A deferred escalation comes due: if the agent meanwhile has a pending task on the
            // issue, that task absorbs it.
            if let Some(issue) = &old.issue_id
                && cx.has_pending(issue, &old.agent_id)
            {
                return cx.push(Decision::Cancel {
                    task_id: task_id.clone(),
                    reason: "coalesced",
                    rule: Rule::DeferredDue,
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
    if *status == TaskStatus::Failed
        && let Some(old) = old
        && !old.status.is_terminal()
    {
        retry(cx, old);
    }
}

/// Retries a failed task (multica's attempt `n + 1` of `max_attempts`): a new queued task of the
/// same agent on the same issue that inherits `is_leader_task`, `squad_id`, `trigger_comment_id`
/// and `originator_user_id` (and the context). With `max_attempts` 0 the host retries itself and
/// nothing is decided here.
fn retry(cx: &mut Cx<'_>, failed: &Task) {
    cx.rule = Rule::Retry;
    let max = cx.policy.max_attempts;
    if max == 0 {
        return;
    }
    if failed.attempt >= max {
        return cx.noop_for(NoopReason::AttemptsExhausted, &failed.agent_id);
    }
    if cx
        .dir
        .agent(&failed.agent_id)
        .is_none_or(Agent::is_archived)
    {
        return cx.noop_for(NoopReason::AgentNotReady, &failed.agent_id);
    }
    if let Some(issue) = &failed.issue_id {
        if cx.issue(issue).is_none() {
            return cx.noop_for(NoopReason::IssueNotFound, &failed.agent_id);
        }
        // A task queued meanwhile (a comment while the failed one ran) does the work. The failed
        // task itself does not count: one that fails while still queued or dispatched (a
        // prepare timeout, R60) is retried like one that fails while running.
        if cx
            .pending(issue, &failed.agent_id)
            .is_some_and(|pending| pending != failed.id)
        {
            return cx.noop_for(NoopReason::PendingTask, &failed.agent_id);
        }
    }
    let task = Task {
        id: cx.mint_task_id(),
        status: TaskStatus::Queued,
        attempt: failed.attempt + 1,
        created_at: cx.at,
        ..failed.clone()
    };
    cx.push(Decision::Enqueue {
        task: Box::new(task),
        source: TriggerSource::Retry,
        delay_seconds: None,
        rule: Rule::Retry,
    });
}

/// The claim response (§5): whether the leader briefing is injected, for which squad and with
/// which responsibility 6 ([`briefing::claim_instructions`](crate::briefing::claim_instructions)
/// renders the text).
pub(super) fn claim(cx: &mut Cx<'_>, e: &ClaimTask) {
    let dir = cx.dir;
    let Some(task) = dir.task(&e.task_id) else {
        return;
    };
    if task.status == TaskStatus::Queued {
        cx.push(Decision::SetTaskStatus {
            task_id: task.id.clone(),
            status: TaskStatus::Dispatched,
        });
    }
    if let Some(TaskContext::QuickCreate {
        squad_id: Some(sid),
        ..
    }) = task.context.as_deref()
    {
        // Quick-create: no issue yet, so the leader never owns its status.
        match dir.squad(sid).filter(|s| s.leader_id == task.agent_id) {
            Some(squad) => return briefed(cx, task, squad, false, true),
            None => return plain_claim(cx, task),
        }
    }
    if !task.is_leader_task {
        cx.noop(NoopReason::NotLeaderTask);
        return plain_claim(cx, task);
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
        return plain_claim(cx, task);
    };
    let owns =
        issue.is_some_and(|i| matches!(i.assignee, Some(Assignee::Squad(s)) if s == &squad.id));
    briefed(cx, task, squad, owns, false);
}

/// A claim without a briefing: `is_leader_task` is cleared.
fn plain_claim(cx: &mut Cx<'_>, task: &Task) {
    cx.push(Decision::Claim {
        task_id: task.id.clone(),
        is_leader_task: false,
        squad_id: None,
        squad_name: None,
        owns_issue_status: None,
        leader_role_resolved: true,
    });
}

/// A claim with the leader briefing (`quick`: a quick-create task, which also names the squad).
fn briefed(cx: &mut Cx<'_>, task: &Task, squad: &Squad, owns: bool, quick: bool) {
    cx.push(Decision::Claim {
        task_id: task.id.clone(),
        is_leader_task: true,
        squad_id: Some(squad.id.clone()),
        squad_name: quick.then(|| squad.name.clone()),
        owns_issue_status: Some(owns),
        leader_role_resolved: true,
    });
}

/// Quick-create (§5): a task without an issue for the agent, or for the squad's leader with a
/// context naming the squad. The checks are the assignment's (§3.1): the target must be in the
/// workspace and not archived, and the member must be allowed to invoke the agent.
pub(super) fn quick_create(cx: &mut Cx<'_>, e: &QuickCreate) {
    let ws = &e.workspace_id;
    if cx.dir.workspace_role(ws, &e.actor).is_none() {
        return cx.reject(404, "workspace not found");
    }
    let actor = Principal::Member(e.actor.clone());
    let dir = cx.dir;
    let (agent, squad) = match e.target_type.as_str() {
        "squad" => {
            let Some(squad) = cx.squad_in_str(&e.target_id, ws) else {
                return cx.reject(400, "target_id does not refer to a squad in this workspace");
            };
            match assignable_leader(dir, squad, &actor, None) {
                Ok(leader) => (leader, Some(squad)),
                Err((code, message)) => return cx.reject(code, message),
            }
        }
        "agent" => {
            let Some(agent) = cx.agent_in_str(&e.target_id, ws) else {
                return cx.reject(
                    400,
                    "target_id does not refer to an agent in this workspace",
                );
            };
            if let Err((code, message)) = check_assignable_agent(dir, agent, &actor, None) {
                return cx.reject(code, message);
            }
            (agent, None)
        }
        _ => return cx.reject(400, "target_type must be 'agent' or 'squad'"),
    };
    if !bound(agent) {
        let reason = if squad.is_some() {
            NoopReason::LeaderNotReady
        } else {
            NoopReason::AgentNotReady
        };
        return cx.noop_for(reason, &agent.id);
    }
    let task = Task {
        id: cx.mint_task_id(),
        agent_id: agent.id.clone(),
        issue_id: None,
        status: TaskStatus::Queued,
        is_leader_task: false,
        squad_id: None,
        trigger_comment_id: None,
        originator_user_id: Some(e.actor.clone()),
        head_sha: None,
        context: Some(Box::new(TaskContext::QuickCreate {
            squad_id: squad.map(|s| s.id.clone()),
            prompt: e.prompt.clone(),
        })),
        attempt: 1,
        created_at: cx.at,
    };
    cx.push(Decision::Enqueue {
        task: Box::new(task),
        source: TriggerSource::QuickCreate,
        delay_seconds: None,
        rule: Rule::QuickCreate,
    });
}
