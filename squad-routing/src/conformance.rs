//! The [`Directory`] conformance suite: the trait's `# Behavior`, as executable checks.
//!
//! Every scenario takes an empty directory and panics, naming the sentence it checks, when the
//! directory does not behave. [`run_all`] runs every scenario, each on a fresh directory from the
//! factory it is given. The crate runs it on [`InMemoryDirectory`](crate::InMemoryDirectory),
//! [`SimpleDirectory`](crate::SimpleDirectory), `SqliteDirectory` (feature `sqlite`), and on each
//! of them boxed as `Box<dyn Directory>`; a host runs it on its own directory from a test:
//!
//! ```
//! use squad_routing::{conformance, InMemoryDirectory};
//!
//! conformance::run_all(InMemoryDirectory::new);
//! ```
//!
//! This module (feature `conformance`) is a test kit: it is exempt from semver, and its
//! scenarios may grow stricter in a minor release.

use squad_model::{
    Actor, Agent, AgentId, Assignee, Autopilot, AutopilotId, AutopilotStatus, CommentId,
    ExecutionMode, Issue, IssueId, IssueStatus, MemberRef, Origin, PermissionMode, Squad, SquadId,
    SquadMember, SquadMemberId, Task, TaskId, TaskStatus, Timestamp, UserId, WorkspaceId,
};

use crate::directory::Directory;
use crate::records::{
    Comment, EvaluationOutcome, Membership, Principal, User, Workspace, WorkspaceRole,
};

/// One scenario: its name and the check.
pub type Scenario = (&'static str, fn(&mut dyn Directory));

/// Every scenario, in the order [`run_all`] runs them.
pub const SCENARIOS: &[Scenario] = &[
    ("unknown_ids_find_nothing", unknown_ids_find_nothing),
    ("writes_are_upserts", writes_are_upserts),
    (
        "member_rows_keep_creation_order",
        member_rows_keep_creation_order,
    ),
    ("issue_lists", issue_lists),
    (
        "pending_latest_and_active_tasks",
        pending_latest_and_active_tasks,
    ),
    ("tasks_triggered_by_a_comment", tasks_triggered_by_a_comment),
    ("issue_and_task_updates", issue_and_task_updates),
    ("deleted_issues_are_forgotten", deleted_issues_are_forgotten),
    ("id_seq_only_grows", id_seq_only_grows),
    ("text_lookups", text_lookups),
];

/// Runs every scenario, each on a fresh directory from `new`.
///
/// # Panics
///
/// On the first scenario the directories from `new` fail, naming it.
pub fn run_all<D: Directory>(mut new: impl FnMut() -> D) {
    for (name, scenario) in SCENARIOS {
        let mut dir = new();
        let before = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| scenario(&mut dir)));
        if let Err(e) = before {
            let msg = e
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| e.downcast_ref::<&str>().copied())
                .unwrap_or("(no message)");
            panic!("conformance scenario `{name}` failed: {msg}");
        }
    }
}

fn t(n: i64) -> Timestamp {
    Timestamp::from_unix_seconds(1_767_225_600 + n).unwrap_or_else(|_| Timestamp::now())
}

/// A valid id of any type, for the fixtures (they never hold whitespace).
fn id<T>(make: fn(String) -> squad_model::Result<T>, text: &str) -> T {
    match make(text.to_owned()) {
        Ok(v) => v,
        Err(e) => panic!("fixture id {text:?}: {e}"),
    }
}

fn ws() -> WorkspaceId {
    id(WorkspaceId::new, "w1")
}
fn user_id(n: u32) -> UserId {
    id(UserId::new, &format!("u{n}"))
}
fn agent_id(n: u32) -> AgentId {
    id(
        AgentId::new,
        &format!("00000000-0000-4000-8000-0000000000a{n}"),
    )
}
fn squad_id(n: u32) -> SquadId {
    id(
        SquadId::new,
        &format!("00000000-0000-4000-8000-0000000005a{n}"),
    )
}
fn issue_id(n: u32) -> IssueId {
    id(IssueId::new, &format!("i{n}"))
}
fn task_id(n: u32) -> TaskId {
    id(TaskId::new, &format!("t{n}"))
}
fn comment_id(n: u32) -> CommentId {
    id(CommentId::new, &format!("c{n}"))
}
fn autopilot_id(n: u32) -> AutopilotId {
    id(AutopilotId::new, &format!("ap{n}"))
}

