//! Synthetic traces for benchmarks: squads of a leader, two workers and a human, background
//! issues, and "episodes" that walk one parent issue through the rules (assignment, claim,
//! delegation by mention, staged children, child-done, squad mentions, batch updates).
//!
//! The generator simulates while it generates (it runs the engine on its own directory), so
//! the task ids its events name are the ones a replay will mint. Output is deterministic for a
//! given [`GenConfig`].

use squad_model::{
    Agent, AgentId, Assignee, CommentId, InvocationTarget, Issue, IssueId, IssueStatus, MemberRef,
    PermissionMode, RuntimeBinding, RuntimeId, RuntimeStatus, Squad, SquadId, SquadMember,
    SquadMemberId, TaskId, TaskStatus, Timestamp, UserId, WorkspaceId,
};

use crate::apply::apply;
use crate::directory::{Directory, InMemoryDirectory};
use crate::engine::Engine;
use crate::error::Result;
use crate::event::{
    BatchUpdate, ClaimTask, CreateIssue, Event, PostComment, SetTaskStatus, UpdateIssue,
};
use crate::mention::{MentionKind, format_mention};

mod workloads;
use crate::records::{Membership, Principal, User, Workspace, WorkspaceRole};
use crate::trace::{IssueRecord, TraceLine};
pub use workloads::{Workload, WorkloadConfig};

/// What to generate. Each size has an upper bound (the `MAX_*` constants), so that a trace fits
/// in memory: [`generate`] refuses a larger one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenConfig {
    /// Number of squads (each: a leader, two workers, one human).
    pub squads: usize,
    /// Background issues per squad, loaded as entities.
    pub issues_per_squad: usize,
    /// Number of events (the last episode is cut to fit).
    pub events: usize,
    /// Seed of the pseudo-random choices.
    pub seed: u64,
}

impl GenConfig {
    /// The most squads a trace may have.
    pub const MAX_SQUADS: usize = 100_000;
    /// The most background issues per squad.
    pub const MAX_ISSUES_PER_SQUAD: usize = 100;
    /// The most background issues in all (`squads * issues_per_squad`).
    pub const MAX_ISSUES: usize = 1_000_000;
    /// The most events a trace may have.
    pub const MAX_EVENTS: usize = 2_000_000;

    /// Checks every size against its bound.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::OutOfRange`](crate::ErrorKind::OutOfRange) naming the field and its limit.
    ///
    /// ```
    /// use squad_routing::generate::GenConfig;
    ///
    /// let big = GenConfig { squads: 4_000_000_000, ..GenConfig::default() };
    /// assert_eq!(big.check().unwrap_err().to_string(), "squads is 4000000000, more than the limit of 100000");
    /// ```
    pub fn check(&self) -> Result<()> {
        let n = |v: usize| v as u64;
        workloads::range("squads", n(self.squads), 0, n(Self::MAX_SQUADS))?;
        workloads::range(
            "issues_per_squad",
            n(self.issues_per_squad),
            0,
            n(Self::MAX_ISSUES_PER_SQUAD),
        )?;
        workloads::range("events", n(self.events), 0, n(Self::MAX_EVENTS))?;
        let issues = self.squads * self.issues_per_squad;
        workloads::range(
            "squads * issues_per_squad",
            n(issues),
            0,
            n(Self::MAX_ISSUES),
        )?;
        Ok(())
    }
}

impl Default for GenConfig {
    fn default() -> Self {
        Self {
            squads: 100,
            issues_per_squad: 4,
            events: 1_000,
            seed: 1,
        }
    }
}

/// A generated trace: entity records, then events (each with its time).
#[derive(Debug, Clone)]
pub struct Generated {
    /// Entity records.
    pub entities: Vec<TraceLine>,
    /// Events, in order.
    pub events: Vec<(Timestamp, Event)>,
}

impl Generated {
    /// A directory holding the entities.
    pub fn directory(&self) -> InMemoryDirectory {
        load(&self.entities)
    }

