//! Records the routing rules need that `squad-model` does not define: workspaces, users and their
//! roles, principals (who acts), comments and leader evaluations.

use serde::{Deserialize, Serialize};
use squad_model::{AgentId, CommentId, IssueId, TaskId, Timestamp, UserId, WorkspaceId};

/// A workspace: the scope of squads, agents, issues and members.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Workspace {
    /// The workspace's id.
    pub id: WorkspaceId,
    /// Display name.
    #[serde(default)]
    pub name: String,
    /// Prefix of issue identifiers (`SQ` gives `SQ-12`). Never hard-coded.
    #[serde(default = "default_prefix")]
    pub issue_prefix: String,
}

fn default_prefix() -> String {
    "ISSUE".to_owned()
}

/// A member's role in a workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WorkspaceRole {
    /// The owner: may manage every squad.
    Owner,
    /// An admin: may manage every squad.
    Admin,
    /// A plain member: manages the squads they created.
    Member,
}

impl WorkspaceRole {
    /// Owners and admins.
    pub fn is_admin(self) -> bool {
        matches!(self, Self::Owner | Self::Admin)
    }
}

/// A human user.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct User {
    /// The user's id.
    pub id: UserId,
    /// Display name (used in roster mentions).
    pub name: String,
}

/// A user's membership of a workspace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Membership {
    /// The workspace.
    pub workspace_id: WorkspaceId,
    /// The user.
    pub user_id: UserId,
    /// Their role.
    pub role: WorkspaceRole,
}

/// Who performs an action: a human member, an agent, or the system.
///
/// On the wire: `{"type": "member", "id": "<user>"}`, `{"type": "agent", "id": "<agent>"}`,
/// `{"type": "system"}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "type", content = "id", rename_all = "lowercase")]
pub enum Principal {
    /// A human workspace member.
    Member(UserId),
    /// An agent (acting from one of its tasks).
    Agent(AgentId),
    /// The system (for example the child-done comment).
    System,
}

impl Principal {
    /// The kind as text: `member`, `agent` or `system`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Member(_) => "member",
            Self::Agent(_) => "agent",
            Self::System => "system",
        }
    }
}

/// A comment on an issue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Comment {
    /// The comment's id.
    pub id: CommentId,
    /// The issue it is on.
    pub issue_id: IssueId,
    /// Its author.
    pub author: Principal,
    /// The comment it replies to, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<CommentId>,
    /// Markdown text.
    #[serde(default)]
    pub content: String,
    /// The task it was posted from, when that task is on the same issue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_task_id: Option<TaskId>,
    /// Creation time.
    pub created_at: Timestamp,
}

/// The outcome a leader records for one of its turns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EvaluationOutcome {
    /// The leader acted (delegated, escalated, closed the loop).
    Action,
    /// Nothing to do; comments from this task are then refused.
    NoAction,
    /// The leader could not evaluate.
    Failed,
}

impl EvaluationOutcome {
    /// Parses `action`, `no_action` or `failed`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "action" => Some(Self::Action),
            "no_action" => Some(Self::NoAction),
            "failed" => Some(Self::Failed),
            _ => None,
        }
    }
}
