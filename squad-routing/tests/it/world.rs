//! A small world builder for the tests: one workspace, users, agents, squads, issues.

use squad_model::{
    Agent, AgentId, Assignee, AutopilotId, InvocationTarget, Issue, IssueId, IssueStatus,
    MemberRef, PermissionMode, RuntimeBinding, RuntimeId, RuntimeStatus, Squad, SquadId,
    SquadMember, SquadMemberId, Task, TaskId, TaskStatus, Timestamp, UserId, WorkspaceId,
};
use squad_routing::{
    AutopilotTrigger, Decision, Decisions, Directory, Engine, Event, InMemoryDirectory, Membership,
    Principal, RoutingPolicy, TriggerSource, User, Workspace, WorkspaceRole, apply,
};

pub(crate) fn uuid(kind: u32, n: u64) -> String {
    format!("{kind:08x}-0000-4000-8000-{n:012x}")
}

/// How an agent is set up.
#[derive(Clone, Copy)]
pub(crate) struct AgentSpec {
    pub(crate) public: bool,
    pub(crate) runtime: Option<RuntimeStatus>,
    pub(crate) archived: bool,
}

pub(crate) const ONLINE_PRIVATE: AgentSpec = AgentSpec {
    public: false,
    runtime: Some(RuntimeStatus::Online),
    archived: false,
};
pub(crate) const ONLINE_PUBLIC: AgentSpec = AgentSpec {
    public: true,
    runtime: Some(RuntimeStatus::Online),
    archived: false,
};
use squad_routing::event::*;

pub(crate) struct World {
    pub(crate) dir: InMemoryDirectory,
    pub(crate) engine: Engine,
    pub(crate) at: Timestamp,
    pub(crate) ws: WorkspaceId,
    pub(crate) owner: UserId,
    pub(crate) admin: UserId,
    pub(crate) alice: UserId,
    pub(crate) bob: UserId,
    n: u64,
}

impl World {
    pub(crate) fn new() -> Self {
        Self::with_policy(RoutingPolicy::default())
    }

    pub(crate) fn with_policy(policy: RoutingPolicy) -> Self {
        let mut dir = InMemoryDirectory::new();
        let ws = WorkspaceId::new("w1").unwrap();
        dir.put_workspace(Workspace {
            id: ws.clone(),
            name: "Acme".into(),
            issue_prefix: "SQ".into(),
        });
        let mut w = Self {
            dir,
            engine: Engine::new(policy),
            at: Timestamp::parse("2026-11-30T10:00:00Z").unwrap(),
            ws,
            owner: UserId::new(uuid(0xe, 1)).unwrap(),
            admin: UserId::new(uuid(0xe, 2)).unwrap(),
            alice: UserId::new(uuid(0xe, 3)).unwrap(),
            bob: UserId::new(uuid(0xe, 4)).unwrap(),
            n: 0,
        };
        for (u, role, name) in [
            (w.owner.clone(), WorkspaceRole::Owner, "Olga"),
            (w.admin.clone(), WorkspaceRole::Admin, "Adam"),
            (w.alice.clone(), WorkspaceRole::Member, "Alice"),
            (w.bob.clone(), WorkspaceRole::Member, "Bob"),
        ] {
            w.dir.put_user(User {
                id: u.clone(),
                name: name.to_owned(),
            });
            w.dir.put_membership(Membership {
                workspace_id: w.ws.clone(),
                user_id: u,
                role,
            });
        }
        w
    }

    fn next(&mut self) -> u64 {
        self.n += 1;
        self.n
    }

    pub(crate) fn agent(&mut self, name: &str, owner: &UserId, spec: AgentSpec) -> AgentId {
        let id = AgentId::new(uuid(0xa, self.next())).unwrap();
        self.dir.put_agent(Agent {
            id: id.clone(),
            workspace_id: self.ws.clone(),
            name: name.into(),
            owner_id: Some(owner.clone()),
            archived_at: spec.archived.then_some(self.at),
            runtime: spec.runtime.map(|status| RuntimeBinding {
                runtime_id: RuntimeId::new(format!("rt-{id}")).unwrap(),
                status,
                last_seen_at: Some(self.at),
            }),
            permission_mode: if spec.public {
                PermissionMode::PublicTo
            } else {
                PermissionMode::Private
            },
            invocation_targets: if spec.public {
                vec![InvocationTarget::Workspace]
            } else {
                vec![]
            },
            skills: vec![],
            instructions: String::new(),
            created_at: self.at,
        });
        id
    }