    /// The trace's lines (JSON, without newlines): the schema version, the entities, the
    /// events.
    pub fn lines(&self) -> impl Iterator<Item = String> + '_ {
        let version = TraceLine::SchemaVersion {
            version: crate::trace::SCHEMA_VERSION,
            ids: crate::trace::Ids::Counter,
        };
        std::iter::once(version.to_json())
            .chain(self.entities.iter().map(TraceLine::to_json))
            .chain(self.events.iter().map(|(at, event)| {
                TraceLine::Event {
                    at: Some(*at),
                    event: event.clone(),
                }
                .to_json()
            }))
    }

    /// The whole trace as JSON Lines.
    pub fn to_jsonl(&self) -> String {
        let mut out = String::new();
        for line in self.lines() {
            out.push_str(&line);
            out.push('\n');
        }
        out
    }
}

/// A directory holding generated entities (consistent by construction: a load cannot fail).
fn load(entities: &[TraceLine]) -> InMemoryDirectory {
    let mut dir = InMemoryDirectory::new();
    for e in entities {
        let _ = crate::trace::load_entity(&mut dir, e.clone());
    }
    dir
}

/// SplitMix64: small, fast and good enough for picking squads.
#[derive(Debug, Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    pub(crate) fn below(&mut self, n: usize) -> usize {
        // n is small; the modulo bias is irrelevant here.
        usize::try_from(self.next() % (n.max(1) as u64)).unwrap_or(0)
    }
    /// `true` with probability `percent` / 100.
    pub(crate) fn chance(&mut self, percent: u32) -> bool {
        self.next() % 100 < u64::from(percent)
    }
}

fn id(kind: u32, n: usize) -> String {
    format!("{kind:08x}-0000-4000-8000-{n:012x}")
}

/// A squad: its leader, its worker agents (two, or more for a review storm), its human.
pub(crate) struct Team {
    pub(crate) squad: SquadId,
    pub(crate) leader: AgentId,
    pub(crate) workers: Vec<AgentId>,
    pub(crate) human: UserId,
}

/// What a generated issue is created with.
pub(crate) struct NewIssue<'a> {
    pub(crate) actor: Principal,
    pub(crate) task: Option<TaskId>,
    pub(crate) status: IssueStatus,
    pub(crate) assignee: Option<(&'a str, String)>,
    pub(crate) parent: Option<&'a IssueId>,
    pub(crate) stage: Option<u32>,
}

/// The generator's own replay: it runs the engine (default policy) on every event it writes,
/// so that later events name the tasks a replay will mint; it also plays the host's scheduler,
/// making deferred tasks (escalations) due at their due time.
pub(crate) struct Sim {
    engine: Engine,
    pub(crate) dir: InMemoryDirectory,
    pub(crate) at: Timestamp,
    /// When the trace starts.
    pub(crate) origin: Timestamp,
    pub(crate) events: Vec<(Timestamp, Event)>,
    limit: usize,
    next: usize,
    /// Extra seconds before the next event (each event is at least one second after the last).
    gap: i64,
    /// Deferred tasks and their due times.
    deferred: Vec<(Timestamp, TaskId)>,
    /// Escalations that came due, for their agents to work.
    pending_work: Vec<TaskId>,
}

