//! Assignment validation (§3.1), the run decision (§3.2), the enqueue gate and dedup (§3.3) and
//! cancellation on reassignment (§3.4).

use squad_model::{Assignee, IssueStatus, RuntimeStatus, TaskStatus};
use squad_routing::{Event, RoutingPolicy, TriggerSource};

use crate::world::*;
use squad_routing::event::*;

/// One squad with an online private leader owned by alice.
fn setup() -> (World, squad_model::AgentId, squad_model::SquadId) {
    let mut w = World::new();
    let alice = w.alice.clone();
    let leader = w.agent("Lead", &alice, ONLINE_PRIVATE);
    let squad = w.squad("Core", &leader, &alice);
    (w, leader, squad)
}

#[test]
fn validation_table_gives_the_reference_errors() {
    let (mut w, leader, squad) = setup();
    let alice = w.alice.clone();
    let archived_squad = {
        let s = w.squad("Old", &leader, &alice);
        let mut sq = squad_routing::Directory::squad(&w.dir, &s).unwrap().clone();
        sq.archived_at = Some(w.at);
        squad_routing::Directory::put_squad(&mut w.dir, sq);
        s
    };
    let dead = w.agent(
        "Dead",
        &alice,
        AgentSpec {
            archived: true,
            ..ONLINE_PRIVATE
        },
    );
    let dead_led = w.squad("Headless", &dead, &alice);
    let public = w.agent("Pub", &alice, ONLINE_PUBLIC);
    let issue = w.issue(IssueStatus::Todo, None);
    let bob_id = w.bob.to_string();
    type Case<'a> = (
        squad_routing::Principal,
        Option<&'a str>,
        Option<&'a str>,
        Option<(u16, &'a str)>,
    );
    let cases: Vec<Case<'_>> = vec![
        (
            member(&alice),
            Some("squad"),
            None,
            Some((
                400,
                "assignee_type and assignee_id must be provided together",
            )),
        ),
        (
            member(&alice),
            None,
            Some(squad.as_str()),
            Some((
                400,
                "assignee_type and assignee_id must be provided together",
            )),
        ),
        (
            member(&alice),
            Some("squad"),
            Some("00000000-0000-4000-8000-00000000dead"),
            Some((
                400,
                "assignee_id does not refer to a squad in this workspace",
            )),
        ),
        (
            member(&alice),
            Some("squad"),
            Some(archived_squad.as_str()),
            Some((400, "cannot assign to an archived squad")),
        ),
        (
            member(&alice),
            Some("squad"),
            Some(dead_led.as_str()),
            Some((400, "squad leader is archived; cannot assign to this squad")),
        ),
        // Bob is neither the owner nor targeted: a private leader refuses, admins included.
        (
            member(&w.bob.clone()),
            Some("squad"),
            Some(squad.as_str()),
            Some((403, "cannot assign to squad with private leader")),
        ),
        (
            member(&w.admin.clone()),
            Some("squad"),
            Some(squad.as_str()),
            Some((403, "cannot assign to squad with private leader")),
        ),
        (
            member(&alice),
            Some("robot"),
            Some("x"),
            Some((400, "assignee_type must be 'member', 'agent', or 'squad'")),
        ),
        (
            member(&alice),
            Some("agent"),
            Some(dead.as_str()),
            Some((400, "cannot assign to archived agent")),
        ),
        (
            member(&w.bob.clone()),
            Some("agent"),
            Some(leader.as_str()),
            Some((403, "cannot assign to private agent")),
        ),
        (
            member(&w.bob.clone()),
            Some("agent"),
            Some(public.as_str()),
            None,
        ),
        (member(&alice), Some("squad"), Some(squad.as_str()), None),
        (member(&alice), Some("member"), Some(bob_id.as_str()), None),
    ];
    for (actor, ty, id, want) in cases {
        let ev = Event::UpdateIssue(UpdateIssue {
            actor: actor.clone(),
            task_id: None,
            issue_id: issue.clone(),
            status: None,
            assignee_type: ty.map(str::to_owned),
            assignee_id: id.map(str::to_owned),
            unassign: false,
            suppress_run: false,
        });
        let got = w.peek(&ev);
        assert_eq!(
            got.rejection(),
            want,
            "actor {actor:?} type {ty:?} id {id:?}"
        );
        if want.is_some() {
            assert_eq!(got.decisions.len(), 1, "a rejection carries no effect");
        }
    }
}

