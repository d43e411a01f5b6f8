//! Property tests over random traces: the invariants of the routing rules.

use proptest::prelude::*;
use squad_model::{
    AgentId, Assignee, CommentId, IssueId, IssueStatus, MemberRef, RuntimeStatus, SquadId,
    TaskStatus,
};
use squad_routing::{
    Decision, Directory, Event, Principal, RoutingPolicy, TriggerSource, can_invoke_agent,
};

use crate::world::*;
use squad_routing::event::*;

#[derive(Debug, Clone)]
enum Op {
    /// (actor, issue, target): target < 2 is a squad, else an agent.
    Assign(usize, usize, usize),
    SetStatus(usize, usize, usize),
    /// (author, issue, content kind, target)
    Comment(usize, usize, usize, usize),
    Batch(usize, Vec<usize>, usize),
    TaskStatus(usize, usize),
    Claim(usize),
    Runtime(usize, usize),
    ArchiveAgent(usize),
    ArchiveSquad(usize, usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..6usize, 0..5usize, 0..6usize).prop_map(|(a, i, t)| Op::Assign(a, i, t)),
        3 => (0..6usize, 0..5usize, 0..7usize).prop_map(|(a, i, s)| Op::SetStatus(a, i, s)),
        6 => (0..6usize, 0..5usize, 0..6usize, 0..6usize).prop_map(|(a, i, c, t)| Op::Comment(a, i, c, t)),
        1 => (0..6usize, proptest::collection::vec(0..5usize, 1..4), 0..7usize).prop_map(|(a, v, s)| Op::Batch(a, v, s)),
        3 => (0..64usize, 0..6usize).prop_map(|(t, s)| Op::TaskStatus(t, s)),
        1 => (0..64usize).prop_map(Op::Claim),
        1 => (0..4usize, 0..3usize).prop_map(|(a, r)| Op::Runtime(a, r)),
        1 => (0..4usize).prop_map(Op::ArchiveAgent),
        1 => (0..2usize, 0..6usize).prop_map(|(s, a)| Op::ArchiveSquad(s, a)),
    ]
}

/// Four agents (random privacy and runtime), two squads, five issues (three children of the
/// first, some staged).
struct Model {
    w: World,
    agents: Vec<AgentId>,
    squads: Vec<SquadId>,
    issues: Vec<IssueId>,
    n: u64,
}

fn model(
    publics: [bool; 4],
    leaders: (usize, usize),
    stages: [Option<u32>; 3],
    reassign_cancels: bool,
) -> Model {
    let mut w = World::with_policy(RoutingPolicy {
        cancel_tasks_on_reassign: reassign_cancels,
        ..RoutingPolicy::default()
    });
    let alice = w.alice.clone();
    let bob = w.bob.clone();
    let agents: Vec<AgentId> = (0..4)
        .map(|i| {
            let owner = if i % 2 == 0 { &alice } else { &bob };
            let spec = if publics[i] {
                ONLINE_PUBLIC
            } else {
                ONLINE_PRIVATE
            };
            w.agent(&format!("Agent{i}"), owner, spec)
        })
        .collect();
    let squads = vec![
        w.squad("S0", &agents[leaders.0], &alice),
        w.squad("S1", &agents[leaders.1], &bob),
    ];
    for (s, m) in [(0, 2), (0, 3), (1, 0), (1, 3)] {
        if w.dir.squad(&squads[s]).unwrap().leader_id != agents[m] {
            w.member(&squads[s], MemberRef::Agent(agents[m].clone()), "worker");
        }
    }
    let parent = w.issue(
        IssueStatus::InProgress,
        Some(Assignee::Squad(squads[0].clone())),
    );
    let mut issues = vec![parent.clone()];
    for s in stages {
        issues.push(w.child(IssueStatus::Todo, None, Some(&parent), s));
    }
    issues.push(w.issue(IssueStatus::Backlog, None));
    Model {
        w,
        agents,
        squads,
        issues,
        n: 0,
    }
}

impl Model {
    fn actor(&self, a: usize) -> Principal {
        match a {
            0 => member(&self.w.alice.clone()),
            1 => member(&self.w.bob.clone()),
            n => agent(&self.agents[n - 2]),
        }
    }

    fn task_of(&self, p: &Principal, issue: &IssueId) -> Option<squad_model::TaskId> {
        match p {
            Principal::Agent(a) => self.w.dir.latest_task(issue, a).map(|t| t.id.clone()),
            _ => None,
        }
    }

    fn nth_task(&self, n: usize) -> Option<squad_model::TaskId> {
        let mut ids: Vec<_> = self.w.dir.tasks().map(|t| t.id.clone()).collect();
        ids.sort();
        (!ids.is_empty()).then(|| ids[n % ids.len()].clone())
    }