fn agent(n: u32, name: &str) -> Agent {
    Agent {
        id: agent_id(n),
        workspace_id: ws(),
        name: name.to_owned(),
        owner_id: Some(user_id(1)),
        archived_at: None,
        runtime: None,
        permission_mode: PermissionMode::Private,
        invocation_targets: Vec::new(),
        skills: Vec::new(),
        instructions: String::new(),
        created_at: t(0),
    }
}

fn squad(n: u32, name: &str) -> Squad {
    Squad {
        id: squad_id(n),
        workspace_id: ws(),
        name: name.to_owned(),
        description: String::new(),
        leader_id: agent_id(1),
        creator_id: user_id(1),
        instructions: String::new(),
        avatar_url: None,
        archived_at: None,
        archived_by: None,
        created_at: t(0),
        updated_at: t(0),
    }
}

fn member(squad: u32, m: MemberRef, role: &str) -> SquadMember {
    SquadMember {
        id: id(
            SquadMemberId::new,
            &format!("{}:{}", squad_id(squad), m.id_str()),
        ),
        squad_id: squad_id(squad),
        member: m,
        role: role.to_owned(),
        created_at: t(0),
    }
}

fn issue(n: u32, parent: Option<u32>, assignee: Option<Assignee>) -> Issue {
    Issue {
        id: issue_id(n),
        workspace_id: ws(),
        title: format!("Issue {n}"),
        status: IssueStatus::Todo,
        assignee,
        parent_issue_id: parent.map(issue_id),
        stage: None,
        origin: None,
        creator: Some(Actor::Member(user_id(1))),
        created_at: t(i64::from(n)),
    }
}

fn task(n: u32, agent: u32, issue: Option<u32>, status: TaskStatus) -> Task {
    Task {
        id: task_id(n),
        agent_id: agent_id(agent),
        issue_id: issue.map(issue_id),
        status,
        is_leader_task: false,
        squad_id: None,
        trigger_comment_id: None,
        originator_user_id: None,
        head_sha: None,
        context: None,
        attempt: 1,
        created_at: t(i64::from(n)),
    }
}

fn comment(n: u32, issue: u32, content: &str) -> Comment {
    Comment {
        id: comment_id(n),
        issue_id: issue_id(issue),
        author: Principal::Member(user_id(1)),
        parent_id: None,
        content: content.to_owned(),
        source_task_id: None,
        created_at: t(i64::from(n)),
    }
}

fn autopilot(n: u32, assignee: Option<Assignee>) -> Autopilot {
    Autopilot {
        id: autopilot_id(n),
        workspace_id: ws(),
        title: format!("Autopilot {n}"),
        assignee,
        execution_mode: ExecutionMode::CreateIssue,
        status: AutopilotStatus::Active,
        pause_reason: None,
        creator: Actor::Member(user_id(1)),
    }
}

fn ids<'a>(tasks: impl IntoIterator<Item = &'a Task>) -> Vec<&'a str> {
    tasks.into_iter().map(|t| t.id.as_str()).collect()
}

