//! Autopilots (§6): save-time validation and dispatch (`create_issue`, `run_only`).

use squad_model::{
    Actor, Agent, Assignee, Autopilot, AutopilotStatus, ExecutionMode, Issue, IssueId, IssueStatus,
    Origin, SquadId, UserId,
};

use super::{Cx, IdKind, NewTask};
use crate::decision::{Decision, NoopReason, TriggerSource};
use crate::event::{AutopilotTrigger, SaveAutopilot, TriggerAutopilot};
use crate::invoke::{autopilot_admits, can_invoke_agent};
use crate::records::Principal;

/// Save-time validation of an autopilot (§6).
pub(super) fn save_autopilot(cx: &mut Cx<'_>, e: &SaveAutopilot) {
    let SaveAutopilot {
        actor,
        task_id,
        autopilot_id,
        workspace_id,
        title,
        assignee_type,
        assignee_id,
        execution_mode,
        status,
    } = e;
    let originator = cx.request_originator(actor, task_id.as_ref(), None);
    let active = *status == AutopilotStatus::Active;
    let assignee = match assignee_type.as_str() {
        "squad" => {
            let Some(squad) = cx.squad_in_str(assignee_id, workspace_id) else {
                return cx.reject(400, "assignee must be a valid squad in this workspace");
            };
            if squad.is_archived() {
                return cx.reject(422, "squad is archived; pick a different squad");
            }
            let Some(leader) = cx.dir.agent(&squad.leader_id) else {
                return cx.reject(400, "squad leader agent not found");
            };
            if leader.is_archived() {
                return cx.reject(
                    422,
                    "squad leader is archived; pick a different squad or rotate the leader before assigning autopilot",
                );
            }
            if active && leader.runtime.is_none() {
                return cx.reject(
                    422,
                    "squad leader needs a runtime before this autopilot can be active",
                );
            }
            if !can_invoke_agent(cx.dir, leader, actor, originator.as_ref()) {
                return cx.reject(403, "cannot assign autopilot to squad with private leader");
            }
            Assignee::Squad(squad.id.clone())
        }
        "agent" => {
            let Some(agent) = cx.agent_in_str(assignee_id, workspace_id) else {
                return cx.reject(400, "assignee must be a valid agent in this workspace");
            };
            if agent.is_archived() {
                return cx.reject(422, "assignee agent is archived");
            }
            if active && agent.runtime.is_none() {
                return cx.reject(
                    422,
                    "agent needs a runtime before this autopilot can be active",
                );
            }
            if !can_invoke_agent(cx.dir, agent, actor, originator.as_ref()) {
                return cx.reject(403, "cannot assign autopilot to private agent");
            }
            Assignee::Agent(agent.id.clone())
        }
        _ => return cx.reject(400, "assignee_type must be agent or squad"),
    };
    // An update keeps the creator; a new autopilot is created by the member, or by the agent
    // (an agent-created autopilot, admitted by workspace targets at dispatch).
    let creator = match (cx.dir.autopilot(autopilot_id), actor) {
        (Some(a), _) => a.creator.clone(),
        (None, Principal::Member(u)) => Actor::Member(u.clone()),
        (None, Principal::Agent(a)) => Actor::Agent(a.clone()),
        (None, Principal::System) => return cx.reject(400, "autopilot needs a creator"),
    };
    cx.push(Decision::SaveAutopilot {
        autopilot: Box::new(Autopilot {
            id: autopilot_id.clone(),
            workspace_id: workspace_id.clone(),
            title: title.clone(),
            assignee: Some(assignee),
            execution_mode: *execution_mode,
            status: *status,
            pause_reason: None,
            creator,
        }),
    });
}

/// An autopilot fires (§6): dispatch admission, then `create_issue` or `run_only`.
pub(super) fn trigger_autopilot(cx: &mut Cx<'_>, e: &TriggerAutopilot) {
    let Some(ap) = cx.dir.autopilot(&e.autopilot_id) else {
        return;
    };
    dispatch(cx, ap, e.trigger, e.actor.as_ref());
}

fn skip(cx: &mut Cx<'_>, ap: &Autopilot, reason: impl Into<String>, code: &'static str) {
    cx.push(Decision::SkipAutopilotRun {
        autopilot_id: ap.id.clone(),
        reason: reason.into(),
        code,
    });
}

