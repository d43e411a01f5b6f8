//! Comment triggers (§4, Era C): pre-filters, the cascade, the assigned-leader fallback, the
//! tightened self-trigger guard and explicit mentions.

use squad_model::{
    AgentId, Assignee, CommentId, Issue, IssueId, SquadId, TaskId, TaskStatus, UserId,
};

use super::{Cx, NewTask, bound};
use crate::decision::{Decision, MentionOutcome, NoopReason, Rule, TriggerSource};
use crate::event::PostComment;
use crate::invoke::can_invoke_agent;
use crate::mention::{Mention, MentionKind, is_note_comment, is_uuid, parse_mentions};
use crate::records::{Comment, EvaluationOutcome, Principal};

struct Req<'e> {
    issue: &'e Issue,
    comment_id: &'e CommentId,
    author: &'e Principal,
    originator: Option<&'e UserId>,
    suppress: &'e [AgentId],
    /// The leader barrier's window in seconds for this comment (0: the comment is not a member's
    /// report, or the barrier is off).
    barrier: u32,
}

/// A comment (§4): saved, then routed by the Era C cascade.
pub(super) fn post_comment(cx: &mut Cx<'_>, e: &PostComment) {
    let PostComment {
        comment_id,
        issue_id,
        author,
        task_id,
        parent_id,
        content,
        suppress_agent_ids,
    } = e;
    let dir = cx.dir;
    let Some(issue) = dir.issue(issue_id) else {
        return cx.reject(404, "issue not found");
    };
    if let (Principal::Agent(_), Some(t)) = (author, task_id) {
        // Evaluations are keyed by the lower-cased task id; copy only when the case differs.
        let outcome = if t.as_str().bytes().any(|b| b.is_ascii_uppercase()) {
            TaskId::new(t.as_str().to_ascii_lowercase())
                .ok()
                .and_then(|t| cx.dir.evaluation(&t))
        } else {
            cx.dir.evaluation(t)
        };
        if outcome == Some(EvaluationOutcome::NoAction) {
            return cx.reject(
                409,
                "squad leader recorded no_action; comments are not allowed for this task",
            );
        }
    }
    // The request's task, looked up once for the source task and the originator.
    let task = task_id.as_ref().and_then(|t| dir.task(t));
    let source_task_id = task
        .filter(|t| t.issue_id.as_ref() == Some(issue_id))
        .and_then(|_| task_id.clone());
    cx.push(Decision::PostComment {
        comment: Box::new(Comment {
            id: comment_id.clone(),
            issue_id: issue_id.clone(),
            author: author.clone(),
            parent_id: parent_id.clone(),
            content: content.clone(),
            source_task_id,
            created_at: cx.at,
        }),
        system: false,
    });
    if is_note_comment(content) {
        cx.rule = Rule::CommentNote;
        return cx.noop(NoopReason::NoteComment);
    }
    let originator = cx.task_originator_ref(author, task, Some(issue));
    let mut req = Req {
        issue,
        comment_id,
        author,
        originator,
        suppress: suppress_agent_ids,
        barrier: 0,
    };
    let mentions = parse_mentions(content);
    if mentions
        .iter()
        .any(|m| matches!(m.kind, MentionKind::Agent | MentionKind::Squad))
    {
        cx.rule = Rule::CommentMention;
        return explicit(cx, &req, &mentions);
    }
    if mentions.iter().any(|m| m.kind == MentionKind::All) {
        cx.rule = Rule::CommentAll;
        return cx.noop(NoopReason::AllMention);
    }
    if mentions.iter().any(|m| m.kind == MentionKind::Member) {
        cx.rule = Rule::CommentMemberMention;
        return cx.noop(NoopReason::MemberMention);
    }
    if !matches!(author, Principal::Member(_)) {
        cx.rule = Rule::CommentAgentAuthor;
        // An agent's report is what the leader barrier holds (the system's comments are not).
        if matches!(author, Principal::Agent(_)) {
            req.barrier = cx.policy.leader_barrier_seconds;
        }
        return match req.issue.assignee.clone() {
            Some(Assignee::Squad(s)) => assigned_leader(cx, &req, &s, None),
            _ => cx.noop(NoopReason::NoTrigger),
        };
    }
    if let Some(pid) = parent_id
        && let Some(parent) = cx.dir.comment(pid)
    {
        if let Principal::Agent(a) = &parent.author {
            return thread_parent(cx, &req, a);
        }
        let root = thread_root(cx, parent);
        if matches!(root.author, Principal::Member(_)) {
            cx.rule = Rule::CommentThreadRoot;
            return thread_root_owner(cx, &req, root);
        }
        if !cx.policy.reply_falls_back_to_assignee && matches!(parent.author, Principal::Member(_))
        {
            cx.rule = Rule::CommentReplyNoFallback;
            return cx.noop(NoopReason::NoTrigger);
        }
    }
    cx.rule = Rule::CommentAssignee;
    assignee_fallback(cx, &req);
}

