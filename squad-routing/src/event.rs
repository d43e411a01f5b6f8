//! [`Event`]: what happened, as the engine sees it (one HTTP write or one scheduler tick).

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
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
#[non_exhaustive]
pub enum Event {
    /// `POST /squads`.
    CreateSquad {
        /// The caller.
        actor: UserId,
        /// The workspace.
        workspace_id: WorkspaceId,
        /// The id the new squad gets.
        squad_id: SquadId,
        /// Name (required).
        #[serde(default)]
        name: String,
        /// Description.
        #[serde(default)]
        description: String,
        /// Leader instructions.
        #[serde(default)]
        instructions: String,
        /// The leader agent's id (required, a UUID).
        #[serde(default)]
        leader_id: String,
        /// Avatar address.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        avatar_url: Option<String>,
    },
    /// `PATCH /squads/<id>`: absent fields are unchanged.
    UpdateSquad {
        /// The caller.
        actor: UserId,
        /// The squad.
        squad_id: SquadId,
        /// New name.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        /// New description.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        /// New instructions.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        instructions: Option<String>,
        /// New leader.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        leader_id: Option<String>,
        /// New avatar address.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        avatar_url: Option<String>,
    },
    /// `DELETE /squads/<id>`: archive.
    ArchiveSquad {
        /// The caller.
        actor: UserId,
        /// The squad.
        squad_id: SquadId,
    },
    /// Adds a member row.
    AddMember {
        /// The caller.
        actor: UserId,
        /// The squad.
        squad_id: SquadId,
        /// `agent` or `member`.
        #[serde(default)]
        member_type: String,
        /// The agent or user id.
        #[serde(default)]
        member_id: String,
        /// Role.
        #[serde(default)]
        role: String,
    },
    /// Removes a member row.
    RemoveMember {
        /// The caller.
        actor: UserId,
        /// The squad.
        squad_id: SquadId,
        /// `agent` or `member`.
        member_type: String,
        /// The agent or user id.
        member_id: String,
    },
    /// Sets a member's role.
    SetMemberRole {
        /// The caller.
        actor: UserId,
        /// The squad.
        squad_id: SquadId,
        /// `agent` or `member`.
        member_type: String,
        /// The agent or user id.
        member_id: String,
        /// The new role.
        #[serde(default)]
        role: String,
    },
    /// `multica squad activity <issue> <outcome>`, sent by an agent with its task id.
    RecordEvaluation {
        /// The calling agent.
        agent_id: AgentId,
        /// The task id header (may be missing or wrong).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        task_id: Option<String>,
        /// The issue.
        issue_id: IssueId,
        /// `action`, `no_action` or `failed`.
        outcome: String,
        /// Free text.
        #[serde(default)]
        reason: String,
    },
    /// Creates an issue.
    CreateIssue {
        /// Who creates it.
        actor: Principal,
        /// For an agent actor: the task it acts from.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        task_id: Option<TaskId>,
        /// The workspace.
        workspace_id: WorkspaceId,
        /// The id the new issue gets.
        issue_id: IssueId,
        /// Its number (for identifiers).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        number: Option<u64>,
        /// Title.
        #[serde(default)]
        title: String,
        /// Status (the create API defaults to `todo`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        status: Option<IssueStatus>,
        /// Assignee type, validated by the rules.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        assignee_type: Option<String>,
        /// Assignee id, validated by the rules.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        assignee_id: Option<String>,
        /// Parent issue.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent_issue_id: Option<IssueId>,
        /// Stage among its siblings.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stage: Option<u32>,
        /// Apply the assignment but skip the run.
        #[serde(default)]
        suppress_run: bool,
    },
    /// Updates one issue.
    UpdateIssue {
        /// Who updates it.
        actor: Principal,
        /// For an agent actor: the task it acts from.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        task_id: Option<TaskId>,
        /// The issue.
        issue_id: IssueId,
        /// New status.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        status: Option<IssueStatus>,
        /// New assignee type.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        assignee_type: Option<String>,
        /// New assignee id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        assignee_id: Option<String>,
        /// Clears the assignee (both fields sent as null).
        #[serde(default)]
        unassign: bool,
        /// Apply the assignment but skip the run.
        #[serde(default)]
        suppress_run: bool,
    },
    /// Applies one update to several issues; child-done runs after all writes.
    BatchUpdate {
        /// Who updates them.
        actor: Principal,
        /// For an agent actor: the task it acts from.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        task_id: Option<TaskId>,
        /// The issues, in order.
        issue_ids: Vec<IssueId>,
        /// New status.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        status: Option<IssueStatus>,
        /// New assignee type.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        assignee_type: Option<String>,
        /// New assignee id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        assignee_id: Option<String>,
        /// Apply the assignment but skip the run.
        #[serde(default)]
        suppress_run: bool,
    },
    /// Deletes an issue: every task on it is cancelled.
    DeleteIssue {
        /// Who deletes it.
        actor: Principal,
        /// The issue.
        issue_id: IssueId,
    },
    /// Posts a comment.
    Comment {
        /// The id the comment gets.
        comment_id: CommentId,
        /// The issue.
        issue_id: IssueId,
        /// Its author.
        author: Principal,
        /// For an agent author: the task it posts from.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        task_id: Option<TaskId>,
        /// The comment replied to.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent_id: Option<CommentId>,
        /// Markdown text.
        #[serde(default)]
        content: String,
        /// Agents removed from the trigger set.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        suppress_agent_ids: Vec<AgentId>,
    },
    /// Creates or updates an autopilot (save-time validation).
    SaveAutopilot {
        /// The caller.
        actor: Principal,
        /// For an agent actor: the task it acts from.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        task_id: Option<TaskId>,
        /// The autopilot's id.
        autopilot_id: AutopilotId,
        /// The workspace.
        workspace_id: WorkspaceId,
        /// Title of the issues it creates.
        #[serde(default)]
        title: String,
        /// `agent` or `squad`.
        assignee_type: String,
        /// The assignee's id.
        assignee_id: String,
        /// `create_issue` or `run_only`.
        execution_mode: squad_model::ExecutionMode,
        /// Active or paused.
        #[serde(default)]
        status: squad_model::AutopilotStatus,
    },
    /// Fires an autopilot.
    TriggerAutopilot {
        /// The autopilot.
        autopilot_id: AutopilotId,
        /// How it was started.
        trigger: AutopilotTrigger,
        /// The clicker, for a manual trigger.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        actor: Option<UserId>,
    },
    /// A task changes status (dispatch, start, completion...).
    TaskStatus {
        /// The task.
        task_id: TaskId,
        /// Its new status.
        status: TaskStatus,
    },
    /// A runtime claims a task: decides whether the leader briefing is injected.
    Claim {
        /// The task.
        task_id: TaskId,
    },
    /// An agent's runtime is bound, goes online or offline, or is unbound (`null`).
    SetRuntime {
        /// The agent.
        agent_id: AgentId,
        /// The new runtime status, or `null` for no runtime.
        runtime: Option<RuntimeStatus>,
    },
    /// An agent is archived.
    ArchiveAgent {
        /// The agent.
        agent_id: AgentId,
    },
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
        }
    }

    /// Every event type, as written on the wire.
    pub const KINDS: [&'static str; 18] = [
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
    ];
}
