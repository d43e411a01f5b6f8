//! [`Decision`]: what the engine decides for one event.

use serde::Serialize;
use squad_model::{
    AgentId, Assignee, Autopilot, AutopilotId, CommentId, Issue, IssueId, IssueStatus, MemberRef,
    RuntimeBinding, Squad, SquadId, SquadMember, Task, TaskId, TaskStatus, Timestamp, UserId,
};

use crate::records::{Comment, EvaluationOutcome};

/// Why a task was enqueued.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TriggerSource {
    /// Creation or assignee change (§3.2).
    Assign,
    /// Promotion out of backlog (§3.2).
    Status,
    /// The assigned-leader comment fallback (§4.3).
    IssueAssignee,
    /// An explicit `mention://squad/<id>` (§4.5).
    MentionSquadLeader,
    /// An explicit `mention://agent/<id>`.
    MentionAgent,
    /// A member's reply to an agent's comment (cascade row 5).
    ThreadParent,
    /// A member's reply in a thread owned by the root's mention or its triggered agents (row 6).
    ThreadRoot,
    /// The delayed escalation to the assignee (row 5).
    Escalation,
    /// A member's top-level comment on an agent-assigned issue (row 7).
    AssigneeAgent,
    /// A stage barrier closed on the parent (§7).
    ChildDone,
    /// Autopilot `create_issue` (§6).
    AutopilotCreateIssue,
    /// Autopilot `run_only` (§6).
    AutopilotRunOnly,
    /// A failed task with attempts left, retried (§1).
    Retry,
    /// Quick-create (§5): a task without an issue.
    QuickCreate,
}

/// Why an event leads to no run (or to nothing at all).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum NoopReason {
    /// The issue is in `backlog`, the parking lot.
    Backlog,
    /// `suppress_run` was set.
    SuppressRun,
    /// The squad leader is missing, archived, unbound or (where required) offline.
    LeaderNotReady,
    /// The agent assignee is missing, archived or unbound.
    AgentNotReady,
    /// The agent already has a queued or dispatched task on the issue.
    PendingTask,
    /// An agent promoted the issue it is working on.
    SelfLoop,
    /// The actor may not invoke the leader (a silent no-op on the update path).
    InvocationDenied,
    /// The comment starts with `/note`.
    NoteComment,
    /// The comment has `@all` and no explicit agent or squad mention.
    AllMention,
    /// The comment mentions only members.
    MemberMention,
    /// Nothing routes this comment (for example an agent's comment on an agent-assigned issue).
    NoTrigger,
    /// The leader's own comment, stopped by the self-trigger guard.
    SelfTriggerSuppressed,
    /// The squad of the issue no longer exists.
    SquadNotFound,
    /// The agent was removed by `suppress_agent_ids`.
    Suppressed,
    /// The issue has no parent.
    NoParent,
    /// The status change is not non-terminal to terminal.
    NotCompletion,
    /// The parent is `done` or `cancelled`.
    ParentClosed,
    /// The parent is in `backlog`.
    ParentBacklog,
    /// The parent is assigned to a human.
    ParentHumanAssigned,
    /// The stage barrier is still open.
    StageOpen,
    /// The parent has no agent or squad assignee: comment only.
    ParentUnassigned,
    /// The autopilot is paused.
    AutopilotPaused,
    /// The claim is a plain task: no briefing.
    NotLeaderTask,
    /// A failed task is not retried: it used its last attempt (`max_attempts`).
    AttemptsExhausted,
    /// A failed task is not retried: its issue no longer exists.
    IssueNotFound,
}

