//! Child-done (§7): the stage barrier, the progress summary, the system comment on the parent and
//! the wake of the parent's assignee.

use squad_model::{AgentId, Assignee, Issue, IssueId, IssueStatus, SquadId, UserId};

use super::{Cx, IdKind, IssueView, NewTask, bound};
use crate::decision::{Decision, NoopReason, Rule, TriggerSource};
use crate::mention::MentionKind;
use crate::records::{Comment, Principal};

/// `stageBarrierClosed` for a stage `s` (or the implicit stage when `s` is `None`).
pub(crate) fn barrier_closed(children: &[IssueView<'_>], completed_stage: Option<u32>) -> bool {
    let staged = children.iter().any(|c| c.stage.is_some());
    if !staged {
        return children.iter().all(|c| c.status.is_terminal());
    }
    let Some(s) = completed_stage else {
        return false;
    };
    children
        .iter()
        .filter(|c| c.stage.is_some_and(|cs| cs <= s))
        .all(|c| c.status.is_terminal())
}

/// The per-stage progress of the children, sorted by stage, and the next stage (0 when none).
struct Progress {
    /// (stage, done, total).
    stages: Vec<(u32, usize, usize)>,
    next: u32,
}

impl Progress {
    fn new(children: &[IssueView<'_>], closed: u32) -> Self {
        let mut stages: Vec<(u32, usize, usize)> = Vec::new();
        for c in children {
            let Some(s) = c.stage else { continue };
            let done = usize::from(c.status.is_terminal());
            match stages.iter_mut().find(|(st, _, _)| *st == s) {
                Some(e) => {
                    e.1 += done;
                    e.2 += 1;
                }
                None => stages.push((s, done, 1)),
            }
        }
        stages.sort_unstable_by_key(|e| e.0);
        let next = stages
            .iter()
            .find(|(s, d, t)| *s > closed && d < t)
            .map_or(0, |e| e.0);
        Self { stages, next }
    }
}

impl Progress {
    /// Appends `Stage 1: 3/3 done; Stage 2: 0/4 done (next)`.
    fn push_to(&self, out: &mut String) {
        for (i, (s, d, t)) in self.stages.iter().enumerate() {
            if i > 0 {
                out.push_str("; ");
            }
            out.push_str("Stage ");
            push_decimal(out, u64::from(*s));
            out.push_str(": ");
            push_decimal(out, *d as u64);
            out.push('/');
            push_decimal(out, *t as u64);
            out.push_str(" done");
            if *s == self.next {
                out.push_str(" (next)");
            }
        }
    }
}

/// Appends the decimal digits of `n`. The child-done comment is built with `push_str` and this
/// rather than `format!`: the formatting machinery cost more than the rest of the event.
fn push_decimal(out: &mut String, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        // `n % 10` is below 10, so the cast keeps it.
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for &d in &digits[i..] {
        out.push(char::from(d));
    }
}

/// Child-done (§7) for the children of one parent that this event completed (in order).
pub(super) fn wake_parent(cx: &mut Cx<'_>, completed: &[&IssueId]) {
    cx.rule = Rule::ChildDone;
    let (parent, content, originator, then) = match plan_wake(cx, completed) {
        Wake::Nothing => return,
        Wake::Noop(reason) => return cx.noop(reason),
        Wake::Comment {
            parent,
            content,
            originator,
            then,
        } => (parent, content, originator, then),
    };
    let comment = Comment {
        id: squad_model::CommentId::new(cx.mint(IdKind::Comment)).expect("minted ids are valid"),
        issue_id: parent.clone(),
        author: Principal::System,
        parent_id: None,
        content,
        source_task_id: None,
        created_at: cx.at,
    };
    let comment_id = comment.id.clone();
    cx.push(Decision::PostComment {
        comment: Box::new(comment),
        system: true,
    });
    match then {
        Then::Noop(reason) => cx.noop(reason),
        Then::NoopFor(reason, agent) => cx.noop_for(reason, &agent),
        Then::Enqueue { agent, squad } => {
            cx.enqueue(NewTask {
                agent,
                issue: Some(&parent),
                leader_of: squad,
                trigger: Some(&comment_id),
                originator,
                source: TriggerSource::ChildDone,
                delay_seconds: None,
            });
        }
    }
}

/// What child-done decides, worked out by reading only (no issue record is copied).
enum Wake<'a> {
    /// No completed child with a parent.
    Nothing,
    /// No comment: the parent is missing, closed, parked, human-assigned, or the stage is open.
    Noop(NoopReason),
    /// The system comment on the parent, then `then`.
    Comment {
        parent: IssueId,
        content: String,
        originator: Option<UserId>,
        then: Then<'a>,
    },
}

/// What follows the child-done comment (the agent and squad to wake are borrowed from the
/// directory).
enum Then<'a> {
    Noop(NoopReason),
    NoopFor(NoopReason, AgentId),
    Enqueue {
        agent: &'a AgentId,
        squad: Option<&'a SquadId>,
    },
}