/// Row 7: a member's top-level (or unhandled) comment goes to the assignee.
fn assignee_fallback(cx: &mut Cx<'_>, req: &Req<'_>) {
    match req.issue.assignee.clone() {
        Some(Assignee::Squad(s)) => assigned_leader(cx, req, &s, None),
        Some(Assignee::Agent(a)) => plain(cx, req, &a, TriggerSource::AssigneeAgent, None),
        _ => cx.noop(NoopReason::NoTrigger),
    }
}

/// The root of a thread (following parents; a cycle or a missing parent stops the walk).
fn thread_root<'a>(cx: &Cx<'a>, start: &'a Comment) -> &'a Comment {
    let mut cur = start;
    for _ in 0..64 {
        match cur.parent_id.as_ref().and_then(|p| cx.dir.comment(p)) {
            Some(p) => cur = p,
            None => break,
        }
    }
    cur
}

/// Row 5: a member answers an agent: wake that agent; escalate to the assignee later.
fn thread_parent(cx: &mut Cx<'_>, req: &Req<'_>, author_agent: &AgentId) {
    cx.rule = Rule::CommentThreadParent;
    plain(cx, req, author_agent, TriggerSource::ThreadParent, None);
    // A delay of 0 disables the escalation, as multica treats a delay of 0 or less.
    let delay = match cx.policy.escalation_seconds {
        0 => return,
        s => Some(s),
    };
    let Some(assignee) = req.issue.assignee.clone() else {
        return;
    };
    cx.rule = Rule::CommentEscalation;
    let dir = cx.dir;
    match &assignee {
        Assignee::Agent(a) if a != author_agent => {
            plain(cx, req, a, TriggerSource::Escalation, delay);
        }
        Assignee::Squad(s) => {
            if let Some(squad) = dir.squad(s)
                && &squad.leader_id != author_agent
            {
                assigned_leader(cx, req, s, delay);
            }
        }
        _ => {}
    }
}

/// Row 6: the root's first explicit agent/squad mention owns the thread; else the agents the
/// root triggered.
fn thread_root_owner(cx: &mut Cx<'_>, req: &Req<'_>, root: &Comment) {
    let first = parse_mentions(&root.content)
        .into_iter()
        .find(|m| matches!(m.kind, MentionKind::Agent | MentionKind::Squad))
        .map(|m| (m.kind, m.id.to_owned()));
    match first {
        Some((MentionKind::Squad, id)) => {
            let Some(squad) = SquadId::new(id)
                .ok()
                .and_then(|s| cx.squad_in(&s, &req.issue.workspace_id))
            else {
                return cx.noop(NoopReason::NoTrigger);
            };
            let leader = squad.leader_id.clone();
            let sid = squad.id.clone();
            leader_task(cx, req, &leader, &sid, TriggerSource::ThreadRoot, None);
        }
        Some((_, id)) => match AgentId::new(id) {
            Ok(a) => plain(cx, req, &a, TriggerSource::ThreadRoot, None),
            Err(_) => cx.noop(NoopReason::NoTrigger),
        },
        None => {
            // The agents whose tasks the root triggered; a leader task stands for its squad, so
            // it is re-resolved to the squad's current leader (who may have changed since).
            let dir = cx.dir;
            let mut seen: Vec<(AgentId, Option<SquadId>)> = Vec::new();
            let mut missing = false;
            for t in dir.tasks_triggered_by(&root.id) {
                let target = match (&t.squad_id, t.is_leader_task) {
                    (Some(sid), true) => match cx.squad_in(sid, &req.issue.workspace_id) {
                        Some(squad) => (squad.leader_id.clone(), Some(squad.id.clone())),
                        None => {
                            missing = true;
                            cx.noop(NoopReason::SquadNotFound);
                            continue;
                        }
                    },
                    _ => (t.agent_id.clone(), None),
                };
                if !seen.iter().any(|(a, _)| a == &target.0) {
                    seen.push(target);
                }
            }
            if seen.is_empty() {
                if !missing {
                    cx.noop(NoopReason::NoTrigger);
                }
                return;
            }
            for (agent, squad) in seen {
                match squad {
                    Some(s) => leader_task(cx, req, &agent, &s, TriggerSource::ThreadRoot, None),
                    None => plain(cx, req, &agent, TriggerSource::ThreadRoot, None),
                }
            }
        }
    }
}