/// The rule of the routing reference that made a decision: the machine-readable reason every
/// decision about whom to wake carries (enqueue, coalesce, cancel, no-op, mention outcome).
///
/// It is one byte: the engine records which rule it was evaluating and nothing else, and the
/// human text ([`summary`](Self::summary), [`section`](Self::section)) is looked up only when
/// something prints it. Together with the decision's own fields (the agent, the [`NoopReason`],
/// the [`TriggerSource`], the mention outcome) it tells the story of an event: which rule was
/// tried, which candidates it considered, and why each was or was not woken.
///
/// Serialised in snake case: `"rule": "comment_agent_author"`.
///
/// ```
/// use squad_routing::Rule;
///
/// assert_eq!(Rule::CommentAgentAuthor.id(), "comment_agent_author");
/// assert_eq!(Rule::CommentAgentAuthor.section(), "§4.2 row 4, §4.3");
/// assert!(Rule::LeaderBarrier.summary().contains("window"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Rule {
    /// Squad management and leader evaluations (§2).
    Squads,
    /// The run decision on creation or an assignee change (§3.2, §3.3).
    Assign,
    /// The run decision when an issue leaves `backlog` (§3.2, §3.3).
    Promote,
    /// An assignee change cancels the issue's active tasks (§3.4, decision (a)).
    ReassignCancels,
    /// An issue set to `cancelled` cancels its tasks (`cancel_tasks_on_issue_cancelled`).
    IssueCancelledCancels,
    /// Deleting an issue cancels its tasks.
    DeleteCancels,
    /// A `/note` comment triggers nothing (§4.1).
    CommentNote,
    /// Explicit agent and squad mentions (§4.2 row 1, §4.5).
    CommentMention,
    /// `@all` wakes nobody (§4.2 row 2).
    CommentAll,
    /// Member mentions wake nobody (§4.2 row 3).
    CommentMemberMention,
    /// An agent's or the system's plain comment: the assigned-leader fallback (§4.2 row 4, §4.3).
    CommentAgentAuthor,
    /// A member's reply to an agent's comment wakes that agent (§4.2 row 5).
    CommentThreadParent,
    /// The delayed escalation to the assignee after a reply to an agent (§4.2 row 5).
    CommentEscalation,
    /// A member's reply in a member's thread goes to the thread's owner (§4.2 row 6).
    CommentThreadRoot,
    /// A member's top-level comment goes to the assignee (§4.2 row 7, §4.3).
    CommentAssignee,
    /// A member's reply to a member's comment, with the assignee fallback switched off
    /// (`RoutingPolicy::reply_falls_back_to_assignee`).
    CommentReplyNoFallback,
    /// Members' reports on one parent held for a window and delivered to the leader in one wake
    /// (`RoutingPolicy::leader_barrier_seconds`).
    LeaderBarrier,
    /// A stage barrier closed: the parent's assignee is woken (§7).
    ChildDone,
    /// Autopilot saves and dispatch (§6).
    Autopilot,
    /// A task changes status.
    TaskStatus,
    /// A failed task with attempts left is retried (§1, `max_attempts`).
    Retry,
    /// A deferred task comes due.
    DeferredDue,
    /// The claim: whether the leader briefing is injected (§5).
    Claim,
    /// Quick-create: a task without an issue (§5).
    QuickCreate,
    /// Agent runtime and archive changes.
    Agents,
}

