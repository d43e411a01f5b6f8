//! Comment triggers (§4, Era C).

use squad_model::{Assignee, CommentId, IssueStatus, TaskStatus};
use squad_routing::{Event, Principal, TriggerSource};

use crate::world::*;
use squad_routing::event::*;

struct S {
    w: World,
    leader: squad_model::AgentId,
    worker: squad_model::AgentId,
    squad: squad_model::SquadId,
    issue: squad_model::IssueId,
}

/// A squad (leader + worker, both alice's, public to the workspace) and an issue assigned to it.
fn setup() -> S {
    let mut w = World::new();
    let alice = w.alice.clone();
    let leader = w.agent("Lead", &alice, ONLINE_PUBLIC);
    let worker = w.agent("Worker", &alice, ONLINE_PUBLIC);
    let squad = w.squad("Core", &leader, &alice);
    w.member(
        &squad,
        squad_model::MemberRef::Agent(worker.clone()),
        "backend",
    );
    let issue = w.issue(
        IssueStatus::InProgress,
        Some(Assignee::Squad(squad.clone())),
    );
    S {
        w,
        leader,
        worker,
        squad,
        issue,
    }
}

#[test]
fn a_member_top_level_comment_wakes_the_leader_and_a_queued_task_absorbs_the_next() {
    let mut s = setup();
    let alice = s.w.alice.clone();
    let d = s.w.comment(&s.issue, member(&alice), "any news?");
    assert_eq!(
        enqueued(&d),
        vec![(s.leader.clone(), true, TriggerSource::IssueAssignee)]
    );
    let d = s.w.comment(&s.issue, member(&alice), "and now?");
    assert!(enqueued(&d).is_empty());
    assert!(
        d.decisions
            .iter()
            .any(|d| matches!(d, squad_routing::Decision::Coalesce { .. }))
    );
}

#[test]
fn a_comment_while_the_leader_runs_enqueues_a_new_task() {
    let mut s = setup();
    let alice = s.w.alice.clone();
    s.w.task(&s.leader, &s.issue, TaskStatus::Running, Some(&s.squad));
    let d = s.w.comment(&s.issue, member(&alice), "one more thing");
    assert_eq!(
        enqueued(&d),
        vec![(s.leader.clone(), true, TriggerSource::IssueAssignee)]
    );
}

#[test]
fn note_all_and_member_mentions_wake_nobody() {
    let mut s = setup();
    let alice = s.w.alice.clone();
    let bob = s.w.bob.to_string();
    for (text, reason) in [
        ("/NOTE just for me", "note_comment"),
        ("[@all](mention://all/all) heads up", "all_mention"),
        (
            &*format!("ping {}", mention("member", &bob, "bob")),
            "member_mention",
        ),
    ] {
        let d = s.w.comment(&s.issue, member(&alice), text);
        assert!(enqueued(&d).is_empty(), "{text}");
        assert_eq!(noops(&d), [reason], "{text}");
    }
    // An issue cross-reference is not a routing mention: the assignee fallback runs.
    let d =
        s.w.comment(&s.issue, member(&alice), &mention("issue", "0f", "SQ-1"));
    assert_eq!(enqueued(&d).len(), 1);
}

#[test]
fn an_explicit_agent_mention_wins_over_all_and_skips_the_fallback() {
    let mut s = setup();
    let alice = s.w.alice.clone();
    let text = format!(
        "[@all](mention://all/all) {}",
        mention("agent", s.worker.as_str(), "Worker")
    );
    let d = s.w.comment(&s.issue, member(&alice), &text);
    assert_eq!(
        enqueued(&d),
        vec![(s.worker.clone(), false, TriggerSource::MentionAgent)]
    );
}

#[test]
fn any_agent_plain_comment_wakes_the_leader_without_a_membership_check() {
    let mut s = setup();
    let alice = s.w.alice.clone();
    let outsider = s.w.agent("Outsider", &alice, ONLINE_PUBLIC);
    let d = s.w.comment(&s.issue, agent(&outsider), "done with my part");
    assert_eq!(
        enqueued(&d),
        vec![(s.leader.clone(), true, TriggerSource::IssueAssignee)]
    );
}