impl Sim {
    pub(crate) fn full(&self) -> bool {
        self.events.len() >= self.limit
    }
    pub(crate) fn fresh(&mut self, kind: u32) -> String {
        self.next += 1;
        id(kind, self.next)
    }
    /// The next event comes `secs` seconds later than it would.
    pub(crate) fn wait(&mut self, secs: i64) {
        self.gap += secs.max(0);
    }
    /// The next event comes no earlier than `t`.
    pub(crate) fn wait_until(&mut self, t: Timestamp) {
        let next = self.at.plus_seconds(1 + self.gap);
        if t > next {
            self.gap += t.seconds_since(&next);
        }
    }
    /// Writes one event at `at` and applies its decisions; returns the tasks it enqueued.
    fn emit(&mut self, at: Timestamp, e: Event) -> Vec<TaskId> {
        self.at = at;
        let d = self.engine.decide(&self.dir, self.at, &e);
        apply(&mut self.dir, &d);
        self.events.push((self.at, e));
        for dec in &d.decisions {
            if let crate::decision::Decision::Enqueue {
                task,
                delay_seconds: Some(s),
                ..
            } = dec
            {
                self.deferred
                    .push((at.plus_seconds(i64::from(*s)), task.id.clone()));
            }
        }
        d.enqueued()
            .filter(|t| t.status != TaskStatus::Deferred)
            .map(|t| t.id.clone())
            .collect()
    }
    /// Runs one event; returns the tasks it enqueued (deferred ones aside). Deferred tasks due
    /// by then are made due first, as the host's scheduler would.
    pub(crate) fn run(&mut self, e: Event) -> Vec<TaskId> {
        if self.full() {
            return Vec::new();
        }
        let next = self.at.plus_seconds(1 + self.gap);
        self.gap = 0;
        while !self.deferred.is_empty() {
            let (k, due) = self
                .deferred
                .iter()
                .enumerate()
                .min_by_key(|(_, (due, _))| *due)
                .map(|(k, (due, _))| (k, *due))
                .unwrap_or((0, next));
            if due > next {
                break;
            }
            let (_, task) = self.deferred.swap_remove(k);
            let waiting = self
                .dir
                .task(&task)
                .is_some_and(|t| t.status == TaskStatus::Deferred);
            if !waiting || self.full() {
                continue;
            }
            let at = if due > self.at {
                due
            } else {
                self.at.plus_seconds(1)
            };
            self.emit(
                at,
                Event::TaskStatus(SetTaskStatus {
                    task_id: task.clone(),
                    status: TaskStatus::Queued,
                }),
            );
            // Unless a pending task absorbed it, the agent's runtime takes it (`work_escalations`).
            if self
                .dir
                .task(&task)
                .is_some_and(|t| t.status == TaskStatus::Queued)
            {
                self.pending_work.push(task);
            }
        }
        if self.full() {
            return Vec::new();
        }
        let at = if next > self.at {
            next
        } else {
            self.at.plus_seconds(1)
        };
        self.emit(at, e)
    }
    pub(crate) fn status(&mut self, task: &TaskId, status: TaskStatus) {
        self.run(Event::TaskStatus(SetTaskStatus {
            task_id: task.clone(),
            status,
        }));
    }
    /// Claims and starts a task (the agent's runtime taking it).
    pub(crate) fn start(&mut self, task: &TaskId) {
        self.run(Event::Claim(ClaimTask {
            task_id: task.clone(),
        }));
        self.status(task, TaskStatus::Running);
    }
    /// Claims, starts and completes a task (the agent's runtime at work).
    pub(crate) fn work(&mut self, task: &TaskId) {
        self.start(task);
        self.status(task, TaskStatus::Completed);
    }
    /// Works the escalations that came due (their agents' runtimes take them).
    pub(crate) fn work_escalations(&mut self) {
        while let Some(t) = self.pending_work.pop() {
            if self.full() {
                return;
            }
            self.work(&t);
        }
    }
    pub(crate) fn comment(
        &mut self,
        issue: &IssueId,
        author: Principal,
        task: Option<TaskId>,
        text: String,
    ) -> Vec<TaskId> {
        self.reply(issue, author, task, None, text).1
    }
    /// A comment (a reply when `parent` is given); returns its id and the tasks it enqueued.
    pub(crate) fn reply(
        &mut self,
        issue: &IssueId,
        author: Principal,
        task: Option<TaskId>,
        parent: Option<CommentId>,
        text: String,
    ) -> (CommentId, Vec<TaskId>) {
        let comment_id = CommentId::new(self.fresh(0xc0)).expect("generated ids are valid");
        let tasks = self.run(Event::Comment(PostComment {
            comment_id: comment_id.clone(),
            issue_id: issue.clone(),
            author,
            task_id: task,
            parent_id: parent,
            content: text,
            suppress_agent_ids: Vec::new(),
        }));
        (comment_id, tasks)
    }
    /// Creates an issue; returns its id and the tasks it enqueued.
    pub(crate) fn create(&mut self, ws: &WorkspaceId, c: NewIssue<'_>) -> (IssueId, Vec<TaskId>) {
        let NewIssue {
            actor,
            task,
            status,
            assignee,
            parent,
            stage,
        } = c;
        let issue_id = IssueId::new(self.fresh(0x15)).expect("generated ids are valid");
        let (assignee_type, assignee_id) = match assignee {
            Some((ty, id)) => (Some(ty.to_owned()), Some(id)),
            None => (None, None),
        };
        let tasks = self.run(Event::CreateIssue(CreateIssue {
            actor,
            task_id: task,
            workspace_id: ws.clone(),
            issue_id: issue_id.clone(),
            number: None,
            title: format!("Generated {issue_id}"),
            status: Some(status),
            assignee_type,
            assignee_id,
            parent_issue_id: parent.cloned(),
            stage,
            suppress_run: false,
        }));
        (issue_id, tasks)
    }
    pub(crate) fn update(
        &mut self,
        actor: Principal,
        task: Option<TaskId>,
        issue: &IssueId,
        status: IssueStatus,
    ) -> Vec<TaskId> {
        self.run(Event::UpdateIssue(UpdateIssue {
            actor,
            task_id: task,
            issue_id: issue.clone(),
            status: Some(status),
            assignee_type: None,
            assignee_id: None,
            unassign: false,
            suppress_run: false,
        }))
    }
}

