//! Autopilots (§6): save-time validation and dispatch.

use squad_model::{
    Assignee, Autopilot, AutopilotId, AutopilotStatus, ExecutionMode, RuntimeStatus,
};
use squad_routing::{AutopilotTrigger, Decision, Directory, Event, TriggerSource};

use crate::world::*;
use squad_routing::event::*;

fn autopilot(w: &mut World, squad: &squad_model::SquadId, mode: ExecutionMode) -> AutopilotId {
    let id = AutopilotId::new(format!("ap-{}", w.dir.counts().0)).unwrap();
    w.dir.put_autopilot(Autopilot {
        id: id.clone(),
        workspace_id: w.ws.clone(),
        title: "Nightly triage".into(),
        assignee: Some(Assignee::Squad(squad.clone())),
        execution_mode: mode,
        status: AutopilotStatus::Active,
        pause_reason: None,
        creator: squad_model::Actor::Member(w.alice.clone()),
    });
    id
}

#[test]
fn save_validation() {
    let mut w = World::new();
    let alice = w.alice.clone();
    let bob = w.bob.clone();
    let lead = w.agent("Lead", &alice, ONLINE_PRIVATE);
    let squad = w.squad("Core", &lead, &alice);
    let archived_squad = w.squad("Old", &lead, &alice);
    let mut s = w.dir.squad(&archived_squad).unwrap().clone();
    s.archived_at = Some(w.at);
    w.dir.put_squad(s);
    let dead = w.agent(
        "Dead",
        &alice,
        AgentSpec {
            archived: true,
            ..ONLINE_PRIVATE
        },
    );
    let dead_squad = w.squad("Headless", &dead, &alice);
    let unbound = w.agent(
        "Unbound",
        &alice,
        AgentSpec {
            runtime: None,
            ..ONLINE_PRIVATE
        },
    );
    let unbound_squad = w.squad("Idle", &unbound, &alice);
    let save = |actor: &squad_model::UserId, ty: &str, id: &str, status| {
        Event::SaveAutopilot(SaveAutopilot {
            actor: member(actor),
            task_id: None,
            autopilot_id: AutopilotId::new("ap-new").unwrap(),
            workspace_id: w.ws.clone(),
            title: "T".into(),
            assignee_type: ty.into(),
            assignee_id: id.into(),
            execution_mode: ExecutionMode::CreateIssue,
            status,
        })
    };
    let active = AutopilotStatus::Active;
    let cases = [
        (
            save(&alice, "squad", &uuid(0x5, 4040), active),
            Some((400, "assignee must be a valid squad in this workspace")),
        ),
        (
            save(&alice, "squad", archived_squad.as_str(), active),
            Some((422, "squad is archived; pick a different squad")),
        ),
        (
            save(&alice, "squad", dead_squad.as_str(), active),
            Some((
                422,
                "squad leader is archived; pick a different squad or rotate the leader before assigning autopilot",
            )),
        ),
        (
            save(&alice, "squad", unbound_squad.as_str(), active),
            Some((
                422,
                "squad leader needs a runtime before this autopilot can be active",
            )),
        ),
        (
            save(
                &alice,
                "squad",
                unbound_squad.as_str(),
                AutopilotStatus::Paused,
            ),
            None,
        ),
        (
            save(&bob, "squad", squad.as_str(), active),
            Some((403, "cannot assign autopilot to squad with private leader")),
        ),
        (
            save(&alice, "team", squad.as_str(), active),
            Some((400, "assignee_type must be agent or squad")),
        ),
        (save(&alice, "squad", squad.as_str(), active), None),
    ];
    for (ev, want) in cases {
        assert_eq!(w.peek(&ev).rejection(), want, "{ev:?}");
    }
    // A squad whose leader row is missing.
    let mut s = w.dir.squad(&squad).unwrap().clone();
    s.leader_id = squad_model::AgentId::new(uuid(0xa, 4041)).unwrap();
    w.dir.put_squad(s);
    assert_eq!(
        w.peek(&save(&alice, "squad", squad.as_str(), active))
            .rejection(),
        Some((400, "squad leader agent not found"))
    );
}

