//! The squad object model: squads, members, agents, issues, tasks and autopilots.
//!
//! These are the records the routing rules read (multica's data model, Era C). They are plain
//! data with serde support; the rules themselves live in `squad-routing`.

use serde::{Deserialize, Serialize};

use crate::{
    AgentId, AutopilotId, CommentId, IssueId, RuntimeId, SquadId, SquadMemberId, TaskId, Timestamp,
    UserId, WorkspaceId,
};

/// A squad: a leader agent plus members, that issues can be assigned to.
///
/// Names are not unique. Archiving is a one-way soft delete.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Squad {
    /// The squad's id.
    pub id: SquadId,
    /// The workspace it belongs to.
    pub workspace_id: WorkspaceId,
    /// Display name (not unique).
    pub name: String,
    /// Free text, `""` by default.
    #[serde(default)]
    pub description: String,
    /// The leader: always an agent.
    pub leader_id: AgentId,
    /// The user who created the squad.
    pub creator_id: UserId,
    /// Extra instructions for the leader, `""` by default.
    #[serde(default)]
    pub instructions: String,
    /// Avatar image address, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub avatar_url: Option<String>,
    /// When the squad was archived (never un-set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archived_at: Option<Timestamp>,
    /// Who archived it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archived_by: Option<UserId>,
    /// Creation time.
    pub created_at: Timestamp,
    /// Last update time.
    pub updated_at: Timestamp,
}

impl Squad {
    /// `true` once the squad is archived.
    pub fn is_archived(&self) -> bool {
        self.archived_at.is_some()
    }
}

/// Who a squad membership row points at: an agent or a human member.
///
/// On the wire: `{"member_type": "agent", "member_id": "<id>"}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "member_type", content = "member_id", rename_all = "lowercase")]
pub enum MemberRef {
    /// An agent.
    Agent(AgentId),
    /// A human workspace member.
    Member(UserId),
}

/// The kind of a squad member.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MemberType {
    /// An agent.
    Agent,
    /// A human workspace member.
    Member,
}

impl MemberRef {
    /// The kind of member.
    pub fn member_type(&self) -> MemberType {
        match self {
            MemberRef::Agent(_) => MemberType::Agent,
            MemberRef::Member(_) => MemberType::Member,
        }
    }

    /// The member's id as text.
    pub fn id_str(&self) -> &str {
        match self {
            MemberRef::Agent(a) => a.as_str(),
            MemberRef::Member(u) => u.as_str(),
        }
    }
}

/// One membership row of a squad. Unique on (`squad_id`, member).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SquadMember {
    /// The row's id.
    pub id: SquadMemberId,
    /// The squad.
    pub squad_id: SquadId,
    /// The agent or human.
    #[serde(flatten)]
    pub member: MemberRef,
    /// Free-text role, `""` by default.
    #[serde(default)]
    pub role: String,
    /// When the member was added (the roster lists members in this order).
    pub created_at: Timestamp,
}

/// Whether an agent's runtime is connected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RuntimeStatus {
    /// Connected and heart-beating.
    Online,
    /// Bound but not connected.
    Offline,
}

/// The runtime an agent is bound to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuntimeBinding {
    /// The runtime.
    pub runtime_id: RuntimeId,
    /// Its status.
    pub status: RuntimeStatus,
    /// When it was last seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_seen_at: Option<Timestamp>,
}

/// Who may invoke an agent: only its owner (`private`), or the listed targets (`public_to`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PermissionMode {
    /// Only the owner (the default).
    #[default]
    Private,
    /// The owner and the invocation targets.
    PublicTo,
}

/// One invocation target of a `public_to` agent.
///
/// On the wire: `{"type": "workspace"}`, `{"type": "member", "id": "<user>"}`,
/// `{"type": "team", "id": "<team>"}`. Team targets are inert in V1.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "type", content = "id", rename_all = "lowercase")]
pub enum InvocationTarget {
    /// Everyone in the workspace.
    Workspace,
    /// One member.
    Member(UserId),
    /// A team (inert in V1).
    Team(String),
}

