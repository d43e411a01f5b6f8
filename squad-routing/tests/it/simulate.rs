//! `simulate`: each metric on a small hand-written trace with a known answer, the policy
//! variants side by side, the diff and the decision log; and the property that a simulation
//! under the policy a trace was recorded with decides exactly as a replay.

use std::sync::Mutex;

use proptest::prelude::*;
use squad_model::{
    Agent, AgentId, Assignee, CommentId, InvocationTarget, Issue, IssueId, IssueStatus, MemberRef,
    PermissionMode, RuntimeBinding, RuntimeId, RuntimeStatus, Squad, SquadId, SquadMember,
    SquadMemberId, TaskId, TaskStatus, Timestamp, UserId, WorkspaceId,
};
use squad_routing::event::*;
use squad_routing::generate::{GenConfig, Workload, WorkloadConfig, generate_workload};
use squad_routing::simulate::{
    NamedPolicy, Report, SimOptions, Trace, simulate, simulate_observed,
};
use squad_routing::trace::IssueRecord;
use squad_routing::{
    Decision, Engine, Event, Membership, Principal, Replay, RoutingPolicy, Rule, TraceLine, User,
    Workspace, WorkspaceRole,
};

use crate::world::{mention, update, uuid};

/// Writes a trace record by record, replaying it as it goes (under the default policy) so that
/// the events can name the tasks the engine mints.
struct Builder {
    trace: Trace,
    replay: Replay,
    at: Timestamp,
    ws: WorkspaceId,
    human: UserId,
    n: u64,
}

impl Builder {
    fn new() -> Self {
        let mut b = Self {
            trace: Trace::new(),
            replay: Replay::new(Engine::default()),
            at: Timestamp::parse("2026-11-30T10:00:00Z").unwrap(),
            ws: WorkspaceId::new("w1").unwrap(),
            human: UserId::new(uuid(0xe, 1)).unwrap(),
            n: 0,
        };
        b.record(TraceLine::Workspace(Workspace {
            id: b.ws.clone(),
            name: "Acme".into(),
            issue_prefix: "SQ".into(),
        }));
        b.record(TraceLine::User(User {
            id: b.human.clone(),
            name: "Hana".into(),
        }));
        b.record(TraceLine::Membership(Membership {
            workspace_id: b.ws.clone(),
            user_id: b.human.clone(),
            role: WorkspaceRole::Member,
        }));
        b
    }

    fn next(&mut self) -> u64 {
        self.n += 1;
        self.n
    }

    fn record(&mut self, line: TraceLine) {
        self.replay.feed(line.clone()).unwrap();
        self.trace.push(line).unwrap();
    }

    /// A public agent owned by the human, online.
    fn agent(&mut self, name: &str) -> AgentId {
        let id = AgentId::new(uuid(0xa, self.next())).unwrap();
        self.record(TraceLine::Agent(Agent {
            id: id.clone(),
            workspace_id: self.ws.clone(),
            name: name.into(),
            owner_id: Some(self.human.clone()),
            archived_at: None,
            runtime: Some(RuntimeBinding {
                runtime_id: RuntimeId::new(format!("rt-{id}")).unwrap(),
                status: RuntimeStatus::Online,
                last_seen_at: None,
            }),
            permission_mode: PermissionMode::PublicTo,
            invocation_targets: vec![InvocationTarget::Workspace],
            skills: vec![],
            instructions: String::new(),
            created_at: self.at,
        }));
        id
    }

    fn squad(&mut self, leader: &AgentId, members: &[&AgentId]) -> SquadId {
        let id = SquadId::new(uuid(0x5, self.next())).unwrap();
        self.record(TraceLine::Squad(Squad {
            id: id.clone(),
            workspace_id: self.ws.clone(),
            name: "Core".into(),
            description: String::new(),
            leader_id: leader.clone(),
            creator_id: self.human.clone(),
            instructions: String::new(),
            avatar_url: None,
            archived_at: None,
            archived_by: None,
            created_at: self.at,
            updated_at: self.at,
        }));
        for (i, a) in std::iter::once(leader)
            .chain(members.iter().copied())
            .enumerate()
        {
            self.record(TraceLine::Member(SquadMember {
                id: SquadMemberId::new(format!("{id}-{i}")).unwrap(),
                squad_id: id.clone(),
                member: MemberRef::Agent(a.clone()),
                role: if i == 0 { "leader" } else { "member" }.into(),
                created_at: self.at,
            }));
        }
        id
    }