    pub(crate) fn edit_agent(&mut self, id: &AgentId, f: impl FnOnce(&mut Agent)) {
        let mut a = self.dir.agent(id).unwrap().clone();
        f(&mut a);
        self.dir.put_agent(a);
    }

    pub(crate) fn squad(&mut self, name: &str, leader: &AgentId, creator: &UserId) -> SquadId {
        let id = SquadId::new(uuid(0x5, self.next())).unwrap();
        self.dir.put_squad(Squad {
            id: id.clone(),
            workspace_id: self.ws.clone(),
            name: name.into(),
            description: String::new(),
            leader_id: leader.clone(),
            creator_id: creator.clone(),
            instructions: String::new(),
            avatar_url: None,
            archived_at: None,
            archived_by: None,
            created_at: self.at,
            updated_at: self.at,
        });
        self.member(&id, MemberRef::Agent(leader.clone()), "leader");
        id
    }

    pub(crate) fn member(&mut self, squad: &SquadId, member: MemberRef, role: &str) {
        let n = self.next();
        self.dir.put_member(SquadMember {
            id: SquadMemberId::new(format!("m{n}")).unwrap(),
            squad_id: squad.clone(),
            member,
            role: role.into(),
            created_at: self.at.plus_seconds(i64::try_from(n).unwrap()),
        });
    }

    pub(crate) fn issue(&mut self, status: IssueStatus, assignee: Option<Assignee>) -> IssueId {
        self.child(status, assignee, None, None)
    }

    pub(crate) fn child(
        &mut self,
        status: IssueStatus,
        assignee: Option<Assignee>,
        parent: Option<&IssueId>,
        stage: Option<u32>,
    ) -> IssueId {
        let n = self.next();
        let id = IssueId::new(uuid(0x1, n)).unwrap();
        self.dir.put_issue(Issue {
            id: id.clone(),
            workspace_id: self.ws.clone(),
            title: format!("Issue {n}"),
            status,
            assignee,
            parent_issue_id: parent.cloned(),
            stage,
            origin: None,
            creator: Some(squad_model::Actor::Member(self.owner.clone())),
            created_at: self.at,
        });
        self.dir.set_issue_number(&id, n);
        id
    }

    /// Puts a task directly in the directory.
    pub(crate) fn task(
        &mut self,
        agent: &AgentId,
        issue: &IssueId,
        status: TaskStatus,
        leader_of: Option<&SquadId>,
    ) -> TaskId {
        let id = TaskId::new(uuid(0x7, self.next())).unwrap();
        self.dir.put_task(Task {
            id: id.clone(),
            agent_id: agent.clone(),
            issue_id: Some(issue.clone()),
            status,
            is_leader_task: leader_of.is_some(),
            squad_id: leader_of.cloned(),
            trigger_comment_id: None,
            originator_user_id: None,
            head_sha: None,
            context: None,
            attempt: 1,
            created_at: self.at,
        });
        id
    }

    /// Decides and applies one event; the clock moves one second.
    pub(crate) fn event(&mut self, ev: Event) -> Decisions {
        self.at = self.at.plus_seconds(1);
        let d = self.engine.decide(&self.dir, self.at, &ev);
        apply(&mut self.dir, &d);
        d
    }

    /// Decides without applying.
    pub(crate) fn peek(&self, ev: &Event) -> Decisions {
        self.engine.decide(&self.dir, self.at, ev)
    }

    pub(crate) fn comment(
        &mut self,
        issue: &IssueId,
        author: Principal,
        content: &str,
    ) -> Decisions {
        let id = squad_model::CommentId::new(uuid(0xc, self.next())).unwrap();
        self.event(Event::Comment(PostComment {
            comment_id: id,
            issue_id: issue.clone(),
            author,
            task_id: None,
            parent_id: None,
            content: content.into(),
            suppress_agent_ids: vec![],
        }))
    }

    pub(crate) fn comment_from_task(
        &mut self,
        issue: &IssueId,
        agent: &AgentId,
        task: &TaskId,
        content: &str,
    ) -> Decisions {
        let id = squad_model::CommentId::new(uuid(0xc, self.next())).unwrap();
        self.event(Event::Comment(PostComment {
            comment_id: id,
            issue_id: issue.clone(),
            author: Principal::Agent(agent.clone()),
            task_id: Some(task.clone()),
            parent_id: None,
            content: content.into(),
            suppress_agent_ids: vec![],
        }))
    }

