//! The engine decides the same on every directory: random traces replayed on
//! `InMemoryDirectory`, `SimpleDirectory` (the readable reference) and `SqliteDirectory` give
//! identical decision lists.

use proptest::prelude::*;
use squad_model::{
    Actor, Agent, AgentId, Assignee, Autopilot, AutopilotId, AutopilotStatus, CommentId,
    ExecutionMode, InvocationTarget, Issue, IssueId, IssueStatus, MemberRef, PermissionMode,
    RuntimeBinding, RuntimeId, RuntimeStatus, Squad, SquadId, SquadMember, SquadMemberId,
    TaskStatus, Timestamp, UserId, WorkspaceId,
};
use squad_routing::event::*;
use squad_routing::generate::{GenConfig, generate};
use squad_routing::{
    AutopilotTrigger, Directory, Engine, Event, InMemoryDirectory, Membership, Principal, Replay,
    RoutingPolicy, SimpleDirectory, SqliteDirectory, User, Workspace, WorkspaceRole, apply,
};

use crate::world::{STATUSES, mention, uuid};

const TASK_STATUSES: [TaskStatus; 6] = [
    TaskStatus::Queued,
    TaskStatus::Dispatched,
    TaskStatus::Running,
    TaskStatus::Completed,
    TaskStatus::Failed,
    TaskStatus::Cancelled,
];

#[derive(Debug, Clone)]
enum Op {
    Assign(usize, usize, usize),
    SetStatus(usize, usize, usize),
    /// (author, issue, content kind, target, reply to an earlier comment)
    Comment(usize, usize, usize, usize, Option<usize>),
    Batch(usize, Vec<usize>, usize),
    TaskStatus(usize, usize),
    Claim(usize),
    Runtime(usize, usize),
    ArchiveAgent(usize),
    ArchiveSquad(usize, usize),
    SwapLeader(usize, usize),
    QuickCreate(usize, usize),
    Delete(usize),
    Autopilot(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..6usize, 0..5usize, 0..6usize).prop_map(|(a, i, t)| Op::Assign(a, i, t)),
        3 => (0..6usize, 0..5usize, 0..7usize).prop_map(|(a, i, s)| Op::SetStatus(a, i, s)),
        6 => (0..6usize, 0..5usize, 0..6usize, 0..6usize, proptest::option::of(0..8usize))
            .prop_map(|(a, i, c, t, r)| Op::Comment(a, i, c, t, r)),
        1 => (0..6usize, proptest::collection::vec(0..5usize, 1..4), 0..7usize)
            .prop_map(|(a, v, s)| Op::Batch(a, v, s)),
        4 => (0..64usize, 0..6usize).prop_map(|(t, s)| Op::TaskStatus(t, s)),
        1 => (0..64usize).prop_map(Op::Claim),
        1 => (0..4usize, 0..3usize).prop_map(|(a, r)| Op::Runtime(a, r)),
        1 => (0..4usize).prop_map(Op::ArchiveAgent),
        1 => (0..2usize, 0..3usize).prop_map(|(s, a)| Op::ArchiveSquad(s, a)),
        1 => (0..2usize, 0..4usize).prop_map(|(s, a)| Op::SwapLeader(s, a)),
        1 => (0..2usize, 0..6usize).prop_map(|(u, t)| Op::QuickCreate(u, t)),
        1 => (1..5usize).prop_map(Op::Delete),
        1 => (0..3usize).prop_map(Op::Autopilot),
    ]
}

/// The world every directory starts from: two members, four agents, two squads, five issues
/// (three children of the first, some staged) and two autopilots.
struct Seed {
    publics: [bool; 4],
    leaders: (usize, usize),
    stages: [Option<u32>; 3],
}

struct Ids {
    users: [UserId; 2],
    agents: Vec<AgentId>,
    squads: Vec<SquadId>,
    issues: Vec<IssueId>,
    autopilots: Vec<AutopilotId>,
}

fn t0() -> Timestamp {
    Timestamp::parse("2026-11-30T10:00:00Z").unwrap()
}

fn ids() -> Ids {
    Ids {
        users: [
            UserId::new(uuid(0xe, 1)).unwrap(),
            UserId::new(uuid(0xe, 2)).unwrap(),
        ],
        agents: (1..=4)
            .map(|n| AgentId::new(uuid(0xa, n)).unwrap())
            .collect(),
        squads: (1..=2)
            .map(|n| SquadId::new(uuid(0x5, n)).unwrap())
            .collect(),
        issues: (1..=5)
            .map(|n| IssueId::new(uuid(0x1, n)).unwrap())
            .collect(),
        autopilots: (1..=2)
            .map(|n| AutopilotId::new(format!("ap{n}")).unwrap())
            .collect(),
    }
}