    fn issue(&mut self, status: IssueStatus, assignee: Option<Assignee>) -> IssueId {
        let id = IssueId::new(uuid(0x1, self.next())).unwrap();
        self.record(TraceLine::Issue(IssueRecord {
            issue: Issue {
                id: id.clone(),
                workspace_id: self.ws.clone(),
                title: "Work".into(),
                status,
                assignee,
                parent_issue_id: None,
                stage: None,
                origin: None,
                creator: Some(squad_model::Actor::Member(self.human.clone())),
                created_at: self.at,
            },
            number: None,
        }));
        id
    }

    /// An event `secs` seconds after the previous one; returns the tasks it enqueued.
    fn ev(&mut self, secs: i64, e: impl Into<Event>) -> Vec<TaskId> {
        self.at = self.at.plus_seconds(secs);
        let line = TraceLine::Event {
            at: Some(self.at),
            event: e.into(),
        };
        let out = self.replay.feed(line.clone()).unwrap().unwrap();
        self.trace.push(line).unwrap();
        out.decisions.enqueued().map(|t| t.id.clone()).collect()
    }

    fn comment(
        &mut self,
        secs: i64,
        issue: &IssueId,
        author: Principal,
        task: Option<&TaskId>,
        text: &str,
    ) -> Vec<TaskId> {
        self.post(secs, issue, author, task, None, text).1
    }

    /// A comment (a reply when `parent` is given); returns its id and the tasks it enqueued.
    fn post(
        &mut self,
        secs: i64,
        issue: &IssueId,
        author: Principal,
        task: Option<&TaskId>,
        parent: Option<&CommentId>,
        text: &str,
    ) -> (CommentId, Vec<TaskId>) {
        let id = CommentId::new(uuid(0xc, self.next())).unwrap();
        let tasks = self.ev(
            secs,
            PostComment {
                comment_id: id.clone(),
                issue_id: issue.clone(),
                author,
                task_id: task.cloned(),
                parent_id: parent.cloned(),
                content: text.into(),
                suppress_agent_ids: vec![],
            },
        );
        (id, tasks)
    }

    fn status(&mut self, secs: i64, task: &TaskId, status: TaskStatus) {
        self.ev(
            secs,
            SetTaskStatus {
                task_id: task.clone(),
                status,
            },
        );
    }

    /// Claim, start and complete a task.
    fn work(&mut self, task: &TaskId) {
        self.ev(
            1,
            ClaimTask {
                task_id: task.clone(),
            },
        );
        self.status(1, task, TaskStatus::Running);
        self.status(1, task, TaskStatus::Completed);
    }

    fn update(&mut self, secs: i64, issue: &IssueId, status: IssueStatus) -> Vec<TaskId> {
        self.ev(
            secs,
            update(
                Principal::Member(self.human.clone()),
                issue,
                Some(status),
                None,
            ),
        )
    }
}

fn run(trace: &Trace, policies: &[(&str, RoutingPolicy)], opts: &SimOptions) -> Report {
    let named: Vec<NamedPolicy> = policies
        .iter()
        .map(|(n, p)| NamedPolicy::new(*n, p.clone()))
        .collect();
    simulate(trace, &named, opts).unwrap()
}

fn default_only(trace: &Trace, opts: &SimOptions) -> Report {
    run(trace, &[("default", RoutingPolicy::default())], opts)
}

fn barrier(seconds: u32) -> RoutingPolicy {
    RoutingPolicy {
        leader_barrier_seconds: seconds,
        ..RoutingPolicy::default()
    }
}

/// A human asks agent A, then A and B mention each other four times: a chain of four
/// agent-triggered wakes, A -> B -> A -> B -> A.
fn ping_pong() -> (Trace, AgentId, AgentId, IssueId) {
    let mut b = Builder::new();
    let a = b.agent("Ada");
    let bb = b.agent("Bo");
    let issue = b.issue(IssueStatus::Todo, None);
    let human = Principal::Member(b.human.clone());
    let mut task = b.comment(
        1,
        &issue,
        human,
        None,
        &format!("{} please look", mention("agent", a.as_str(), "Ada")),
    );
    let mut who = (a.clone(), bb.clone());
    for _ in 0..4 {
        let t = task.pop().unwrap();
        b.ev(1, ClaimTask { task_id: t.clone() });
        let text = format!("{} your turn", mention("agent", who.1.as_str(), "x"));
        task = b.comment(1, &issue, Principal::Agent(who.0.clone()), Some(&t), &text);
        b.status(1, &t, TaskStatus::Completed);
        who = (who.1, who.0);
    }
    (b.trace, a, bb, issue)
}

