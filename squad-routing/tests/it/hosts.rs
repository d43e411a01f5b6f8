//! What hosts really record (trace schema version 2): autopilots without an assignee or created
//! by an agent, agents' own instructions, quick-create tasks and their claims, retries.

use squad_model::{
    Actor, Assignee, Autopilot, AutopilotId, AutopilotStatus, ExecutionMode, InvocationTarget,
    IssueStatus, PermissionMode, TaskContext, TaskStatus,
};
use squad_routing::event::*;
use squad_routing::{AutopilotTrigger, Decision, Decisions, Directory, Event, TriggerSource};

use crate::world::*;

/// The claim decision's fields: (is_leader_task, squad_id, squad_name, owns, instructions).
type ClaimView = (
    bool,
    Option<String>,
    Option<String>,
    Option<bool>,
    Option<String>,
);

/// The claim of `d`, with the instructions it hands the agent (rendered from `dir`).
fn claim_of(dir: &dyn Directory, d: &Decisions) -> ClaimView {
    d.decisions
        .iter()
        .find_map(|d| match d {
            Decision::Claim {
                is_leader_task,
                squad_id,
                squad_name,
                owns_issue_status,
                ..
            } => Some((
                *is_leader_task,
                squad_id.as_ref().map(ToString::to_string),
                squad_name.clone(),
                *owns_issue_status,
                squad_routing::briefing::claim_instructions(dir, d),
            )),
            _ => None,
        })
        .unwrap()
}

fn put_autopilot(
    w: &mut World,
    assignee: Option<Assignee>,
    creator: Actor,
    mode: ExecutionMode,
) -> AutopilotId {
    let id = AutopilotId::new(format!("ap-{}", w.dir.counts().3)).unwrap();
    w.dir.put_autopilot(Autopilot {
        id: id.clone(),
        workspace_id: w.ws.clone(),
        title: "Nightly triage".into(),
        assignee,
        execution_mode: mode,
        status: AutopilotStatus::Active,
        pause_reason: None,
        creator,
    });
    id
}

#[test]
fn an_autopilot_without_assignee_skips_its_runs() {
    let mut w = World::new();
    let alice = w.alice.clone();
    for mode in [ExecutionMode::CreateIssue, ExecutionMode::RunOnly] {
        let ap = put_autopilot(&mut w, None, Actor::Member(alice.clone()), mode);
        for trigger in [AutopilotTrigger::Schedule, AutopilotTrigger::Manual] {
            let d = fire(&mut w, &ap, trigger, None);
            assert_eq!(
                skips(&d),
                [("autopilot has no assignee".to_owned(), "target_unavailable")],
                "{mode:?} {trigger:?}"
            );
            assert_eq!(d.enqueued().count(), 0);
        }
    }
}

/// Scheduled, webhook and API triggers check the creator: an agent-created autopilot is admitted
/// by a `public_to` leader's workspace target, and by nothing else (no owner, no member target).
#[test]
fn agent_created_autopilots_pass_only_workspace_targets() {
    // (leader's permission, targets, admitted)
    let cases: [(PermissionMode, Vec<InvocationTarget>, bool); 4] = [
        (
            PermissionMode::PublicTo,
            vec![InvocationTarget::Workspace],
            true,
        ),
        (PermissionMode::Private, vec![], false),
        (
            PermissionMode::Private,
            vec![InvocationTarget::Workspace],
            false,
        ),
        (
            PermissionMode::PublicTo,
            vec![InvocationTarget::Member(
                squad_model::UserId::new("u-x").unwrap(),
            )],
            false,
        ),
    ];
    for (mode, targets, admitted) in cases {
        let mut w = World::new();
        let alice = w.alice.clone();
        let lead = w.agent("Lead", &alice, ONLINE_PRIVATE);
        w.edit_agent(&lead, |a| {
            a.permission_mode = mode;
            a.invocation_targets = targets.clone();
        });
        let squad = w.squad("Core", &lead, &alice);
        let maker = w.agent("Maker", &alice, ONLINE_PUBLIC);
        let ap = put_autopilot(
            &mut w,
            Some(Assignee::Squad(squad)),
            Actor::Agent(maker),
            ExecutionMode::CreateIssue,
        );
        for trigger in [
            AutopilotTrigger::Schedule,
            AutopilotTrigger::Webhook,
            AutopilotTrigger::Api,
        ] {
            let d = w.peek(&Event::TriggerAutopilot(TriggerAutopilot {
                autopilot_id: ap.clone(),
                trigger,
                actor: None,
            }));
            if admitted {
                assert!(skips(&d).is_empty(), "{mode:?} {targets:?}: {d:?}");
                assert_eq!(
                    enqueued(&d),
                    vec![(lead.clone(), true, TriggerSource::AutopilotCreateIssue)]
                );
            } else {
                assert_eq!(
                    skips(&d),
                    [(
                        "autopilot creator lacks access to private assignee agent".to_owned(),
                        "invocation_not_allowed"
                    )],
                    "{mode:?} {targets:?}"
                );
            }
        }
    }
}