    pub(crate) fn set_status(
        &mut self,
        actor: Principal,
        issue: &IssueId,
        s: IssueStatus,
    ) -> Decisions {
        self.event(update(actor, issue, Some(s), None))
    }

    pub(crate) fn assign(
        &mut self,
        actor: Principal,
        issue: &IssueId,
        ty: &str,
        id: &str,
    ) -> Decisions {
        self.event(update(actor, issue, None, Some((ty, id))))
    }
}

pub(crate) fn update(
    actor: Principal,
    issue: &IssueId,
    status: Option<IssueStatus>,
    assignee: Option<(&str, &str)>,
) -> Event {
    Event::UpdateIssue(UpdateIssue {
        actor,
        task_id: None,
        issue_id: issue.clone(),
        status,
        assignee_type: assignee.map(|a| a.0.to_owned()),
        assignee_id: assignee.map(|a| a.1.to_owned()),
        unassign: false,
        suppress_run: false,
    })
}

/// Every issue status, in the order the property tests index them.
pub(crate) const STATUSES: [IssueStatus; 7] = [
    IssueStatus::Backlog,
    IssueStatus::Todo,
    IssueStatus::InProgress,
    IssueStatus::InReview,
    IssueStatus::Done,
    IssueStatus::Blocked,
    IssueStatus::Cancelled,
];

/// Fires autopilot `ap` (`actor` the member who ran it by hand, if any).
pub(crate) fn fire(
    w: &mut World,
    ap: &AutopilotId,
    trigger: AutopilotTrigger,
    actor: Option<UserId>,
) -> Decisions {
    w.event(Event::TriggerAutopilot(TriggerAutopilot {
        autopilot_id: ap.clone(),
        trigger,
        actor,
    }))
}

/// The skipped autopilot runs as (reason, code).
pub(crate) fn skips(d: &Decisions) -> Vec<(String, &'static str)> {
    d.decisions
        .iter()
        .filter_map(|d| match d {
            Decision::SkipAutopilotRun { reason, code, .. } => Some((reason.clone(), *code)),
            _ => None,
        })
        .collect()
}

pub(crate) fn member(u: &UserId) -> Principal {
    Principal::Member(u.clone())
}

pub(crate) fn agent(a: &AgentId) -> Principal {
    Principal::Agent(a.clone())
}

/// The enqueued tasks as (agent, is_leader_task, source).
pub(crate) fn enqueued(d: &Decisions) -> Vec<(AgentId, bool, TriggerSource)> {
    d.decisions
        .iter()
        .filter_map(|d| match d {
            Decision::Enqueue { task, source, .. } => {
                Some((task.agent_id.clone(), task.is_leader_task, *source))
            }
            _ => None,
        })
        .collect()
}

/// The no-op reasons, as their JSON strings.
pub(crate) fn noops(d: &Decisions) -> Vec<String> {
    d.decisions
        .iter()
        .filter_map(|d| match d {
            Decision::Noop { reason, .. } => Some(
                serde_json::to_value(reason)
                    .unwrap()
                    .as_str()
                    .unwrap()
                    .to_owned(),
            ),
            _ => None,
        })
        .collect()
}

/// The cancelled task ids.
pub(crate) fn cancelled(d: &Decisions) -> Vec<TaskId> {
    d.decisions
        .iter()
        .filter_map(|d| match d {
            Decision::Cancel { task_id, .. } => Some(task_id.clone()),
            _ => None,
        })
        .collect()
}

/// The system comments posted.
pub(crate) fn system_comments(d: &Decisions) -> Vec<String> {
    d.decisions
        .iter()
        .filter_map(|d| match d {
            Decision::PostComment {
                comment,
                system: true,
            } => Some(comment.content.clone()),
            _ => None,
        })
        .collect()
}

/// Mention outcomes as (type, id, outcome, reason).
pub(crate) fn mentions(d: &Decisions) -> Vec<(String, String, String, Option<String>)> {
    d.decisions
        .iter()
        .filter_map(|d| match d {
            Decision::Mention { .. } => {
                let v = serde_json::to_value(d).unwrap();
                Some((
                    v["mention_type"].as_str().unwrap().to_owned(),
                    v["mention_id"].as_str().unwrap().to_owned(),
                    v["outcome"].as_str().unwrap().to_owned(),
                    v["reason"].as_str().map(str::to_owned),
                ))
            }
            _ => None,
        })
        .collect()
}

pub(crate) fn mention(kind: &str, id: &str, label: &str) -> String {
    format!("[@{label}](mention://{kind}/{id})")
}