    fn event(&mut self, op: &Op) -> Option<Event> {
        Some(match op {
            Op::Assign(a, i, t) => {
                let (ty, id) = if *t < 2 {
                    ("squad", self.squads[*t].to_string())
                } else {
                    ("agent", self.agents[t - 2].to_string())
                };
                let actor = self.actor(*a);
                let issue = self.issues[*i].clone();
                let mut e = update(actor.clone(), &issue, None, Some((ty, &id)));
                if let Event::UpdateIssue(UpdateIssue { task_id, .. }) = &mut e {
                    *task_id = self.task_of(&actor, &issue);
                }
                e
            }
            Op::SetStatus(a, i, s) => {
                let actor = self.actor(*a);
                let issue = self.issues[*i].clone();
                let mut e = update(actor.clone(), &issue, Some(STATUSES[*s]), None);
                if let Event::UpdateIssue(UpdateIssue { task_id, .. }) = &mut e {
                    *task_id = self.task_of(&actor, &issue);
                }
                e
            }
            Op::Comment(a, i, c, t) => {
                let author = self.actor(*a);
                let issue = self.issues[*i].clone();
                let target = |k: &str, id: &str| mention(k, id, "x");
                let content = match c {
                    0 | 1 => "plain words".to_owned(),
                    2 => target("squad", self.squads[t % 2].as_str()),
                    3 => target("agent", self.agents[t % 4].as_str()),
                    4 => "[@all](mention://all/all)".to_owned(),
                    _ => "/note private".to_owned(),
                };
                self.n += 1;
                Event::Comment(PostComment {
                    comment_id: CommentId::new(format!("pc{}", self.n)).unwrap(),
                    issue_id: issue.clone(),
                    task_id: self.task_of(&author, &issue),
                    author,
                    parent_id: None,
                    content,
                    suppress_agent_ids: vec![],
                })
            }
            Op::Batch(a, v, s) => Event::BatchUpdate(BatchUpdate {
                actor: self.actor(*a),
                task_id: None,
                issue_ids: v.iter().map(|i| self.issues[*i].clone()).collect(),
                status: Some(STATUSES[*s]),
                assignee_type: None,
                assignee_id: None,
                suppress_run: false,
            }),
            Op::TaskStatus(t, s) => Event::TaskStatus(SetTaskStatus {
                task_id: self.nth_task(*t)?,
                status: [
                    TaskStatus::Queued,
                    TaskStatus::Dispatched,
                    TaskStatus::Running,
                    TaskStatus::Completed,
                    TaskStatus::Failed,
                    TaskStatus::Cancelled,
                ][*s],
            }),
            Op::Claim(t) => Event::Claim(ClaimTask {
                task_id: self.nth_task(*t)?,
            }),
            Op::Runtime(a, r) => Event::SetRuntime(SetRuntime {
                agent_id: self.agents[*a].clone(),
                runtime: [
                    Some(RuntimeStatus::Online),
                    Some(RuntimeStatus::Offline),
                    None,
                ][*r],
            }),
            Op::ArchiveAgent(a) => Event::ArchiveAgent(ArchiveAgent {
                agent_id: self.agents[*a].clone(),
            }),
            Op::ArchiveSquad(s, a) => Event::ArchiveSquad(ArchiveSquad {
                actor: [&self.w.alice, &self.w.bob, &self.w.admin][a % 3].clone(),
                squad_id: self.squads[*s].clone(),
            }),
        })
    }
}