impl Rule {
    /// The id, as serialised (`comment_agent_author`).
    pub fn id(self) -> &'static str {
        match self {
            Self::Squads => "squads",
            Self::Assign => "assign",
            Self::Promote => "promote",
            Self::ReassignCancels => "reassign_cancels",
            Self::IssueCancelledCancels => "issue_cancelled_cancels",
            Self::DeleteCancels => "delete_cancels",
            Self::CommentNote => "comment_note",
            Self::CommentMention => "comment_mention",
            Self::CommentAll => "comment_all",
            Self::CommentMemberMention => "comment_member_mention",
            Self::CommentAgentAuthor => "comment_agent_author",
            Self::CommentThreadParent => "comment_thread_parent",
            Self::CommentEscalation => "comment_escalation",
            Self::CommentThreadRoot => "comment_thread_root",
            Self::CommentAssignee => "comment_assignee",
            Self::CommentReplyNoFallback => "comment_reply_no_fallback",
            Self::LeaderBarrier => "leader_barrier",
            Self::ChildDone => "child_done",
            Self::Autopilot => "autopilot",
            Self::TaskStatus => "task_status",
            Self::Retry => "retry",
            Self::DeferredDue => "deferred_due",
            Self::Claim => "claim",
            Self::QuickCreate => "quick_create",
            Self::Agents => "agents",
        }
    }

    /// Where the rule is in the routing reference (`§4.3`), or the policy option behind it.
    pub fn section(self) -> &'static str {
        match self {
            Self::Squads => "§2",
            Self::Assign | Self::Promote => "§3.2, §3.3",
            Self::ReassignCancels => "§3.4, decision (a)",
            Self::IssueCancelledCancels => "open point, cancel_tasks_on_issue_cancelled",
            Self::DeleteCancels => "open point (every era)",
            Self::CommentNote => "§4.1",
            Self::CommentMention => "§4.2 row 1, §4.5",
            Self::CommentAll => "§4.2 row 2",
            Self::CommentMemberMention => "§4.2 row 3",
            Self::CommentAgentAuthor => "§4.2 row 4, §4.3",
            Self::CommentThreadParent | Self::CommentEscalation => "§4.2 row 5",
            Self::CommentThreadRoot => "§4.2 row 6",
            Self::CommentAssignee => "§4.2 row 7, §4.3",
            Self::CommentReplyNoFallback => "reply_falls_back_to_assignee",
            Self::LeaderBarrier => "leader_barrier_seconds",
            Self::ChildDone => "§7",
            Self::Autopilot => "§6",
            Self::TaskStatus => "§1",
            Self::Retry => "§1, max_attempts",
            Self::DeferredDue => "§4.2 row 5",
            Self::Claim | Self::QuickCreate => "§5",
            Self::Agents => "§10",
        }
    }

    /// One sentence saying what the rule does.
    pub fn summary(self) -> &'static str {
        match self {
            Self::Squads => "squad management and leader evaluations",
            Self::Assign => {
                "an issue created with, or given, an agent or squad assignee outside backlog wakes the agent or the squad's leader"
            }
            Self::Promote => "an issue leaving backlog wakes its agent or its squad's leader",
            Self::ReassignCancels => {
                "an assignee change cancels every active task on the issue first"
            }
            Self::IssueCancelledCancels => "an issue set to cancelled cancels its tasks",
            Self::DeleteCancels => "deleting an issue cancels every task on it",
            Self::CommentNote => "a comment starting with /note triggers nothing",
            Self::CommentMention => {
                "explicit agent and squad mentions wake those agents and leaders, and nobody else"
            }
            Self::CommentAll => "@all without an agent or squad mention wakes nobody",
            Self::CommentMemberMention => "member mentions wake nobody",
            Self::CommentAgentAuthor => {
                "an agent's plain comment on a squad-assigned issue wakes the squad's leader"
            }
            Self::CommentThreadParent => "a member's reply to an agent's comment wakes that agent",
            Self::CommentEscalation => {
                "a member's reply to an agent also escalates to the assignee after a delay"
            }
            Self::CommentThreadRoot => {
                "a member's reply in a member's thread goes to the agent or squad that owns the thread"
            }
            Self::CommentAssignee => {
                "a member's top-level comment goes to the issue's agent or squad leader"
            }
            Self::CommentReplyNoFallback => {
                "a member's reply to a member's comment does not fall back to the assignee"
            }
            Self::LeaderBarrier => {
                "members' reports on one parent within the window reach the leader in one wake"
            }
            Self::ChildDone => {
                "a closed stage barrier posts a system comment and wakes the parent's assignee"
            }
            Self::Autopilot => "autopilot dispatch wakes the assignee agent or squad leader",
            Self::TaskStatus => "tasks only move forward",
            Self::Retry => "a failed task with attempts left is retried",
            Self::DeferredDue => {
                "a deferred task that comes due while its agent has a pending task is absorbed by it"
            }
            Self::Claim => {
                "a claimed leader task is briefed when it still names its squad's leader"
            }
            Self::QuickCreate => "quick-create gives the agent or leader a task without an issue",
            Self::Agents => "agent runtime and archive changes",
        }
    }
}

impl std::fmt::Display for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.id())
    }
}

/// The outcome of one explicit agent or squad mention (§4.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MentionOutcome {
    /// A task was enqueued.
    Triggered,
    /// Merged into a task that is already pending, or into another mention's task.
    Coalesced,
    /// Not run now: the leader already has an active task.
    Deferred,
    /// Refused.
    Blocked,
}