/// An agent, with the fields the routing rules read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Agent {
    /// The agent's id.
    pub id: AgentId,
    /// The workspace it belongs to.
    pub workspace_id: WorkspaceId,
    /// Display name.
    pub name: String,
    /// The owning user, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner_id: Option<UserId>,
    /// When the agent was archived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archived_at: Option<Timestamp>,
    /// The runtime it is bound to, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<RuntimeBinding>,
    /// Who may invoke it (`private` by default).
    #[serde(default)]
    pub permission_mode: PermissionMode,
    /// The targets of a `public_to` agent.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub invocation_targets: Vec<InvocationTarget>,
    /// Enabled workspace skills (builtin `multica-*` skills are not listed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skills: Vec<String>,
    /// The agent's own instructions (`""` by default): a leader's briefing is appended to them
    /// when a leader task is claimed.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub instructions: String,
    /// Creation time.
    pub created_at: Timestamp,
}

impl Agent {
    /// `true` once the agent is archived.
    pub fn is_archived(&self) -> bool {
        self.archived_at.is_some()
    }

    /// `true` when a runtime is bound and online.
    pub fn is_online(&self) -> bool {
        self.runtime
            .as_ref()
            .is_some_and(|r| r.status == RuntimeStatus::Online)
    }
}

/// The status of an issue.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IssueStatus {
    /// Parked; assignment does not wake anyone.
    #[default]
    Backlog,
    /// Ready to start.
    Todo,
    /// Being worked on.
    InProgress,
    /// Waiting for review.
    InReview,
    /// Finished (terminal).
    Done,
    /// Blocked.
    Blocked,
    /// Abandoned (terminal).
    Cancelled,
}

impl IssueStatus {
    /// `done` and `cancelled` are terminal.
    pub fn is_terminal(&self) -> bool {
        matches!(self, IssueStatus::Done | IssueStatus::Cancelled)
    }
}

/// Who an issue (or an autopilot) is assigned to.
///
/// On the wire: `{"assignee_type": "squad", "assignee_id": "<id>"}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(
    tag = "assignee_type",
    content = "assignee_id",
    rename_all = "lowercase"
)]
pub enum Assignee {
    /// A human member.
    Member(UserId),
    /// An agent.
    Agent(AgentId),
    /// A squad (its leader does the routing).
    Squad(SquadId),
}

/// Who did something: a human member or an agent.
///
/// On the wire: `{"type": "member", "id": "<id>"}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "type", content = "id", rename_all = "lowercase")]
pub enum Actor {
    /// A human member.
    Member(UserId),
    /// An agent.
    Agent(AgentId),
}

/// Where an issue came from.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Origin {
    /// `autopilot`, `agent_create`, `quick_create`, ...
    #[serde(rename = "type")]
    pub kind: String,
    /// The originating object's id, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

/// An issue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Issue {
    /// The issue's id.
    pub id: IssueId,
    /// The workspace it belongs to.
    pub workspace_id: WorkspaceId,
    /// Title.
    #[serde(default)]
    pub title: String,
    /// Status.
    #[serde(default)]
    pub status: IssueStatus,
    /// Assignee, if any.
    #[serde(default, flatten, skip_serializing_if = "Option::is_none")]
    pub assignee: Option<Assignee>,
    /// Parent issue, if this is a child.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_issue_id: Option<IssueId>,
    /// Stage (1 or more) among its siblings, if staged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage: Option<u32>,
    /// Provenance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<Origin>,
    /// Creator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub creator: Option<Actor>,
    /// Creation time.
    pub created_at: Timestamp,
}

/// The status of a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// Waiting in the queue.
    Queued,
    /// Handed to a runtime.
    Dispatched,
    /// Running.
    Running,
    /// Finished successfully.
    Completed,
    /// Finished with an error.
    Failed,
    /// Cancelled.
    Cancelled,
    /// Waiting for a local directory.
    WaitingLocalDirectory,
    /// Deferred.
    Deferred,
}

impl TaskStatus {
    /// Pending = `queued` or `dispatched`. A running task is not pending.
    pub fn is_pending(&self) -> bool {
        matches!(self, TaskStatus::Queued | TaskStatus::Dispatched)
    }

    /// `completed`, `failed` and `cancelled` are terminal.
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled
        )
    }
}

