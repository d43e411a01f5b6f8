//! The metrics of one run, gathered from its decisions as they are made.

use std::collections::BTreeMap;

use serde::Serialize;
use squad_model::{AgentId, IssueId, IssueStatus, TaskId, TaskStatus, Timestamp};

use super::translate::{Map, actor, event_issue, event_task};
use crate::decision::{Decision, Rule, TriggerSource};
use crate::directory::Directory;
use crate::event::Event;
use crate::records::Principal;

/// The most loops a report lists (the longest first); `loop_count` counts them all.
pub const MAX_LOOPS_LISTED: usize = 100;

/// Wakes per agent or per issue, over those woken at least once.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Spread {
    /// The most.
    pub max: u64,
    /// The mean.
    pub mean: f64,
    /// The 95th percentile (nearest rank).
    pub p95: u64,
}

/// Time to first wake over the issues that were woken, in seconds of trace time (`null` when
/// no issue was woken).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Latency {
    /// The median.
    pub p50: Option<f64>,
    /// The 95th percentile (nearest rank).
    pub p95: Option<f64>,
    /// The longest.
    pub max: Option<f64>,
}

/// A chain of agent-triggered wakes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Loop {
    /// The issue of the chain's last wake (`null` for a task without an issue).
    pub issue: Option<IssueId>,
    /// The agents in the order they were woken, starting with the agent whose action began the
    /// chain (`length + 1` entries).
    pub agents: Vec<AgentId>,
    /// The number of agent-triggered wakes in the chain.
    pub length: u32,
}

/// What one policy did with a trace. The keys are those of `squad route simulate --json`
/// (the first block is the contract of the command line; the rest are extras).
///
/// - A **wake** is a task that becomes runnable: an enqueued task at once, a deferred one
///   (escalation, leader barrier) when it comes due, at its due time; a deferred task cancelled
///   before (absorbed by a pending task) wakes nobody.
/// - **`enqueued`** counts every enqueue decision, deferred ones included;
///   `enqueued_leader` those with `is_leader_task`, `enqueued_member` the others.
/// - **`redundant_wakes`**: wakes of an agent on an issue that had no new comment, assignment or
///   child result since that agent's previous task on it (retries are not counted).
/// - **`wakes_after_end`**: wakes on an issue that is already `done` or `cancelled`.
/// - **`loops`**: chains of at least `loop_min` agent-triggered wakes (an agent's comment,
///   mention, assignment or child completion wakes another agent, whose own action wakes the
///   next...), the longest per chain, longest first, at most [`MAX_LOOPS_LISTED`].
/// - **`time_to_first_wake`**: from an issue's first appearance (its creation, or the first
///   event about it) to its first wake.
/// - **`cost`**: the cost model: each wake costs `task_cost` times its agent's weight (1 unless
///   the options give one).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Metrics {
    /// Enqueue decisions (deferred ones included).
    pub enqueued: u64,
    /// Enqueued leader tasks.
    pub enqueued_leader: u64,
    /// Cancelled tasks by reason (`reassigned`, `issue_deleted`, `issue_cancelled`,
    /// `coalesced`; each listed, 0 included).
    pub cancelled: BTreeMap<String, u64>,
    /// Comments merged into a pending task (or into a held leader-barrier task).
    pub coalesced: u64,
    /// Deferred escalations enqueued.
    pub escalations_scheduled: u64,
    /// Deferred escalations that came due and woke their agent.
    pub escalations_fired: u64,
    /// Rejections by HTTP status (400, 403, 404, 409, 422; each listed, 0 included).
    pub rejections: BTreeMap<String, u64>,
    /// Redundant wakes.
    pub redundant_wakes: u64,
    /// Wakes on a finished issue.
    pub wakes_after_end: u64,
    /// Agent loops.
    pub loops: Vec<Loop>,
    /// Time to first wake, in seconds.
    pub time_to_first_wake: Latency,
    /// The cost of the wakes.
    pub cost: f64,
    /// Enqueued tasks that are not leader tasks.
    pub enqueued_member: u64,
    /// Wakes.
    pub wakes: u64,
    /// Wakes per agent.
    pub wakes_per_agent: Spread,
    /// Wakes per issue.
    pub wakes_per_issue: Spread,
    /// Members' reports held by a leader barrier and delivered with another report.
    pub barrier_held: u64,
    /// Leader-barrier tasks that came due and woke their leader.
    pub barrier_fired: u64,
    /// Retries enqueued.
    pub retries: u64,
    /// Agent loops found (the list holds at most [`MAX_LOOPS_LISTED`]).
    pub loop_count: u64,
    /// Issues woken at least once.
    pub issues_woken: u64,
    /// Trace events replayed (skipped ones included).
    pub events: u64,
    /// Trace events skipped in a counterfactual run (see the module docs).
    pub skipped_events: u64,
    /// Deferred tasks the simulation's scheduler made due: during the trace in counterfactual
    /// runs, after its end in every run.
    pub scheduler_fired: u64,
}