/// One decision. An event yields a list of them, in order.
///
/// Serialised internally tagged by `type`: `{"type": "enqueue", ...}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Decision {
    /// The request is refused with an HTTP status and the reference's exact message.
    Reject {
        /// HTTP status (400, 403, 404, 409, 422).
        code: u16,
        /// The message, exactly as the reference gives it.
        message: String,
    },
    /// Nothing (more) happens, for this reason.
    Noop {
        /// Why.
        reason: NoopReason,
        /// The agent concerned, if any.
        #[serde(skip_serializing_if = "Option::is_none")]
        agent_id: Option<AgentId>,
        /// The rule that decided.
        rule: Rule,
    },
    /// A task is enqueued.
    Enqueue {
        /// The new task (`queued`, or `deferred` for an escalation).
        task: Box<Task>,
        /// Why.
        source: TriggerSource,
        /// For a deferred task (an escalation, a leader barrier): seconds before it runs.
        #[serde(skip_serializing_if = "Option::is_none")]
        delay_seconds: Option<u32>,
        /// The rule that decided.
        rule: Rule,
    },
    /// A comment is merged into a task that is already pending.
    Coalesce {
        /// The pending task.
        task_id: TaskId,
        /// Its agent.
        agent_id: AgentId,
        /// The comment.
        comment_id: CommentId,
        /// The rule that decided.
        rule: Rule,
    },
    /// A task is cancelled.
    Cancel {
        /// The task.
        task_id: TaskId,
        /// `reassigned`, `issue_deleted`, `issue_cancelled`, or `coalesced` (a deferred escalation
        /// came due while the agent had a pending task).
        reason: &'static str,
        /// The rule that decided.
        rule: Rule,
    },
    /// Per-mention trigger outcome (§4.5).
    Mention {
        /// `agent` or `squad`.
        mention_type: &'static str,
        /// The id as written.
        mention_id: String,
        /// What happened.
        outcome: MentionOutcome,
        /// Why, for anything but `triggered` (`target_unavailable`, `invocation_not_allowed`,
        /// `agent_runtime_required`, `self_trigger_suppressed`, `already_active`, `internal_error`,
        /// `pending_task`, `same_agent`).
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<&'static str>,
        /// The rule that decided.
        rule: Rule,
    },
    /// A comment is saved (the request's own comment, or a system comment).
    PostComment {
        /// The comment.
        comment: Box<Comment>,
        /// `true` for a system comment.
        system: bool,
    },
    /// A squad is created, with its leader's member row.
    CreateSquad {
        /// The squad.
        squad: Box<Squad>,
        /// The leader's member row.
        leader_member: Box<SquadMember>,
        /// Members after creation.
        member_count: usize,
        /// Members, leader first.
        member_preview: Vec<MemberRef>,
    },
    /// A squad's fields change (the whole new record).
    UpdateSquad {
        /// The squad after the update.
        squad: Box<Squad>,
    },
    /// A squad is archived; its issues and autopilots pass to the leader agent.
    ArchiveSquad {
        /// The squad.
        squad_id: SquadId,
        /// Who archived it.
        archived_by: UserId,
        /// When.
        archived_at: Timestamp,
        /// The leader that receives the issues and autopilots.
        leader_id: AgentId,
        /// Issues reassigned to the leader.
        reassigned_issues: Vec<IssueId>,
        /// Autopilots reassigned to the leader.
        reassigned_autopilots: Vec<AutopilotId>,
    },
    /// A member row is added.
    AddMember {
        /// The row.
        member: Box<SquadMember>,
    },
    /// A member row is removed.
    RemoveMember {
        /// The squad.
        squad_id: SquadId,
        /// The member.
        member: MemberRef,
    },
    /// A member's role changes.
    SetMemberRole {
        /// The squad.
        squad_id: SquadId,
        /// The member.
        member: MemberRef,
        /// The new role.
        role: String,
    },
    /// An autopilot is paused.
    PauseAutopilot {
        /// The autopilot.
        autopilot_id: AutopilotId,
        /// Why (`agent_runtime_required`).
        reason: &'static str,
    },
    /// An autopilot is saved.
    SaveAutopilot {
        /// The record.
        autopilot: Box<Autopilot>,
    },
    /// An issue is created.
    CreateIssue {
        /// The record.
        issue: Box<Issue>,
        /// Its number.
        #[serde(skip_serializing_if = "Option::is_none")]
        number: Option<u64>,
    },
    /// An issue's status and/or assignee change.
    UpdateIssue {
        /// The issue.
        issue_id: IssueId,
        /// The new status, if it changes.
        #[serde(skip_serializing_if = "Option::is_none")]
        status: Option<IssueStatus>,
        /// `true` when the assignee is written (possibly to none).
        set_assignee: bool,
        /// The new assignee.
        #[serde(skip_serializing_if = "Option::is_none")]
        assignee: Option<Assignee>,
    },
    /// An issue is deleted.
    DeleteIssue {
        /// The issue.
        issue_id: IssueId,
    },
    /// A task's status changes.
    SetTaskStatus {
        /// The task.
        task_id: TaskId,
        /// The new status.
        status: TaskStatus,
    },
    /// A leader evaluation is recorded (201).
    RecordEvaluation {
        /// The leader's task (lower-cased).
        task_id: TaskId,
        /// The issue.
        issue_id: IssueId,
        /// The squad.
        squad_id: SquadId,
        /// The outcome.
        outcome: EvaluationOutcome,
        /// The reason.
        reason: String,
    },
    /// An autopilot run is skipped.
    SkipAutopilotRun {
        /// The autopilot.
        autopilot_id: AutopilotId,
        /// The reason text.
        reason: String,
        /// The code (`target_unavailable`, `agent_runtime_required`, `runtime_offline`,
        /// `invocation_not_allowed`, `already_active`).
        code: &'static str,
    },
    /// An autopilot run starts.
    AutopilotRun {
        /// The autopilot.
        autopilot_id: AutopilotId,
        /// The squad, for attribution.
        #[serde(skip_serializing_if = "Option::is_none")]
        squad_id: Option<SquadId>,
        /// `issue_created` or `running`.
        status: &'static str,
    },
    /// The claim response (§5). The instructions the agent runs with (its own, then the
    /// briefing when injected) are rendered from it by
    /// [`briefing::claim_instructions`](crate::briefing::claim_instructions); a trace replay
    /// prints them next to the decisions.
    Claim {
        /// The task.
        task_id: TaskId,
        /// `true` when the briefing is injected (the wire meaning of the flag).
        is_leader_task: bool,
        /// The squad, when the briefing is injected.
        #[serde(skip_serializing_if = "Option::is_none")]
        squad_id: Option<SquadId>,
        /// The squad's name, for a quick-create task (no issue yet) whose leader is briefed.
        #[serde(skip_serializing_if = "Option::is_none")]
        squad_name: Option<String>,
        /// Which responsibility-6 variant the briefing carries.
        #[serde(skip_serializing_if = "Option::is_none")]
        owns_issue_status: Option<bool>,
        /// Always `true`.
        leader_role_resolved: bool,
    },
    /// An agent's runtime changes.
    SetRuntime {
        /// The agent.
        agent_id: AgentId,
        /// The new binding.
        runtime: Option<RuntimeBinding>,
    },
    /// An agent is archived.
    ArchiveAgent {
        /// The agent.
        agent_id: AgentId,
        /// When.
        archived_at: Timestamp,
    },
}

