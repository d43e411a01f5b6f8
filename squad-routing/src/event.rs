//! [`Event`]: what happened, as the engine sees it (one HTTP write or one scheduler tick).
//!
//! Each variant carries a named struct (`Event::CreateSquad(CreateSquad { .. })`), so that the
//! engine hands each event to one function and a new field is added in one place. Every struct
//! converts into an [`Event`] with `From`.

use serde::{Deserialize, Serialize};
use squad_model::{
    AgentId, AutopilotId, CommentId, IssueId, IssueStatus, RuntimeStatus, SquadId, TaskId,
    TaskStatus, UserId, WorkspaceId,
};

use crate::records::Principal;

/// How an autopilot run was started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AutopilotTrigger {
    /// "Run now", clicked by a member (the `actor`).
    Manual,
    /// The schedule.
    Schedule,
    /// A webhook.
    Webhook,
    /// The API.
    Api,
}

/// One event. Fields named `*_id` that an event acts on (the issue of an update, the squad of a
/// member change, the task of a status change...) must exist; values the rules validate
/// (`assignee_id`, `leader_id`, `member_id`, mention ids) may name anything and are judged by the
/// rules.
///
/// On the wire, internally tagged by `type` in snake case: `{"type": "update_issue", ...}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Event {
    /// `POST /squads`.
    CreateSquad(CreateSquad),
    /// `PATCH /squads/<id>`: absent fields are unchanged.
    UpdateSquad(UpdateSquad),
    /// `DELETE /squads/<id>`: archive.
    ArchiveSquad(ArchiveSquad),
    /// Adds a member row.
    AddMember(AddMember),
    /// Removes a member row.
    RemoveMember(RemoveMember),
    /// Sets a member's role.
    SetMemberRole(SetMemberRole),
    /// `multica squad activity <issue> <outcome>`, sent by an agent with its task id.
    RecordEvaluation(RecordEvaluation),
    /// Creates an issue.
    CreateIssue(CreateIssue),
    /// Updates one issue.
    UpdateIssue(UpdateIssue),
    /// Applies one update to several issues; child-done runs after all writes.
    BatchUpdate(BatchUpdate),
    /// Deletes an issue: every task on it is cancelled.
    DeleteIssue(DeleteIssue),
    /// Posts a comment.
    Comment(PostComment),
    /// Creates or updates an autopilot (save-time validation).
    SaveAutopilot(SaveAutopilot),
    /// Fires an autopilot.
    TriggerAutopilot(TriggerAutopilot),
    /// A task changes status (dispatch, start, completion...).
    TaskStatus(SetTaskStatus),
    /// A runtime claims a task: decides whether the leader briefing is injected.
    Claim(ClaimTask),
    /// An agent's runtime is bound, goes online or offline, or is unbound (`null`).
    SetRuntime(SetRuntime),
    /// An agent is archived.
    ArchiveAgent(ArchiveAgent),
    /// A member asks an agent, or a squad's leader, to turn a prompt into an issue (quick-create).
    QuickCreate(QuickCreate),
}

impl Event {
    /// The event's type as written on the wire (`update_issue`, ...).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::CreateSquad { .. } => "create_squad",
            Self::UpdateSquad { .. } => "update_squad",
            Self::ArchiveSquad { .. } => "archive_squad",
            Self::AddMember { .. } => "add_member",
            Self::RemoveMember { .. } => "remove_member",
            Self::SetMemberRole { .. } => "set_member_role",
            Self::RecordEvaluation { .. } => "record_evaluation",
            Self::CreateIssue { .. } => "create_issue",
            Self::UpdateIssue { .. } => "update_issue",
            Self::BatchUpdate { .. } => "batch_update",
            Self::DeleteIssue { .. } => "delete_issue",
            Self::Comment { .. } => "comment",
            Self::SaveAutopilot { .. } => "save_autopilot",
            Self::TriggerAutopilot { .. } => "trigger_autopilot",
            Self::TaskStatus { .. } => "task_status",
            Self::Claim { .. } => "claim",
            Self::SetRuntime { .. } => "set_runtime",
            Self::ArchiveAgent { .. } => "archive_agent",
            Self::QuickCreate { .. } => "quick_create",
        }
    }

    /// Every event type, as written on the wire.
    pub const KINDS: [&'static str; 19] = [
        "create_squad",
        "update_squad",
        "archive_squad",
        "add_member",
        "remove_member",
        "set_member_role",
        "record_evaluation",
        "create_issue",
        "update_issue",
        "batch_update",
        "delete_issue",
        "comment",
        "save_autopilot",
        "trigger_autopilot",
        "task_status",
        "claim",
        "set_runtime",
        "archive_agent",
        "quick_create",
    ];
}