/// Every `Option` lookup answers `None` for an unknown id, every list lookup an empty list, and
/// nothing panics.
pub fn unknown_ids_find_nothing(dir: &mut dyn Directory) {
    assert!(dir.workspace(&ws()).is_none(), "workspace");
    assert!(dir.user(&user_id(9)).is_none(), "user");
    assert!(dir.workspace_role(&ws(), &user_id(9)).is_none(), "role");
    assert!(dir.squad(&squad_id(9)).is_none(), "squad");
    assert!(dir.squad_members(&squad_id(9)).is_empty(), "squad_members");
    assert!(dir.agent(&agent_id(9)).is_none(), "agent");
    assert!(dir.issue(&issue_id(9)).is_none(), "issue");
    assert!(dir.issue_number(&issue_id(9)).is_none(), "issue_number");
    assert!(dir.children(&issue_id(9)).is_empty(), "children");
    assert!(dir.squad_issues(&squad_id(9)).is_empty(), "squad_issues");
    assert!(
        dir.autopilot_issues(&autopilot_id(9)).is_empty(),
        "autopilot_issues"
    );
    assert!(dir.task(&task_id(9)).is_none(), "task");
    assert!(
        dir.pending_task(&issue_id(9), &agent_id(9)).is_none(),
        "pending_task"
    );
    assert!(
        dir.latest_task(&issue_id(9), &agent_id(9)).is_none(),
        "latest_task"
    );
    assert!(dir.active_tasks(&issue_id(9)).is_empty(), "active_tasks");
    assert!(dir.comment(&comment_id(9)).is_none(), "comment");
    assert!(
        dir.tasks_triggered_by(&comment_id(9)).is_empty(),
        "tasks_triggered_by"
    );
    assert!(dir.autopilot(&autopilot_id(9)).is_none(), "autopilot");
    assert!(
        dir.squad_autopilots(&squad_id(9)).is_empty(),
        "squad_autopilots"
    );
    assert!(dir.evaluation(&task_id(9)).is_none(), "evaluation");
    assert_eq!(dir.id_seq(), 0, "an empty directory's id_seq is 0");
    // Writes on unknown ids change nothing and do not panic.
    dir.update_issue(&issue_id(9), Some(IssueStatus::Done), Some(None));
    dir.set_issue_number(&issue_id(9), 4);
    dir.delete_issue(&issue_id(9));
    dir.set_task_status(&task_id(9), TaskStatus::Running);
    dir.remove_member(&squad_id(9), &MemberRef::Agent(agent_id(9)));
    assert!(
        dir.issue(&issue_id(9)).is_none(),
        "update_issue created an issue"
    );
    assert!(dir.issue_number(&issue_id(9)).is_none(), "set_issue_number");
    assert!(
        dir.task(&task_id(9)).is_none(),
        "set_task_status created a task"
    );
}

/// Writes are upserts keyed by id and take effect for the next read.
pub fn writes_are_upserts(dir: &mut dyn Directory) {
    dir.put_workspace(Workspace {
        id: ws(),
        name: "Acme".into(),
        issue_prefix: "SQ".into(),
    });
    dir.put_workspace(Workspace {
        id: ws(),
        name: "Acme 2".into(),
        issue_prefix: "AC".into(),
    });
    assert_eq!(
        dir.workspace(&ws()).map(|w| w.issue_prefix.as_str()),
        Some("AC")
    );
    dir.put_user(User {
        id: user_id(1),
        name: "Sam".into(),
    });
    dir.put_user(User {
        id: user_id(1),
        name: "Samuel".into(),
    });
    assert_eq!(
        dir.user(&user_id(1)).map(|u| u.name.as_str()),
        Some("Samuel")
    );
    for role in [WorkspaceRole::Member, WorkspaceRole::Admin] {
        dir.put_membership(Membership {
            workspace_id: ws(),
            user_id: user_id(1),
            role,
        });
        assert_eq!(dir.workspace_role(&ws(), &user_id(1)), Some(role), "role");
    }
    assert!(
        dir.workspace_role(&id(WorkspaceId::new, "w2"), &user_id(1))
            .is_none(),
        "a role is per workspace"
    );
    let mut a = agent(1, "Ada");
    dir.put_agent(a.clone());
    a.name = "Ada L.".into();
    a.instructions = "Review Rust.".into();
    dir.put_agent(a.clone());
    assert_eq!(dir.agent(&agent_id(1)), Some(&a), "agent replaced");
    let mut s = squad(1, "Core");
    dir.put_squad(s.clone());
    s.name = "Core 2".into();
    dir.put_squad(s.clone());
    assert_eq!(dir.squad(&squad_id(1)), Some(&s), "squad replaced");
    let mut i = issue(1, None, None);
    dir.put_issue(i.clone());
    i.title = "Renamed".into();
    i.status = IssueStatus::InReview;
    dir.put_issue(i.clone());
    assert_eq!(dir.issue(&issue_id(1)), Some(&i), "issue replaced");
    dir.set_issue_number(&issue_id(1), 12);
    assert_eq!(dir.issue_number(&issue_id(1)), Some(12), "issue_number");
    let mut c = comment(1, 1, "hello");
    dir.put_comment(c.clone());
    c.content = "edited".into();
    dir.put_comment(c.clone());
    assert_eq!(dir.comment(&comment_id(1)), Some(&c), "comment replaced");
    let mut ap = autopilot(1, None);
    dir.put_autopilot(ap.clone());
    assert_eq!(dir.autopilot(&autopilot_id(1)), Some(&ap), "autopilot");
    ap.status = AutopilotStatus::Paused;
    ap.creator = Actor::Agent(agent_id(1));
    dir.put_autopilot(ap.clone());
    assert_eq!(
        dir.autopilot(&autopilot_id(1)),
        Some(&ap),
        "autopilot replaced"
    );
    let mut tk = task(1, 1, Some(1), TaskStatus::Queued);
    dir.put_task(tk.clone());
    tk.status = TaskStatus::Running;
    tk.attempt = 2;
    dir.put_task(tk.clone());
    assert_eq!(dir.task(&task_id(1)), Some(&tk), "task replaced");
    for outcome in [EvaluationOutcome::NoAction, EvaluationOutcome::Action] {
        dir.put_evaluation(task_id(1), outcome);
        assert_eq!(dir.evaluation(&task_id(1)), Some(outcome), "evaluation");
    }
}