#[test]
fn create_issue_keeps_the_issue_on_the_squad_tolerates_offline_and_skips_duplicates() {
    let mut w = World::new();
    let alice = w.alice.clone();
    let lead = w.agent(
        "Lead",
        &alice,
        AgentSpec {
            runtime: Some(RuntimeStatus::Offline),
            ..ONLINE_PRIVATE
        },
    );
    let squad = w.squad("Core", &lead, &alice);
    let ap = autopilot(&mut w, &squad, ExecutionMode::CreateIssue);
    let d = fire(&mut w, &ap, AutopilotTrigger::Schedule, None);
    assert_eq!(
        enqueued(&d),
        vec![(lead.clone(), true, TriggerSource::AutopilotCreateIssue)]
    );
    let task = d.enqueued().next().unwrap();
    assert_eq!(
        task.originator_user_id, None,
        "a scheduled run has no originator"
    );
    let Decision::CreateIssue { issue, .. } = &d.decisions[0] else {
        panic!("{d:?}")
    };
    assert_eq!(issue.assignee, Some(Assignee::Squad(squad.clone())));
    assert_eq!(issue.status, squad_model::IssueStatus::Todo);
    assert_eq!(issue.creator, Some(squad_model::Actor::Agent(lead.clone())));
    assert_eq!(issue.origin.as_ref().unwrap().kind, "autopilot");
    // Within 60 seconds, the same title is a duplicate.
    let d = fire(&mut w, &ap, AutopilotTrigger::Schedule, None);
    assert_eq!(skips(&d)[0].1, "already_active");
    w.at = w.at.plus_seconds(120);
    let d = fire(&mut w, &ap, AutopilotTrigger::Manual, Some(alice.clone()));
    assert_eq!(enqueued(&d).len(), 1);
    assert_eq!(d.enqueued().next().unwrap().originator_user_id, Some(alice));
}

#[test]
fn run_only_needs_online_and_makes_a_plain_task() {
    let mut w = World::new();
    let alice = w.alice.clone();
    let lead = w.agent(
        "Lead",
        &alice,
        AgentSpec {
            runtime: Some(RuntimeStatus::Offline),
            ..ONLINE_PRIVATE
        },
    );
    let squad = w.squad("Core", &lead, &alice);
    let ap = autopilot(&mut w, &squad, ExecutionMode::RunOnly);
    let d = fire(&mut w, &ap, AutopilotTrigger::Schedule, None);
    assert_eq!(
        skips(&d),
        vec![(
            "agent runtime is offline at dispatch time".to_owned(),
            "runtime_offline"
        )]
    );
    w.edit_agent(&lead, |a| {
        a.runtime.as_mut().unwrap().status = RuntimeStatus::Online
    });
    let d = fire(&mut w, &ap, AutopilotTrigger::Schedule, None);
    assert_eq!(
        enqueued(&d),
        vec![(lead, false, TriggerSource::AutopilotRunOnly)]
    );
    assert_eq!(d.enqueued().next().unwrap().issue_id, None);
}

#[test]
fn dispatch_skips() {
    let mut w = World::new();
    let alice = w.alice.clone();
    let bob = w.bob.clone();
    let lead = w.agent("Lead", &alice, ONLINE_PRIVATE);
    let squad = w.squad("Core", &lead, &alice);
    let ap = autopilot(&mut w, &squad, ExecutionMode::CreateIssue);
    // Bob clicking "run now" on alice's private leader.
    let d = fire(&mut w, &ap, AutopilotTrigger::Manual, Some(bob.clone()));
    assert_eq!(
        skips(&d),
        vec![(
            "you are not allowed to trigger this autopilot's assignee agent".to_owned(),
            "invocation_not_allowed"
        )]
    );
    // An autopilot created by bob, fired by the schedule.
    let mut a = w.dir.autopilot(&ap).unwrap().clone();
    a.creator = squad_model::Actor::Member(bob);
    w.dir.put_autopilot(a);
    let d = fire(&mut w, &ap, AutopilotTrigger::Schedule, None);
    assert_eq!(
        skips(&d),
        vec![(
            "autopilot creator lacks access to private assignee agent".to_owned(),
            "invocation_not_allowed"
        )]
    );
    w.edit_agent(&lead, |a| a.runtime = None);
    let d = fire(&mut w, &ap, AutopilotTrigger::Schedule, None);
    assert_eq!(
        skips(&d),
        vec![(
            "squad leader agent has no runtime bound".to_owned(),
            "agent_runtime_required"
        )]
    );
    w.edit_agent(&lead, |a| {
        a.archived_at = Some(squad_model::Timestamp::from_unix_seconds(0).unwrap())
    });
    let d = fire(&mut w, &ap, AutopilotTrigger::Schedule, None);
    assert_eq!(
        skips(&d),
        vec![(
            "squad leader agent is archived".to_owned(),
            "target_unavailable"
        )]
    );
    let mut s = w.dir.squad(&squad).unwrap().clone();
    s.archived_at = Some(w.at);
    w.dir.put_squad(s);
    let d = fire(&mut w, &ap, AutopilotTrigger::Schedule, None);
    assert_eq!(
        skips(&d),
        vec![(
            "assignee squad is archived".to_owned(),
            "target_unavailable"
        )]
    );
    let mut a = w.dir.autopilot(&ap).unwrap().clone();
    a.status = AutopilotStatus::Paused;
    w.dir.put_autopilot(a);
    assert_eq!(
        noops(&fire(&mut w, &ap, AutopilotTrigger::Schedule, None)),
        ["autopilot_paused"]
    );
}