/// `POST /squads`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateSquad {
    /// The caller.
    pub actor: UserId,
    /// The workspace.
    pub workspace_id: WorkspaceId,
    /// The id the new squad gets.
    pub squad_id: SquadId,
    /// Name (required).
    #[serde(default)]
    pub name: String,
    /// Description.
    #[serde(default)]
    pub description: String,
    /// Leader instructions.
    #[serde(default)]
    pub instructions: String,
    /// The leader agent's id (required, a UUID).
    #[serde(default)]
    pub leader_id: String,
    /// Avatar address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub avatar_url: Option<String>,
}

/// `PATCH /squads/<id>`: absent fields are unchanged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpdateSquad {
    /// The caller.
    pub actor: UserId,
    /// The squad.
    pub squad_id: SquadId,
    /// New name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// New description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// New instructions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// New leader.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leader_id: Option<String>,
    /// New avatar address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub avatar_url: Option<String>,
}

/// `DELETE /squads/<id>`: archive.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArchiveSquad {
    /// The caller.
    pub actor: UserId,
    /// The squad.
    pub squad_id: SquadId,
}

/// Adds a member row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AddMember {
    /// The caller.
    pub actor: UserId,
    /// The squad.
    pub squad_id: SquadId,
    /// `agent` or `member`.
    #[serde(default)]
    pub member_type: String,
    /// The agent or user id.
    #[serde(default)]
    pub member_id: String,
    /// Role.
    #[serde(default)]
    pub role: String,
}

/// Removes a member row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RemoveMember {
    /// The caller.
    pub actor: UserId,
    /// The squad.
    pub squad_id: SquadId,
    /// `agent` or `member`.
    pub member_type: String,
    /// The agent or user id.
    pub member_id: String,
}

/// Sets a member's role.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SetMemberRole {
    /// The caller.
    pub actor: UserId,
    /// The squad.
    pub squad_id: SquadId,
    /// `agent` or `member`.
    pub member_type: String,
    /// The agent or user id.
    pub member_id: String,
    /// The new role.
    #[serde(default)]
    pub role: String,
}

/// `multica squad activity <issue> <outcome>`, sent by an agent with its task id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordEvaluation {
    /// The calling agent.
    pub agent_id: AgentId,
    /// The task id header (may be missing or wrong).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// The issue.
    pub issue_id: IssueId,
    /// `action`, `no_action` or `failed`.
    pub outcome: String,
    /// Free text.
    #[serde(default)]
    pub reason: String,
}

/// Creates an issue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateIssue {
    /// Who creates it.
    pub actor: Principal,
    /// For an agent actor: the task it acts from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<TaskId>,
    /// The workspace.
    pub workspace_id: WorkspaceId,
    /// The id the new issue gets.
    pub issue_id: IssueId,
    /// Its number (for identifiers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub number: Option<u64>,
    /// Title.
    #[serde(default)]
    pub title: String,
    /// Status (the create API defaults to `todo`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<IssueStatus>,
    /// Assignee type, validated by the rules.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assignee_type: Option<String>,
    /// Assignee id, validated by the rules.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assignee_id: Option<String>,
    /// Parent issue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_issue_id: Option<IssueId>,
    /// Stage among its siblings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage: Option<u32>,
    /// Apply the assignment but skip the run.
    #[serde(default)]
    pub suppress_run: bool,
}

/// Updates one issue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpdateIssue {
    /// Who updates it.
    pub actor: Principal,
    /// For an agent actor: the task it acts from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<TaskId>,
    /// The issue.
    pub issue_id: IssueId,
    /// New status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<IssueStatus>,
    /// New assignee type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assignee_type: Option<String>,
    /// New assignee id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assignee_id: Option<String>,
    /// Clears the assignee (both fields sent as null).
    #[serde(default)]
    pub unassign: bool,
    /// Apply the assignment but skip the run.
    #[serde(default)]
    pub suppress_run: bool,
}