#[test]
fn an_agent_actor_uses_the_originator_of_its_task() {
    let (mut w, leader, squad) = setup();
    let alice = w.alice.clone();
    let worker = w.agent("Worker", &alice, ONLINE_PUBLIC);
    let issue = w.issue(IssueStatus::Todo, None);
    let other = w.issue(IssueStatus::Todo, None);
    let task = w.task(&worker, &other, TaskStatus::Running, None);
    let ev = |task_id| {
        Event::UpdateIssue(UpdateIssue {
            actor: agent(&worker),
            task_id,
            issue_id: issue.clone(),
            status: None,
            assignee_type: Some("squad".into()),
            assignee_id: Some(squad.to_string()),
            unassign: false,
            suppress_run: false,
        })
    };
    // No originator: the private leader refuses the agent.
    assert_eq!(
        w.peek(&ev(Some(task.clone()))).rejection(),
        Some((403, "cannot assign to squad with private leader"))
    );
    // The task acts for alice, the leader's owner: validation passes. The update path's gate
    // then uses the issue's provenance (created by the workspace owner): a silent no-op.
    let mut t = squad_routing::Directory::task(&w.dir, &task)
        .unwrap()
        .clone();
    t.originator_user_id = Some(alice.clone());
    squad_routing::Directory::put_task(&mut w.dir, t);
    let d = w.peek(&ev(Some(task.clone())));
    assert_eq!(d.rejection(), None);
    assert!(enqueued(&d).is_empty());
    assert_eq!(noops(&d), ["invocation_denied"]);
    // With alice as the issue's creator, the gate passes and the leader is woken.
    let mut i = squad_routing::Directory::issue(&w.dir, &issue)
        .unwrap()
        .clone();
    i.creator = Some(squad_model::Actor::Member(alice.clone()));
    squad_routing::Directory::put_issue(&mut w.dir, i);
    let d = w.event(ev(Some(task)));
    assert_eq!(enqueued(&d), vec![(leader, true, TriggerSource::Assign)]);
    assert_eq!(d.enqueued().next().unwrap().originator_user_id, Some(alice));
}

#[test]
fn backlog_parks_and_leaving_backlog_wakes_the_leader() {
    let (mut w, leader, squad) = setup();
    let alice = w.alice.clone();
    let issue = w.issue(IssueStatus::Backlog, None);
    let d = w.assign(member(&alice), &issue, "squad", squad.as_str());
    assert!(enqueued(&d).is_empty());
    assert_eq!(noops(&d), ["backlog"]);
    let d = w.set_status(member(&alice), &issue, IssueStatus::Todo);
    assert_eq!(
        enqueued(&d),
        vec![(leader.clone(), true, TriggerSource::Status)]
    );
    // A second promotion-like write finds the pending leader task: no second task.
    let d = w.set_status(member(&alice), &issue, IssueStatus::InProgress);
    assert!(enqueued(&d).is_empty());
}

#[test]
fn assignment_runs_on_every_non_backlog_status_including_terminal_ones() {
    for status in [
        IssueStatus::Todo,
        IssueStatus::InProgress,
        IssueStatus::InReview,
        IssueStatus::Blocked,
        IssueStatus::Done,
        IssueStatus::Cancelled,
    ] {
        let (mut w, leader, squad) = setup();
        let alice = w.alice.clone();
        let issue = w.issue(status, None);
        let d = w.assign(member(&alice), &issue, "squad", squad.as_str());
        assert_eq!(
            enqueued(&d),
            vec![(leader, true, TriggerSource::Assign)],
            "{status:?}"
        );
    }
}

#[test]
fn promotion_to_done_or_cancelled_does_not_run() {
    for status in [IssueStatus::Done, IssueStatus::Cancelled] {
        let (mut w, _leader, squad) = setup();
        let alice = w.alice.clone();
        let issue = w.issue(IssueStatus::Backlog, Some(Assignee::Squad(squad)));
        let d = w.set_status(member(&alice), &issue, status);
        assert!(enqueued(&d).is_empty(), "{status:?}");
    }
}