#[test]
fn agent_comments_on_agent_assigned_issues_route_nowhere() {
    let mut s = setup();
    let alice = s.w.alice.clone();
    let other = s.w.agent("Solo", &alice, ONLINE_PUBLIC);
    let issue = s.w.issue(IssueStatus::Todo, Some(Assignee::Agent(other)));
    let d = s.w.comment(&issue, agent(&s.worker), "fyi");
    assert!(enqueued(&d).is_empty());
    assert_eq!(noops(&d), ["no_trigger"]);
}

#[test]
fn the_tightened_guard_table() {
    // (latest task of the leader on the issue, suppressed?)
    let cases: [(Option<(bool, bool)>, bool); 4] = [
        (None, false),
        (Some((true, true)), true),   // a leader task
        (Some((false, true)), false), // a worker task of the same squad
        (Some((false, false)), true), // a generic mention task
    ];
    for (latest, suppressed) in cases {
        let mut s = setup();
        let task = latest.map(|(leader_task, same_squad)| {
            let t = s.w.task(&s.leader, &s.issue, TaskStatus::Completed, None);
            let mut task = squad_routing::Directory::task(&s.w.dir, &t)
                .unwrap()
                .clone();
            task.is_leader_task = leader_task;
            task.squad_id = same_squad.then(|| s.squad.clone());
            squad_routing::Directory::put_task(&mut s.w.dir, task);
            t
        });
        let d = match &task {
            Some(t) => {
                s.w.comment_from_task(&s.issue.clone(), &s.leader.clone(), t, "update")
            }
            None => s.w.comment(&s.issue.clone(), agent(&s.leader), "update"),
        };
        if suppressed {
            assert!(enqueued(&d).is_empty(), "{latest:?}");
            assert_eq!(noops(&d), ["self_trigger_suppressed"], "{latest:?}");
        } else {
            assert_eq!(enqueued(&d).len(), 1, "{latest:?}");
        }
    }
}

#[test]
fn squad_mention_outcomes() {
    let mut s = setup();
    let alice = s.w.alice.clone();
    let bob = s.w.bob.clone();
    let private = s.w.agent("Private", &alice, ONLINE_PRIVATE);
    let private_squad = s.w.squad("Secret", &private, &alice);
    let gone = s.w.agent(
        "Gone",
        &alice,
        AgentSpec {
            archived: true,
            ..ONLINE_PUBLIC
        },
    );
    let gone_squad = s.w.squad("Ghost", &gone, &alice);
    let unbound = s.w.agent(
        "Unbound",
        &alice,
        AgentSpec {
            runtime: None,
            ..ONLINE_PUBLIC
        },
    );
    let unbound_squad = s.w.squad("Idle", &unbound, &alice);
    let other = s.w.issue(IssueStatus::Todo, None);
    let text = [
        mention("squad", "abc", "NotUuid"),
        mention("squad", &uuid(0x5, 4242), "Missing"),
        mention("squad", private_squad.as_str(), "Secret"),
        mention("squad", gone_squad.as_str(), "Ghost"),
        mention("squad", unbound_squad.as_str(), "Idle"),
        mention("squad", s.squad.as_str(), "Core"),
    ]
    .join(" ");
    let d = s.w.comment(&other, member(&bob), &text);
    let got: Vec<_> = mentions(&d).into_iter().map(|m| (m.2, m.3)).collect();
    let want: Vec<(String, Option<String>)> = [
        ("blocked", Some("target_unavailable")),
        ("blocked", Some("target_unavailable")),
        ("blocked", Some("invocation_not_allowed")),
        ("blocked", Some("target_unavailable")),
        ("blocked", Some("agent_runtime_required")),
        ("triggered", None),
    ]
    .into_iter()
    .map(|(a, b)| (a.to_owned(), b.map(str::to_owned)))
    .collect();
    assert_eq!(got, want);
    // The squad mention wakes the leader only, as a leader task, on someone else's issue.
    assert_eq!(
        enqueued(&d),
        vec![(s.leader.clone(), true, TriggerSource::MentionSquadLeader)]
    );
    assert_eq!(
        d.enqueued().next().unwrap().squad_id.as_ref(),
        Some(&s.squad)
    );
}