const NONE: u32 = u32::MAX;

#[derive(Debug)]
struct AgentStat {
    id: AgentId,
    wakes: u64,
    weight: f64,
}

#[derive(Debug)]
struct IssueStat {
    id: IssueId,
    /// First appearance (ms).
    start: Option<i64>,
    first_wake: Option<i64>,
    wakes: u64,
    /// The input counter after the issue's last input.
    last_input: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Deferred {
    No,
    Escalation,
    Barrier,
    Other,
}

#[derive(Debug, Clone, Copy)]
struct TaskRec {
    agent: u32,
    issue: u32,
    /// Due time (ms) of a deferred task that has not fired.
    due: Option<i64>,
    deferred: Deferred,
    link: u32,
}

/// One wake in a chain: the agent woken, the link of the agent whose action woke it.
#[derive(Debug, Clone, Copy)]
struct Link {
    agent: u32,
    parent: u32,
    len: u32,
    root: u32,
    issue: u32,
}

/// Gathers a run's metrics from its decisions.
#[derive(Debug)]
pub(crate) struct Collector {
    m: Metrics,
    loop_min: u32,
    task_cost: f64,
    weights: BTreeMap<AgentId, f64>,
    agents: Map<AgentId, u32>,
    agent_stats: Vec<AgentStat>,
    issues: Map<IssueId, u32>,
    issue_stats: Vec<IssueStat>,
    tasks: Map<TaskId, TaskRec>,
    /// Per (agent, issue): the input counter at the agent's last task there, and its link.
    last: Map<(u32, u32), (u64, u32)>,
    links: Vec<Link>,
    /// Per chain root: its longest link.
    best: Map<u32, u32>,
    input_seq: u64,
    /// Wake times (ms).
    pub(crate) wake_times: Vec<i64>,
    /// The last time converted to milliseconds (most events share their time with the last
    /// one observed, and the conversion costs more than the rest of a plain event's metrics).
    clock: Option<(Timestamp, i64)>,
    /// The last issue interned (an event's decisions mostly name one issue).
    last_issue: Option<(IssueId, u32)>,
}

impl Collector {
    pub(crate) fn new(loop_min: u32, task_cost: f64, weights: &BTreeMap<AgentId, f64>) -> Self {
        let mut m = Metrics::default();
        // Every reason and status the engine gives is listed, so that every run has the same
        // rows.
        for reason in [
            "reassigned",
            "issue_deleted",
            "issue_cancelled",
            "coalesced",
        ] {
            m.cancelled.insert(reason.to_owned(), 0);
        }
        for status in ["400", "403", "404", "409", "422"] {
            m.rejections.insert(status.to_owned(), 0);
        }
        Self {
            m,
            loop_min: loop_min.max(1),
            task_cost,
            weights: weights.clone(),
            agents: Map::default(),
            agent_stats: Vec::new(),
            issues: Map::default(),
            issue_stats: Vec::new(),
            tasks: Map::default(),
            last: Map::default(),
            links: Vec::new(),
            best: Map::default(),
            input_seq: 0,
            wake_times: Vec::new(),
            clock: None,
            last_issue: None,
        }
    }

    fn millis(&mut self, at: Timestamp) -> i64 {
        match self.clock {
            Some((t, ms)) if t == at => ms,
            _ => {
                let ms = at.unix_millis();
                self.clock = Some((at, ms));
                ms
            }
        }
    }

    fn agent(&mut self, id: &AgentId) -> u32 {
        if let Some(&n) = self.agents.get(id) {
            return n;
        }
        let n = u32::try_from(self.agent_stats.len()).unwrap_or(NONE - 1);
        self.agent_stats.push(AgentStat {
            id: id.clone(),
            wakes: 0,
            weight: self.weights.get(id).copied().unwrap_or(1.0),
        });
        self.agents.insert(id.clone(), n);
        n
    }