#[test]
fn assignment_requires_an_online_leader_but_validation_does_not() {
    let (mut w, leader, squad) = setup();
    let alice = w.alice.clone();
    w.edit_agent(&leader, |a| {
        a.runtime.as_mut().unwrap().status = RuntimeStatus::Offline
    });
    let issue = w.issue(IssueStatus::Todo, None);
    let d = w.assign(member(&alice), &issue, "squad", squad.as_str());
    assert_eq!(d.rejection(), None, "the assignment itself is accepted");
    assert!(enqueued(&d).is_empty());
    assert_eq!(noops(&d), ["leader_not_ready"]);
    w.edit_agent(&leader, |a| a.runtime = None);
    let issue = w.issue(IssueStatus::Todo, None);
    let d = w.assign(member(&alice), &issue, "squad", squad.as_str());
    assert_eq!(noops(&d), ["leader_not_ready"]);
}

#[test]
fn agent_assignees_need_only_a_bound_runtime() {
    let (mut w, _, _) = setup();
    let alice = w.alice.clone();
    let a = w.agent(
        "Off",
        &alice,
        AgentSpec {
            runtime: Some(RuntimeStatus::Offline),
            ..ONLINE_PRIVATE
        },
    );
    let issue = w.issue(IssueStatus::Todo, None);
    let d = w.assign(member(&alice), &issue, "agent", a.as_str());
    assert_eq!(enqueued(&d), vec![(a, false, TriggerSource::Assign)]);
}

#[test]
fn suppress_run_applies_the_assignment_without_a_run() {
    let (mut w, _, squad) = setup();
    let alice = w.alice.clone();
    let issue = w.issue(IssueStatus::Todo, None);
    let d = w.event(Event::UpdateIssue(UpdateIssue {
        actor: member(&alice),
        task_id: None,
        issue_id: issue.clone(),
        status: None,
        assignee_type: Some("squad".into()),
        assignee_id: Some(squad.to_string()),
        unassign: false,
        suppress_run: true,
    }));
    assert!(enqueued(&d).is_empty());
    assert_eq!(noops(&d), ["suppress_run"]);
    let now = squad_routing::Directory::issue(&w.dir, &issue).unwrap();
    assert_eq!(now.assignee, Some(Assignee::Squad(squad)));
}

#[test]
fn an_agent_promoting_its_own_issue_is_a_self_loop() {
    let (mut w, leader, squad) = setup();
    let issue = w.issue(IssueStatus::Backlog, Some(Assignee::Squad(squad)));
    let task = w.task(&leader, &issue, TaskStatus::Completed, None);
    let d = w.event(Event::UpdateIssue(UpdateIssue {
        actor: agent(&leader),
        task_id: Some(task),
        issue_id: issue,
        status: Some(IssueStatus::Todo),
        assignee_type: None,
        assignee_id: None,
        unassign: false,
        suppress_run: false,
    }));
    assert!(enqueued(&d).is_empty());
    assert_eq!(noops(&d), ["self_loop"]);
}

#[test]
fn the_update_path_gate_uses_the_issue_provenance_for_agents_and_fails_silently() {
    let (mut w, leader, squad) = setup();
    let bob = w.bob.clone();
    // An issue created by bob, assigned to the squad while in backlog; an agent promotes it.
    let issue = w.issue(IssueStatus::Backlog, Some(Assignee::Squad(squad.clone())));
    let mut i = squad_routing::Directory::issue(&w.dir, &issue)
        .unwrap()
        .clone();
    i.creator = Some(squad_model::Actor::Member(bob));
    squad_routing::Directory::put_issue(&mut w.dir, i);
    let alice = w.alice.clone();
    let worker = w.agent("Worker", &alice, ONLINE_PUBLIC);
    let d = w.set_status(agent(&worker), &issue, IssueStatus::Todo);
    assert_eq!(d.rejection(), None, "the write succeeds");
    assert!(enqueued(&d).is_empty());
    assert_eq!(noops(&d), ["invocation_denied"]);
    // When the provenance is the leader's owner, the same write wakes the leader.
    let issue2 = w.issue(IssueStatus::Backlog, Some(Assignee::Squad(squad)));
    let mut i = squad_routing::Directory::issue(&w.dir, &issue2)
        .unwrap()
        .clone();
    i.creator = Some(squad_model::Actor::Member(alice));
    squad_routing::Directory::put_issue(&mut w.dir, i);
    let d = w.set_status(agent(&worker), &issue2, IssueStatus::Todo);
    assert_eq!(enqueued(&d), vec![(leader, true, TriggerSource::Status)]);
}