#[test]
fn a_chain_of_four_agent_triggered_wakes_is_a_loop_of_length_4() {
    let (trace, a, b, issue) = ping_pong();
    let r = default_only(&trace, &SimOptions::default());
    let m = &r.policies[0].metrics;
    assert_eq!(m.wakes, 5, "the human's wake and four agent-triggered ones");
    assert_eq!(m.loop_count, 1);
    let l = &m.loops[0];
    assert_eq!(l.length, 4);
    assert_eq!(l.issue.as_ref(), Some(&issue));
    assert_eq!(
        l.agents,
        vec![a.clone(), b.clone(), a.clone(), b.clone(), a]
    );
    // With a higher threshold, the same chain is no loop.
    let r = default_only(
        &trace,
        &SimOptions {
            loop_min: 5,
            ..SimOptions::default()
        },
    );
    assert_eq!(r.policies[0].metrics.loop_count, 0);
    assert!(r.policies[0].metrics.loops.is_empty());
}

#[test]
fn a_wake_without_news_since_the_previous_task_is_redundant() {
    let mut b = Builder::new();
    let a = b.agent("Ada");
    let issue = b.issue(IssueStatus::Backlog, Some(Assignee::Agent(a.clone())));
    // Out of backlog: the first wake.
    let t1 = b.update(1, &issue, IssueStatus::Todo).pop().unwrap();
    b.work(&t1);
    // Parked and promoted again with nothing new: the agent is woken for nothing.
    b.update(1, &issue, IssueStatus::Backlog);
    let t2 = b.update(1, &issue, IssueStatus::Todo).pop().unwrap();
    b.work(&t2);
    // A human comment is news: this wake is not redundant.
    let human = Principal::Member(b.human.clone());
    let t3 = b
        .comment(1, &issue, human, None, "One more thing")
        .pop()
        .unwrap();
    b.work(&t3);
    let m = &default_only(&b.trace, &SimOptions::default()).policies[0].metrics;
    assert_eq!(m.wakes, 3);
    assert_eq!(m.redundant_wakes, 1);
    assert_eq!(m.wakes_after_end, 0);
    assert_eq!(m.wakes_per_issue.max, 3);
    assert_eq!(m.wakes_per_agent.mean, 3.0);
}

#[test]
fn a_wake_on_a_done_issue_is_a_wake_after_the_end() {
    let mut b = Builder::new();
    let lead = b.agent("Lead");
    let squad = b.squad(&lead, &[]);
    let issue = b.issue(IssueStatus::Backlog, Some(Assignee::Squad(squad)));
    let t1 = b.update(10, &issue, IssueStatus::Todo).pop().unwrap();
    b.work(&t1);
    b.update(1, &issue, IssueStatus::Done);
    // A comment on the finished issue still wakes the leader (no status gate, §4.1).
    let human = Principal::Member(b.human.clone());
    let t2 = b.comment(5, &issue, human, None, "Thanks!");
    assert_eq!(t2.len(), 1);
    let m = &default_only(&b.trace, &SimOptions::default()).policies[0].metrics;
    assert_eq!(m.wakes, 2);
    assert_eq!(m.wakes_after_end, 1);
    assert_eq!(m.enqueued_leader, 2);
    // The issue first appeared with the promotion, which woke the leader at once.
    assert_eq!(m.time_to_first_wake.max, Some(0.0));
}

/// A parent on a squad whose `n` members report 10 s apart; in the recorded trace (default
/// policy) the leader works each report before the next arrives.
fn review_storm(n: usize) -> (Trace, AgentId, IssueId) {
    let mut b = Builder::new();
    let lead = b.agent("Lead");
    let members: Vec<AgentId> = (0..n).map(|i| b.agent(&format!("M{i}"))).collect();
    let refs: Vec<&AgentId> = members.iter().collect();
    let squad = b.squad(&lead, &refs);
    let parent = b.issue(IssueStatus::InProgress, Some(Assignee::Squad(squad)));
    for (i, m) in members.iter().enumerate() {
        let woken = b.comment(
            if i == 0 { 1 } else { 7 },
            &parent,
            Principal::Agent(m.clone()),
            None,
            &format!("Review {i}: looks good."),
        );
        assert_eq!(
            woken.len(),
            1,
            "each report wakes the leader under the default policy"
        );
        b.work(&woken[0]);
    }
    (b.trace, lead, parent)
}