fn seed(dir: &mut dyn Directory, s: &Seed, ids: &Ids) {
    let ws = WorkspaceId::new("w1").unwrap();
    dir.put_workspace(Workspace {
        id: ws.clone(),
        name: "Acme".into(),
        issue_prefix: "SQ".into(),
    });
    for (u, name) in ids.users.iter().zip(["Alice", "Bob"]) {
        dir.put_user(User {
            id: u.clone(),
            name: name.into(),
        });
        dir.put_membership(Membership {
            workspace_id: ws.clone(),
            user_id: u.clone(),
            role: WorkspaceRole::Member,
        });
    }
    for (i, a) in ids.agents.iter().enumerate() {
        dir.put_agent(Agent {
            id: a.clone(),
            workspace_id: ws.clone(),
            name: format!("Agent{i}"),
            owner_id: Some(ids.users[i % 2].clone()),
            archived_at: None,
            runtime: Some(RuntimeBinding {
                runtime_id: RuntimeId::new(format!("rt-{i}")).unwrap(),
                status: RuntimeStatus::Online,
                last_seen_at: Some(t0()),
            }),
            permission_mode: if s.publics[i] {
                PermissionMode::PublicTo
            } else {
                PermissionMode::Private
            },
            invocation_targets: if s.publics[i] {
                vec![InvocationTarget::Workspace]
            } else {
                vec![]
            },
            skills: vec!["rust".into()],
            instructions: if i == 0 {
                "Be brief.".into()
            } else {
                String::new()
            },
            created_at: t0(),
        });
    }
    for (k, sq) in ids.squads.iter().enumerate() {
        let leader = ids.agents[if k == 0 { s.leaders.0 } else { s.leaders.1 }].clone();
        dir.put_squad(Squad {
            id: sq.clone(),
            workspace_id: ws.clone(),
            name: format!("S{k}"),
            description: String::new(),
            leader_id: leader.clone(),
            creator_id: ids.users[k].clone(),
            instructions: "Ship small.".into(),
            avatar_url: None,
            archived_at: None,
            archived_by: None,
            created_at: t0(),
            updated_at: t0(),
        });
        let mut rows = vec![(MemberRef::Agent(leader.clone()), "leader")];
        for m in [2, 3] {
            if ids.agents[m] != leader {
                rows.push((MemberRef::Agent(ids.agents[m].clone()), "worker"));
            }
        }
        rows.push((MemberRef::Member(ids.users[k].clone()), "reviewer"));
        for (n, (m, role)) in rows.into_iter().enumerate() {
            dir.put_member(SquadMember {
                id: SquadMemberId::new(format!("m{k}-{n}")).unwrap(),
                squad_id: sq.clone(),
                member: m,
                role: role.into(),
                created_at: t0(),
            });
        }
    }
    let issue = |n: usize, status, assignee, parent: Option<&IssueId>, stage| Issue {
        id: ids.issues[n].clone(),
        workspace_id: ws.clone(),
        title: format!("Issue {n}"),
        status,
        assignee,
        parent_issue_id: parent.cloned(),
        stage,
        origin: None,
        creator: Some(Actor::Member(ids.users[0].clone())),
        created_at: t0(),
    };
    dir.put_issue(issue(
        0,
        IssueStatus::InProgress,
        Some(Assignee::Squad(ids.squads[0].clone())),
        None,
        None,
    ));
    for (k, st) in s.stages.iter().enumerate() {
        dir.put_issue(issue(
            k + 1,
            IssueStatus::Todo,
            None,
            Some(&ids.issues[0]),
            *st,
        ));
    }
    dir.put_issue(issue(4, IssueStatus::Backlog, None, None, None));
    for n in 0..5 {
        dir.set_issue_number(&ids.issues[n], n as u64 + 1);
    }
    for (k, ap) in ids.autopilots.iter().enumerate() {
        dir.put_autopilot(Autopilot {
            id: ap.clone(),
            workspace_id: ws.clone(),
            title: format!("Autopilot {k}"),
            assignee: Some(Assignee::Squad(ids.squads[k].clone())),
            execution_mode: if k == 0 {
                ExecutionMode::CreateIssue
            } else {
                ExecutionMode::RunOnly
            },
            status: AutopilotStatus::Active,
            pause_reason: None,
            creator: if k == 0 {
                Actor::Member(ids.users[0].clone())
            } else {
                Actor::Agent(ids.agents[2].clone())
            },
        });
    }
}