#[test]
fn agent_and_squad_mentions_of_one_leader_give_one_leader_task() {
    for leader_first in [true, false] {
        let mut s = setup();
        let alice = s.w.alice.clone();
        let a = mention("agent", s.leader.as_str(), "Lead");
        let q = mention("squad", s.squad.as_str(), "Core");
        let text = if leader_first {
            format!("{a} {q}")
        } else {
            format!("{q} {a}")
        };
        let d = s.w.comment(&s.issue, member(&alice), &text);
        assert_eq!(
            enqueued(&d),
            vec![(s.leader.clone(), true, TriggerSource::MentionSquadLeader)],
            "leader first: {leader_first}"
        );
    }
}

#[test]
fn two_squads_sharing_a_leader_keep_the_first_squad_context() {
    let mut s = setup();
    let alice = s.w.alice.clone();
    let twin = s.w.squad("Twin", &s.leader.clone(), &alice);
    let text = format!(
        "{} {}",
        mention("squad", twin.as_str(), "Twin"),
        mention("squad", s.squad.as_str(), "Core")
    );
    let d = s.w.comment(&s.issue, member(&alice), &text);
    assert_eq!(d.enqueued().count(), 1);
    assert_eq!(d.enqueued().next().unwrap().squad_id.as_ref(), Some(&twin));
    let outcomes: Vec<_> = mentions(&d).into_iter().map(|m| m.2).collect();
    assert_eq!(outcomes, ["triggered", "coalesced"]);
}

#[test]
fn mentioning_the_leader_by_agent_id_is_a_plain_task() {
    let mut s = setup();
    let alice = s.w.alice.clone();
    let d = s.w.comment(
        &s.issue,
        member(&alice),
        &mention("agent", s.leader.as_str(), "Lead"),
    );
    assert_eq!(
        enqueued(&d),
        vec![(s.leader.clone(), false, TriggerSource::MentionAgent)]
    );
    assert_eq!(d.enqueued().next().unwrap().squad_id, None);
}

#[test]
fn the_leader_mentioning_its_own_squad_is_deferred_or_blocked() {
    let mut s = setup();
    let t =
        s.w.task(&s.leader, &s.issue, TaskStatus::Running, Some(&s.squad));
    let text = mention("squad", s.squad.as_str(), "Core");
    let d =
        s.w.comment_from_task(&s.issue.clone(), &s.leader.clone(), &t, &text);
    assert_eq!(mentions(&d)[0].2, "deferred");
    assert_eq!(mentions(&d)[0].3.as_deref(), Some("already_active"));
    s.w.event(Event::TaskStatus(SetTaskStatus {
        task_id: t.clone(),
        status: TaskStatus::Completed,
    }));
    let d =
        s.w.comment_from_task(&s.issue.clone(), &s.leader.clone(), &t, &text);
    assert_eq!(
        mentions(&d)[0].3.as_deref(),
        Some("self_trigger_suppressed")
    );
    assert!(enqueued(&d).is_empty());
}

#[test]
fn suppress_agent_ids_removes_the_leader() {
    let mut s = setup();
    let alice = s.w.alice.clone();
    let d = s.w.event(Event::Comment(PostComment {
        comment_id: CommentId::new("c-x").unwrap(),
        issue_id: s.issue.clone(),
        author: member(&alice),
        task_id: None,
        parent_id: None,
        content: "hello".into(),
        suppress_agent_ids: vec![s.leader.clone()],
    }));
    assert!(enqueued(&d).is_empty());
    assert_eq!(noops(&d), ["suppressed"]);
}

/// The worker asks on the issue (`c-agent`, to @all) and `replier` answers in its thread
/// (`c-reply`): the decisions for the reply.
fn question_and_reply(s: &mut S, replier: &squad_model::UserId) -> squad_routing::Decisions {
    let parent = CommentId::new("c-agent").unwrap();
    s.w.event(Event::Comment(PostComment {
        comment_id: parent.clone(),
        issue_id: s.issue.clone(),
        author: agent(&s.worker),
        task_id: None,
        parent_id: None,
        content: "[@all](mention://all/all) question: which DB?".into(),
        suppress_agent_ids: vec![],
    }));
    s.w.event(Event::Comment(PostComment {
        comment_id: CommentId::new("c-reply").unwrap(),
        issue_id: s.issue.clone(),
        author: member(replier),
        task_id: None,
        parent_id: Some(parent),
        content: "postgres".into(),
        suppress_agent_ids: vec![],
    }))
}