#[test]
fn a_leader_barrier_saves_n_minus_1_wakes_in_a_review_storm() {
    let n = 5;
    let (trace, lead, _) = review_storm(n);
    let r = run(
        &trace,
        &[
            ("default", RoutingPolicy::default()),
            ("barrier", barrier(60)),
        ],
        &SimOptions::default(),
    );
    let (d, b) = (&r.policies[0].metrics, &r.policies[1].metrics);
    assert!(!r.policies[0].counterfactual);
    assert!(r.policies[1].counterfactual);
    assert_eq!(d.wakes, n as u64);
    assert_eq!(d.enqueued_leader, n as u64);
    assert_eq!(b.wakes, 1, "one wake with every report");
    assert_eq!(d.wakes - b.wakes, n as u64 - 1);
    assert_eq!(b.barrier_held, n as u64 - 1);
    assert_eq!(b.barrier_fired, 1);
    assert_eq!(b.scheduler_fired, 1);
    assert_eq!(b.enqueued, 1);
    // The leader's work on each report in the recorded trace (claim, start, complete) did not
    // happen: those events are skipped.
    assert_eq!(b.skipped_events, 3 * n as u64);
    // The price is latency: the first report waited the whole window.
    assert_eq!(d.time_to_first_wake.max, Some(0.0));
    assert_eq!(b.time_to_first_wake.max, Some(60.0));
    // The cost model: a weight of 2 on the leader doubles the default run's cost.
    let weighted = SimOptions {
        agent_weights: [(lead, 2.0)].into_iter().collect(),
        task_cost: 1.5,
        ..SimOptions::default()
    };
    let r = run(
        &trace,
        &[
            ("default", RoutingPolicy::default()),
            ("barrier", barrier(60)),
        ],
        &weighted,
    );
    assert_eq!(r.policies[0].metrics.cost, 1.5 * 2.0 * n as f64);
    assert_eq!(r.policies[1].metrics.cost, 1.5 * 2.0);
}

#[test]
fn a_barrier_shorter_than_the_storm_wakes_the_leader_once_per_window() {
    // Reports at 0, 10, 20, 30, 40 s (plus the leader's work); a 15 s window holds two.
    let (trace, _, _) = review_storm(5);
    let r = run(&trace, &[("short", barrier(15))], &SimOptions::default());
    let m = &r.policies[0].metrics;
    // Each report either woke the leader or was merged into a task that did.
    assert_eq!(m.wakes + m.coalesced, 5, "{m:?}");
    assert_eq!(m.wakes, 2, "{m:?}");
    assert_eq!(m.barrier_held, 2, "{m:?}");
}

#[test]
fn the_diff_shows_where_the_policies_part_and_the_log_tells_the_story() {
    let (trace, lead, parent) = review_storm(3);
    let opts = SimOptions {
        diff_limit: 2,
        explain: Some(parent.clone()),
        ..SimOptions::default()
    };
    let r = run(
        &trace,
        &[
            ("default", RoutingPolicy::default()),
            ("barrier", barrier(60)),
        ],
        &opts,
    );
    assert_eq!(r.diff.len(), 2);
    let first = &r.diff[0];
    assert_eq!(first.event, "comment");
    let enqueue = |side: usize| {
        first.policies[side]
            .decisions
            .iter()
            .find_map(|d| match d {
                Decision::Enqueue {
                    task,
                    delay_seconds,
                    rule,
                    ..
                } => Some((task.agent_id.clone(), *delay_seconds, *rule)),
                _ => None,
            })
            .unwrap()
    };
    assert_eq!(enqueue(0), (lead.clone(), None, Rule::CommentAgentAuthor));
    assert_eq!(enqueue(1), (lead, Some(60), Rule::LeaderBarrier));
    // The second difference: the leader's claim of the first report, skipped under the barrier.
    assert_eq!(r.diff[1].event, "claim");
    assert!(r.diff[1].policies[1].skipped);
    // The decision log of the parent: every report, with its rule.
    let log = r.policies[1].explain.as_ref().unwrap();
    let rules: Vec<Rule> = log
        .iter()
        .flat_map(|e| e.decisions.iter().filter_map(Decision::rule))
        .collect();
    assert_eq!(
        rules.iter().filter(|r| **r == Rule::LeaderBarrier).count(),
        3
    );
    // The scheduler's firing is in the story, without a line.
    assert!(
        log.iter()
            .any(|e| e.line.is_none() && e.event == "task_status")
    );
    assert!(log.iter().any(|e| e.skipped));
    // Without --diff, no diff.
    assert!(
        run(
            &trace,
            &[("a", RoutingPolicy::default()), ("b", barrier(60))],
            &SimOptions::default()
        )
        .diff
        .is_empty()
    );
}