fn plan_wake<'a>(cx: &Cx<'a>, completed: &[&IssueId]) -> Wake<'a> {
    // The completed issues are in this event's overlay, so re-reading them is cheap: no list.
    let completed = || completed.iter().filter_map(|id| cx.issue(id));
    let Some(last) = completed().next_back() else {
        return Wake::Nothing;
    };
    let Some(parent_id) = &last.parent_issue_id else {
        return Wake::Nothing;
    };
    let Some(parent) = cx.issue(parent_id) else {
        return Wake::Noop(NoopReason::NoParent);
    };
    if parent.status.is_terminal() {
        return Wake::Noop(NoopReason::ParentClosed);
    }
    if parent.status == IssueStatus::Backlog {
        return Wake::Noop(NoopReason::ParentBacklog);
    }
    if matches!(parent.assignee, Some(Assignee::Member(_))) {
        return Wake::Noop(NoopReason::ParentHumanAssigned);
    }
    let dir = cx.dir;
    let children: Vec<IssueView<'_>> = dir
        .children(parent_id)
        .iter()
        .filter_map(|c| cx.issue(c))
        .collect();
    let staged = children.iter().any(|c| c.stage.is_some());
    // The stage to report: the implicit one, or the highest completed stage whose barrier is
    // closed in the final state.
    let (closed, child) = if staged {
        let mut best: Option<(u32, IssueView<'_>)> = None;
        for c in completed() {
            if let Some(s) = c.stage
                && barrier_closed(&children, Some(s))
                && best.is_none_or(|(b, _)| s >= b)
            {
                best = Some((s, c));
            }
        }
        match best {
            Some((s, c)) => (Some(s), c),
            None => return Wake::Noop(NoopReason::StageOpen),
        }
    } else if barrier_closed(&children, None) {
        (None, last)
    } else {
        return Wake::Noop(NoopReason::StageOpen);
    };
    let content = child_done_comment(
        cx,
        parent,
        child,
        &children,
        closed,
        completed().nth(1).is_some(),
    );
    let originator = cx.provenance_originator(parent.issue);
    let then = match parent.assignee {
        None | Some(Assignee::Member(_)) => Then::Noop(NoopReason::ParentUnassigned),
        Some(Assignee::Agent(aid)) => match dir.agent(aid).filter(|a| bound(a)) {
            None => Then::NoopFor(NoopReason::AgentNotReady, aid.clone()),
            Some(agent) if cx.has_pending(&parent.id, &agent.id) => {
                Then::NoopFor(NoopReason::PendingTask, agent.id.clone())
            }
            Some(agent) => Then::Enqueue {
                agent: &agent.id,
                squad: None,
            },
        },
        Some(Assignee::Squad(sid)) => {
            // No self-trigger guard and no invocation gate here (MUL-3969, MUL-4063).
            match dir.squad(sid) {
                None => Then::Noop(NoopReason::SquadNotFound),
                Some(squad) => match dir.agent(&squad.leader_id).filter(|a| bound(a)) {
                    None => Then::NoopFor(NoopReason::LeaderNotReady, squad.leader_id.clone()),
                    Some(leader) if cx.has_pending(&parent.id, &leader.id) => {
                        Then::NoopFor(NoopReason::PendingTask, leader.id.clone())
                    }
                    Some(leader) => Then::Enqueue {
                        agent: &leader.id,
                        squad: Some(&squad.id),
                    },
                },
            }
        }
    };
    Wake::Comment {
        parent: parent.id.clone(),
        content,
        originator,
        then,
    }
}

/// `SQ-12` from the workspace prefix and the issue number, else the id (written without an
/// intermediate string).
struct Identifier<'c> {
    prefix: Option<&'c str>,
    number: Option<u64>,
    id: &'c IssueId,
}

impl<'c> Identifier<'c> {
    fn new(cx: &Cx<'c>, issue: &'c Issue) -> Self {
        Self {
            prefix: cx
                .dir
                .workspace(&issue.workspace_id)
                .map(|w| w.issue_prefix.as_str()),
            number: cx.dir.issue_number(&issue.id),
            id: &issue.id,
        }
    }
}

impl Identifier<'_> {
    fn push_to(&self, out: &mut String) {
        match (self.prefix, self.number) {
            (Some(p), Some(n)) => {
                out.push_str(p);
                out.push('-');
                push_decimal(out, n);
            }
            _ => out.push_str(self.id.as_str()),
        }
    }
}