fn actor_of(e: &Event) -> Option<&Principal> {
    match e {
        Event::UpdateIssue(UpdateIssue { actor, .. })
        | Event::BatchUpdate(BatchUpdate { actor, .. }) => Some(actor),
        Event::Comment(PostComment { author, .. }) => Some(author),
        _ => None,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn routing_invariants_hold_on_random_traces(
        publics in proptest::array::uniform4(any::<bool>()),
        leaders in (0..4usize, 0..4usize),
        stages in proptest::array::uniform3(proptest::option::of(1..3u32)),
        reassign_cancels in any::<bool>(),
        ops in proptest::collection::vec(op(), 1..40),
    ) {
        let mut m = model(publics, leaders, stages, reassign_cancels);
        for op in &ops {
            let Some(ev) = m.event(op) else { continue };
            let d = m.w.peek(&ev);
            for dec in &d.decisions {
                let Decision::Enqueue { task, source, .. } = dec else { continue };
                let a = m.w.dir.agent(&task.agent_id).unwrap();
                // Never a task for an archived agent (leader or not).
                prop_assert!(!a.is_archived(), "archived agent woken by {ev:?}");
                // A leader task outside child-done respects the invocation gate.
                if task.is_leader_task && *source != TriggerSource::ChildDone
                    && let Some(actor) = actor_of(&ev)
                {
                    prop_assert!(
                        can_invoke_agent(&m.w.dir, a, actor, task.originator_user_id.as_ref()),
                        "leader task for a leader {actor:?} may not invoke: {ev:?}"
                    );
                }
            }
            // The leader's own comment does not wake it when its latest task is a leader task.
            if let Event::Comment(PostComment { author: Principal::Agent(a), issue_id, .. }) = &ev
                && m.w.dir.latest_task(issue_id, a).is_some_and(|t| t.is_leader_task)
            {
                prop_assert!(
                    !d.enqueued().any(|t| &t.agent_id == a),
                    "leader woke itself: {ev:?}"
                );
            }
            m.w.at = m.w.at.plus_seconds(1);
            squad_routing::apply(&mut m.w.dir, &d);
            // Never two pending tasks for one (issue, agent).
            let mut pending: Vec<(IssueId, AgentId)> = m
                .w
                .dir
                .tasks()
                .filter(|t| t.status.is_pending())
                .filter_map(|t| Some((t.issue_id.clone()?, t.agent_id.clone())))
                .collect();
            let before = pending.len();
            pending.sort();
            pending.dedup();
            prop_assert_eq!(before, pending.len(), "two pending tasks after {:?}", ev);
            // A comment by an agent that woke itself cannot do so again right away.
            if let Event::Comment(PostComment { author: Principal::Agent(a), issue_id, content, .. }) = &ev
                && d.enqueued().any(|t| &t.agent_id == a && t.is_leader_task)
            {
                m.n += 1;
                let again = Event::Comment(PostComment {
                    comment_id: CommentId::new(format!("again{}", m.n)).unwrap(),
                    issue_id: issue_id.clone(),
                    author: Principal::Agent(a.clone()),
                    task_id: m.w.dir.latest_task(issue_id, a).map(|t| t.id.clone()),
                    parent_id: None,
                    content: content.clone(),
                    suppress_agent_ids: vec![],
                });
                let d2 = m.w.peek(&again);
                prop_assert!(!d2.enqueued().any(|t| &t.agent_id == a), "self-trigger loop: {ev:?}");
            }
        }
    }

    #[test]
    fn each_closed_stage_wakes_the_parent_leader_once(
        stages in proptest::collection::vec(proptest::option::of(1..4u32), 1..7),
        order in Just(()).prop_perturb(|_, mut rng| rng.random::<u64>()),
        cuts in proptest::collection::vec(any::<bool>(), 7),
    ) {
        let mut w = World::new();
        let alice = w.alice.clone();
        let lead = w.agent("Lead", &alice, ONLINE_PRIVATE);
        let squad = w.squad("Core", &lead, &alice);
        let parent = w.issue(IssueStatus::InProgress, Some(Assignee::Squad(squad)));
        let children: Vec<IssueId> = stages.iter().map(|s| w.child(IssueStatus::Todo, None, Some(&parent), *s)).collect();
        // A pseudo-random completion order, split into batches.
        let mut idx: Vec<usize> = (0..children.len()).collect();
        let mut seed = order;
        for i in (1..idx.len()).rev() {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            idx.swap(i, usize::try_from(seed >> 33).unwrap() % (i + 1));
        }
        let mut batches: Vec<Vec<usize>> = vec![vec![]];
        for (k, i) in idx.iter().enumerate() {
            batches.last_mut().unwrap().push(*i);
            if cuts[k] { batches.push(vec![]); }
        }
        batches.retain(|b| !b.is_empty());
        let staged = stages.iter().any(Option::is_some);
        let mut done = vec![false; children.len()];
        let mut reported: Vec<Option<u32>> = Vec::new();
        for batch in batches {
            for i in &batch { done[*i] = true; }
            // The oracle: the stage this batch should report, if any.
            let closed = |s: u32| stages.iter().zip(&done).all(|(st, d)| st.is_none_or(|st| st > s) || *d);
            let expect = if staged {
                batch.iter().filter_map(|i| stages[*i]).filter(|s| closed(*s)).max().map(Some)
            } else {
                done.iter().all(|d| *d).then_some(None)
            };
            let d = w.event(Event::BatchUpdate(BatchUpdate {
                actor: member(&alice),
                task_id: None,
                issue_ids: batch.iter().map(|i| children[*i].clone()).collect(),
                status: Some(IssueStatus::Done),
                assignee_type: None,
                assignee_id: None,
                suppress_run: false,
            }));
            let comments = system_comments(&d);
            let wakes: Vec<_> = d.enqueued().filter(|t| t.agent_id == lead).map(|t| t.id.clone()).collect();
            match expect {
                Some(stage) => {
                    prop_assert_eq!(comments.len(), 1);
                    prop_assert_eq!(wakes.len(), 1);
                    if let Some(s) = stage {
                        let headline = format!("Stage {s} of this issue is complete");
                        prop_assert!(comments[0].contains(&headline), "{}", comments[0]);
                    }
                    prop_assert!(!reported.contains(&stage), "stage {:?} woke the leader twice", stage);
                    reported.push(stage);
                }
                None => {
                    prop_assert!(comments.is_empty());
                    prop_assert!(wakes.is_empty());
                }
            }
            // The leader finishes its turn before the next batch.
            for t in wakes {
                w.event(Event::TaskStatus(SetTaskStatus { task_id: t, status: TaskStatus::Completed }));
            }
        }
    }
}