#[test]
fn counts_by_kind_cancellations_rejections_coalescing_and_escalations() {
    let mut b = Builder::new();
    let lead = b.agent("Lead");
    let ada = b.agent("Ada");
    let squad = b.squad(&lead, &[&ada]);
    let issue = b.issue(IssueStatus::Todo, None);
    let human = Principal::Member(b.human.clone());
    // Assigned to the squad: a leader task; a second comment while it is queued coalesces.
    let assign = update(human.clone(), &issue, None, Some(("squad", squad.as_str())));
    assert_eq!(b.ev(1, assign).len(), 1);
    b.comment(1, &issue, human.clone(), None, "Ping");
    // Reassigned to Ada: the leader's task is cancelled (decision (a)), Ada is woken.
    let to_ada = update(human.clone(), &issue, None, Some(("agent", ada.as_str())));
    let t = b.ev(1, to_ada).pop().unwrap();
    // A bad assignment is refused with 400.
    let bad = update(human.clone(), &issue, None, Some(("robot", "x")));
    b.ev(1, bad);
    // Ada comments from her task (an agent's comment on an agent-assigned issue wakes nobody).
    b.ev(1, ClaimTask { task_id: t.clone() });
    let cid = CommentId::new(uuid(0xc, 900)).unwrap();
    b.ev(
        1,
        PostComment {
            comment_id: cid.clone(),
            issue_id: issue.clone(),
            author: Principal::Agent(ada.clone()),
            task_id: Some(t.clone()),
            parent_id: None,
            content: "Done, see the PR.".into(),
            suppress_agent_ids: vec![],
        },
    );
    b.status(1, &t, TaskStatus::Completed);
    let back = update(human.clone(), &issue, None, Some(("squad", squad.as_str())));
    // Back to the squad (nothing active to cancel): the leader is woken.
    let lt = b.ev(1, back).pop().unwrap();
    b.work(&lt);
    // A member's reply to Ada wakes her, and schedules an escalation to the squad's leader.
    let reply = b.ev(
        1,
        PostComment {
            comment_id: CommentId::new(uuid(0xc, 901)).unwrap(),
            issue_id: issue.clone(),
            author: human.clone(),
            task_id: None,
            parent_id: Some(cid),
            content: "Why?".into(),
            suppress_agent_ids: vec![],
        },
    );
    assert_eq!(
        reply.len(),
        2,
        "Ada now, the leader as a deferred escalation"
    );
    // The host's scheduler makes the escalation due five minutes later.
    b.status(300, &reply[1], TaskStatus::Queued);
    let m = &default_only(&b.trace, &SimOptions::default()).policies[0].metrics;
    assert_eq!(m.cancelled.get("reassigned"), Some(&1));
    assert_eq!(m.rejections.get("400"), Some(&1));
    assert_eq!(m.coalesced, 1);
    assert_eq!(m.escalations_scheduled, 1);
    assert_eq!(m.escalations_fired, 1);
    assert_eq!(m.enqueued, 5);
    assert_eq!(m.enqueued_leader, 3);
    assert_eq!(m.enqueued_member, 2);
    // The reassignment cancelled the first leader task before it ran; every enqueue but the
    // deferred one woke someone at once, and the escalation woke the leader when due.
    assert_eq!(m.wakes, 5);
}

