//! Squad management (§2): create, update, archive and members, with the reference's errors.

use squad_model::{
    Assignee, AutopilotId, AutopilotStatus, ExecutionMode, IssueStatus, MemberRef, SquadId,
    TaskStatus, UserId,
};
use squad_routing::{Decision, Directory, Event};

use crate::world::*;
use squad_routing::event::*;

fn create(w: &World, actor: &UserId, name: &str, leader: &str) -> Event {
    Event::CreateSquad(CreateSquad {
        actor: actor.clone(),
        workspace_id: w.ws.clone(),
        squad_id: SquadId::new(uuid(0x5, 777)).unwrap(),
        name: name.into(),
        description: String::new(),
        instructions: String::new(),
        leader_id: leader.into(),
        avatar_url: None,
    })
}

#[test]
fn create_checks_in_order() {
    let mut w = World::new();
    let alice = w.alice.clone();
    let bob = w.bob.clone();
    let admin = w.admin.clone();
    let mine = w.agent("Mine", &alice, ONLINE_PRIVATE);
    let archived = w.agent(
        "Old",
        &alice,
        AgentSpec {
            archived: true,
            ..ONLINE_PRIVATE
        },
    );
    let stranger = UserId::new(uuid(0xe, 99)).unwrap();
    w.dir.put_user(squad_routing::User {
        id: stranger.clone(),
        name: "X".into(),
    });
    let cases = [
        (
            stranger.clone(),
            "S",
            mine.to_string(),
            Some((404, "workspace not found")),
        ),
        (
            alice.clone(),
            "  ",
            mine.to_string(),
            Some((400, "name is required")),
        ),
        (
            alice.clone(),
            "S",
            String::new(),
            Some((400, "leader_id is required")),
        ),
        (
            alice.clone(),
            "S",
            "not-a-uuid".into(),
            Some((400, "invalid leader_id: not a UUID")),
        ),
        (
            alice.clone(),
            "S",
            uuid(0xa, 4040),
            Some((400, "leader must be a valid agent in this workspace")),
        ),
        (
            bob.clone(),
            "S",
            mine.to_string(),
            Some((
                403,
                "you can only use an agent you have access to as leader",
            )),
        ),
        // Admins bypass the leader access check; archived leaders are accepted here.
        (admin.clone(), "S", mine.to_string(), None),
        (alice.clone(), "S", archived.to_string(), None),
    ];
    for (actor, name, leader, want) in cases {
        let d = w.peek(&create(&w, &actor, name, &leader));
        assert_eq!(d.rejection(), want, "{name:?} {leader:?}");
    }
    let d = w.event(create(&w, &alice, "Core", mine.as_str()));
    let Decision::CreateSquad {
        member_count,
        member_preview,
        leader_member,
        ..
    } = &d.decisions[0]
    else {
        panic!("{d:?}");
    };
    assert_eq!(*member_count, 1);
    assert_eq!(member_preview, &vec![MemberRef::Agent(mine.clone())]);
    assert_eq!(leader_member.role, "leader");
    let sid = SquadId::new(uuid(0x5, 777)).unwrap();
    assert_eq!(w.dir.squad(&sid).unwrap().creator_id, alice);
    assert_eq!(w.dir.squad_members(&sid).len(), 1);
    // Names are not unique.
    let mut again = create(&w, &alice, "Core", mine.as_str());
    if let Event::CreateSquad(CreateSquad { squad_id, .. }) = &mut again {
        *squad_id = SquadId::new(uuid(0x5, 778)).unwrap();
    }
    assert_eq!(w.event(again).rejection(), None);
}

#[test]
fn update_is_creator_scoped_and_adds_a_new_leader_and_pauses_autopilots() {
    let mut w = World::new();
    let alice = w.alice.clone();
    let bob = w.bob.clone();
    let lead = w.agent("Lead", &alice, ONLINE_PRIVATE);
    let squad = w.squad("Core", &lead, &alice);
    let unbound = w.agent(
        "New",
        &alice,
        AgentSpec {
            runtime: None,
            ..ONLINE_PRIVATE
        },
    );
    let bobs = w.agent("Bobs", &bob, ONLINE_PRIVATE);
    let ap = AutopilotId::new("ap1").unwrap();
    w.dir.put_autopilot(squad_model::Autopilot {
        id: ap.clone(),
        workspace_id: w.ws.clone(),
        title: "Nightly".into(),
        assignee: Some(Assignee::Squad(squad.clone())),
        execution_mode: ExecutionMode::CreateIssue,
        status: AutopilotStatus::Active,
        pause_reason: None,
        creator: squad_model::Actor::Member(alice.clone()),
    });
    let upd = |actor: &UserId, leader: Option<String>| {
        Event::UpdateSquad(UpdateSquad {
            actor: actor.clone(),
            squad_id: squad.clone(),
            name: Some("Renamed".into()),
            description: None,
            instructions: None,
            leader_id: leader,
            avatar_url: None,
        })
    };
    assert_eq!(
        w.peek(&upd(&bob, None)).rejection(),
        Some((403, "insufficient permissions"))
    );
    assert_eq!(
        w.peek(&upd(&alice, Some(uuid(0xa, 4040)))).rejection(),
        Some((400, "leader must be a valid agent in this workspace"))
    );
    assert_eq!(
        w.peek(&upd(&alice, Some(bobs.to_string()))).rejection(),
        Some((
            403,
            "you can only use an agent you have access to as leader"
        ))
    );
    let d = w.event(upd(&alice, Some(unbound.to_string())));
    assert_eq!(d.rejection(), None);
    let s = w.dir.squad(&squad).unwrap();
    assert_eq!((s.name.as_str(), &s.leader_id), ("Renamed", &unbound));
    let members: Vec<_> = w
        .dir
        .squad_members(&squad)
        .iter()
        .map(|m| (m.member.clone(), m.role.clone()))
        .collect();
    assert_eq!(
        members,
        vec![
            (MemberRef::Agent(lead.clone()), "leader".to_owned()),
            (MemberRef::Agent(unbound.clone()), "leader".to_owned()),
        ],
        "the old leader's row is kept; the new leader is added"
    );
    let a = w.dir.autopilot(&ap).unwrap();
    assert_eq!(a.status, AutopilotStatus::Paused);
    assert_eq!(a.pause_reason.as_deref(), Some("agent_runtime_required"));
}