#[test]
fn reassignment_cancels_active_tasks_by_default_and_not_in_era_c() {
    for (policy, expect_cancel) in [
        (RoutingPolicy::default(), true),
        (
            RoutingPolicy {
                cancel_tasks_on_reassign: false,
                ..RoutingPolicy::default()
            },
            false,
        ),
    ] {
        let mut w = World::with_policy(policy);
        let alice = w.alice.clone();
        let old = w.agent("Old", &alice, ONLINE_PRIVATE);
        let leader = w.agent("Lead", &alice, ONLINE_PRIVATE);
        let squad = w.squad("Core", &leader, &alice);
        let issue = w.issue(IssueStatus::Todo, Some(Assignee::Agent(old.clone())));
        let running = w.task(&old, &issue, TaskStatus::Running, None);
        let queued = w.task(&old, &issue, TaskStatus::Queued, None);
        let done = w.task(&old, &issue, TaskStatus::Completed, None);
        let d = w.assign(member(&alice), &issue, "squad", squad.as_str());
        let c = cancelled(&d);
        if expect_cancel {
            assert_eq!(c, vec![running, queued]);
            assert!(!c.contains(&done));
        } else {
            assert!(c.is_empty());
        }
        assert_eq!(enqueued(&d), vec![(leader, true, TriggerSource::Assign)]);
    }
}

#[test]
fn reassigning_between_squads_with_one_leader_replaces_its_pending_task() {
    let (mut w, leader, squad) = setup();
    let alice = w.alice.clone();
    let squad2 = w.squad("Twin", &leader, &alice);
    let issue = w.issue(IssueStatus::Todo, None);
    let d = w.assign(member(&alice), &issue, "squad", squad.as_str());
    let first = d.enqueued().next().unwrap().id.clone();
    let d = w.assign(member(&alice), &issue, "squad", squad2.as_str());
    assert_eq!(cancelled(&d), vec![first]);
    assert_eq!(
        enqueued(&d),
        vec![(leader.clone(), true, TriggerSource::Assign)]
    );
    let pending: Vec<_> = w.dir.tasks().filter(|t| t.status.is_pending()).collect();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].squad_id.as_ref(), Some(&squad2));
}

#[test]
fn create_runs_without_a_second_gate_and_defaults_to_todo() {
    let (mut w, leader, squad) = setup();
    let alice = w.alice.clone();
    let d = w.event(Event::CreateIssue(CreateIssue {
        actor: member(&alice),
        task_id: None,
        workspace_id: w.ws.clone(),
        issue_id: squad_model::IssueId::new(uuid(0x1, 999)).unwrap(),
        number: Some(999),
        title: "New".into(),
        status: None,
        assignee_type: Some("squad".into()),
        assignee_id: Some(squad.to_string()),
        parent_issue_id: None,
        stage: None,
        suppress_run: false,
    }));
    assert_eq!(enqueued(&d), vec![(leader, true, TriggerSource::Assign)]);
    let task = d.enqueued().next().unwrap();
    assert_eq!(task.squad_id.as_ref(), Some(&squad));
    assert_eq!(task.originator_user_id.as_ref(), Some(&alice));
}

#[test]
fn cancelling_an_issue_keeps_tasks_unless_the_policy_says_otherwise() {
    for (flag, expect) in [(false, 0), (true, 1)] {
        let mut w = World::with_policy(RoutingPolicy {
            cancel_tasks_on_issue_cancelled: flag,
            ..RoutingPolicy::default()
        });
        let alice = w.alice.clone();
        let a = w.agent("A", &alice, ONLINE_PRIVATE);
        let issue = w.issue(IssueStatus::Todo, Some(Assignee::Agent(a.clone())));
        w.task(&a, &issue, TaskStatus::Running, None);
        let d = w.set_status(member(&alice), &issue, IssueStatus::Cancelled);
        assert_eq!(cancelled(&d).len(), expect);
    }
}

#[test]
fn deleting_an_issue_cancels_all_its_tasks() {
    let (mut w, leader, squad) = setup();
    let alice = w.alice.clone();
    let issue = w.issue(IssueStatus::Todo, Some(Assignee::Squad(squad)));
    let t1 = w.task(&leader, &issue, TaskStatus::Running, None);
    let d = w.event(Event::DeleteIssue(DeleteIssue {
        actor: member(&alice),
        issue_id: issue.clone(),
    }));
    assert_eq!(cancelled(&d), vec![t1]);
    assert!(squad_routing::Directory::issue(&w.dir, &issue).is_none());
}
