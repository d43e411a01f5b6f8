//! Child-done (§7): the stage barrier, batch updates, the progress summary and the wake.

use expect_test::expect;
use squad_model::{Assignee, IssueId, IssueStatus, TaskStatus};
use squad_routing::{Event, TriggerSource};

use crate::world::*;
use squad_routing::event::*;

struct S {
    w: World,
    leader: squad_model::AgentId,
    squad: squad_model::SquadId,
    parent: IssueId,
}

fn setup(parent_status: IssueStatus) -> S {
    let mut w = World::new();
    let alice = w.alice.clone();
    // A private leader: child-done has no invocation gate, so it is woken anyway.
    let leader = w.agent("Lead", &alice, ONLINE_PRIVATE);
    let squad = w.squad("Core", &leader, &alice);
    let parent = w.issue(parent_status, Some(Assignee::Squad(squad.clone())));
    S {
        w,
        leader,
        squad,
        parent,
    }
}

fn done(s: &mut S, child: &IssueId) -> squad_routing::Decisions {
    // The completer is a worker agent with no originator.
    let worker = s.w.agent("W", &s.w.alice.clone(), ONLINE_PRIVATE);
    s.w.set_status(agent(&worker), child, IssueStatus::Done)
}

#[test]
fn unstaged_children_wake_the_leader_when_all_are_terminal() {
    let mut s = setup(IssueStatus::InProgress);
    let p = s.parent.clone();
    let a = s.w.child(IssueStatus::Todo, None, Some(&p), None);
    let b = s.w.child(IssueStatus::Backlog, None, Some(&p), None);
    let d = done(&mut s, &a);
    assert_eq!(
        noops(&d),
        ["stage_open"],
        "a backlog sibling keeps the implicit stage open"
    );
    let d =
        s.w.set_status(member(&s.w.alice.clone()), &b, IssueStatus::Cancelled);
    assert_eq!(
        enqueued(&d),
        vec![(s.leader.clone(), true, TriggerSource::ChildDone)]
    );
    let texts = system_comments(&d);
    assert_eq!(texts.len(), 1);
    let text = texts[0]
        .replace(s.squad.as_str(), "<squad>")
        .replace(b.as_str(), "<child>")
        .replace(p.as_str(), "<parent>");
    expect![[r#"[@Core](mention://squad/<squad>) All sub-issues are complete — the last one, [SQ-6](mention://issue/<child>) — "Issue 6", just finished. Carry the parent forward by pulling the sub-issues' results together; if nothing is left to do, run `multica issue status <parent> in_review`."#]].assert_eq(&text);
}

#[test]
fn staged_frontier_closure_and_progress_summary() {
    let mut s = setup(IssueStatus::InProgress);
    let p = s.parent.clone();
    let s1a = s.w.child(IssueStatus::Todo, None, Some(&p), Some(1));
    let s1b = s.w.child(IssueStatus::Todo, None, Some(&p), Some(1));
    let s2 = s.w.child(IssueStatus::Backlog, None, Some(&p), Some(2));
    let _s3 = s.w.child(IssueStatus::Backlog, None, Some(&p), Some(3));
    let loose = s.w.child(IssueStatus::Todo, None, Some(&p), None);
    // An unstaged child in a staged set closes nothing, and does not hold a stage open.
    let d = done(&mut s, &loose);
    assert_eq!(noops(&d), ["stage_open"]);
    let d = done(&mut s, &s1a);
    assert_eq!(noops(&d), ["stage_open"]);
    let d = done(&mut s, &s1b);
    let text = system_comments(&d)[0]
        .replace(s.squad.as_str(), "<squad>")
        .replace(s1b.as_str(), "<child>")
        .replace(p.as_str(), "<parent>");
    expect![[r#"[@Core](mention://squad/<squad>) Stage 1 of this issue is complete — its last sub-issue [SQ-6](mention://issue/<child>) — "Issue 6" — just finished. Stage progress — Stage 1: 2/2 done; Stage 2: 0/1 done (next); Stage 3: 0/1 done. Stage 2 is next: check the layout with `multica issue children <parent>`, then move that stage's `backlog` sub-issues to `todo` once their dependencies are met."#]].assert_eq(&text);
    assert_eq!(
        enqueued(&d),
        vec![(s.leader.clone(), true, TriggerSource::ChildDone)]
    );
    // The leader's task is still pending: the next closure posts the comment, but dedups.
    let d =
        s.w.set_status(member(&s.w.alice.clone()), &s2, IssueStatus::Cancelled);
    assert_eq!(system_comments(&d).len(), 1);
    assert_eq!(noops(&d), ["pending_task"]);
}

#[test]
fn the_last_stage_never_says_final() {
    let mut s = setup(IssueStatus::InProgress);
    let p = s.parent.clone();
    let c = s.w.child(IssueStatus::Todo, None, Some(&p), Some(1));
    let d = done(&mut s, &c);
    let text = &system_comments(&d)[0];
    assert!(
        text.contains("Stage progress — Stage 1: 1/1 done."),
        "{text}"
    );
    assert!(text.contains("does not by itself finish the issue"));
    assert!(text.contains(&format!("multica issue status {p} in_review")));
    assert!(!text.to_lowercase().contains("final stage"));
    assert!(!text.contains("(next)"));
}

#[test]
fn batch_updates_post_one_comment_for_the_highest_closed_stage() {
    let mut s = setup(IssueStatus::InProgress);
    let p = s.parent.clone();
    let a = s.w.child(IssueStatus::Todo, None, Some(&p), Some(1));
    let b = s.w.child(IssueStatus::Todo, None, Some(&p), Some(2));
    let c = s.w.child(IssueStatus::Todo, None, Some(&p), Some(3));
    let alice = s.w.alice.clone();
    // Order does not matter: stage 3 first, then 1 and 2.
    let d = s.w.event(Event::BatchUpdate(BatchUpdate {
        actor: member(&alice),
        task_id: None,
        issue_ids: vec![c.clone(), a, b],
        status: Some(IssueStatus::Done),
        assignee_type: None,
        assignee_id: None,
        suppress_run: false,
    }));
    let texts = system_comments(&d);
    assert_eq!(texts.len(), 1);
    assert!(texts[0].contains("Stage 3 of this issue is complete — its sub-issues just finished together in a batch update, most recently"), "{}", texts[0]);
    assert!(texts[0].contains(c.as_str()));
    assert_eq!(enqueued(&d).len(), 1);
}

#[test]
fn transitions_that_do_not_fire() {
    let mut s = setup(IssueStatus::InProgress);
    let p = s.parent.clone();
    let c = s.w.child(IssueStatus::Done, None, Some(&p), None);
    let alice = s.w.alice.clone();
    // done -> done, done -> cancelled: not non-terminal -> terminal.
    let d = s.w.set_status(member(&alice), &c, IssueStatus::Done);
    assert!(system_comments(&d).is_empty());
    let d = s.w.set_status(member(&alice), &c, IssueStatus::Cancelled);
    assert!(system_comments(&d).is_empty());
    // done -> in_progress -> done fires again.
    s.w.set_status(member(&alice), &c, IssueStatus::InProgress);
    let d = s.w.set_status(member(&alice), &c, IssueStatus::Done);
    assert_eq!(system_comments(&d).len(), 1);
}

#[test]
fn parent_states_that_block_the_wake() {
    for (status, assignee_human, reason) in [
        (IssueStatus::Done, false, "parent_closed"),
        (IssueStatus::Cancelled, false, "parent_closed"),
        (IssueStatus::Backlog, false, "parent_backlog"),
        (IssueStatus::Todo, true, "parent_human_assigned"),
    ] {
        let mut s = setup(status);
        let p = s.parent.clone();
        if assignee_human {
            let alice = s.w.alice.clone();
            let mut i = squad_routing::Directory::issue(&s.w.dir, &p)
                .unwrap()
                .clone();
            i.assignee = Some(Assignee::Member(alice));
            squad_routing::Directory::put_issue(&mut s.w.dir, i);
        }
        let c = s.w.child(IssueStatus::Todo, None, Some(&p), None);
        let d = done(&mut s, &c);
        assert_eq!(noops(&d), [reason], "{status:?}");
        assert!(system_comments(&d).is_empty());
    }
    for status in [
        IssueStatus::Todo,
        IssueStatus::InReview,
        IssueStatus::Blocked,
    ] {
        let mut s = setup(status);
        let p = s.parent.clone();
        let c = s.w.child(IssueStatus::Todo, None, Some(&p), None);
        let d = done(&mut s, &c);
        assert_eq!(enqueued(&d).len(), 1, "{status:?}");
    }
}

#[test]
fn no_self_trigger_guard_and_readiness_without_online() {
    let mut s = setup(IssueStatus::InProgress);
    let p = s.parent.clone();
    let leader = s.leader.clone();
    // The leader completes its own child while its latest task on the parent is a leader task.
    s.w.task(&leader, &p, TaskStatus::Completed, Some(&s.squad.clone()));
    s.w.edit_agent(&leader, |a| {
        a.runtime.as_mut().unwrap().status = squad_model::RuntimeStatus::Offline
    });
    let c = s.w.child(
        IssueStatus::Todo,
        Some(Assignee::Squad(s.squad.clone())),
        Some(&p),
        None,
    );
    let d = s.w.set_status(agent(&leader), &c, IssueStatus::Done);
    assert_eq!(
        enqueued(&d),
        vec![(leader.clone(), true, TriggerSource::ChildDone)]
    );
}

#[test]
fn an_unassigned_parent_gets_the_comment_without_a_mention_or_wake() {
    let mut w = World::new();
    let p = w.issue(IssueStatus::InProgress, None);
    let c = w.child(IssueStatus::Todo, None, Some(&p), None);
    let alice = w.alice.clone();
    let d = w.set_status(member(&alice), &c, IssueStatus::Done);
    let texts = system_comments(&d);
    assert!(texts[0].starts_with("All sub-issues are complete"));
    assert!(enqueued(&d).is_empty());
}

/// The commands in the child-done comment name the parent by its id (as multica formats
/// `parentID`), never by its identifier (`SQ-4`), in every wording.
#[test]
fn child_done_commands_name_the_parent_by_its_id() {
    // (stages of the children, children completed one by one, the command expected)
    let cases: [(&[Option<u32>], usize, &str); 3] = [
        (&[None, None], 2, "multica issue status <parent> in_review"),
        (&[Some(1), Some(2)], 1, "multica issue children <parent>"),
        (&[Some(1)], 1, "multica issue status <parent> in_review"),
    ];
    for (stages, complete, command) in cases {
        let mut s = setup(IssueStatus::InProgress);
        let p = s.parent.clone();
        let kids: Vec<IssueId> = stages
            .iter()
            .map(|st| s.w.child(IssueStatus::Todo, None, Some(&p), *st))
            .collect();
        let mut texts = Vec::new();
        for k in &kids[..complete] {
            texts.extend(system_comments(&done(&mut s, k)));
        }
        assert_eq!(texts.len(), 1, "{stages:?}");
        let text = texts[0].replace(p.as_str(), "<parent>");
        assert!(text.contains(command), "{stages:?}: {text}");
        assert!(!text.contains("SQ-4"), "{stages:?}: {text}");
    }
    // A batch wording too.
    let mut s = setup(IssueStatus::InProgress);
    let p = s.parent.clone();
    let a = s.w.child(IssueStatus::Todo, None, Some(&p), Some(1));
    let b = s.w.child(IssueStatus::Todo, None, Some(&p), Some(1));
    let d = s.w.event(Event::BatchUpdate(BatchUpdate {
        actor: member(&s.w.alice.clone()),
        task_id: None,
        issue_ids: vec![a, b],
        status: Some(IssueStatus::Done),
        assignee_type: None,
        assignee_id: None,
        suppress_run: false,
    }));
    let text = system_comments(&d)[0].replace(p.as_str(), "<parent>");
    assert!(
        text.contains("multica issue status <parent> in_review"),
        "{text}"
    );
}

/// R60 (multica's prepare-timeout case): the child finishes and wakes the leader task T1; T1 is
/// dispatched and fails at attempt 1 of 3 before it runs. The failing task is not "the agent's
/// pending task": the retry T2 is a leader task with attempt 2, the same trigger (the child-done
/// system comment) and the same originator.
#[test]
fn a_leader_task_failing_while_dispatched_is_retried() {
    let mut s = setup(IssueStatus::InProgress);
    s.w.engine.policy.max_attempts = 3;
    let p = s.parent.clone();
    let child = s.w.child(IssueStatus::Todo, None, Some(&p), None);
    let d = done(&mut s, &child);
    let t1 = d
        .enqueued()
        .next()
        .expect("child-done wakes the leader")
        .clone();
    assert!(t1.is_leader_task);
    assert_eq!(t1.attempt, 1);
    assert!(t1.trigger_comment_id.is_some());
    let d = s.w.event(Event::Claim(ClaimTask {
        task_id: t1.id.clone(),
    }));
    assert_eq!(d.rejection(), None);
    let d = s.w.event(Event::TaskStatus(SetTaskStatus {
        task_id: t1.id.clone(),
        status: TaskStatus::Failed,
    }));
    assert_eq!(noops(&d), Vec::<String>::new(), "no pending_task no-op");
    assert_eq!(
        enqueued(&d),
        vec![(s.leader.clone(), true, TriggerSource::Retry)]
    );
    let t2 = d.enqueued().next().unwrap();
    assert_ne!(t2.id, t1.id);
    assert_eq!(t2.attempt, 2);
    assert_eq!(t2.status, TaskStatus::Queued);
    assert_eq!(t2.squad_id.as_ref(), Some(&s.squad));
    assert_eq!(t2.trigger_comment_id, t1.trigger_comment_id);
    assert_eq!(t2.originator_user_id, t1.originator_user_id);
    assert_eq!(t2.issue_id.as_ref(), Some(&p));
    // A task queued (never dispatched) that fails is retried the same way.
    let d = s.w.event(Event::TaskStatus(SetTaskStatus {
        task_id: t2.id.clone(),
        status: TaskStatus::Failed,
    }));
    let t3 = d
        .enqueued()
        .next()
        .expect("a queued task that fails is retried");
    assert_eq!(t3.attempt, 3);
}