/// Generates a trace of the default workload ([`Workload::Episodes`]).
///
/// # Errors
///
/// [`ErrorKind::OutOfRange`](crate::ErrorKind::OutOfRange) when a size is over its bound
/// ([`GenConfig::check`]).
///
/// ```
/// use squad_routing::generate::{generate, GenConfig};
///
/// let g = generate(&GenConfig { squads: 3, issues_per_squad: 2, events: 40, seed: 7 }).unwrap();
/// assert_eq!(g.events.len(), 40);
/// assert!(g.to_jsonl().lines().count() > 40);
/// ```
pub fn generate(cfg: &GenConfig) -> Result<Generated> {
    generate_workload(&WorkloadConfig::new(Workload::Episodes, cfg.clone()))
}

/// Generates a trace of a workload.
///
/// # Errors
///
/// [`ErrorKind::OutOfRange`](crate::ErrorKind::OutOfRange) when a size or a knob is over its
/// bound ([`WorkloadConfig::check`]).
///
/// ```
/// use squad_routing::generate::{generate_workload, GenConfig, Workload, WorkloadConfig};
///
/// let cfg = WorkloadConfig {
///     reporters: 4,
///     ..WorkloadConfig::new(Workload::ReviewStorm, GenConfig { squads: 2, events: 100, ..GenConfig::default() })
/// };
/// let a = generate_workload(&cfg).unwrap().to_jsonl();
/// assert_eq!(a, generate_workload(&cfg).unwrap().to_jsonl(), "same seed, same bytes");
/// ```
pub fn generate_workload(cfg: &WorkloadConfig) -> Result<Generated> {
    cfg.check()?;
    let size = &cfg.size;
    let t0 = Timestamp::from_unix_seconds(1_796_032_800).unwrap_or_else(|_| Timestamp::now());
    let ws = WorkspaceId::new("00000000-0000-4000-8000-000000000001").expect("valid id");
    let mut entities = vec![TraceLine::Workspace(Workspace {
        id: ws.clone(),
        name: "Generated".into(),
        issue_prefix: "GEN".into(),
    })];
    let extra_workers = match cfg.workload {
        Workload::ReviewStorm => cfg.reporters.saturating_sub(2),
        _ => 0,
    };
    let mut teams = Vec::with_capacity(size.squads);
    let mut n = 0usize;
    let mut next = || {
        n += 1;
        n
    };
    for s in 0..size.squads {
        let human = UserId::new(id(0xe0, next())).expect("valid id");
        entities.push(TraceLine::User(User {
            id: human.clone(),
            name: format!("Human {s}"),
        }));
        entities.push(TraceLine::Membership(Membership {
            workspace_id: ws.clone(),
            user_id: human.clone(),
            role: WorkspaceRole::Member,
        }));
        let mut agent = |name: String, public: bool| {
            let a = AgentId::new(id(0xa0, next())).expect("valid id");
            entities.push(TraceLine::Agent(Agent {
                id: a.clone(),
                workspace_id: ws.clone(),
                name,
                owner_id: Some(human.clone()),
                archived_at: None,
                runtime: Some(RuntimeBinding {
                    runtime_id: RuntimeId::new(format!("rt-{a}")).expect("valid id"),
                    status: RuntimeStatus::Online,
                    last_seen_at: Some(t0),
                }),
                permission_mode: if public {
                    PermissionMode::PublicTo
                } else {
                    PermissionMode::Private
                },
                invocation_targets: if public {
                    vec![InvocationTarget::Workspace]
                } else {
                    Vec::new()
                },
                skills: vec!["rust".into(), "review".into()],
                instructions: String::new(),
                created_at: t0,
            }));
            a
        };
        let leader = agent(format!("Leader {s}"), s % 2 == 0);
        let mut workers = vec![
            agent(format!("Worker {s}a"), true),
            agent(format!("Worker {s}b"), false),
        ];
        for i in 0..extra_workers {
            workers.push(agent(format!("Worker {s}-{}", i + 3), true));
        }
        let squad = SquadId::new(id(0x50, next())).expect("valid id");
        entities.push(TraceLine::Squad(Squad {
            id: squad.clone(),
            workspace_id: ws.clone(),
            name: format!("Squad {s}"),
            description: String::new(),
            leader_id: leader.clone(),
            creator_id: human.clone(),
            instructions: "Keep changes small.".into(),
            avatar_url: None,
            archived_at: None,
            archived_by: None,
            created_at: t0,
            updated_at: t0,
        }));
        let extra = workers[2..]
            .iter()
            .map(|w| (MemberRef::Agent(w.clone()), "reviewer"));
        for (i, (m, role)) in [
            (MemberRef::Agent(leader.clone()), "leader"),
            (MemberRef::Agent(workers[0].clone()), "backend"),
            (MemberRef::Agent(workers[1].clone()), "frontend"),
            (MemberRef::Member(human.clone()), "reviewer"),
        ]
        .into_iter()
        .chain(extra)
        .enumerate()
        {
            entities.push(TraceLine::Member(SquadMember {
                id: SquadMemberId::new(format!("{squad}-{i}")).expect("valid id"),
                squad_id: squad.clone(),
                member: m,
                role: role.into(),
                created_at: t0,
            }));
        }
        for i in 0..size.issues_per_squad {
            let issue_id = IssueId::new(id(0x10, next())).expect("valid id");
            let (status, assignee) = match i % 4 {
                0 => (IssueStatus::Backlog, Assignee::Squad(squad.clone())),
                1 => (IssueStatus::InProgress, Assignee::Squad(squad.clone())),
                2 => (IssueStatus::Todo, Assignee::Agent(workers[0].clone())),
                _ => (IssueStatus::Done, Assignee::Member(human.clone())),
            };
            entities.push(TraceLine::Issue(IssueRecord {
                issue: Issue {
                    id: issue_id,
                    workspace_id: ws.clone(),
                    title: format!("Background {s}.{i}"),
                    status,
                    assignee: Some(assignee),
                    parent_issue_id: None,
                    stage: None,
                    origin: None,
                    creator: Some(squad_model::Actor::Member(human.clone())),
                    created_at: t0,
                },
                number: None,
            }));
        }
        teams.push(Team {
            squad,
            leader,
            workers,
            human,
        });
    }
    let mut sim = Sim {
        engine: Engine::default(),
        dir: load(&entities),
        at: t0,
        origin: t0,
        events: Vec::with_capacity(size.events),
        limit: size.events,
        next: n,
        gap: 0,
        deferred: Vec::new(),
        pending_work: Vec::new(),
    };
    let mut rng = Rng(size.seed);
    let mut k = 0usize;
    while !sim.full() && !teams.is_empty() {
        let team = &teams[rng.below(teams.len())];
        match cfg.workload {
            Workload::Episodes => episode(&mut sim, &mut rng, &ws, team),
            Workload::Steady => workloads::steady(&mut sim, &mut rng, &ws, team, cfg, k),
            Workload::ReviewStorm => workloads::review_storm(&mut sim, &ws, team, cfg),
            Workload::Chatter => workloads::chatter(&mut sim, &mut rng, &ws, team, cfg),
            Workload::Mentions => workloads::mentions(&mut sim, &mut rng, &ws, team, cfg),
        }
        k += 1;
    }
    Ok(Generated {
        entities,
        events: sim.events,
    })
}