#[test]
fn a_member_reply_to_an_agent_wakes_it_and_escalates_to_the_leader_later() {
    let mut s = setup();
    let alice = s.w.alice.clone();
    let d = question_and_reply(&mut s, &alice);
    assert_eq!(
        enqueued(&d),
        vec![
            (s.worker.clone(), false, TriggerSource::ThreadParent),
            (s.leader.clone(), true, TriggerSource::Escalation),
        ]
    );
    let esc = d.enqueued().nth(1).unwrap();
    assert_eq!(esc.status, TaskStatus::Deferred);
    assert!(d.decisions.iter().any(|x| matches!(
        x,
        squad_routing::Decision::Enqueue {
            delay_seconds: Some(300),
            ..
        }
    )));
}

#[test]
fn a_reply_in_a_member_thread_goes_to_the_roots_first_mention() {
    let mut s = setup();
    let alice = s.w.alice.clone();
    let bob = s.w.bob.clone();
    let root = CommentId::new("c-root").unwrap();
    let text = format!(
        "{} please look",
        mention("agent", s.worker.as_str(), "Worker")
    );
    s.w.event(Event::Comment(PostComment {
        comment_id: root.clone(),
        issue_id: s.issue.clone(),
        author: member(&alice),
        task_id: None,
        parent_id: None,
        content: text,
        suppress_agent_ids: vec![],
    }));
    // Let the worker's task finish so the reply makes a new one.
    let t = s.w.dir.tasks().next().unwrap().id.clone();
    s.w.event(Event::TaskStatus(SetTaskStatus {
        task_id: t,
        status: TaskStatus::Completed,
    }));
    let d = s.w.event(Event::Comment(PostComment {
        comment_id: CommentId::new("c-reply").unwrap(),
        issue_id: s.issue.clone(),
        author: member(&bob),
        task_id: None,
        parent_id: Some(root),
        content: "me too".into(),
        suppress_agent_ids: vec![],
    }));
    assert_eq!(
        enqueued(&d),
        vec![(s.worker.clone(), false, TriggerSource::ThreadRoot)]
    );
}

#[test]
fn a_private_leader_is_not_woken_by_an_unrelated_member() {
    let mut w = World::new();
    let alice = w.alice.clone();
    let bob = w.bob.clone();
    let leader = w.agent("Lead", &alice, ONLINE_PRIVATE);
    let squad = w.squad("Core", &leader, &alice);
    let issue = w.issue(IssueStatus::Todo, Some(Assignee::Squad(squad)));
    let d = w.comment(&issue, member(&bob), "hello?");
    assert!(enqueued(&d).is_empty());
    assert_eq!(noops(&d), ["invocation_denied"]);
    let d = w.comment(&issue, member(&alice), "hello?");
    assert_eq!(enqueued(&d).len(), 1);
}

#[test]
fn no_action_refuses_comments_from_that_task() {
    let mut s = setup();
    let t =
        s.w.task(&s.leader, &s.issue, TaskStatus::Running, Some(&s.squad));
    let upper = squad_model::TaskId::new(t.as_str().to_ascii_uppercase()).unwrap();
    let cases = [
        (
            "maybe",
            Some(upper.as_str()),
            Some((400, "outcome must be 'action', 'no_action', or 'failed'")),
        ),
        (
            "no_action",
            None,
            Some((400, "task does not belong to issue")),
        ),
        (
            "no_action",
            Some("nope"),
            Some((400, "task does not belong to issue")),
        ),
    ];
    for (outcome, task, want) in cases {
        let d = s.w.peek(&Event::RecordEvaluation(RecordEvaluation {
            agent_id: s.leader.clone(),
            task_id: task.map(str::to_owned),
            issue_id: s.issue.clone(),
            outcome: outcome.into(),
            reason: String::new(),
        }));
        assert_eq!(d.rejection(), want);
    }
    let d = s.w.peek(&Event::RecordEvaluation(RecordEvaluation {
        agent_id: s.worker.clone(),
        task_id: Some(t.to_string()),
        issue_id: s.issue.clone(),
        outcome: "action".into(),
        reason: String::new(),
    }));
    assert_eq!(
        d.rejection(),
        Some((403, "only the squad leader agent can record evaluations"))
    );
    let plain_issue = s.w.issue(IssueStatus::Todo, None);
    let d = s.w.peek(&Event::RecordEvaluation(RecordEvaluation {
        agent_id: s.leader.clone(),
        task_id: Some(t.to_string()),
        issue_id: plain_issue,
        outcome: "action".into(),
        reason: String::new(),
    }));
    assert_eq!(
        d.rejection(),
        Some((400, "issue is not assigned to a squad"))
    );
    // Upper-case task id: accepted (ids compare case-insensitively), recorded lower-cased.
    let d = s.w.event(Event::RecordEvaluation(RecordEvaluation {
        agent_id: s.leader.clone(),
        task_id: Some(upper.to_string()),
        issue_id: s.issue.clone(),
        outcome: "no_action".into(),
        reason: "nothing to do".into(),
    }));
    assert_eq!(d.rejection(), None);
    let d =
        s.w.comment_from_task(&s.issue.clone(), &s.leader.clone(), &upper, "hi");
    assert_eq!(
        d.rejection(),
        Some((
            409,
            "squad leader recorded no_action; comments are not allowed for this task"
        ))
    );
    let _ = Principal::System;
}