/// Applies one update to several issues; child-done runs after all writes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchUpdate {
    /// Who updates them.
    pub actor: Principal,
    /// For an agent actor: the task it acts from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<TaskId>,
    /// The issues, in order.
    pub issue_ids: Vec<IssueId>,
    /// New status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<IssueStatus>,
    /// New assignee type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assignee_type: Option<String>,
    /// New assignee id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assignee_id: Option<String>,
    /// Apply the assignment but skip the run.
    #[serde(default)]
    pub suppress_run: bool,
}

/// Deletes an issue: every task on it is cancelled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeleteIssue {
    /// Who deletes it.
    pub actor: Principal,
    /// The issue.
    pub issue_id: IssueId,
}

/// Posts a comment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PostComment {
    /// The id the comment gets.
    pub comment_id: CommentId,
    /// The issue.
    pub issue_id: IssueId,
    /// Its author.
    pub author: Principal,
    /// For an agent author: the task it posts from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<TaskId>,
    /// The comment replied to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<CommentId>,
    /// Markdown text.
    #[serde(default)]
    pub content: String,
    /// Agents removed from the trigger set.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub suppress_agent_ids: Vec<AgentId>,
}

/// Creates or updates an autopilot (save-time validation).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SaveAutopilot {
    /// The caller.
    pub actor: Principal,
    /// For an agent actor: the task it acts from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<TaskId>,
    /// The autopilot's id.
    pub autopilot_id: AutopilotId,
    /// The workspace.
    pub workspace_id: WorkspaceId,
    /// Title of the issues it creates.
    #[serde(default)]
    pub title: String,
    /// `agent` or `squad`.
    pub assignee_type: String,
    /// The assignee's id.
    pub assignee_id: String,
    /// `create_issue` or `run_only`.
    pub execution_mode: squad_model::ExecutionMode,
    /// Active or paused.
    #[serde(default)]
    pub status: squad_model::AutopilotStatus,
}

/// Fires an autopilot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TriggerAutopilot {
    /// The autopilot.
    pub autopilot_id: AutopilotId,
    /// How it was started.
    pub trigger: AutopilotTrigger,
    /// The clicker, for a manual trigger.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor: Option<UserId>,
}

/// A task changes status (dispatch, start, completion...).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SetTaskStatus {
    /// The task.
    pub task_id: TaskId,
    /// Its new status.
    pub status: TaskStatus,
}

/// A runtime claims a task: decides whether the leader briefing is injected.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimTask {
    /// The task.
    pub task_id: TaskId,
}

/// An agent's runtime is bound, goes online or offline, or is unbound (`null`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SetRuntime {
    /// The agent.
    pub agent_id: AgentId,
    /// The new runtime status, or `null` for no runtime.
    pub runtime: Option<RuntimeStatus>,
}

/// An agent is archived.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArchiveAgent {
    /// The agent.
    pub agent_id: AgentId,
}

/// Quick-create (§5): a member asks an agent, or a squad (its leader), to turn a prompt into an
/// issue. No issue exists yet: the task has none, and its context names the squad, so that the
/// claim can brief the leader (with the not-owned variant) and return the squad's id and name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuickCreate {
    /// The member asking.
    pub actor: UserId,
    /// The workspace.
    pub workspace_id: WorkspaceId,
    /// `agent` or `squad`, validated by the rules.
    pub target_type: String,
    /// The agent's or squad's id, validated by the rules.
    pub target_id: String,
    /// What the member typed.
    #[serde(default)]
    pub prompt: String,
}

macro_rules! from_structs {
    ($($variant:ident($ty:ident)),* $(,)?) => {
        $(
            impl From<$ty> for Event {
                fn from(e: $ty) -> Self {
                    Self::$variant(e)
                }
            }
        )*
    };
}

from_structs!(
    CreateSquad(CreateSquad),
    UpdateSquad(UpdateSquad),
    ArchiveSquad(ArchiveSquad),
    AddMember(AddMember),
    RemoveMember(RemoveMember),
    SetMemberRole(SetMemberRole),
    RecordEvaluation(RecordEvaluation),
    CreateIssue(CreateIssue),
    UpdateIssue(UpdateIssue),
    BatchUpdate(BatchUpdate),
    DeleteIssue(DeleteIssue),
    Comment(PostComment),
    SaveAutopilot(SaveAutopilot),
    TriggerAutopilot(TriggerAutopilot),
    TaskStatus(SetTaskStatus),
    Claim(ClaimTask),
    SetRuntime(SetRuntime),
    ArchiveAgent(ArchiveAgent),
    QuickCreate(QuickCreate),
);