#[test]
fn an_agent_saving_an_autopilot_is_its_creator() {
    let mut w = World::new();
    let alice = w.alice.clone();
    let lead = w.agent("Lead", &alice, ONLINE_PUBLIC);
    let squad = w.squad("Core", &lead, &alice);
    let maker = w.agent("Maker", &alice, ONLINE_PUBLIC);
    let id = AutopilotId::new("ap-agent").unwrap();
    let d = w.event(Event::SaveAutopilot(SaveAutopilot {
        actor: agent(&maker),
        task_id: None,
        autopilot_id: id.clone(),
        workspace_id: w.ws.clone(),
        title: "Weekly report".into(),
        assignee_type: "squad".into(),
        assignee_id: squad.to_string(),
        execution_mode: ExecutionMode::CreateIssue,
        status: AutopilotStatus::Active,
    }));
    assert_eq!(d.rejection(), None);
    assert_eq!(w.dir.autopilot(&id).unwrap().creator, Actor::Agent(maker));
    // A later save by a member keeps the creator.
    w.event(Event::SaveAutopilot(SaveAutopilot {
        actor: member(&alice),
        task_id: None,
        autopilot_id: id.clone(),
        workspace_id: w.ws.clone(),
        title: "Weekly report".into(),
        assignee_type: "squad".into(),
        assignee_id: squad.to_string(),
        execution_mode: ExecutionMode::CreateIssue,
        status: AutopilotStatus::Paused,
    }));
    assert!(matches!(
        w.dir.autopilot(&id).unwrap().creator,
        Actor::Agent(_)
    ));
}

/// The claim carries the instructions the agent runs with: its own, a blank line and the briefing
/// (the briefing alone when its own are blank); a plain claim carries only its own.
#[test]
fn claims_carry_the_agents_own_instructions() {
    // (own instructions, leader task?, expected prefix, expect the briefing)
    let cases = [
        (
            "Review Rust only.",
            true,
            Some("Review Rust only.\n\n## Squad Operating Protocol"),
            true,
        ),
        ("   ", true, Some("## Squad Operating Protocol"), true),
        ("", true, Some("## Squad Operating Protocol"), true),
        ("Review Rust only.", false, Some("Review Rust only."), false),
        ("", false, None, false),
    ];
    for (own, leader, prefix, briefed) in cases {
        let mut w = World::new();
        let alice = w.alice.clone();
        let lead = w.agent("Lead", &alice, ONLINE_PRIVATE);
        w.edit_agent(&lead, |a| a.instructions = own.to_owned());
        let squad = w.squad("Core", &lead, &alice);
        let issue = w.issue(IssueStatus::Todo, Some(Assignee::Squad(squad.clone())));
        let task = w.task(&lead, &issue, TaskStatus::Queued, leader.then_some(&squad));
        let d = w.event(Event::Claim(ClaimTask { task_id: task }));
        let (is_leader, _, _, owns, text) = claim_of(&w.dir, &d);
        assert_eq!(is_leader, briefed, "{own:?} {leader}");
        assert_eq!(owns, briefed.then_some(true));
        match prefix {
            Some(p) => {
                let text = text.unwrap();
                assert!(text.starts_with(p), "{own:?}: {text}");
                assert_eq!(
                    text.contains("## Squad Roster"),
                    briefed,
                    "{own:?} {leader}"
                );
                if briefed {
                    assert!(text.contains("Own the parent issue status"));
                } else {
                    assert_eq!(text, own);
                }
            }
            None => assert_eq!(text, None),
        }
    }
}