/// Member rows list in creation order; replacing a row keeps its place; removing one removes
/// only it.
pub fn member_rows_keep_creation_order(dir: &mut dyn Directory) {
    dir.put_squad(squad(1, "Core"));
    dir.put_squad(squad(2, "Other"));
    let rows = [
        member(1, MemberRef::Agent(agent_id(3)), "leader"),
        member(1, MemberRef::Member(user_id(2)), "reviewer"),
        member(1, MemberRef::Agent(agent_id(1)), "backend"),
    ];
    for r in &rows {
        dir.put_member(r.clone());
    }
    dir.put_member(member(2, MemberRef::Agent(agent_id(1)), "elsewhere"));
    assert_eq!(dir.squad_members(&squad_id(1)), rows, "creation order");
    let mut changed = rows[1].clone();
    changed.role = "lead reviewer".into();
    dir.put_member(changed.clone());
    assert_eq!(
        dir.squad_members(&squad_id(1)),
        [rows[0].clone(), changed, rows[2].clone()],
        "a replaced row keeps its place"
    );
    dir.remove_member(&squad_id(1), &MemberRef::Agent(agent_id(3)));
    let left: Vec<&MemberRef> = dir
        .squad_members(&squad_id(1))
        .iter()
        .map(|r| &r.member)
        .collect();
    assert_eq!(
        left,
        [
            &MemberRef::Member(user_id(2)),
            &MemberRef::Agent(agent_id(1))
        ],
        "remove_member"
    );
    assert_eq!(
        dir.squad_members(&squad_id(2)).len(),
        1,
        "other squads untouched"
    );
}