/// One entry in an agent's task queue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Task {
    /// The task's id.
    pub id: TaskId,
    /// The agent that runs it.
    pub agent_id: AgentId,
    /// The issue (none for autopilot `run_only`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issue_id: Option<IssueId>,
    /// Status.
    pub status: TaskStatus,
    /// Created by the squad-leader path.
    #[serde(default)]
    pub is_leader_task: bool,
    /// The squad it works for, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub squad_id: Option<SquadId>,
    /// The comment that triggered it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger_comment_id: Option<CommentId>,
    /// The human at the top of the trigger chain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub originator_user_id: Option<UserId>,
    /// The commit the task was asked to work on, if given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head_sha: Option<String>,
    /// What a task without an issue was created for (quick-create), if anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<Box<TaskContext>>,
    /// Retry attempt, from 1.
    #[serde(default = "one")]
    pub attempt: u32,
    /// Creation time.
    pub created_at: Timestamp,
}

fn one() -> u32 {
    1
}

/// The context of a task that has no issue (yet).
///
/// On the wire, tagged by `type`: `{"type": "quick_create", "squad_id": "<id>", "prompt": "..."}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
#[non_exhaustive]
pub enum TaskContext {
    /// Quick-create: the agent turns a prompt into an issue, which does not exist yet.
    QuickCreate {
        /// The squad that was asked, when a squad (its leader) was asked.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        squad_id: Option<SquadId>,
        /// What the member typed.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        prompt: String,
    },
}

/// How an autopilot runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExecutionMode {
    /// Creates an issue each run and assigns it.
    CreateIssue,
    /// Enqueues a plain task, no issue.
    RunOnly,
}

/// Whether an autopilot fires.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AutopilotStatus {
    /// Fires on schedule.
    #[default]
    Active,
    /// Does not fire.
    Paused,
}

/// A scheduled job assigned to an agent or a squad.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Autopilot {
    /// The autopilot's id.
    pub id: AutopilotId,
    /// The workspace.
    pub workspace_id: WorkspaceId,
    /// Title of the issues it creates.
    #[serde(default)]
    pub title: String,
    /// Assignee: an agent or a squad; none when it was removed (the autopilot then skips its
    /// runs).
    #[serde(default, flatten, skip_serializing_if = "Option::is_none")]
    pub assignee: Option<Assignee>,
    /// How it runs.
    pub execution_mode: ExecutionMode,
    /// Active or paused.
    #[serde(default)]
    pub status: AutopilotStatus,
    /// Why it was paused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pause_reason: Option<String>,
    /// Its creator: a member, or an agent (an agent-created autopilot).
    ///
    /// On the wire: `"creator_id": "<user>"` for a member (as before agents could create
    /// autopilots), `"creator_type": "agent", "creator_id": "<agent>"` for an agent.
    #[serde(flatten, with = "autopilot_creator")]
    pub creator: Actor,
}

/// The wire form of [`Autopilot::creator`].
mod autopilot_creator {
    use serde::de::Error as _;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use crate::{AgentId, UserId};

    use super::Actor;

    #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "lowercase")]
    enum Kind {
        #[default]
        Member,
        Agent,
    }

    impl Kind {
        fn is_member(&self) -> bool {
            *self == Self::Member
        }
    }

    #[derive(Serialize, Deserialize)]
    struct Wire {
        #[serde(default, skip_serializing_if = "Kind::is_member")]
        creator_type: Kind,
        creator_id: String,
    }

    pub(super) fn serialize<S: Serializer>(actor: &Actor, s: S) -> Result<S::Ok, S::Error> {
        let (creator_type, id) = match actor {
            Actor::Member(u) => (Kind::Member, u.as_str()),
            Actor::Agent(a) => (Kind::Agent, a.as_str()),
        };
        Wire {
            creator_type,
            creator_id: id.to_owned(),
        }
        .serialize(s)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Actor, D::Error> {
        let w = Wire::deserialize(d)?;
        match w.creator_type {
            Kind::Member => UserId::new(w.creator_id)
                .map(Actor::Member)
                .map_err(D::Error::custom),
            Kind::Agent => AgentId::new(w.creator_id)
                .map(Actor::Agent)
                .map_err(D::Error::custom),
        }
    }
}