/// Turns an op into an event, reading the driver directory (task ids, latest tasks).
fn event(op: &Op, ids: &Ids, dir: &InMemoryDirectory, n: &mut u64) -> Option<Event> {
    let actor = |a: usize| match a {
        0 | 1 => Principal::Member(ids.users[a].clone()),
        k => Principal::Agent(ids.agents[k - 2].clone()),
    };
    let task_of = |p: &Principal, issue: &IssueId| match p {
        Principal::Agent(a) => dir.latest_task(issue, a).map(|t| t.id.clone()),
        _ => None,
    };
    let nth_task = |k: usize| {
        let mut all: Vec<_> = dir.tasks().map(|t| t.id.clone()).collect();
        all.sort();
        (!all.is_empty()).then(|| all[k % all.len()].clone())
    };
    *n += 1;
    Some(match op {
        Op::Assign(a, i, t) => {
            let (ty, id) = if *t < 2 {
                ("squad", ids.squads[*t].to_string())
            } else {
                ("agent", ids.agents[t - 2].to_string())
            };
            let actor = actor(*a);
            Event::UpdateIssue(UpdateIssue {
                task_id: task_of(&actor, &ids.issues[*i]),
                actor,
                issue_id: ids.issues[*i].clone(),
                status: None,
                assignee_type: Some(ty.into()),
                assignee_id: Some(id),
                unassign: false,
                suppress_run: false,
            })
        }
        Op::SetStatus(a, i, s) => {
            let actor = actor(*a);
            Event::UpdateIssue(UpdateIssue {
                task_id: task_of(&actor, &ids.issues[*i]),
                actor,
                issue_id: ids.issues[*i].clone(),
                status: Some(STATUSES[*s]),
                assignee_type: None,
                assignee_id: None,
                unassign: false,
                suppress_run: false,
            })
        }
        Op::Comment(a, i, c, t, reply) => {
            let author = actor(*a);
            let issue = ids.issues[*i].clone();
            let content = match c {
                0 | 1 => "plain words".to_owned(),
                2 => mention("squad", ids.squads[t % 2].as_str(), "S"),
                3 => mention("agent", ids.agents[t % 4].as_str(), "A"),
                4 => format!(
                    "{} {}",
                    mention("agent", ids.agents[t % 4].as_str(), "A"),
                    mention("squad", ids.squads[t % 2].as_str(), "S")
                ),
                _ => "/note private".to_owned(),
            };
            // A reply names an earlier comment of this trace, when it exists on the issue.
            let parent_id = reply
                .map(|r| CommentId::new(format!("c{r}")).unwrap())
                .filter(|c| dir.comment(c).is_some_and(|c| c.issue_id == issue));
            Event::Comment(PostComment {
                comment_id: CommentId::new(format!("c{n}")).unwrap(),
                task_id: task_of(&author, &issue),
                issue_id: issue,
                author,
                parent_id,
                content,
                suppress_agent_ids: vec![],
            })
        }
        Op::Batch(a, v, s) => Event::BatchUpdate(BatchUpdate {
            actor: actor(*a),
            task_id: None,
            issue_ids: v.iter().map(|i| ids.issues[*i].clone()).collect(),
            status: Some(STATUSES[*s]),
            assignee_type: None,
            assignee_id: None,
            suppress_run: false,
        }),
        Op::TaskStatus(t, s) => Event::TaskStatus(SetTaskStatus {
            task_id: nth_task(*t)?,
            status: TASK_STATUSES[*s],
        }),
        Op::Claim(t) => Event::Claim(ClaimTask {
            task_id: nth_task(*t)?,
        }),
        Op::Runtime(a, r) => Event::SetRuntime(SetRuntime {
            agent_id: ids.agents[*a].clone(),
            runtime: [
                Some(RuntimeStatus::Online),
                Some(RuntimeStatus::Offline),
                None,
            ][*r],
        }),
        Op::ArchiveAgent(a) => Event::ArchiveAgent(ArchiveAgent {
            agent_id: ids.agents[*a].clone(),
        }),
        Op::ArchiveSquad(s, a) => Event::ArchiveSquad(ArchiveSquad {
            actor: ids.users[a % 2].clone(),
            squad_id: ids.squads[*s].clone(),
        }),
        Op::SwapLeader(s, a) => Event::UpdateSquad(UpdateSquad {
            actor: ids.users[*s].clone(),
            squad_id: ids.squads[*s].clone(),
            name: None,
            description: None,
            instructions: None,
            leader_id: Some(ids.agents[*a].to_string()),
            avatar_url: None,
        }),
        Op::QuickCreate(u, t) => Event::QuickCreate(QuickCreate {
            actor: ids.users[*u].clone(),
            workspace_id: WorkspaceId::new("w1").unwrap(),
            target_type: if *t < 2 { "squad" } else { "agent" }.into(),
            target_id: if *t < 2 {
                ids.squads[*t].to_string()
            } else {
                ids.agents[t - 2].to_string()
            },
            prompt: "make an issue".into(),
        }),
        Op::Delete(i) => {
            dir.issue(&ids.issues[*i])?;
            Event::DeleteIssue(DeleteIssue {
                actor: actor(0),
                issue_id: ids.issues[*i].clone(),
            })
        }
        Op::Autopilot(k) => Event::TriggerAutopilot(TriggerAutopilot {
            autopilot_id: ids.autopilots[k % 2].clone(),
            trigger: [
                AutopilotTrigger::Schedule,
                AutopilotTrigger::Manual,
                AutopilotTrigger::Api,
            ][*k],
            actor: (*k == 1).then(|| ids.users[0].clone()),
        }),
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn every_directory_decides_the_same(
        publics in proptest::array::uniform4(any::<bool>()),
        leaders in (0..4usize, 0..4usize),
        stages in proptest::array::uniform3(proptest::option::of(1..3u32)),
        policy in (any::<bool>(), 0..2u32, 0..4u32),
        ops in proptest::collection::vec(op(), 1..48),
    ) {
        let s = Seed { publics, leaders, stages };
        let ids = ids();
        let engine = Engine::new(RoutingPolicy {
            cancel_tasks_on_reassign: policy.0,
            escalation_seconds: policy.1 * 300,
            max_attempts: policy.2,
            ..RoutingPolicy::default()
        });
        let mut mem = InMemoryDirectory::new();
        let mut simple = SimpleDirectory::new();
        let mut sql = SqliteDirectory::open_in_memory().unwrap();
        seed(&mut mem, &s, &ids);
        seed(&mut simple, &s, &ids);
        seed(&mut sql, &s, &ids);
        let mut at = t0();
        let mut n = 0;
        for op in &ops {
            let Some(ev) = event(op, &ids, &mem, &mut n) else { continue };
            at = at.plus_seconds(7);
            let d = engine.decide(&mem, at, &ev);
            let d_simple = engine.decide(&simple, at, &ev);
            let d_sql = engine.decide(&sql, at, &ev);
            prop_assert_eq!(&d, &d_simple, "SimpleDirectory differs on {:?}", ev);
            prop_assert_eq!(&d, &d_sql, "SqliteDirectory differs on {:?}", ev);
            apply(&mut mem, &d);
            apply(&mut simple, &d_simple);
            apply(&mut sql, &d_sql);
        }
        sql.check().unwrap();
    }

    #[test]
    fn generated_traces_replay_the_same_on_every_directory(
        squads in 1..4usize,
        issues_per_squad in 0..4usize,
        events in 10..120usize,
        seed in any::<u64>(),
    ) {
        let text = generate(&GenConfig { squads, issues_per_squad, events, seed }).unwrap().to_jsonl();
        fn replay_on<D: Directory>(text: &str, dir: D) -> Vec<serde_json::Value> {
            let mut r = Replay::with_directory(Engine::default(), dir);
            text.lines()
                .filter_map(|l| r.feed_line(l).unwrap().map(|o| serde_json::to_value(o).unwrap()))
                .collect()
        }
        let a = replay_on(&text, InMemoryDirectory::new());
        let b = replay_on(&text, SimpleDirectory::new());
        let c = replay_on(&text, SqliteDirectory::open_in_memory().unwrap());
        prop_assert_eq!(a.len(), events);
        prop_assert_eq!(&a, &b);
        prop_assert_eq!(&a, &c);
    }
}