/// Children and autopilot issues in creation order; squad issues follow assignee changes;
/// squad autopilots sorted by id.
pub fn issue_lists(dir: &mut dyn Directory) {
    let sq = |n| Some(Assignee::Squad(squad_id(n)));
    dir.put_issue(issue(1, None, sq(1)));
    for n in [5, 3, 4] {
        dir.put_issue(issue(n, Some(1), sq(1)));
    }
    assert_eq!(
        dir.children(&issue_id(1)),
        [issue_id(5), issue_id(3), issue_id(4)],
        "children in creation order"
    );
    // Replacing a child keeps its place.
    let mut c = issue(3, Some(1), sq(2));
    c.status = IssueStatus::Done;
    dir.put_issue(c);
    assert_eq!(
        dir.children(&issue_id(1)),
        [issue_id(5), issue_id(3), issue_id(4)],
        "a replaced child keeps its place"
    );
    let mut on_1 = dir.squad_issues(&squad_id(1));
    on_1.sort();
    assert_eq!(
        on_1,
        [issue_id(1), issue_id(4), issue_id(5)],
        "squad_issues"
    );
    assert_eq!(
        dir.squad_issues(&squad_id(2)),
        [issue_id(3)],
        "squad_issues"
    );
    dir.update_issue(&issue_id(5), None, Some(sq(2)));
    dir.update_issue(&issue_id(4), None, Some(None));
    assert_eq!(
        dir.squad_issues(&squad_id(1)),
        [issue_id(1)],
        "after updates"
    );
    let mut on_2 = dir.squad_issues(&squad_id(2));
    on_2.sort();
    assert_eq!(on_2, [issue_id(3), issue_id(5)], "after updates");
    for n in [8, 7] {
        let mut i = issue(n, None, None);
        i.origin = Some(Origin {
            kind: "autopilot".into(),
            id: Some(autopilot_id(1).to_string()),
        });
        dir.put_issue(i);
    }
    let mut other = issue(9, None, None);
    other.origin = Some(Origin {
        kind: "quick_create".into(),
        id: Some(autopilot_id(1).to_string()),
    });
    dir.put_issue(other);
    assert_eq!(
        dir.autopilot_issues(&autopilot_id(1)),
        [issue_id(8), issue_id(7)],
        "autopilot_issues in creation order, autopilot origins only"
    );
    for (n, a) in [(3, sq(1)), (1, sq(1)), (2, sq(2)), (4, None)] {
        dir.put_autopilot(autopilot(n, a));
    }
    assert_eq!(
        dir.squad_autopilots(&squad_id(1)),
        [autopilot_id(1), autopilot_id(3)],
        "squad_autopilots sorted by id"
    );
}

/// Pending = queued or dispatched (running is not); latest = the last inserted, whatever its
/// status; active = not finished, oldest first.
pub fn pending_latest_and_active_tasks(dir: &mut dyn Directory) {
    dir.put_issue(issue(1, None, None));
    dir.put_issue(issue(2, None, None));
    let (i1, a1, a2) = (issue_id(1), agent_id(1), agent_id(2));
    dir.put_task(task(1, 1, Some(1), TaskStatus::Completed));
    assert!(
        dir.pending_task(&i1, &a1).is_none(),
        "completed is not pending"
    );
    assert_eq!(dir.latest_task(&i1, &a1).map(|t| t.id.as_str()), Some("t1"));
    dir.put_task(task(2, 1, Some(1), TaskStatus::Queued));
    dir.put_task(task(3, 2, Some(1), TaskStatus::Deferred));
    dir.put_task(task(4, 1, Some(2), TaskStatus::Queued));
    assert_eq!(
        dir.pending_task(&i1, &a1).map(|t| t.id.as_str()),
        Some("t2"),
        "queued is pending"
    );
    assert!(
        dir.pending_task(&i1, &a2).is_none(),
        "deferred is not pending"
    );
    assert_eq!(
        ids(dir.active_tasks(&i1)),
        ["t2", "t3"],
        "active, oldest first"
    );
    dir.set_task_status(&task_id(2), TaskStatus::Dispatched);
    assert_eq!(
        dir.pending_task(&i1, &a1).map(|t| t.id.as_str()),
        Some("t2"),
        "dispatched is pending"
    );
    dir.set_task_status(&task_id(2), TaskStatus::Running);
    assert!(
        dir.pending_task(&i1, &a1).is_none(),
        "running is not pending"
    );
    assert_eq!(
        ids(dir.active_tasks(&i1)),
        ["t2", "t3"],
        "running is active"
    );
    dir.put_task(task(5, 1, Some(1), TaskStatus::Queued));
    assert_eq!(
        dir.latest_task(&i1, &a1).map(|t| t.id.as_str()),
        Some("t5"),
        "latest"
    );
    assert_eq!(
        dir.pending_task(&i1, &a1).map(|t| t.id.as_str()),
        Some("t5")
    );
    // Replacing an older task does not make it the latest.
    dir.put_task(task(2, 1, Some(1), TaskStatus::Failed));
    assert_eq!(
        dir.latest_task(&i1, &a1).map(|t| t.id.as_str()),
        Some("t5"),
        "an upsert keeps the creation order"
    );
    assert_eq!(
        ids(dir.active_tasks(&i1)),
        ["t3", "t5"],
        "failed is finished"
    );
    dir.set_task_status(&task_id(3), TaskStatus::Queued);
    assert_eq!(
        dir.pending_task(&i1, &a2).map(|t| t.id.as_str()),
        Some("t3"),
        "a deferred task that comes due is pending"
    );
    for (n, s) in [(5, TaskStatus::Cancelled), (3, TaskStatus::Completed)] {
        dir.set_task_status(&task_id(n), s);
    }
    assert!(dir.active_tasks(&i1).is_empty(), "every task finished");
    assert!(dir.pending_task(&i1, &a1).is_none());
    assert_eq!(ids(dir.active_tasks(&issue_id(2))), ["t4"], "per issue");
    // A task without an issue is readable by id and counts for no issue.
    dir.put_task(task(6, 1, None, TaskStatus::Queued));
    assert_eq!(
        dir.task(&task_id(6)).map(|t| t.issue_id.is_none()),
        Some(true)
    );
}