#[test]
fn a_reply_between_members_does_not_wake_the_assignee_with_the_variant() {
    let mut b = Builder::new();
    let lead = b.agent("Lead");
    let ada = b.agent("Ada");
    let squad = b.squad(&lead, &[&ada]);
    let issue = b.issue(IssueStatus::InProgress, Some(Assignee::Squad(squad)));
    let human = Principal::Member(b.human.clone());
    // Ada's comment starts a thread (and wakes the leader, row 4).
    let (root, woken) = b.post(1, &issue, Principal::Agent(ada.clone()), None, None, "FYI");
    b.work(&woken[0]);
    // A member answers Ada (row 5: Ada is woken; the escalation is deferred).
    let (reply, woken) = b.post(1, &issue, human.clone(), None, Some(&root), "Good");
    b.work(&woken[0]);
    // A member answers that member: no thread rule routes it, so Era C falls back to row 7.
    let (_, woken) = b.post(60, &issue, human, None, Some(&reply), "Agreed");
    assert_eq!(
        woken.len(),
        1,
        "Era C: the reply falls back to the squad's leader"
    );
    // Both policies without the escalation, so that only the fallback differs; neither is the
    // policy the trace was recorded with (a hidden recorded run serves them).
    let era_c = RoutingPolicy {
        escalation_seconds: 0,
        ..RoutingPolicy::default()
    };
    let no_fallback = RoutingPolicy {
        reply_falls_back_to_assignee: false,
        ..era_c.clone()
    };
    let opts = SimOptions {
        explain: Some(issue.clone()),
        ..SimOptions::default()
    };
    let r = run(
        &b.trace,
        &[("era-c", era_c), ("mul-5958", no_fallback)],
        &opts,
    );
    assert!(r.policies.iter().all(|p| p.counterfactual));
    assert_eq!(r.policies[0].metrics.wakes, 3);
    assert_eq!(r.policies[1].metrics.wakes, 2);
    let last = r.policies[1].explain.as_ref().unwrap().last().unwrap();
    assert!(
        last.decisions
            .iter()
            .any(|d| d.rule() == Some(Rule::CommentReplyNoFallback))
    );
    let last = r.policies[0].explain.as_ref().unwrap().last().unwrap();
    assert!(
        last.decisions
            .iter()
            .any(|d| d.rule() == Some(Rule::CommentAssignee))
    );
    let _ = lead;
}

