//! Squad management (§2): create, update, archive, members, leader evaluations.

use squad_model::{AgentId, MemberRef, Squad, SquadId, SquadMember, SquadMemberId, TaskId, UserId};

use super::Cx;
use crate::decision::Decision;
use crate::event::{
    AddMember, ArchiveSquad, CreateSquad, RecordEvaluation, RemoveMember, SetMemberRole,
    UpdateSquad,
};
use crate::invoke::can_invoke_agent;
use crate::mention::is_uuid;
use crate::records::{EvaluationOutcome, Principal, WorkspaceRole};

/// `PATCH /squads/<id>` (§2): absent fields are unchanged.
pub(super) fn update_squad(cx: &mut Cx<'_>, e: &UpdateSquad) {
    let UpdateSquad {
        actor,
        squad_id,
        name,
        description,
        instructions,
        leader_id,
        avatar_url,
    } = e;
    let Some((squad, role)) = managed(cx, actor, squad_id) else {
        return;
    };
    let mut next = squad.clone();
    let mut leader_changed = None;
    if let Some(l) = leader_id {
        let Some(agent) = cx.agent_in_str(l, &squad.workspace_id) else {
            return cx.reject(400, "leader must be a valid agent in this workspace");
        };
        if !role.is_admin()
            && !can_invoke_agent(cx.dir, agent, &Principal::Member(actor.clone()), None)
        {
            return cx.reject(
                403,
                "you can only use an agent you have access to as leader",
            );
        }
        next.leader_id = agent.id.clone();
        leader_changed = Some(agent);
    }
    if let Some(v) = name {
        next.name.clone_from(v);
    }
    if let Some(v) = description {
        next.description.clone_from(v);
    }
    if let Some(v) = instructions {
        next.instructions.clone_from(v);
    }
    if let Some(v) = avatar_url {
        next.avatar_url = Some(v.clone());
    }
    next.updated_at = cx.at;
    cx.push(Decision::UpdateSquad {
        squad: Box::new(next),
    });
    if let Some(agent) = leader_changed {
        let member = MemberRef::Agent(agent.id.clone());
        if !has_member(cx, squad_id, &member) {
            let row = member_row(cx, squad_id, member, "leader");
            cx.push(Decision::AddMember {
                member: Box::new(row),
            });
        }
        if agent.runtime.is_none() {
            for ap in cx.dir.squad_autopilots(squad_id) {
                if cx
                    .dir
                    .autopilot(&ap)
                    .is_some_and(|a| a.status == squad_model::AutopilotStatus::Active)
                {
                    cx.push(Decision::PauseAutopilot {
                        autopilot_id: ap,
                        reason: "agent_runtime_required",
                    });
                }
            }
        }
    }
}

/// Archive (§2): the squad's issues and autopilots pass to its leader.
pub(super) fn archive_squad(cx: &mut Cx<'_>, e: &ArchiveSquad) {
    let ArchiveSquad { actor, squad_id } = e;
    let Some((squad, _)) = managed(cx, actor, squad_id) else {
        return;
    };
    if squad.is_archived() {
        return cx.reject(400, "squad is already archived");
    }
    let mut issues = cx.dir.squad_issues(squad_id);
    issues.sort();
    cx.push(Decision::ArchiveSquad {
        squad_id: squad_id.clone(),
        archived_by: actor.clone(),
        archived_at: cx.at,
        leader_id: squad.leader_id.clone(),
        reassigned_issues: issues,
        reassigned_autopilots: cx.dir.squad_autopilots(squad_id),
    });
}

