//! Writing the effects of decisions to a [`Directory`].

use squad_model::{Assignee, AutopilotStatus, TaskStatus};

use crate::decision::Decision;
use crate::directory::Directory;
use crate::engine::Decisions;

/// Applies the effects of `decisions` to `dir`, in order, so that later events see them.
///
/// Rejections, no-ops, mention outcomes and coalesced comments change nothing; a rejected event
/// carries no other effect. [`apply_owned`] does the same without copying the records.
pub fn apply(dir: &mut dyn Directory, decisions: &Decisions) {
    for d in &decisions.decisions {
        apply_one(dir, d.clone());
    }
    dir.advance_id_seq(decisions.id_seq);
}

/// [`apply`], consuming the decisions: records move into the directory instead of being copied.
pub fn apply_owned(dir: &mut dyn Directory, decisions: Decisions) {
    let seq = decisions.id_seq;
    for d in decisions.decisions {
        apply_one(dir, d);
    }
    dir.advance_id_seq(seq);
}

/// [`apply_owned`] that leaves `decisions` empty with its buffer kept, for reuse with
/// [`Engine::decide_into`](crate::Engine::decide_into).
pub fn apply_drain(dir: &mut dyn Directory, decisions: &mut Decisions) {
    for d in decisions.decisions.drain(..) {
        apply_one(dir, d);
    }
    dir.advance_id_seq(decisions.id_seq);
}

fn apply_one(dir: &mut dyn Directory, d: Decision) {
    match d {
        Decision::Enqueue { task, .. } => dir.put_task(*task),
        Decision::Cancel { task_id, .. } => dir.set_task_status(&task_id, TaskStatus::Cancelled),
        Decision::SetTaskStatus { task_id, status } => dir.set_task_status(&task_id, status),
        Decision::PostComment { comment, .. } => dir.put_comment(*comment),
        Decision::CreateSquad {
            squad,
            leader_member,
            ..
        } => {
            dir.put_squad(*squad);
            dir.put_member(*leader_member);
        }
        Decision::UpdateSquad { squad } => dir.put_squad(*squad),
        Decision::ArchiveSquad {
            squad_id,
            archived_by,
            archived_at,
            leader_id,
            reassigned_issues,
            reassigned_autopilots,
        } => {
            for id in &reassigned_issues {
                if let Some(i) = dir.issue(id) {
                    let mut i = i.clone();
                    i.assignee = Some(Assignee::Agent(leader_id.clone()));
                    dir.put_issue(i);
                }
            }
            for id in &reassigned_autopilots {
                if let Some(a) = dir.autopilot(id) {
                    let mut a = a.clone();
                    a.assignee = Some(Assignee::Agent(leader_id.clone()));
                    dir.put_autopilot(a);
                }
            }
            if let Some(s) = dir.squad(&squad_id) {
                let mut s = s.clone();
                s.archived_at = Some(archived_at);
                s.archived_by = Some(archived_by);
                dir.put_squad(s);
            }
        }
        Decision::AddMember { member } => dir.put_member(*member),
        Decision::RemoveMember { squad_id, member } => dir.remove_member(&squad_id, &member),
        Decision::SetMemberRole {
            squad_id,
            member,
            role,
        } => {
            if let Some(row) = dir
                .squad_members(&squad_id)
                .iter()
                .find(|r| r.member == member)
            {
                let mut row = row.clone();
                row.role = role;
                dir.put_member(row);
            }
        }
        Decision::PauseAutopilot {
            autopilot_id,
            reason,
        } => {
            if let Some(a) = dir.autopilot(&autopilot_id) {
                let mut a = a.clone();
                a.status = AutopilotStatus::Paused;
                a.pause_reason = Some(reason.to_owned());
                dir.put_autopilot(a);
            }
        }
        Decision::SaveAutopilot { autopilot } => dir.put_autopilot(*autopilot),
        Decision::CreateIssue { issue, number } => {
            let id = issue.id.clone();
            dir.put_issue(*issue);
            if let Some(n) = number {
                dir.set_issue_number(&id, n);
            }
        }
        Decision::UpdateIssue {
            issue_id,
            status,
            set_assignee,
            assignee,
        } => {
            dir.update_issue(&issue_id, status, set_assignee.then_some(assignee));
        }
        Decision::DeleteIssue { issue_id } => dir.delete_issue(&issue_id),
        Decision::RecordEvaluation {
            task_id, outcome, ..
        } => dir.put_evaluation(task_id, outcome),
        Decision::SetRuntime { agent_id, runtime } => {
            if let Some(a) = dir.agent(&agent_id) {
                let mut a = a.clone();
                a.runtime = runtime;
                dir.put_agent(a);
            }
        }
        Decision::ArchiveAgent {
            agent_id,
            archived_at,
        } => {
            if let Some(a) = dir.agent(&agent_id) {
                let mut a = a.clone();
                a.archived_at = Some(archived_at);
                dir.put_agent(a);
            }
        }
        Decision::Reject { .. }
        | Decision::Noop { .. }
        | Decision::Coalesce { .. }
        | Decision::Mention { .. }
        | Decision::SkipAutopilotRun { .. }
        | Decision::AutopilotRun { .. }
        | Decision::Claim { .. } => {}
    }
}