/// One parent issue through the rules.
pub(crate) fn episode(sim: &mut Sim, rng: &mut Rng, ws: &WorkspaceId, t: &Team) {
    let human = Principal::Member(t.human.clone());
    let lead = Principal::Agent(t.leader.clone());
    let w0 = Principal::Agent(t.workers[0].clone());
    let (parent, tasks) = sim.create(
        ws,
        NewIssue {
            actor: human.clone(),
            task: None,
            status: IssueStatus::Todo,
            assignee: Some(("squad", t.squad.to_string())),
            parent: None,
            stage: None,
        },
    );
    let Some(lt) = tasks.first().cloned() else {
        return;
    };
    sim.start(&lt);
    let w_tasks = sim.comment(
        &parent,
        lead.clone(),
        Some(lt.clone()),
        format!(
            "{} please take the API part.",
            format_mention(MentionKind::Agent, t.workers[0].as_str(), "Worker")
        ),
    );
    sim.status(&lt, TaskStatus::Completed);
    let (c1, c1_tasks) = sim.create(
        ws,
        NewIssue {
            actor: lead.clone(),
            task: Some(lt.clone()),
            status: IssueStatus::Todo,
            assignee: Some(("agent", t.workers[0].to_string())),
            parent: Some(&parent),
            stage: Some(1),
        },
    );
    let (c2, _) = sim.create(
        ws,
        NewIssue {
            actor: lead.clone(),
            task: Some(lt.clone()),
            status: IssueStatus::Backlog,
            assignee: Some(("agent", t.workers[1].to_string())),
            parent: Some(&parent),
            stage: Some(2),
        },
    );
    let wt = c1_tasks.first().or(w_tasks.first()).cloned();
    sim.comment(
        &parent,
        w0.clone(),
        wt.clone(),
        "Started on the API.".into(),
    );
    if let Some(wt) = &wt {
        sim.status(wt, TaskStatus::Completed);
    }
    let wake = sim.update(w0, wt, &c1, IssueStatus::Done);
    for task in wake {
        sim.status(&task, TaskStatus::Completed);
    }
    let text = match rng.below(4) {
        0 => "/note remember to update the changelog".to_owned(),
        1 => format!(
            "{} status?",
            format_mention(MentionKind::Squad, t.squad.as_str(), "Squad")
        ),
        2 => "[@all](mention://all/all) demo on Friday".to_owned(),
        _ => "Any blockers?".to_owned(),
    };
    sim.comment(&parent, human.clone(), None, text);
    sim.update(lead.clone(), None, &c2, IssueStatus::Todo);
    sim.run(Event::BatchUpdate(BatchUpdate {
        actor: human,
        task_id: None,
        issue_ids: vec![c2],
        status: Some(IssueStatus::Done),
        assignee_type: None,
        assignee_id: None,
        suppress_run: false,
    }));
    let pending: Vec<TaskId> = sim
        .dir
        .active_tasks(&parent)
        .iter()
        .map(|t| t.id.clone())
        .collect();
    for task in pending {
        sim.status(&task, TaskStatus::Completed);
    }
    sim.update(lead, None, &parent, IssueStatus::InReview);
}