/// The tasks a comment triggered, oldest first, whether the comment was stored before or after
/// them.
pub fn tasks_triggered_by_a_comment(dir: &mut dyn Directory) {
    dir.put_issue(issue(1, None, None));
    // Each task of its own agent: a directory may refuse a second pending task for one (issue,
    // agent).
    let with_trigger = |n, c| Task {
        trigger_comment_id: Some(comment_id(c)),
        ..task(n, n, Some(1), TaskStatus::Queued)
    };
    dir.put_task(with_trigger(1, 1));
    assert_eq!(
        ids(dir.tasks_triggered_by(&comment_id(1))),
        ["t1"],
        "before the comment"
    );
    dir.put_comment(comment(1, 1, "first"));
    dir.put_task(with_trigger(2, 1));
    dir.put_task(with_trigger(3, 2));
    assert_eq!(
        ids(dir.tasks_triggered_by(&comment_id(1))),
        ["t1", "t2"],
        "after the comment"
    );
    dir.put_comment(comment(1, 1, "edited"));
    dir.put_task(Task {
        status: TaskStatus::Running,
        ..with_trigger(1, 1)
    });
    assert_eq!(
        ids(dir.tasks_triggered_by(&comment_id(1))),
        ["t1", "t2"],
        "replacing the comment or a task lists nothing twice"
    );
    dir.put_comment(comment(4, 1, "none"));
    assert!(dir.tasks_triggered_by(&comment_id(4)).is_empty());
}

/// `update_issue` sets the status and/or the assignee (`Some(None)` clears it); unknown ids are
/// ignored by it and by `set_task_status`.
pub fn issue_and_task_updates(dir: &mut dyn Directory) {
    let squad_a = Some(Assignee::Squad(squad_id(1)));
    dir.put_issue(issue(1, None, squad_a.clone()));
    dir.update_issue(&issue_id(1), Some(IssueStatus::InProgress), None);
    let i = dir.issue(&issue_id(1)).cloned();
    assert_eq!(i.as_ref().map(|i| i.status), Some(IssueStatus::InProgress));
    assert_eq!(
        i.and_then(|i| i.assignee),
        squad_a,
        "None keeps the assignee"
    );
    let agent_a = Some(Assignee::Agent(agent_id(1)));
    dir.update_issue(&issue_id(1), None, Some(agent_a.clone()));
    let i = dir.issue(&issue_id(1)).cloned();
    assert_eq!(i.as_ref().map(|i| i.status), Some(IssueStatus::InProgress));
    assert_eq!(i.and_then(|i| i.assignee), agent_a, "assignee set");
    dir.update_issue(&issue_id(1), Some(IssueStatus::Done), Some(None));
    let i = dir.issue(&issue_id(1)).cloned();
    assert_eq!(i.as_ref().map(|i| i.status), Some(IssueStatus::Done));
    assert_eq!(i.and_then(|i| i.assignee), None, "Some(None) clears");
    dir.put_task(task(1, 1, Some(1), TaskStatus::Queued));
    dir.set_task_status(&task_id(1), TaskStatus::Completed);
    assert_eq!(
        dir.task(&task_id(1)).map(|t| t.status),
        Some(TaskStatus::Completed)
    );
    dir.set_task_status(&task_id(2), TaskStatus::Completed);
    assert!(dir.task(&task_id(2)).is_none(), "unknown task ignored");
}