    fn issue(&mut self, id: &IssueId, at: i64) -> u32 {
        if let Some((last, n)) = &self.last_issue
            && last == id
        {
            return *n;
        }
        let n = self.issue_slow(id, at);
        self.last_issue = Some((id.clone(), n));
        n
    }

    fn issue_slow(&mut self, id: &IssueId, at: i64) -> u32 {
        if let Some(&n) = self.issues.get(id) {
            return n;
        }
        let n = u32::try_from(self.issue_stats.len()).unwrap_or(NONE - 1);
        self.issue_stats.push(IssueStat {
            id: id.clone(),
            start: Some(at),
            first_wake: None,
            wakes: 0,
            last_input: 0,
        });
        self.issues.insert(id.clone(), n);
        n
    }

    fn input(&mut self, issue: u32) {
        self.input_seq += 1;
        self.issue_stats[issue as usize].last_input = self.input_seq;
    }

    /// The agent of a task, as text (for the decision signatures of `diff`).
    pub(crate) fn task_agent<'s>(&'s self, id: &TaskId) -> Option<&'s AgentId> {
        self.tasks
            .get(id)
            .map(|t| &self.agent_stats[t.agent as usize].id)
    }

    fn wake(&mut self, agent: u32, issue: u32, at: i64, after_end: bool) {
        self.m.wakes += 1;
        let a = &mut self.agent_stats[agent as usize];
        a.wakes += 1;
        self.m.cost += self.task_cost * a.weight;
        if issue != NONE {
            let i = &mut self.issue_stats[issue as usize];
            i.wakes += 1;
            if i.first_wake.is_none_or(|w| at < w) {
                i.first_wake = Some(at);
            }
        }
        if after_end {
            self.m.wakes_after_end += 1;
        }
        self.wake_times.push(at);
    }

    /// The link of the agent that acted in the event: its task named in the event, else its
    /// last task on the event's issue, else a new root.
    fn actor_link(&mut self, who: u32, event: &Event, at: i64) -> u32 {
        if let Some(t) = event_task(event)
            && let Some(rec) = self.tasks.get(t)
            && rec.agent == who
        {
            return rec.link;
        }
        if let Some(i) = event_issue(event)
            && let Some(&n) = self.issues.get(i)
            && let Some(&(_, link)) = self.last.get(&(who, n))
        {
            return link;
        }
        let issue = event_issue(event).map_or(NONE, |i| self.issue(i, at));
        self.root(who, issue)
    }

    fn root(&mut self, agent: u32, issue: u32) -> u32 {
        let n = u32::try_from(self.links.len()).unwrap_or(NONE - 1);
        self.links.push(Link {
            agent,
            parent: NONE,
            len: 0,
            root: n,
            issue,
        });
        n
    }

    /// Observes one event's decisions before they are applied (`dir` is the state before the
    /// event).
    pub(crate) fn observe(
        &mut self,
        dir: &dyn Directory,
        at: Timestamp,
        event: &Event,
        decisions: &[Decision],
    ) {
        if decisions.iter().all(|d| {
            matches!(d, Decision::SetTaskStatus { status, .. } if *status != TaskStatus::Queued)
                || matches!(
                    d,
                    Decision::Claim { .. } | Decision::Noop { .. } | Decision::Mention { .. }
                )
        }) {
            // Nothing a metric counts (a task starting or finishing, a claim).
            return;
        }
        let ms = self.millis(at);
        for (n, d) in decisions.iter().enumerate() {
            match d {
                Decision::Enqueue {
                    task,
                    source,
                    delay_seconds,
                    rule,
                } => self.enqueue(
                    dir,
                    ms,
                    event,
                    &decisions[..n],
                    task,
                    *source,
                    *delay_seconds,
                    *rule,
                ),
                Decision::SetTaskStatus {
                    task_id,
                    status: TaskStatus::Queued,
                } => self.fire(dir, task_id),
                Decision::Cancel { reason, .. } => {
                    *self.m.cancelled.entry((*reason).to_owned()).or_default() += 1;
                }
                Decision::Coalesce { rule, .. } => {
                    self.m.coalesced += 1;
                    if *rule == Rule::LeaderBarrier {
                        self.m.barrier_held += 1;
                    }
                }
                Decision::Reject { code, .. } => {
                    *self.m.rejections.entry(code.to_string()).or_default() += 1;
                }
                Decision::PostComment { comment, .. } => {
                    let i = self.issue(&comment.issue_id, ms);
                    self.input(i);
                }
                Decision::CreateIssue { issue, .. } => {
                    let i = self.issue(&issue.id, ms);
                    if issue.assignee.is_some() {
                        self.input(i);
                    }
                }
                Decision::UpdateIssue {
                    issue_id,
                    status,
                    set_assignee,
                    ..
                } => {
                    let i = self.issue(issue_id, ms);
                    if *set_assignee {
                        self.input(i);
                    }
                    if status.is_some_and(|s| s.is_terminal())
                        && let Some(p) =
                            dir.issue(issue_id).and_then(|x| x.parent_issue_id.as_ref())
                    {
                        // A child's result is news for its parent.
                        let p = self.issue(p, ms);
                        self.input(p);
                    }
                }
                _ => {}
            }
        }
    }

    #[expect(
        clippy::too_many_arguments,
        reason = "one decision's fields and its context"
    )]
    fn enqueue(
        &mut self,
        dir: &dyn Directory,
        ms: i64,
        event: &Event,
        earlier: &[Decision],
        task: &squad_model::Task,
        source: TriggerSource,
        delay: Option<u32>,
        rule: Rule,
    ) {
        self.m.enqueued += 1;
        if task.is_leader_task {
            self.m.enqueued_leader += 1;
        } else {
            self.m.enqueued_member += 1;
        }
        let agent = self.agent(&task.agent_id);
        let issue = task.issue_id.as_ref().map_or(NONE, |i| self.issue(i, ms));
        // The chain: a retry continues its failed task's; an agent's action extends the chain
        // that woke it; anything else starts one.
        let link = if source == TriggerSource::Retry {
            self.m.retries += 1;
            match event_task(event).and_then(|t| self.tasks.get(t)) {
                Some(r) => r.link,
                None => self.root(agent, issue),
            }
        } else if let Some(Principal::Agent(x)) = actor(event) {
            let who = self.agent(x);
            let parent = self.actor_link(who, event, ms);
            let p = self.links[parent as usize];
            let n = u32::try_from(self.links.len()).unwrap_or(NONE - 1);
            let len = p.len + 1;
            self.links.push(Link {
                agent,
                parent,
                len,
                root: p.root,
                issue,
            });
            if len >= self.loop_min {
                let best = self.best.entry(p.root).or_insert(n);
                if self.links[*best as usize].len < len {
                    *best = n;
                }
            }
            n
        } else {
            self.root(agent, issue)
        };
        if issue != NONE {
            let last_input = self.issue_stats[issue as usize].last_input;
            let prev = self.last.insert((agent, issue), (self.input_seq, link));
            if source != TriggerSource::Retry && prev.is_some_and(|(mark, _)| last_input <= mark) {
                self.m.redundant_wakes += 1;
            }
        }
        let deferred = match (delay, rule) {
            (None, _) => Deferred::No,
            (Some(_), Rule::LeaderBarrier) => Deferred::Barrier,
            (Some(_), _) if source == TriggerSource::Escalation => Deferred::Escalation,
            (Some(_), _) => Deferred::Other,
        };
        match deferred {
            Deferred::Escalation => self.m.escalations_scheduled += 1,
            Deferred::No => {
                let ended = task
                    .issue_id
                    .as_ref()
                    .is_some_and(|i| status_now(dir, earlier, i).is_some_and(|s| s.is_terminal()));
                self.wake(agent, issue, ms, ended);
            }
            _ => {}
        }
        self.tasks.insert(
            task.id.clone(),
            TaskRec {
                agent,
                issue,
                due: delay.map(|d| ms + i64::from(d) * 1000),
                deferred,
                link,
            },
        );
    }

    /// A task set to `queued`: a deferred task comes due and wakes its agent, at its due time.
    fn fire(&mut self, dir: &dyn Directory, task_id: &TaskId) {
        let Some(rec) = self.tasks.get_mut(task_id) else {
            return;
        };
        let Some(due) = rec.due.take() else {
            return;
        };
        let rec = *rec;
        match rec.deferred {
            Deferred::Escalation => self.m.escalations_fired += 1,
            Deferred::Barrier => self.m.barrier_fired += 1,
            _ => {}
        }
        let ended = dir
            .task(task_id)
            .and_then(|t| t.issue_id.as_ref())
            .and_then(|i| dir.issue(i))
            .is_some_and(|i| i.status.is_terminal());
        self.wake(rec.agent, rec.issue, due, ended);
    }

    /// Counts a trace event, and a skipped one among the skipped events too (a deferred task
    /// the scheduler made due is [`count_scheduler_fire`](Self::count_scheduler_fire)'s).
    pub(crate) fn count_event(&mut self, skipped: bool) {
        self.m.events += 1;
        if skipped {
            self.m.skipped_events += 1;
        }
    }

    /// Counts a deferred task the simulation's scheduler made due.
    pub(crate) fn count_scheduler_fire(&mut self) {
        self.m.scheduler_fired += 1;
    }

    /// The finished metrics.
    pub(crate) fn finish(mut self) -> (Metrics, Vec<i64>) {
        let mut per_agent: Vec<u64> = self
            .agent_stats
            .iter()
            .map(|a| a.wakes)
            .filter(|&w| w > 0)
            .collect();
        let mut per_issue: Vec<u64> = self
            .issue_stats
            .iter()
            .map(|i| i.wakes)
            .filter(|&w| w > 0)
            .collect();
        self.m.wakes_per_agent = spread(&mut per_agent);
        self.m.wakes_per_issue = spread(&mut per_issue);
        let mut latencies: Vec<i64> = self
            .issue_stats
            .iter()
            .filter_map(|i| Some((i.first_wake? - i.start?).max(0)))
            .collect();
        latencies.sort_unstable();
        self.m.issues_woken = latencies.len() as u64;
        let secs = |ms: i64| ms as f64 / 1000.0;
        self.m.time_to_first_wake = Latency {
            p50: rank(&latencies, 50).map(secs),
            p95: rank(&latencies, 95).map(secs),
            max: latencies.last().copied().map(secs),
        };
        let mut loops: Vec<Loop> = self
            .best
            .values()
            .map(|&n| {
                let end = self.links[n as usize];
                let mut agents = Vec::with_capacity(end.len as usize + 1);
                let mut cur = n;
                while cur != NONE {
                    let l = self.links[cur as usize];
                    agents.push(self.agent_stats[l.agent as usize].id.clone());
                    cur = l.parent;
                }
                agents.reverse();
                Loop {
                    issue: self
                        .issue_stats
                        .get(end.issue as usize)
                        .map(|i| i.id.clone()),
                    agents,
                    length: end.len,
                }
            })
            .collect();
        loops.sort_by(|a, b| {
            b.length
                .cmp(&a.length)
                .then_with(|| a.issue.cmp(&b.issue))
                .then_with(|| a.agents.cmp(&b.agents))
        });
        self.m.loop_count = loops.len() as u64;
        loops.truncate(MAX_LOOPS_LISTED);
        self.m.loops = loops;
        self.wake_times.sort_unstable();
        (self.m, self.wake_times)
    }
}