/// Adds a member row (§2).
pub(super) fn add_member(cx: &mut Cx<'_>, e: &AddMember) {
    let AddMember {
        actor,
        squad_id,
        member_type,
        member_id,
        role,
    } = e;
    let Some((squad, ws_role)) = managed(cx, actor, squad_id) else {
        return;
    };
    if member_type != "agent" && member_type != "member" {
        return cx.reject(400, "member_type must be 'agent' or 'member'");
    }
    if member_id.is_empty() {
        return cx.reject(400, "member_id is required");
    }
    let ws = &squad.workspace_id;
    let member = if member_type == "agent" {
        let Some(agent) = cx.agent_in_str(member_id, ws) else {
            return cx.reject(400, "agent not found in this workspace");
        };
        if !ws_role.is_admin()
            && !can_invoke_agent(cx.dir, agent, &Principal::Member(actor.clone()), None)
        {
            return cx.reject(403, "you can only add an agent you have access to");
        }
        MemberRef::Agent(agent.id.clone())
    } else {
        let Some(user) = UserId::new(member_id.as_str())
            .ok()
            .filter(|u| cx.dir.workspace_role(ws, u).is_some())
        else {
            return cx.reject(400, "member not found in this workspace");
        };
        MemberRef::Member(user)
    };
    if has_member(cx, squad_id, &member) {
        return cx.reject(409, "member already in squad");
    }
    let row = member_row(cx, squad_id, member, role);
    cx.push(Decision::AddMember {
        member: Box::new(row),
    });
}

/// Removes a member row (§2); the leader's row stays.
pub(super) fn remove_member(cx: &mut Cx<'_>, e: &RemoveMember) {
    let RemoveMember {
        actor,
        squad_id,
        member_type,
        member_id,
    } = e;
    let Some((squad, _)) = managed(cx, actor, squad_id) else {
        return;
    };
    let member = member_ref(member_type, member_id);
    if member
        .as_ref()
        .is_some_and(|m| m == &MemberRef::Agent(squad.leader_id.clone()))
    {
        return cx.reject(400, "cannot remove the squad leader; change leader first");
    }
    match member.filter(|m| has_member(cx, squad_id, m)) {
        Some(member) => cx.push(Decision::RemoveMember {
            squad_id: squad_id.clone(),
            member,
        }),
        None => cx.reject(404, "squad member not found"),
    }
}

/// Sets a member's role (§2).
pub(super) fn set_member_role(cx: &mut Cx<'_>, e: &SetMemberRole) {
    let SetMemberRole {
        actor,
        squad_id,
        member_type,
        member_id,
        role,
    } = e;
    if managed(cx, actor, squad_id).is_none() {
        return;
    }
    match member_ref(member_type, member_id).filter(|m| has_member(cx, squad_id, m)) {
        Some(member) => cx.push(Decision::SetMemberRole {
            squad_id: squad_id.clone(),
            member,
            role: role.clone(),
        }),
        None => cx.reject(404, "squad member not found"),
    }
}

/// `multica squad activity` (§2): a leader records the outcome of a turn.
pub(super) fn record_evaluation(cx: &mut Cx<'_>, e: &RecordEvaluation) {
    let RecordEvaluation {
        agent_id,
        task_id,
        issue_id,
        outcome,
        reason,
    } = e;
    let Some(outcome) = EvaluationOutcome::parse(outcome) else {
        return cx.reject(400, "outcome must be 'action', 'no_action', or 'failed'");
    };
    let Some(issue) = cx.issue(issue_id) else {
        return cx.reject(404, "issue not found");
    };
    let Some(squad_model::Assignee::Squad(squad_id)) = issue.assignee.clone() else {
        return cx.reject(400, "issue is not assigned to a squad");
    };
    let Some(squad) = cx.dir.squad(&squad_id) else {
        return cx.reject(404, "squad not found");
    };
    if &squad.leader_id != agent_id {
        return cx.reject(403, "only the squad leader agent can record evaluations");
    }
    let task = task_id
        .as_deref()
        .and_then(|t| find_task_ci(cx, t))
        .filter(|t| t.issue_id.as_ref() == Some(issue_id));
    let Some(task) = task else {
        return cx.reject(400, "task does not belong to issue");
    };
    let task_id = TaskId::new(task.id.as_str().to_ascii_lowercase())
        .expect("a lower-cased valid id is valid");
    cx.push(Decision::RecordEvaluation {
        task_id,
        issue_id: issue_id.clone(),
        squad_id,
        outcome,
        reason: reason.clone(),
    });
}