impl Decision {
    /// A rejection.
    pub fn reject(code: u16, message: impl Into<String>) -> Self {
        Self::Reject {
            code,
            message: message.into(),
        }
    }

    /// A no-op without an agent, decided by `rule`.
    pub fn noop(rule: Rule, reason: NoopReason) -> Self {
        Self::Noop {
            reason,
            agent_id: None,
            rule,
        }
    }

    /// A no-op about an agent, decided by `rule`.
    pub fn noop_for(rule: Rule, reason: NoopReason, agent: &AgentId) -> Self {
        Self::Noop {
            reason,
            agent_id: Some(agent.clone()),
            rule,
        }
    }

    /// The rule behind a decision about whom to wake (enqueue, coalesce, cancel, no-op, mention
    /// outcome); `None` for record writes, rejections (their message is the reason) and claims.
    pub fn rule(&self) -> Option<Rule> {
        match self {
            Self::Noop { rule, .. }
            | Self::Enqueue { rule, .. }
            | Self::Coalesce { rule, .. }
            | Self::Cancel { rule, .. }
            | Self::Mention { rule, .. } => Some(*rule),
            _ => None,
        }
    }

    /// The enqueued task, if this is an enqueue.
    pub fn enqueued(&self) -> Option<&Task> {
        match self {
            Self::Enqueue { task, .. } => Some(task.as_ref()),
            _ => None,
        }
    }
}