/// An issue's status after the decisions of this event made so far (the record's otherwise).
fn status_now(dir: &dyn Directory, earlier: &[Decision], issue: &IssueId) -> Option<IssueStatus> {
    for d in earlier.iter().rev() {
        match d {
            Decision::UpdateIssue {
                issue_id,
                status: Some(s),
                ..
            } if issue_id == issue => return Some(*s),
            Decision::CreateIssue { issue: i, .. } if &i.id == issue => return Some(i.status),
            _ => {}
        }
    }
    dir.issue(issue).map(|i| i.status)
}

/// The value at percentile `p` (nearest rank) of a sorted list.
fn rank<T: Copy>(sorted: &[T], p: usize) -> Option<T> {
    if sorted.is_empty() {
        return None;
    }
    let k = (p * sorted.len()).div_ceil(100).max(1);
    sorted.get(k - 1).copied()
}

fn spread(v: &mut [u64]) -> Spread {
    v.sort_unstable();
    if v.is_empty() {
        return Spread::default();
    }
    Spread {
        max: v.last().copied().unwrap_or(0),
        mean: v.iter().sum::<u64>() as f64 / v.len() as f64,
        p95: rank(v, 95).unwrap_or(0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<u64> = (1..=20).collect();
        assert_eq!(rank(&v, 50), Some(10));
        assert_eq!(rank(&v, 95), Some(19));
        assert_eq!(rank(&v, 100), Some(20));
        assert_eq!(rank(&[7u64], 95), Some(7));
        assert_eq!(rank::<u64>(&[], 50), None);
        let mut w = vec![3, 1, 2];
        assert_eq!(
            spread(&mut w),
            Spread {
                max: 3,
                mean: 2.0,
                p95: 3
            }
        );
    }
}