/// A plain task for an agent, gated by `canInvokeAgent`, readiness (bound, not archived) and the
/// pending check (a pending task absorbs the comment).
fn plain(
    cx: &mut Cx<'_>,
    req: &Req<'_>,
    agent_id: &AgentId,
    source: TriggerSource,
    delay: Option<u32>,
) {
    if req.suppress.contains(agent_id) {
        return cx.noop_for(NoopReason::Suppressed, agent_id);
    }
    let dir = cx.dir;
    let Some(agent) = cx.agent_in(agent_id, &req.issue.workspace_id) else {
        return cx.noop_for(NoopReason::AgentNotReady, agent_id);
    };
    if !can_invoke_agent(dir, agent, req.author, req.originator) {
        return cx.noop_for(NoopReason::InvocationDenied, agent_id);
    }
    if !bound(agent) {
        return cx.noop_for(NoopReason::AgentNotReady, agent_id);
    }
    finish(cx, req, agent_id, None, source, delay);
}

/// A leader task for a squad's leader with the same gates as [`plain`].
fn leader_task(
    cx: &mut Cx<'_>,
    req: &Req<'_>,
    leader_id: &AgentId,
    squad: &SquadId,
    source: TriggerSource,
    delay: Option<u32>,
) {
    if req.suppress.contains(leader_id) {
        return cx.noop_for(NoopReason::Suppressed, leader_id);
    }
    let dir = cx.dir;
    // Readiness (bound, not archived; online is not required) comes before the gate (§4.3).
    let Some(leader) = cx
        .agent_in(leader_id, &req.issue.workspace_id)
        .filter(|a| bound(a))
    else {
        return cx.noop_for(NoopReason::LeaderNotReady, leader_id);
    };
    if !can_invoke_agent(dir, leader, req.author, req.originator) {
        return cx.noop_for(NoopReason::InvocationDenied, leader_id);
    }
    finish(cx, req, leader_id, Some(squad), source, delay);
}

/// Coalesces into a pending task, or enqueues.
fn finish(
    cx: &mut Cx<'_>,
    req: &Req<'_>,
    agent: &AgentId,
    leader_of: Option<&SquadId>,
    source: TriggerSource,
    delay: Option<u32>,
) {
    if delay.is_none()
        && let Some(task_id) = cx.pending(&req.issue.id, agent)
    {
        return cx.coalesce(task_id, agent.clone(), req.comment_id.clone());
    }
    let mut delay_seconds = delay;
    if let Some(squad) = leader_of
        && req.barrier > 0
        && delay.is_none()
        && !is_agent(req.author, agent)
    {
        // The leader barrier: a member's report waits for the others, in one deferred task.
        cx.rule = Rule::LeaderBarrier;
        if let Some(task_id) = barrier_task(cx, &req.issue.id, agent, squad, req.barrier) {
            return cx.coalesce(task_id, agent.clone(), req.comment_id.clone());
        }
        delay_seconds = Some(req.barrier);
    }
    cx.enqueue(NewTask {
        agent,
        issue: Some(&req.issue.id),
        leader_of,
        trigger: Some(req.comment_id),
        originator: req.originator.cloned(),
        source,
        delay_seconds,
    });
}