#[test]
fn quick_create_tasks_and_their_claims() {
    let mut w = World::new();
    let alice = w.alice.clone();
    let lead = w.agent("Lead", &alice, ONLINE_PRIVATE);
    let squad = w.squad("Core", &lead, &alice);
    let solo = w.agent("Solo", &alice, ONLINE_PRIVATE);
    let quick = |target_type: &str, target_id: &str, actor: &squad_model::UserId| {
        Event::QuickCreate(QuickCreate {
            actor: actor.clone(),
            workspace_id: squad_model::WorkspaceId::new("w1").unwrap(),
            target_type: target_type.into(),
            target_id: target_id.into(),
            prompt: "Login fails on Safari".into(),
        })
    };
    // A squad: the leader gets a task with no issue and a context naming the squad.
    let d = w.event(quick("squad", squad.as_str(), &alice));
    let task = d.enqueued().next().unwrap().clone();
    assert_eq!(task.agent_id, lead);
    assert_eq!(task.issue_id, None);
    assert!(!task.is_leader_task);
    assert_eq!(task.originator_user_id.as_ref(), Some(&alice));
    assert_eq!(
        task.context.as_deref(),
        Some(&TaskContext::QuickCreate {
            squad_id: Some(squad.clone()),
            prompt: "Login fails on Safari".into()
        })
    );
    assert_eq!(enqueued(&d)[0].2, TriggerSource::QuickCreate);
    // Its claim briefs the leader (not owned: no issue yet) and names the squad.
    let d = w.peek(&Event::Claim(ClaimTask {
        task_id: task.id.clone(),
    }));
    let (is_leader, sid, name, owns, text) = claim_of(&w.dir, &d);
    assert!(is_leader);
    assert_eq!(sid.as_deref(), Some(squad.as_str()));
    assert_eq!(name.as_deref(), Some("Core"));
    assert_eq!(owns, Some(false));
    let text = text.unwrap();
    assert!(text.contains("Do NOT change this issue's status"), "{text}");
    assert!(!text.contains("Own the parent issue status"));
    // After a leader swap, the claim withholds the briefing.
    let june = w.agent("June", &alice, ONLINE_PRIVATE);
    w.event(Event::UpdateSquad(UpdateSquad {
        actor: alice.clone(),
        squad_id: squad.clone(),
        name: None,
        description: None,
        instructions: None,
        leader_id: Some(june.to_string()),
        avatar_url: None,
    }));
    let d = w.peek(&Event::Claim(ClaimTask {
        task_id: task.id.clone(),
    }));
    assert_eq!(claim_of(&w.dir, &d), (false, None, None, None, None));
    // An agent: a plain task, a plain claim.
    let d = w.event(quick("agent", solo.as_str(), &alice));
    let t = d.enqueued().next().unwrap().clone();
    assert_eq!(
        t.context.as_deref(),
        Some(&TaskContext::QuickCreate {
            squad_id: None,
            prompt: "Login fails on Safari".into()
        })
    );
    let d = w.peek(&Event::Claim(ClaimTask { task_id: t.id }));
    assert_eq!(claim_of(&w.dir, &d), (false, None, None, None, None));
}

#[test]
fn quick_create_refusals() {
    let mut w = World::new();
    let alice = w.alice.clone();
    let bob = w.bob.clone();
    let lead = w.agent("Lead", &alice, ONLINE_PRIVATE);
    let squad = w.squad("Core", &lead, &alice);
    let unbound = w.agent(
        "Unbound",
        &alice,
        AgentSpec {
            runtime: None,
            ..ONLINE_PRIVATE
        },
    );
    let stranger = squad_model::UserId::new("u-stranger").unwrap();
    type Case<'a> = (
        &'a squad_model::UserId,
        &'a str,
        String,
        Result<&'a str, (u16, &'a str)>,
    );
    let cases: [Case<'_>; 6] = [
        (
            &stranger,
            "squad",
            squad.to_string(),
            Err((404, "workspace not found")),
        ),
        (
            &alice,
            "team",
            squad.to_string(),
            Err((400, "target_type must be 'agent' or 'squad'")),
        ),
        (
            &alice,
            "squad",
            "nope".into(),
            Err((400, "target_id does not refer to a squad in this workspace")),
        ),
        (
            &bob,
            "squad",
            squad.to_string(),
            Err((403, "cannot assign to squad with private leader")),
        ),
        (
            &bob,
            "agent",
            lead.to_string(),
            Err((403, "cannot assign to private agent")),
        ),
        (&alice, "agent", unbound.to_string(), Ok("agent_not_ready")),
    ];
    for (actor, ty, id, want) in cases {
        let d = w.peek(&Event::QuickCreate(QuickCreate {
            actor: actor.clone(),
            workspace_id: w.ws.clone(),
            target_type: ty.into(),
            target_id: id.clone(),
            prompt: String::new(),
        }));
        match want {
            Err((code, msg)) => assert_eq!(d.rejection(), Some((code, msg)), "{ty} {id}"),
            Ok(noop) => {
                assert_eq!(d.rejection(), None);
                assert_eq!(noops(&d), [noop]);
            }
        }
        assert_eq!(d.enqueued().count(), 0);
    }
}