/// A deleted issue leaves every list; its tasks stay readable by id but count for no issue,
/// even after an issue with the same id is created again.
pub fn deleted_issues_are_forgotten(dir: &mut dyn Directory) {
    let sq = Some(Assignee::Squad(squad_id(1)));
    dir.put_issue(issue(1, None, None));
    dir.put_issue(issue(2, Some(1), sq.clone()));
    dir.put_issue(issue(3, Some(1), sq.clone()));
    dir.set_issue_number(&issue_id(2), 2);
    dir.put_task(task(1, 1, Some(2), TaskStatus::Queued));
    dir.delete_issue(&issue_id(2));
    assert!(dir.issue(&issue_id(2)).is_none(), "issue");
    assert!(dir.issue_number(&issue_id(2)).is_none(), "issue_number");
    assert_eq!(dir.children(&issue_id(1)), [issue_id(3)], "children");
    assert_eq!(
        dir.squad_issues(&squad_id(1)),
        [issue_id(3)],
        "squad_issues"
    );
    assert!(dir.task(&task_id(1)).is_some(), "the task stays readable");
    assert!(
        dir.pending_task(&issue_id(2), &agent_id(1)).is_none(),
        "pending"
    );
    assert!(
        dir.latest_task(&issue_id(2), &agent_id(1)).is_none(),
        "latest"
    );
    assert!(dir.active_tasks(&issue_id(2)).is_empty(), "active");
    dir.put_issue(issue(2, Some(1), None));
    assert!(
        dir.pending_task(&issue_id(2), &agent_id(1)).is_none(),
        "a re-created issue does not inherit the old tasks"
    );
    assert!(dir.active_tasks(&issue_id(2)).is_empty());
    dir.put_task(task(2, 1, Some(2), TaskStatus::Queued));
    assert_eq!(
        ids(dir.active_tasks(&issue_id(2))),
        ["t2"],
        "new tasks count"
    );
    assert_eq!(
        dir.children(&issue_id(1)),
        [issue_id(3), issue_id(2)],
        "the re-created child is the newest"
    );
}

/// `id_seq` starts at 0 and only grows.
pub fn id_seq_only_grows(dir: &mut dyn Directory) {
    assert_eq!(dir.id_seq(), 0);
    dir.advance_id_seq(7);
    assert_eq!(dir.id_seq(), 7);
    dir.advance_id_seq(3);
    assert_eq!(dir.id_seq(), 7, "a smaller value changes nothing");
    dir.advance_id_seq(u64::MAX);
    assert_eq!(dir.id_seq(), u64::MAX, "the whole range");
}

/// Text lookups agree with the typed ones and find nothing for text that is no valid id.
pub fn text_lookups(dir: &mut dyn Directory) {
    dir.put_agent(agent(1, "Ada"));
    dir.put_squad(squad(1, "Core"));
    assert_eq!(
        dir.agent_by_str(agent_id(1).as_str()).map(|a| &a.id),
        Some(&agent_id(1))
    );
    assert_eq!(
        dir.squad_by_str(squad_id(1).as_str()).map(|s| &s.id),
        Some(&squad_id(1))
    );
    for bad in ["", "a 1", "x\n", "00000000-0000-4000-8000-0000000000a9"] {
        assert!(dir.agent_by_str(bad).is_none(), "{bad:?}");
        assert!(dir.squad_by_str(bad).is_none(), "{bad:?}");
    }
}
