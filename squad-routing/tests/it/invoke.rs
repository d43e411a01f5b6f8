//! `canInvokeAgent` (§8) and member status (§2) as tables.

use squad_model::{InvocationTarget, PermissionMode, RuntimeStatus, UserId};
use squad_routing::{MemberStatus, Principal, can_invoke_agent, member_status};

use crate::world::*;

#[test]
fn can_invoke_agent_table() {
    let mut w = World::new();
    let alice = w.alice.clone();
    let bob = w.bob.clone();
    let admin = w.admin.clone();
    let outsider = UserId::new(uuid(0xe, 77)).unwrap();
    let a = w.agent("A", &alice, ONLINE_PRIVATE);
    let other = w.agent("B", &bob, ONLINE_PRIVATE);
    let set = |w: &mut World, mode: PermissionMode, targets: Vec<InvocationTarget>| {
        w.edit_agent(&a, |ag| {
            ag.permission_mode = mode;
            ag.invocation_targets = targets;
        });
    };
    let m = |u: &UserId| Principal::Member(u.clone());
    let ag = Principal::Agent(other.clone());
    type Case = (
        PermissionMode,
        Vec<InvocationTarget>,
        Principal,
        Option<UserId>,
        bool,
    );
    let cases: Vec<Case> = vec![
        // The owner always passes, directly or as the originator of an agent or the system.
        (PermissionMode::Private, vec![], m(&alice), None, true),
        (
            PermissionMode::Private,
            vec![],
            ag.clone(),
            Some(alice.clone()),
            true,
        ),
        (
            PermissionMode::Private,
            vec![],
            Principal::System,
            Some(alice.clone()),
            true,
        ),
        // Private: no admin bypass, no agent-to-agent bypass.
        (
            PermissionMode::Private,
            vec![InvocationTarget::Workspace],
            m(&admin),
            None,
            false,
        ),
        (PermissionMode::Private, vec![], ag.clone(), None, false),
        // Workspace target: members of the workspace, and any agent or system principal.
        (
            PermissionMode::PublicTo,
            vec![InvocationTarget::Workspace],
            m(&bob),
            None,
            true,
        ),
        (
            PermissionMode::PublicTo,
            vec![InvocationTarget::Workspace],
            m(&outsider),
            None,
            false,
        ),
        (
            PermissionMode::PublicTo,
            vec![InvocationTarget::Workspace],
            ag.clone(),
            None,
            true,
        ),
        (
            PermissionMode::PublicTo,
            vec![InvocationTarget::Workspace],
            Principal::System,
            None,
            true,
        ),
        // Member target: only the matching effective invoker.
        (
            PermissionMode::PublicTo,
            vec![InvocationTarget::Member(bob.clone())],
            m(&bob),
            None,
            true,
        ),
        (
            PermissionMode::PublicTo,
            vec![InvocationTarget::Member(bob.clone())],
            m(&admin),
            None,
            false,
        ),
        (
            PermissionMode::PublicTo,
            vec![InvocationTarget::Member(bob.clone())],
            ag.clone(),
            Some(bob.clone()),
            true,
        ),
        (
            PermissionMode::PublicTo,
            vec![InvocationTarget::Member(bob.clone())],
            ag.clone(),
            None,
            false,
        ),
        // A member actor is its own invoker: an originator does not change that.
        (
            PermissionMode::PublicTo,
            vec![InvocationTarget::Member(bob.clone())],
            m(&admin),
            Some(bob.clone()),
            false,
        ),
        // Team targets are inert; no targets deny.
        (
            PermissionMode::PublicTo,
            vec![InvocationTarget::Team("t".into())],
            m(&bob),
            None,
            false,
        ),
        (PermissionMode::PublicTo, vec![], m(&bob), None, false),
    ];
    for (mode, targets, actor, originator, want) in cases {
        set(&mut w, mode, targets.clone());
        let agent = squad_routing::Directory::agent(&w.dir, &a).unwrap();
        assert_eq!(
            can_invoke_agent(&w.dir, agent, &actor, originator.as_ref()),
            want,
            "{mode:?} {targets:?} {actor:?} {originator:?}"
        );
    }
}

#[test]
fn member_status_first_match_wins() {
    let mut w = World::new();
    let alice = w.alice.clone();
    let a = w.agent("A", &alice, ONLINE_PRIVATE);
    let now = w.at;
    let get = |w: &World, working| {
        member_status(
            squad_routing::Directory::agent(&w.dir, &a).unwrap(),
            working,
            now,
        )
    };
    assert_eq!(get(&w, false), MemberStatus::Idle);
    assert_eq!(get(&w, true), MemberStatus::Working);
    w.edit_agent(&a, |ag| {
        let rt = ag.runtime.as_mut().unwrap();
        rt.status = RuntimeStatus::Offline;
        rt.last_seen_at = Some(now.plus_seconds(-299));
    });
    assert_eq!(get(&w, false), MemberStatus::Unstable);
    w.edit_agent(&a, |ag| {
        ag.runtime.as_mut().unwrap().last_seen_at = Some(now.plus_seconds(-300))
    });
    assert_eq!(get(&w, false), MemberStatus::Offline);
    w.edit_agent(&a, |ag| ag.runtime = None);
    assert_eq!(get(&w, false), MemberStatus::Offline);
    w.edit_agent(&a, |ag| ag.archived_at = Some(now));
    assert_eq!(get(&w, true), MemberStatus::Archived);
}