#[test]
fn no_status_gate_and_all_or_member_mentions_by_agents_wake_nobody() {
    for status in [
        IssueStatus::Backlog,
        IssueStatus::Done,
        IssueStatus::Cancelled,
    ] {
        let mut s = setup();
        let alice = s.w.alice.clone();
        let issue = s.w.issue(status, Some(Assignee::Squad(s.squad.clone())));
        let d = s.w.comment(&issue, member(&alice), "still relevant?");
        assert_eq!(
            enqueued(&d),
            vec![(s.leader.clone(), true, TriggerSource::IssueAssignee)],
            "{status:?}"
        );
    }
    let mut s = setup();
    let bob = s.w.bob.to_string();
    let d =
        s.w.comment(&s.issue, agent(&s.worker), "[@all](mention://all/all) done");
    assert_eq!(noops(&d), ["all_mention"]);
    let d =
        s.w.comment(&s.issue, agent(&s.worker), &mention("member", &bob, "Bob"));
    assert_eq!(noops(&d), ["member_mention"]);
    assert!(s.w.dir.tasks().next().is_none());
}

/// `escalation_seconds: 0` disables the escalation fallback (multica: a delay of 0 or less is
/// "disabled"); any positive delay escalates, to a squad's leader or to an agent assignee.
#[test]
fn a_zero_escalation_delay_disables_the_escalation() {
    // (delay, assignee is the squad, expected escalation delay)
    let cases = [
        (0, true, None),
        (0, false, None),
        (1, true, Some(1)),
        (300, false, Some(300)),
    ];
    for (delay, to_squad, expect) in cases {
        let mut s = setup();
        s.w.engine.policy.escalation_seconds = delay;
        let alice = s.w.alice.clone();
        let other = s.w.agent("Other", &alice, ONLINE_PUBLIC);
        if !to_squad {
            s.w.assign(member(&alice), &s.issue.clone(), "agent", other.as_str());
            let pending: Vec<_> = s.w.dir.tasks().map(|t| t.id.clone()).collect();
            for t in pending {
                s.w.event(Event::TaskStatus(SetTaskStatus {
                    task_id: t,
                    status: TaskStatus::Completed,
                }));
            }
        }
        let d = question_and_reply(&mut s, &alice);
        let escalations: Vec<Option<u32>> = d
            .decisions
            .iter()
            .filter_map(|x| match x {
                squad_routing::Decision::Enqueue {
                    source: TriggerSource::Escalation,
                    delay_seconds,
                    ..
                } => Some(*delay_seconds),
                _ => None,
            })
            .collect();
        let want: Vec<Option<u32>> = expect.into_iter().map(Some).collect();
        assert_eq!(escalations, want, "delay {delay}, squad {to_squad}");
        // The replied-to agent is woken in every case.
        assert_eq!(
            enqueued(&d)[0],
            (s.worker.clone(), false, TriggerSource::ThreadParent),
            "delay {delay}"
        );
    }
}