/// The leader's barrier task on the issue that is still collecting reports: its newest task,
/// when that is a deferred leader task of this squad, opened by an agent's report less than
/// `window` seconds ago. (An escalation is also a deferred leader task, but its trigger is a
/// member's reply.)
fn barrier_task(
    cx: &Cx<'_>,
    issue: &IssueId,
    leader: &AgentId,
    squad: &SquadId,
    window: u32,
) -> Option<TaskId> {
    let t = cx.dir.latest_task(issue, leader)?;
    let open = t.status == TaskStatus::Deferred
        && t.is_leader_task
        && t.squad_id.as_ref() == Some(squad)
        && cx.at < t.created_at.plus_seconds(i64::from(window))
        && t.trigger_comment_id
            .as_ref()
            .and_then(|c| cx.dir.comment(c))
            .is_some_and(|c| matches!(c.author, Principal::Agent(_)));
    open.then(|| t.id.clone())
}

/// The tightened self-trigger guard (§4.4): does the leader's latest task on the issue suppress
/// a wake from its own comment?
pub(crate) fn guard_suppresses(
    cx: &Cx<'_>,
    issue: &IssueId,
    leader: &AgentId,
    squad: &SquadId,
) -> bool {
    match cx.dir.latest_task(issue, leader) {
        None => false,
        Some(t) if t.is_leader_task => true,
        Some(t) => t.squad_id.as_ref() != Some(squad),
    }
}

/// Whether the principal is this agent (without building a `Principal` to compare with).
fn is_agent(p: &Principal, agent: &AgentId) -> bool {
    matches!(p, Principal::Agent(a) if a == agent)
}

/// The assigned-leader fallback (§4.3).
fn assigned_leader(cx: &mut Cx<'_>, req: &Req<'_>, squad_id: &SquadId, delay: Option<u32>) {
    let Some(squad) = cx.squad_in(squad_id, &req.issue.workspace_id) else {
        return cx.noop(NoopReason::SquadNotFound);
    };
    let leader = &squad.leader_id;
    if is_agent(req.author, leader) && guard_suppresses(cx, &req.issue.id, leader, squad_id) {
        return cx.noop_for(NoopReason::SelfTriggerSuppressed, leader);
    }
    let source = if delay.is_some() {
        TriggerSource::Escalation
    } else {
        TriggerSource::IssueAssignee
    };
    leader_task(cx, req, leader, squad_id, source, delay);
}

struct Trigger {
    agent: AgentId,
    leader_of: Option<SquadId>,
    /// The index into the outcomes of the mention this trigger serves.
    mention: usize,
    /// The other mention it serves: an `@agent` and an `@squad` naming the same leader are both
    /// triggered by one task (a second squad with that leader coalesces instead).
    also: Option<usize>,
    /// The agent's pending task that absorbs the comment, if any.
    pending: Option<TaskId>,
}

struct Outcome<'m> {
    kind: &'static str,
    id: &'m str,
    outcome: MentionOutcome,
    reason: Option<&'static str>,
}