#[test]
fn archive_hands_issues_and_autopilots_to_the_leader_without_cancelling() {
    let mut w = World::new();
    let alice = w.alice.clone();
    let lead = w.agent("Lead", &alice, ONLINE_PRIVATE);
    let squad = w.squad("Core", &lead, &alice);
    let issue = w.issue(
        IssueStatus::InProgress,
        Some(Assignee::Squad(squad.clone())),
    );
    let t = w.task(&lead, &issue, TaskStatus::Running, Some(&squad));
    let arch = |u: &UserId| {
        Event::ArchiveSquad(ArchiveSquad {
            actor: u.clone(),
            squad_id: squad.clone(),
        })
    };
    assert_eq!(
        w.peek(&arch(&w.bob.clone())).rejection(),
        Some((403, "insufficient permissions"))
    );
    let d = w.event(arch(&w.admin.clone()));
    assert_eq!(d.rejection(), None);
    assert!(cancelled(&d).is_empty());
    assert_eq!(
        w.dir.issue(&issue).unwrap().assignee,
        Some(Assignee::Agent(lead.clone()))
    );
    assert_eq!(w.dir.task(&t).unwrap().status, TaskStatus::Running);
    assert!(w.dir.squad(&squad).unwrap().is_archived());
    assert_eq!(
        w.peek(&arch(&alice)).rejection(),
        Some((400, "squad is already archived"))
    );
}

#[test]
fn member_operations() {
    let mut w = World::new();
    let alice = w.alice.clone();
    let bob = w.bob.clone();
    let lead = w.agent("Lead", &alice, ONLINE_PRIVATE);
    let mine = w.agent("Mine", &alice, ONLINE_PRIVATE);
    let bobs = w.agent("Bobs", &bob, ONLINE_PRIVATE);
    let squad = w.squad("Core", &lead, &alice);
    let add = |actor: &UserId, ty: &str, id: &str| {
        Event::AddMember(AddMember {
            actor: actor.clone(),
            squad_id: squad.clone(),
            member_type: ty.into(),
            member_id: id.into(),
            role: "dev".into(),
        })
    };
    let cases = [
        (
            bob.clone(),
            "agent",
            mine.to_string(),
            Some((403, "insufficient permissions")),
        ),
        (
            alice.clone(),
            "robot",
            mine.to_string(),
            Some((400, "member_type must be 'agent' or 'member'")),
        ),
        (
            alice.clone(),
            "agent",
            String::new(),
            Some((400, "member_id is required")),
        ),
        (
            alice.clone(),
            "agent",
            uuid(0xa, 4040),
            Some((400, "agent not found in this workspace")),
        ),
        (
            alice.clone(),
            "agent",
            bobs.to_string(),
            Some((403, "you can only add an agent you have access to")),
        ),
        (
            alice.clone(),
            "member",
            uuid(0xe, 4040),
            Some((400, "member not found in this workspace")),
        ),
        (
            alice.clone(),
            "agent",
            lead.to_string(),
            Some((409, "member already in squad")),
        ),
        (w.admin.clone(), "agent", bobs.to_string(), None),
        (alice.clone(), "member", bob.to_string(), None),
    ];
    for (actor, ty, id, want) in cases {
        assert_eq!(w.peek(&add(&actor, ty, &id)).rejection(), want, "{ty} {id}");
    }
    w.event(add(&alice, "agent", mine.as_str()));
    let rm = |ty: &str, id: &str| {
        Event::RemoveMember(RemoveMember {
            actor: alice.clone(),
            squad_id: squad.clone(),
            member_type: ty.into(),
            member_id: id.into(),
        })
    };
    assert_eq!(
        w.peek(&rm("agent", lead.as_str())).rejection(),
        Some((400, "cannot remove the squad leader; change leader first"))
    );
    assert_eq!(
        w.peek(&rm("agent", bobs.as_str())).rejection(),
        Some((404, "squad member not found"))
    );
    assert_eq!(w.event(rm("agent", mine.as_str())).rejection(), None);
    assert_eq!(w.dir.squad_members(&squad).len(), 1);
    let role = |id: &str| {
        Event::SetMemberRole(SetMemberRole {
            actor: alice.clone(),
            squad_id: squad.clone(),
            member_type: "agent".into(),
            member_id: id.into(),
            role: "boss".into(),
        })
    };
    assert_eq!(
        w.peek(&role(mine.as_str())).rejection(),
        Some((404, "squad member not found"))
    );
    w.event(role(lead.as_str()));
    assert_eq!(w.dir.squad_members(&squad)[0].role, "boss");
}