/// Resolves the agent that runs the autopilot; pushes a skip and returns `None` when it cannot.
fn resolve<'a>(cx: &mut Cx<'a>, ap: &Autopilot) -> Option<(&'a Agent, Option<SquadId>)> {
    let dir = cx.dir;
    match &ap.assignee {
        Some(Assignee::Squad(s)) => {
            let Some(squad) = dir.squad(s) else {
                skip(
                    cx,
                    ap,
                    "assignee squad cannot be resolved",
                    "target_unavailable",
                );
                return None;
            };
            if squad.is_archived() {
                skip(cx, ap, "assignee squad is archived", "target_unavailable");
                return None;
            }
            let Some(leader) = dir.agent(&squad.leader_id) else {
                skip(
                    cx,
                    ap,
                    "assignee agent no longer exists",
                    "target_unavailable",
                );
                return None;
            };
            if leader.is_archived() {
                skip(
                    cx,
                    ap,
                    "squad leader agent is archived",
                    "target_unavailable",
                );
                return None;
            }
            if leader.runtime.is_none() {
                skip(
                    cx,
                    ap,
                    "squad leader agent has no runtime bound",
                    "agent_runtime_required",
                );
                return None;
            }
            Some((leader, Some(squad.id.clone())))
        }
        Some(Assignee::Agent(a)) => {
            let Some(agent) = dir.agent(a) else {
                skip(
                    cx,
                    ap,
                    "assignee agent no longer exists",
                    "target_unavailable",
                );
                return None;
            };
            if agent.is_archived() {
                skip(cx, ap, "assignee agent is archived", "target_unavailable");
                return None;
            }
            if agent.runtime.is_none() {
                skip(
                    cx,
                    ap,
                    "assignee agent has no runtime bound",
                    "agent_runtime_required",
                );
                return None;
            }
            Some((agent, None))
        }
        None | Some(Assignee::Member(_)) => {
            skip(cx, ap, "autopilot has no assignee", "target_unavailable");
            None
        }
    }
}

fn dispatch(cx: &mut Cx<'_>, ap: &Autopilot, trigger: AutopilotTrigger, actor: Option<&UserId>) {
    if ap.status == AutopilotStatus::Paused {
        return cx.noop(NoopReason::AutopilotPaused);
    }
    let Some((agent, squad)) = resolve(cx, ap) else {
        return;
    };
    if ap.execution_mode == ExecutionMode::RunOnly && !agent.is_online() {
        return skip(
            cx,
            ap,
            "agent runtime is offline at dispatch time",
            "runtime_offline",
        );
    }
    let admitted = match trigger {
        AutopilotTrigger::Manual => {
            actor.is_some_and(|u| autopilot_admits(cx.dir, agent, &Actor::Member(u.clone())))
        }
        _ => autopilot_admits(cx.dir, agent, &ap.creator),
    };
    if !admitted {
        let reason = if trigger == AutopilotTrigger::Manual {
            "you are not allowed to trigger this autopilot's assignee agent"
        } else {
            "autopilot creator lacks access to private assignee agent"
        };
        return skip(cx, ap, reason, "invocation_not_allowed");
    }
    let originator = match trigger {
        AutopilotTrigger::Manual => actor.cloned(),
        _ => None,
    };
    match ap.execution_mode {
        ExecutionMode::CreateIssue => {
            let window = i64::from(cx.policy.autopilot_dedup_seconds);
            let duplicate = cx.dir.autopilot_issues(&ap.id).iter().any(|i| {
                cx.issue(i).is_some_and(|i| {
                    i.title == ap.title
                        && !i.status.is_terminal()
                        && cx.at.seconds_since(&i.created_at) < window
                })
            });
            if duplicate {
                return skip(
                    cx,
                    ap,
                    "an open issue with this title was created by this autopilot moments ago",
                    "already_active",
                );
            }
            let issue_id = IssueId::new(cx.mint(IdKind::Issue)).expect("minted ids are valid");
            let assignee = match &squad {
                Some(s) => Assignee::Squad(s.clone()),
                None => Assignee::Agent(agent.id.clone()),
            };
            let issue = Issue {
                id: issue_id.clone(),
                workspace_id: ap.workspace_id.clone(),
                title: ap.title.clone(),
                status: IssueStatus::Todo,
                assignee: Some(assignee),
                parent_issue_id: None,
                stage: None,
                origin: Some(Origin {
                    kind: "autopilot".to_owned(),
                    id: Some(ap.id.as_str().to_owned()),
                }),
                creator: Some(Actor::Agent(agent.id.clone())),
                created_at: cx.at,
            };
            cx.push(Decision::CreateIssue {
                issue: Box::new(issue.clone()),
                number: None,
            });
            cx.set_issue(issue);
            cx.push(Decision::AutopilotRun {
                autopilot_id: ap.id.clone(),
                squad_id: squad.clone(),
                status: "issue_created",
            });
            cx.enqueue(NewTask {
                agent: &agent.id,
                issue: Some(&issue_id),
                leader_of: squad.as_ref(),
                trigger: None,
                originator,
                source: TriggerSource::AutopilotCreateIssue,
                delay_seconds: None,
            });
        }
        ExecutionMode::RunOnly => {
            cx.push(Decision::AutopilotRun {
                autopilot_id: ap.id.clone(),
                squad_id: squad,
                status: "running",
            });
            cx.enqueue(NewTask {
                agent: &agent.id,
                issue: None,
                leader_of: None,
                trigger: None,
                originator,
                source: TriggerSource::AutopilotRunOnly,
                delay_seconds: None,
            });
        }
    }
}