/// Explicit agent and squad mentions (§4.5), de-duplicated by executing agent.
fn explicit(cx: &mut Cx<'_>, req: &Req<'_>, mentions: &[Mention<'_>]) {
    let dir = cx.dir;
    let ws = &req.issue.workspace_id;
    let mut outcomes: Vec<Outcome<'_>> = Vec::new();
    let mut triggers: Vec<Trigger> = Vec::new();
    for m in mentions {
        let kind = match m.kind {
            MentionKind::Agent => "agent",
            MentionKind::Squad => "squad",
            _ => continue,
        };
        let idx = outcomes.len();
        let blocked = |reason| Outcome {
            kind,
            id: m.id,
            outcome: MentionOutcome::Blocked,
            reason: Some(reason),
        };
        let (agent, squad) = if m.kind == MentionKind::Agent {
            let Some(agent) = cx.agent_in_str(m.id, ws) else {
                outcomes.push(blocked("target_unavailable"));
                continue;
            };
            if is_agent(req.author, &agent.id) {
                outcomes.push(blocked("self_trigger_suppressed"));
                continue;
            }
            (agent, None)
        } else {
            let squad = if is_uuid(m.id) {
                cx.squad_in_str(m.id, ws)
            } else {
                None
            };
            let Some(squad) = squad else {
                outcomes.push(blocked("target_unavailable"));
                continue;
            };
            if is_agent(req.author, &squad.leader_id)
                && guard_suppresses(cx, &req.issue.id, &squad.leader_id, &squad.id)
            {
                let active = dir
                    .active_tasks(&req.issue.id)
                    .iter()
                    .any(|t| t.agent_id == squad.leader_id);
                outcomes.push(if active {
                    Outcome {
                        kind,
                        id: m.id,
                        outcome: MentionOutcome::Deferred,
                        reason: Some("already_active"),
                    }
                } else {
                    blocked("self_trigger_suppressed")
                });
                continue;
            }
            let Some(leader) = cx.agent_in(&squad.leader_id, ws) else {
                outcomes.push(blocked("target_unavailable"));
                continue;
            };
            (leader, Some(squad.id.clone()))
        };
        // The gate comes before archived/runtime so private agents cannot be enumerated.
        if !can_invoke_agent(dir, agent, req.author, req.originator) {
            outcomes.push(blocked("invocation_not_allowed"));
            continue;
        }
        if agent.is_archived() {
            outcomes.push(blocked("target_unavailable"));
            continue;
        }
        if agent.runtime.is_none() {
            outcomes.push(blocked("agent_runtime_required"));
            continue;
        }
        if req.suppress.contains(&agent.id) {
            outcomes.push(blocked("suppressed"));
            continue;
        }
        outcomes.push(Outcome {
            kind,
            id: m.id,
            outcome: MentionOutcome::Triggered,
            reason: None,
        });
        match triggers.iter_mut().find(|t| t.agent == agent.id) {
            // The agent's own mention and a squad it leads share one task, which carries the
            // leader role (the squad trigger upgrades the plain one); both are triggered.
            Some(t) if t.also.is_none() && t.leader_of.is_none() != squad.is_none() => {
                if squad.is_some() {
                    t.leader_of = squad;
                }
                t.also = Some(idx);
            }
            // A second squad with the same leader: the first squad's context is kept.
            Some(_) => {
                outcomes[idx].outcome = MentionOutcome::Coalesced;
                outcomes[idx].reason = Some("same_agent");
            }
            None => triggers.push(Trigger {
                agent: agent.id.clone(),
                leader_of: squad,
                mention: idx,
                also: None,
                pending: None,
            }),
        }
    }
    // A pending task of the executing agent absorbs the comment.
    for t in &mut triggers {
        t.pending = cx.pending(&req.issue.id, &t.agent);
        if t.pending.is_some() {
            for i in std::iter::once(t.mention).chain(t.also) {
                outcomes[i].outcome = MentionOutcome::Coalesced;
                outcomes[i].reason = Some("pending_task");
            }
        }
    }
    for o in outcomes {
        cx.push(Decision::Mention {
            mention_type: o.kind,
            mention_id: o.id.to_owned(),
            outcome: o.outcome,
            reason: o.reason,
            rule: cx.rule,
        });
    }
    for t in triggers {
        if let Some(task_id) = t.pending {
            cx.coalesce(task_id, t.agent, req.comment_id.clone());
            continue;
        }
        let source = if t.leader_of.is_some() {
            TriggerSource::MentionSquadLeader
        } else {
            TriggerSource::MentionAgent
        };
        cx.enqueue(NewTask {
            agent: &t.agent,
            issue: Some(&req.issue.id),
            leader_of: t.leader_of.as_ref(),
            trigger: Some(req.comment_id),
            originator: req.originator.cloned(),
            source,
            delay_seconds: None,
        });
    }
}