/// Task ids compare case-insensitively: try the id as given, then lower-cased.
fn find_task_ci<'a>(cx: &Cx<'a>, id: &str) -> Option<&'a squad_model::Task> {
    let dir = cx.dir;
    TaskId::new(id).ok().and_then(|t| dir.task(&t)).or_else(|| {
        TaskId::new(id.to_ascii_lowercase())
            .ok()
            .and_then(|t| dir.task(&t))
    })
}

/// `POST /squads` (§2).
pub(super) fn create_squad(cx: &mut Cx<'_>, e: &CreateSquad) {
    let CreateSquad {
        actor,
        workspace_id: ws,
        squad_id,
        name,
        description,
        instructions,
        leader_id,
        avatar_url,
    } = e;
    let Some(role) = cx.dir.workspace_role(ws, actor) else {
        return cx.reject(404, "workspace not found");
    };
    if name.trim().is_empty() {
        return cx.reject(400, "name is required");
    }
    if leader_id.is_empty() {
        return cx.reject(400, "leader_id is required");
    }
    if !is_uuid(leader_id) {
        return cx.reject(400, "invalid leader_id: not a UUID");
    }
    let Some(agent) = cx.agent_in_str(leader_id, ws) else {
        return cx.reject(400, "leader must be a valid agent in this workspace");
    };
    if !role.is_admin() && !can_invoke_agent(cx.dir, agent, &Principal::Member(actor.clone()), None)
    {
        return cx.reject(
            403,
            "you can only use an agent you have access to as leader",
        );
    }
    let squad = Squad {
        id: squad_id.clone(),
        workspace_id: ws.clone(),
        name: name.clone(),
        description: description.clone(),
        leader_id: agent.id.clone(),
        creator_id: actor.clone(),
        instructions: instructions.clone(),
        avatar_url: avatar_url.clone(),
        archived_at: None,
        archived_by: None,
        created_at: cx.at,
        updated_at: cx.at,
    };
    let leader = MemberRef::Agent(agent.id.clone());
    let row = member_row(cx, squad_id, leader.clone(), "leader");
    cx.push(Decision::CreateSquad {
        squad: Box::new(squad),
        leader_member: Box::new(row),
        member_count: 1,
        member_preview: vec![leader],
    });
}

/// The squad and the actor's role, when the actor may manage it; otherwise pushes the
/// rejection (404 outside the workspace, 403 without rights) and returns `None`.
fn managed<'a>(
    cx: &mut Cx<'a>,
    actor: &UserId,
    squad_id: &SquadId,
) -> Option<(&'a Squad, WorkspaceRole)> {
    let dir = cx.dir;
    let squad = dir.squad(squad_id);
    let role = squad.and_then(|s| dir.workspace_role(&s.workspace_id, actor));
    let (Some(squad), Some(role)) = (squad, role) else {
        cx.reject(404, "squad not found");
        return None;
    };
    if !(role.is_admin() || &squad.creator_id == actor) {
        cx.reject(403, "insufficient permissions");
        return None;
    }
    Some((squad, role))
}

/// Whether the squad has a row for the member.
fn has_member(cx: &Cx<'_>, squad: &SquadId, member: &MemberRef) -> bool {
    cx.dir
        .squad_members(squad)
        .iter()
        .any(|m| &m.member == member)
}

fn member_ref(member_type: &str, member_id: &str) -> Option<MemberRef> {
    match member_type {
        "agent" => AgentId::new(member_id).ok().map(MemberRef::Agent),
        "member" => UserId::new(member_id).ok().map(MemberRef::Member),
        _ => None,
    }
}

fn member_row(cx: &mut Cx<'_>, squad: &SquadId, member: MemberRef, role: &str) -> SquadMember {
    let kind = match member {
        MemberRef::Agent(_) => "agent",
        MemberRef::Member(_) => "member",
    };
    let id = format!("{squad}:{kind}:{}", member.id_str());
    SquadMember {
        id: SquadMemberId::new(id).expect("ids without whitespace join into a valid id"),
        squad_id: squad.clone(),
        member,
        role: role.to_owned(),
        created_at: cx.at,
    }
}