/// `@Lead @Core` where Lead leads Core, in either order: one leader task, and both mentions are
/// reported `triggered` (multica reports both targets queued); only a second squad with the same
/// leader is `coalesced`.
#[test]
fn an_agent_and_a_squad_naming_one_leader_are_both_triggered() {
    for (order, pending) in [
        ("agent squad", false),
        ("squad agent", false),
        ("agent squad", true),
        ("squad agent", true),
    ] {
        let mut s = setup();
        let alice = s.w.alice.clone();
        let issue = s.w.issue(IssueStatus::Todo, None);
        if pending {
            s.w.task(&s.leader.clone(), &issue, TaskStatus::Queued, None);
        }
        let a = mention("agent", s.leader.as_str(), "Lead");
        let q = mention("squad", s.squad.as_str(), "Core");
        let text = order.replace("agent", &a).replace("squad", &q);
        let d = s.w.comment(&issue, member(&alice), &text);
        let outcomes: Vec<(String, String, Option<String>)> =
            mentions(&d).into_iter().map(|m| (m.0, m.2, m.3)).collect();
        let (o, r) = if pending {
            ("coalesced", Some("pending_task".to_owned()))
        } else {
            ("triggered", None)
        };
        let want_kinds: Vec<&str> = order.split(' ').collect();
        let want: Vec<(String, String, Option<String>)> = want_kinds
            .iter()
            .map(|k| ((*k).to_owned(), o.to_owned(), r.clone()))
            .collect();
        assert_eq!(outcomes, want, "{order}, pending {pending}");
        let tasks = enqueued(&d);
        if pending {
            assert!(tasks.is_empty(), "{order}");
        } else {
            assert_eq!(
                tasks,
                vec![(s.leader.clone(), true, TriggerSource::MentionSquadLeader)]
            );
        }
    }
}

/// A member's reply in a thread whose root woke a squad's leader wakes the squad's *current*
/// leader (re-resolved, with the archived-leader rules), not the agent of the stored task.
#[test]
fn a_thread_reply_wakes_the_squads_current_leader() {
    // (new leader: None = unchanged, Some(archived?))
    for swap in [None, Some(false), Some(true)] {
        let mut s = setup();
        let alice = s.w.alice.clone();
        let root = CommentId::new("c-root").unwrap();
        let d = s.w.event(Event::Comment(PostComment {
            comment_id: root.clone(),
            issue_id: s.issue.clone(),
            author: member(&alice),
            task_id: None,
            parent_id: None,
            content: "Can someone look at this?".into(),
            suppress_agent_ids: vec![],
        }));
        let first = d.enqueued().next().unwrap().id.clone();
        s.w.event(Event::TaskStatus(SetTaskStatus {
            task_id: first,
            status: TaskStatus::Completed,
        }));
        let mut expect_agent = s.leader.clone();
        if let Some(archived) = swap {
            let j = s.w.agent("June", &alice, ONLINE_PUBLIC);
            let d = s.w.event(Event::UpdateSquad(UpdateSquad {
                actor: alice.clone(),
                squad_id: s.squad.clone(),
                name: None,
                description: None,
                instructions: None,
                leader_id: Some(j.to_string()),
                avatar_url: None,
            }));
            assert_eq!(d.rejection(), None);
            if archived {
                s.w.event(Event::ArchiveAgent(ArchiveAgent {
                    agent_id: j.clone(),
                }));
            }
            expect_agent = j;
        }
        let d = s.w.event(Event::Comment(PostComment {
            comment_id: CommentId::new("c-reply").unwrap(),
            issue_id: s.issue.clone(),
            author: member(&alice),
            task_id: None,
            parent_id: Some(root),
            content: "Any news?".into(),
            suppress_agent_ids: vec![],
        }));
        if swap == Some(true) {
            assert!(enqueued(&d).is_empty(), "archived new leader: {d:?}");
            assert_eq!(noops(&d), ["leader_not_ready"]);
            continue;
        }
        assert_eq!(
            enqueued(&d),
            vec![(expect_agent.clone(), true, TriggerSource::ThreadRoot)],
            "swap {swap:?}"
        );
        let task = d.enqueued().next().unwrap();
        assert_eq!(task.squad_id.as_ref(), Some(&s.squad));
        // The claim briefs the new leader.
        let d = s.w.event(Event::Claim(ClaimTask {
            task_id: task.id.clone(),
        }));
        assert!(d.decisions.iter().any(|x| matches!(
            x,
            squad_routing::Decision::Claim {
                is_leader_task: true,
                ..
            }
        )));
    }
}