#[test]
fn a_trace_error_is_reported_with_its_line_by_every_kind_of_run() {
    let (mut trace, _, _) = review_storm(2);
    trace
        .push_line(r#"{"kind":"event","event":{"type":"claim","task_id":"nope"}}"#)
        .unwrap();
    for policies in [
        vec![NamedPolicy::new("d", RoutingPolicy::default())],
        vec![NamedPolicy::new("b", barrier(60))],
        vec![
            NamedPolicy::new("d", RoutingPolicy::default()),
            NamedPolicy::new("b", barrier(60)),
        ],
    ] {
        let err = simulate(&trace, &policies, &SimOptions::default()).unwrap_err();
        assert!(err.to_string().contains("unknown task \"nope\""), "{err}");
        assert!(err.line().is_some());
    }
    // No policy, or too many: refused.
    assert!(simulate(&trace, &[], &SimOptions::default()).is_err());
    let many: Vec<NamedPolicy> = (0..17)
        .map(|i| NamedPolicy::new(format!("p{i}"), RoutingPolicy::default()))
        .collect();
    assert!(simulate(&trace, &many, &SimOptions::default()).is_err());
}

/// The decisions of every event of one policy, as JSON, from `simulate_observed`.
fn observed(
    trace: &Trace,
    policies: &[NamedPolicy],
    reference: &RoutingPolicy,
    which: usize,
) -> Vec<serde_json::Value> {
    let out = Mutex::new(Vec::new());
    simulate_observed(
        trace,
        policies,
        &SimOptions {
            reference: reference.clone(),
            ..SimOptions::default()
        },
        &|o| {
            if o.policy == which && o.line.is_some() {
                out.lock()
                    .unwrap()
                    .push(serde_json::to_value(o.decisions).unwrap());
            }
        },
    )
    .unwrap();
    out.into_inner().unwrap()
}

fn replayed(text: &str, policy: &RoutingPolicy) -> Vec<serde_json::Value> {
    let mut r = Replay::new(Engine::new(policy.clone()));
    text.lines()
        .filter_map(|l| r.feed_line(l).unwrap())
        .map(|o| serde_json::to_value(&o.decisions.decisions).unwrap())
        .collect()
}

fn policy() -> impl Strategy<Value = RoutingPolicy> {
    (any::<bool>(), 0..3u32, 0..4u32, 0..3u32, any::<bool>()).prop_map(|(c, e, m, b, r)| {
        RoutingPolicy {
            cancel_tasks_on_reassign: c,
            escalation_seconds: e * 150,
            max_attempts: m,
            leader_barrier_seconds: b * 30,
            reply_falls_back_to_assignee: r,
            ..RoutingPolicy::default()
        }
    })
}

fn workload() -> impl Strategy<Value = Workload> {
    prop_oneof![
        Just(Workload::Episodes),
        Just(Workload::Steady),
        Just(Workload::ReviewStorm),
        Just(Workload::Chatter),
        Just(Workload::Mentions),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Simulating a trace under the policy it was recorded with decides, event by event, what a
    /// replay decides; alongside a counterfactual policy, too (the recorded run is not disturbed
    /// by the runs beside it).
    #[test]
    fn simulate_with_one_policy_agrees_with_replay_on_every_decision(
        workload in workload(),
        squads in 1..4usize,
        events in 10..150usize,
        seed in any::<u64>(),
        p in policy(),
        other in policy(),
    ) {
        let cfg = WorkloadConfig::new(workload, GenConfig { squads, events, seed, issues_per_squad: 2 });
        let text = generate_workload(&cfg).unwrap().to_jsonl();
        let mut trace = Trace::new();
        for line in text.lines() {
            trace.push_line(line).unwrap();
        }
        // The trace was recorded under the default policy.
        let want = replayed(&text, &RoutingPolicy::default());
        prop_assert_eq!(want.len(), events);
        let alone = [NamedPolicy::new("p", RoutingPolicy::default())];
        prop_assert_eq!(&observed(&trace, &alone, &RoutingPolicy::default(), 0), &want);
        let pair = [
            NamedPolicy::new("other", other.clone()),
            NamedPolicy::new("default", RoutingPolicy::default()),
        ];
        prop_assert_eq!(&observed(&trace, &pair, &RoutingPolicy::default(), 1), &want);
        // Any policy, simulated as the reference, agrees with replay under it where replay
        // succeeds.
        let mut r = Replay::new(Engine::new(p.clone()));
        let mut want_p = Vec::new();
        let mut ok = true;
        for line in text.lines() {
            match r.feed_line(line) {
                Ok(Some(o)) => want_p.push(serde_json::to_value(&o.decisions.decisions).unwrap()),
                Ok(None) => {}
                Err(_) => { ok = false; break; }
            }
        }
        if ok {
            let named = [NamedPolicy::new("p", p.clone())];
            prop_assert_eq!(&observed(&trace, &named, &p, 0), &want_p);
        }
        // A counterfactual run never fails on a valid trace, and replays or skips every event.
        let report = simulate(&trace, &pair, &SimOptions::default()).unwrap();
        prop_assert_eq!(report.policies[0].metrics.events, events as u64);
    }
}

fn workload_trace(workload: Workload, seed: u64, f: impl FnOnce(&mut WorkloadConfig)) -> String {
    let mut cfg = WorkloadConfig::new(
        workload,
        GenConfig {
            squads: 3,
            issues_per_squad: 2,
            events: 600,
            seed,
        },
    );
    f(&mut cfg);
    generate_workload(&cfg).unwrap().to_jsonl()
}

fn simulate_text(text: &str, policies: &[(&str, RoutingPolicy)]) -> Report {
    let mut trace = Trace::new();
    for line in text.lines() {
        trace.push_line(line).unwrap();
    }
    run(&trace, policies, &SimOptions::default())
}

#[test]
fn every_workload_gives_the_same_bytes_for_the_same_seed_and_others_for_another() {
    for w in Workload::ALL {
        let a = workload_trace(w, 7, |_| {});
        assert_eq!(a, workload_trace(w, 7, |_| {}), "{}", w.name());
        assert_ne!(a, workload_trace(w, 8, |_| {}), "{}", w.name());
        assert_eq!(
            a.lines()
                .filter(|l| l.contains(r#""kind":"event""#))
                .count(),
            600
        );
        // Every workload's trace replays (no dangling id).
        let r = simulate_text(&a, &[("default", RoutingPolicy::default())]);
        assert_eq!(r.policies[0].metrics.events, 600, "{}", w.name());
    }
    // The default workload is the one `generate` writes.
    let g = squad_routing::generate::generate(&GenConfig {
        squads: 3,
        issues_per_squad: 2,
        events: 600,
        seed: 7,
    })
    .unwrap()
    .to_jsonl();
    assert_eq!(g, workload_trace(Workload::Episodes, 7, |_| {}));
}

#[test]
fn each_workload_stresses_its_metric() {
    // A review storm: each report wakes the leader; a barrier as long as the storm holds them.
    let storm = workload_trace(Workload::ReviewStorm, 1, |c| c.reporters = 6);
    let r = simulate_text(
        &storm,
        &[
            ("default", RoutingPolicy::default()),
            ("barrier", barrier(120)),
        ],
    );
    let (d, b) = (&r.policies[0].metrics, &r.policies[1].metrics);
    assert!(
        d.wakes_per_issue.max >= 7,
        "the leader woken once per report, plus the first: {d:?}"
    );
    // Per storm, the leader is woken 1 + 6 times by default, 1 + 1 times with the barrier.
    assert!(
        b.enqueued_leader * 3 < d.enqueued_leader,
        "default {} leader tasks, barrier {}",
        d.enqueued_leader,
        b.enqueued_leader
    );
    assert!(b.wakes < d.wakes);
    assert!(b.barrier_held > 0);
    // Chatter that always answers back: loops as long as the rounds allow.
    let chatter = workload_trace(Workload::Chatter, 1, |c| {
        c.loop_percent = 100;
        c.max_rounds = 6;
    });
    let m = &simulate_text(&chatter, &[("default", RoutingPolicy::default())]).policies[0].metrics;
    assert!(m.loop_count > 0);
    assert_eq!(m.loops[0].length, 6);
    let quiet = workload_trace(Workload::Chatter, 1, |c| c.loop_percent = 0);
    let m = &simulate_text(&quiet, &[("default", RoutingPolicy::default())]).policies[0].metrics;
    assert_eq!(m.loop_count, 0, "one hand-off per conversation is no loop");
    // A steady backlog where every closed issue gets a late comment: wakes after the end.
    let steady = workload_trace(Workload::Steady, 1, |c| c.late_comment_percent = 100);
    let m = &simulate_text(&steady, &[("default", RoutingPolicy::default())]).policies[0].metrics;
    assert!(m.wakes_after_end > 0);
    assert!(m.time_to_first_wake.p50.is_some());
    let none = workload_trace(Workload::Steady, 1, |c| c.late_comment_percent = 0);
    let m = &simulate_text(&none, &[("default", RoutingPolicy::default())]).policies[0].metrics;
    assert_eq!(m.wakes_after_end, 0);
    // Mention-heavy threads: coalescing and escalations, made due by the generator.
    let mentions = workload_trace(Workload::Mentions, 1, |c| c.reply_percent = 80);
    let m = &simulate_text(&mentions, &[("default", RoutingPolicy::default())]).policies[0].metrics;
    assert!(m.coalesced > 0, "{m:?}");
    assert!(m.escalations_scheduled > 0, "{m:?}");
    assert!(
        m.escalations_fired + m.cancelled.get("coalesced").copied().unwrap_or(0) > 0,
        "{m:?}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    /// The policy variants (leader barrier, no reply fallback) decide the same on the three
    /// directories, on the workloads that exercise them.
    #[test]
    fn the_policy_variants_decide_the_same_on_every_directory(
        workload in workload(),
        events in 20..200usize,
        seed in any::<u64>(),
        p in policy(),
    ) {
        use squad_routing::{InMemoryDirectory, SimpleDirectory, SqliteDirectory, apply};
        let g = generate_workload(&WorkloadConfig::new(
            workload,
            GenConfig { squads: 2, issues_per_squad: 1, events, seed },
        ))
        .unwrap();
        let mut mem = InMemoryDirectory::new();
        let mut simple = SimpleDirectory::new();
        let mut sql = SqliteDirectory::open_in_memory().unwrap();
        for e in &g.entities {
            squad_routing::trace::load_entity(&mut mem, e.clone()).unwrap();
            squad_routing::trace::load_entity(&mut simple, e.clone()).unwrap();
            squad_routing::trace::load_entity(&mut sql, e.clone()).unwrap();
        }
        let engine = Engine::new(p);
        for (at, ev) in &g.events {
            // Under another policy than the recording one, an event may name a task that was
            // never minted: skip it on every directory.
            if squad_routing::trace::check_event(&mem, ev).is_err() {
                continue;
            }
            let d = engine.decide(&mem, *at, ev);
            prop_assert_eq!(&d, &engine.decide(&simple, *at, ev));
            prop_assert_eq!(&d, &engine.decide(&sql, *at, ev));
            apply(&mut mem, &d);
            apply(&mut simple, &d);
            apply(&mut sql, &d);
        }
        sql.check().unwrap();
        let _ = mem.counts();
    }
}