/// The mention of the parent's assignee and a space (`[@Name](mention://agent/<id>) `), or
/// nothing: the label is the name without `]`, or `assignee` when that leaves nothing.
struct AssigneeMention<'c>(Option<(MentionKind, &'c str, &'c str)>);

impl AssigneeMention<'_> {
    fn push_to(&self, out: &mut String) {
        let Some((kind, id, name)) = self.0 else {
            return;
        };
        out.push_str("[@");
        if !name.is_empty() && !name.as_bytes().contains(&b']') {
            out.push_str(name);
        } else if name.chars().all(|c| c == ']') {
            out.push_str("assignee");
        } else {
            for part in name.split(']') {
                out.push_str(part);
            }
        }
        out.push_str("](mention://");
        out.push_str(kind.as_str());
        out.push('/');
        out.push_str(id);
        out.push_str(") ");
    }
}

/// A title with its mention links defused (`](mention://` becomes `] (mention-stripped://`).
struct Defused<'c>(&'c str);

impl Defused<'_> {
    fn push_to(&self, out: &mut String) {
        // Most titles have no `]` at all: skip the substring search.
        if !self.0.as_bytes().contains(&b']') {
            return out.push_str(self.0);
        }
        for (i, part) in self.0.split("](mention://").enumerate() {
            if i > 0 {
                out.push_str("] (mention-stripped://");
            }
            out.push_str(part);
        }
    }
}

/// What the leader is told to do after a stage closed.
struct Advance<'c> {
    next: u32,
    /// The parent's id: the commands name the parent by id, as multica formats `parentID`.
    parent_ref: &'c str,
}

impl Advance<'_> {
    fn push_to(&self, out: &mut String) {
        if self.next > 0 {
            out.push_str(" Stage ");
            push_decimal(out, u64::from(self.next));
            out.push_str(" is next: check the layout with `multica issue children ");
            out.push_str(self.parent_ref);
            out.push_str(
                "`, then move that stage's `backlog` sub-issues to `todo` once their dependencies are met.",
            );
        } else {
            out.push_str(
                " Closing this stage does not by itself finish the issue: either mark the parent ready \
                 with `multica issue status ",
            );
            out.push_str(self.parent_ref);
            out.push_str(" in_review`, or create the next stage.");
        }
    }
}

/// The child-done system comment, built in one string.
fn child_done_comment(
    cx: &Cx<'_>,
    parent: IssueView<'_>,
    child: IssueView<'_>,
    children: &[IssueView<'_>],
    closed: Option<u32>,
    batch: bool,
) -> String {
    let prefix = AssigneeMention(match parent.assignee {
        Some(Assignee::Agent(a)) => Some((
            MentionKind::Agent,
            a.as_str(),
            cx.dir.agent(a).map_or("", |a| a.name.as_str()),
        )),
        Some(Assignee::Squad(s)) => Some((
            MentionKind::Squad,
            s.as_str(),
            cx.dir.squad(s).map_or("", |s| s.name.as_str()),
        )),
        _ => None,
    });
    let ident = Identifier::new(cx, child.issue);
    let title = Defused(&child.title);
    let parent_ref = parent.id.as_str();
    // Room for the longest wording with typical ids, so that the string is allocated once.
    let mut out = String::with_capacity(640 + child.title.len());
    prefix.push_to(&mut out);
    // The child as `[SQ-12](mention://issue/<id>) — "<title>"`.
    let child_link = |out: &mut String| {
        out.push('[');
        ident.push_to(out);
        out.push_str("](mention://issue/");
        out.push_str(child.id.as_str());
        out.push_str(") — \"");
        title.push_to(out);
        out.push('"');
    };
    match closed {
        None => {
            out.push_str("All sub-issues are complete — the last one, ");
            child_link(&mut out);
            out.push_str(
                ", just finished. Carry the parent forward by pulling the sub-issues' results \
                 together; if nothing is left to do, run `multica issue status ",
            );
            out.push_str(parent_ref);
            out.push_str(" in_review`.");
        }
        Some(s) => {
            let summary = Progress::new(children, s);
            let advance = Advance {
                next: summary.next,
                parent_ref,
            };
            out.push_str("Stage ");
            push_decimal(&mut out, u64::from(s));
            if batch {
                out.push_str(
                    " of this issue is complete — its sub-issues just finished together in a \
                     batch update, most recently ",
                );
                child_link(&mut out);
                out.push_str(". Stage progress — ");
            } else {
                out.push_str(" of this issue is complete — its last sub-issue ");
                child_link(&mut out);
                out.push_str(" — just finished. Stage progress — ");
            }
            summary.push_to(&mut out);
            out.push('.');
            advance.push_to(&mut out);
        }
    }
    out
}