/// A failed task with attempts left is retried: attempt n + 1, inheriting `is_leader_task`,
/// `squad_id`, `trigger_comment_id` and `originator_user_id`.
#[test]
fn failed_tasks_are_retried_until_max_attempts() {
    let mut w = World::new();
    let alice = w.alice.clone();
    let lead = w.agent("Lead", &alice, ONLINE_PRIVATE);
    let squad = w.squad("Core", &lead, &alice);
    let issue = w.issue(
        IssueStatus::InProgress,
        Some(Assignee::Squad(squad.clone())),
    );
    let d = w.comment(&issue, member(&alice), "Please start");
    let first = d.enqueued().next().unwrap().clone();
    let mut current = first.clone();
    for attempt in 2..=3 {
        w.event(Event::TaskStatus(SetTaskStatus {
            task_id: current.id.clone(),
            status: TaskStatus::Running,
        }));
        let d = w.event(Event::TaskStatus(SetTaskStatus {
            task_id: current.id.clone(),
            status: TaskStatus::Failed,
        }));
        assert_eq!(
            enqueued(&d),
            vec![(lead.clone(), true, TriggerSource::Retry)],
            "attempt {attempt}"
        );
        let retry = d.enqueued().next().unwrap().clone();
        assert_eq!(retry.attempt, attempt);
        assert_eq!(retry.status, TaskStatus::Queued);
        assert_eq!(retry.squad_id, first.squad_id);
        assert_eq!(retry.trigger_comment_id, first.trigger_comment_id);
        assert_eq!(retry.originator_user_id.as_ref(), Some(&alice));
        assert_eq!(retry.issue_id, first.issue_id);
        assert_ne!(retry.id, current.id);
        current = retry;
    }
    // The third attempt was the last.
    let d = w.event(Event::TaskStatus(SetTaskStatus {
        task_id: current.id.clone(),
        status: TaskStatus::Failed,
    }));
    assert_eq!(d.enqueued().count(), 0);
    assert_eq!(noops(&d), ["attempts_exhausted"]);
    // Reporting the failure again changes nothing.
    let d = w.event(Event::TaskStatus(SetTaskStatus {
        task_id: current.id.clone(),
        status: TaskStatus::Failed,
    }));
    assert_eq!(d.enqueued().count(), 0);
}

#[test]
fn retries_follow_the_policy_and_the_pending_check() {
    // (max_attempts, a task queued meanwhile, completed instead of failed, expected)
    let cases = [
        (0, false, false, Vec::<&str>::new(), 0),
        (1, false, false, vec!["attempts_exhausted"], 0),
        (3, true, false, vec!["pending_task"], 0),
        (3, false, true, vec![], 0),
        (3, false, false, vec![], 1),
    ];
    for (max, pending, completed, want_noops, want_tasks) in cases {
        let mut w = World::new();
        w.engine.policy.max_attempts = max;
        let alice = w.alice.clone();
        let a = w.agent("Ada", &alice, ONLINE_PRIVATE);
        let issue = w.issue(IssueStatus::InProgress, Some(Assignee::Agent(a.clone())));
        let t = w.task(&a, &issue, TaskStatus::Running, None);
        if pending {
            w.task(&a, &issue, TaskStatus::Queued, None);
        }
        let status = if completed {
            TaskStatus::Completed
        } else {
            TaskStatus::Failed
        };
        let d = w.event(Event::TaskStatus(SetTaskStatus { task_id: t, status }));
        assert_eq!(noops(&d), want_noops, "max {max}, pending {pending}");
        assert_eq!(
            d.enqueued().count(),
            want_tasks,
            "max {max}, pending {pending}"
        );
    }
}

#[test]
fn a_quick_create_retry_keeps_its_context() {
    let mut w = World::new();
    let alice = w.alice.clone();
    let lead = w.agent("Lead", &alice, ONLINE_PRIVATE);
    let squad = w.squad("Core", &lead, &alice);
    let d = w.event(Event::QuickCreate(QuickCreate {
        actor: alice.clone(),
        workspace_id: w.ws.clone(),
        target_type: "squad".into(),
        target_id: squad.to_string(),
        prompt: "p".into(),
    }));
    let t = d.enqueued().next().unwrap().clone();
    let d = w.event(Event::TaskStatus(SetTaskStatus {
        task_id: t.id.clone(),
        status: TaskStatus::Failed,
    }));
    let retry = d.enqueued().next().unwrap();
    assert_eq!(retry.context, t.context);
    assert_eq!(retry.attempt, 2);
}
