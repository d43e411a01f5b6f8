//! Counterfactual runs: the ids a trace names that the engine minted (tasks, system comments,
//! autopilot issues) are those of the run the trace was recorded under. A run under another
//! policy mints other ids (or none, or in another order), so each such id is translated to the
//! run's own record that stands in the same place: the same agent's task on the same issue, the
//! system comment on the same issue, the issue of the same autopilot.
//!
//! What each minted id stands for is learnt from the *recorded* run (the policy the trace was
//! recorded under), which publishes its mints as it goes ([`Publisher`]); counterfactual runs read
//! them ([`Translator`]), waiting only when they need an id the recorded run has not reached yet.
//! Every run stays single-threaded; they run side by side.

use std::sync::{Condvar, Mutex, MutexGuard};

use foldhash::fast::FixedState;
use squad_model::{AgentId, AutopilotId, CommentId, IssueId, TaskId, TaskStatus};

use crate::decision::Decision;
use crate::directory::Directory;
use crate::event::{
    BatchUpdate, ClaimTask, CreateIssue, DeleteIssue, Event, PostComment, RecordEvaluation,
    SaveAutopilot, SetTaskStatus, UpdateIssue,
};
use crate::records::Principal;

pub(crate) type Map<K, V> = hashbrown::HashMap<K, V, FixedState>;

/// Events the recorded run publishes at once (a counterfactual run waits at most this far
/// behind it).
const CHUNK: usize = 256;

/// One id the recorded run minted, and what it stands for.
#[derive(Debug, Clone)]
pub(crate) enum Mint {
    /// A task: its agent, its issue, and whether it was deferred.
    Task {
        id: TaskId,
        agent: AgentId,
        issue: Option<IssueId>,
        deferred: bool,
    },
    /// A system comment on an issue.
    Comment { id: CommentId, issue: IssueId },
    /// An issue an autopilot created.
    Issue { id: IssueId, autopilot: AutopilotId },
}

/// The ids an event's decisions minted.
pub(crate) fn mints<'d>(
    event: &'d Event,
    decisions: &'d [Decision],
) -> impl Iterator<Item = Mint> + 'd {
    decisions.iter().filter_map(move |d| match d {
        Decision::Enqueue { task, .. } => Some(Mint::Task {
            id: task.id.clone(),
            agent: task.agent_id.clone(),
            issue: task.issue_id.clone(),
            deferred: task.status == TaskStatus::Deferred,
        }),
        Decision::PostComment {
            comment,
            system: true,
        } => Some(Mint::Comment {
            id: comment.id.clone(),
            issue: comment.issue_id.clone(),
        }),
        Decision::CreateIssue { issue, .. } => match event {
            Event::TriggerAutopilot(t) => Some(Mint::Issue {
                id: issue.id.clone(),
                autopilot: t.autopilot_id.clone(),
            }),
            _ => None,
        },
        _ => None,
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Running,
    Finished,
    Failed,
}

#[derive(Debug)]
struct Shared {
    mints: Vec<Mint>,
    /// Events the recorded run has fully decided.
    events_done: usize,
    state: State,
}

/// The recorded run's mints, shared with the counterfactual runs.
#[derive(Debug)]
pub(crate) struct RefLog {
    shared: Mutex<Shared>,
    cv: Condvar,
}

impl RefLog {
    pub(crate) fn new() -> Self {
        Self {
            shared: Mutex::new(Shared {
                mints: Vec::new(),
                events_done: 0,
                state: State::Running,
            }),
            cv: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Shared> {
        // A run that panicked while holding the lock left consistent data (pushes only).
        self.shared.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The recorded run's side: it publishes its mints every [`CHUNK`] events. Dropped without
/// [`finish`](Self::finish) (the run failed), it tells the readers to stop.
#[derive(Debug)]
pub(crate) struct Publisher<'a> {
    log: &'a RefLog,
    buf: Vec<Mint>,
    done: bool,
}

impl<'a> Publisher<'a> {
    pub(crate) fn new(log: &'a RefLog) -> Self {
        Self {
            log,
            buf: Vec::new(),
            done: false,
        }
    }

    /// Records the mints of event `index` (0-based), publishing every [`CHUNK`] events.
    pub(crate) fn record(&mut self, index: usize, event: &Event, decisions: &[Decision]) {
        self.buf.extend(mints(event, decisions));
        if (index + 1).is_multiple_of(CHUNK) {
            self.flush(index + 1, State::Running);
        }
    }

    fn flush(&mut self, events_done: usize, state: State) {
        let mut s = self.log.lock();
        s.mints.append(&mut self.buf);
        s.events_done = s.events_done.max(events_done);
        s.state = state;
        drop(s);
        self.log.cv.notify_all();
    }

    /// The run is over: every mint is published.
    pub(crate) fn finish(mut self, events: usize) {
        self.flush(events, State::Finished);
        self.done = true;
    }
}

impl Drop for Publisher<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.flush(0, State::Failed);
        }
    }
}

/// The recorded run failed: the counterfactual runs stop (the recorded run's error is reported).
#[derive(Debug)]
pub(crate) struct Aborted;

/// What an id of the trace becomes in a counterfactual run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum To<T> {
    /// The same id.
    Same,
    /// Another id of this run.
    Id(T),
    /// Nothing in this run stands for it: the event is skipped.
    Skip,
}

/// One of the recorded run's tasks.
#[derive(Debug, Clone)]
struct RefTask {
    id: TaskId,
    agent: AgentId,
    issue: Option<IssueId>,
    deferred: bool,
}

/// The engine mints task ids as `7a5c0000-0000-4000-8000-<counter in 12 hex digits>`.
const TASK_PREFIX: &str = "7a5c0000-0000-4000-8000-";

/// The counter of a minted task id (`None` for any other id).
fn task_seq(t: &TaskId) -> Option<usize> {
    let rest = t.as_str().strip_prefix(TASK_PREFIX)?;
    if rest.len() != 12 {
        return None;
    }
    usize::from_str_radix(rest, 16).ok()
}

fn slot<T: Default + Clone>(v: &mut Vec<T>, n: usize) -> &mut T {
    if v.len() <= n {
        v.resize(n + 1, T::default());
    }
    &mut v[n]
}

/// One of this run's own minted records, and whether a trace id already stands for it.
#[derive(Debug)]
struct Own<T> {
    id: T,
    taken: bool,
}

/// What the trace's `id` stands for in this run: the record it was matched to before, else the
/// first of this run's own records (`own`, of the same parent) that no trace id took yet, the
/// one with the same id first.
fn claim<T: Clone + Eq + std::hash::Hash>(
    alias: &mut Map<T, T>,
    own: Option<&mut Vec<Own<T>>>,
    id: &T,
) -> To<T> {
    if let Some(u) = alias.get(id) {
        return if u == id { To::Same } else { To::Id(u.clone()) };
    }
    let Some(own) = own else {
        return To::Skip;
    };
    let pick = own
        .iter()
        .position(|o| &o.id == id && !o.taken)
        .or_else(|| own.iter().position(|o| !o.taken));
    match pick {
        Some(k) => {
            own[k].taken = true;
            let u = own[k].id.clone();
            alias.insert(id.clone(), u.clone());
            if &u == id { To::Same } else { To::Id(u) }
        }
        None => To::Skip,
    }
}

/// The counterfactual run's side: translates the trace's minted ids to the run's own.
#[derive(Debug)]
pub(crate) struct Translator<'a> {
    log: &'a RefLog,
    /// Mints read so far.
    read: usize,
    /// Events the recorded run had decided at the last read.
    covered: usize,
    finished: bool,
    /// The recorded run's tasks by the counter in their minted id (no hashing: most events
    /// name a task).
    ref_tasks: Vec<Option<RefTask>>,
    ref_comments: Map<CommentId, IssueId>,
    ref_issues: Map<IssueId, AutopilotId>,
    /// What each of the recorded run's tasks stands for here, by its counter.
    alias_tasks: Vec<Option<TaskId>>,
    /// This run's tasks that a trace id already stands for, by their counter.
    taken_tasks: Vec<bool>,
    alias_comments: Map<CommentId, CommentId>,
    alias_issues: Map<IssueId, IssueId>,
    own_comments: Map<IssueId, Vec<Own<CommentId>>>,
    own_issues: Map<AutopilotId, Vec<Own<IssueId>>>,
}

impl<'a> Translator<'a> {
    pub(crate) fn new(log: &'a RefLog) -> Self {
        Self {
            log,
            read: 0,
            covered: 0,
            finished: false,
            ref_tasks: Vec::new(),
            ref_comments: Map::default(),
            ref_issues: Map::default(),
            alias_tasks: Vec::new(),
            taken_tasks: Vec::new(),
            alias_comments: Map::default(),
            alias_issues: Map::default(),
            own_comments: Map::default(),
            own_issues: Map::default(),
        }
    }

    /// Records this run's own system comments and autopilot issues (after each event; its
    /// tasks are found in the directory).
    pub(crate) fn record_own(&mut self, event: &Event, decisions: &[Decision]) {
        let any = decisions.iter().any(|d| {
            matches!(
                d,
                Decision::PostComment { system: true, .. } | Decision::CreateIssue { .. }
            )
        });
        if !any {
            return;
        }
        for m in mints(event, decisions) {
            match m {
                Mint::Task { .. } => {}
                Mint::Comment { id, issue } => self
                    .own_comments
                    .entry(issue)
                    .or_default()
                    .push(Own { id, taken: false }),
                Mint::Issue { id, autopilot } => self
                    .own_issues
                    .entry(autopilot)
                    .or_default()
                    .push(Own { id, taken: false }),
            }
        }
    }

    /// The issue of a task the recorded run minted, as far as this run has learnt (for the
    /// decision log of a skipped event).
    pub(crate) fn recorded_issue(&self, t: &TaskId) -> Option<&IssueId> {
        let r = self.ref_tasks.get(task_seq(t)?)?.as_ref()?;
        (&r.id == t).then_some(r.issue.as_ref()).flatten()
    }

    /// Reads what the recorded run published; with `wait`, first waits until it has decided
    /// `index` events (or stopped).
    fn pull(&mut self, index: usize, wait: bool) -> Result<(), Aborted> {
        let mut s = self.log.lock();
        while wait && s.state == State::Running && s.events_done < index {
            s = self.log.cv.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        if s.state == State::Failed {
            return Err(Aborted);
        }
        for m in &s.mints[self.read..] {
            match m {
                Mint::Task {
                    id,
                    agent,
                    issue,
                    deferred,
                } => {
                    if let Some(n) = task_seq(id) {
                        *slot(&mut self.ref_tasks, n) = Some(RefTask {
                            id: id.clone(),
                            agent: agent.clone(),
                            issue: issue.clone(),
                            deferred: *deferred,
                        });
                    }
                }
                Mint::Comment { id, issue } => {
                    self.ref_comments.insert(id.clone(), issue.clone());
                }
                Mint::Issue { id, autopilot } => {
                    self.ref_issues.insert(id.clone(), autopilot.clone());
                }
            }
        }
        self.read = s.mints.len();
        self.covered = s.events_done;
        self.finished = s.state == State::Finished;
        Ok(())
    }

    /// Whether the recorded run may still publish a mint made before event `index`.
    fn more_before(&self, index: usize) -> bool {
        !self.finished && self.covered < index
    }

    /// What `find` reads from the recorded run's mints, pulling more while the recorded run may
    /// still publish one made before event `index`: `None` when it never will.
    fn await_ref<V>(
        &mut self,
        index: usize,
        find: impl Fn(&Self) -> Option<V>,
    ) -> Result<Option<V>, Aborted> {
        loop {
            if let Some(v) = find(self) {
                return Ok(Some(v));
            }
            if !self.more_before(index) {
                return Ok(None);
            }
            self.pull(index, true)?;
        }
    }

    /// The recorded run's task behind a trace id: `None` when the id is not one the engine
    /// minted (a task the trace defines).
    fn ref_task(&mut self, t: &TaskId, index: usize) -> Result<Option<(usize, RefTask)>, Aborted> {
        let Some(n) = task_seq(t) else {
            return Ok(None);
        };
        self.await_ref(index, |s| match s.ref_tasks.get(n) {
            Some(Some(r)) if &r.id == t => Some((n, r.clone())),
            _ => None,
        })
    }

    fn ref_comment(&mut self, c: &CommentId, index: usize) -> Result<Option<IssueId>, Aborted> {
        self.await_ref(index, |s| s.ref_comments.get(c).cloned())
    }

    fn ref_issue(&mut self, i: &IssueId, index: usize) -> Result<Option<AutopilotId>, Aborted> {
        self.await_ref(index, |s| s.ref_issues.get(i).cloned())
    }

    /// A task id of event `index`. `fire`: the event makes a task due (`task_status` to
    /// `queued`): the recorded run's deferred tasks are fired by the trace, this run's by the
    /// simulation's scheduler, so such an event is skipped.
    fn task(
        &mut self,
        t: &TaskId,
        index: usize,
        dir: &dyn Directory,
        fire: bool,
    ) -> Result<To<TaskId>, Aborted> {
        if let Some(n) = task_seq(t)
            && let Some(Some(u)) = self.alias_tasks.get(n)
        {
            // Already matched (a fire of a deferred task is still the scheduler's).
            if fire
                && self
                    .ref_tasks
                    .get(n)
                    .and_then(Option::as_ref)
                    .is_some_and(|r| r.deferred)
            {
                return Ok(To::Skip);
            }
            return Ok(if u == t { To::Same } else { To::Id(u.clone()) });
        }
        let Some((n, r)) = self.ref_task(t, index)? else {
            // Not minted: a task the trace defines, the same in every run.
            return Ok(To::Same);
        };
        if fire && r.deferred {
            return Ok(To::Skip);
        }
        let Some(issue) = &r.issue else {
            return Ok(To::Skip);
        };
        let free = |this: &Self, id: &TaskId| {
            task_seq(id).is_none_or(|k| !this.taken_tasks.get(k).copied().unwrap_or(false))
        };
        // The same id, when this run minted it for the same agent and issue; else the oldest
        // unfinished task of that agent on that issue that nothing stands for yet and that is
        // not waiting (deferred).
        let same = dir.task(t).is_some_and(|x| {
            x.agent_id == r.agent
                && x.issue_id.as_ref() == Some(issue)
                && x.status != TaskStatus::Deferred
        }) && free(self, t);
        let found = if same {
            Some(t.clone())
        } else {
            dir.active_tasks(issue)
                .into_iter()
                .find(|x| {
                    x.agent_id == r.agent && x.status != TaskStatus::Deferred && free(self, &x.id)
                })
                .map(|x| x.id.clone())
        };
        Ok(match found {
            Some(u) => {
                if let Some(k) = task_seq(&u) {
                    *slot(&mut self.taken_tasks, k) = true;
                }
                *slot(&mut self.alias_tasks, n) = Some(u.clone());
                if &u == t { To::Same } else { To::Id(u) }
            }
            None => To::Skip,
        })
    }

    fn comment(&mut self, c: &CommentId, index: usize) -> Result<To<CommentId>, Aborted> {
        let Some(issue) = self.ref_comment(c, index)? else {
            return Ok(To::Same);
        };
        Ok(claim(
            &mut self.alias_comments,
            self.own_comments.get_mut(&issue),
            c,
        ))
    }

    fn issue(&mut self, i: &IssueId, index: usize) -> Result<To<IssueId>, Aborted> {
        let Some(autopilot) = self.ref_issue(i, index)? else {
            return Ok(To::Same);
        };
        Ok(claim(
            &mut self.alias_issues,
            self.own_issues.get_mut(&autopilot),
            i,
        ))
    }

    /// Event `index` with the trace's minted ids replaced by this run's: `Same` when nothing
    /// changes (the common case: the runs agree until their decisions differ), `Skip` when an
    /// id stands for nothing in this run (the work of a wake this policy did not make).
    pub(crate) fn event(
        &mut self,
        event: &Event,
        index: usize,
        dir: &dyn Directory,
    ) -> Result<To<Event>, Aborted> {
        let mut ids = Ids {
            t: self,
            index,
            dir,
            changed: false,
            skip: false,
        };
        let out = match event {
            Event::CreateIssue(e) => {
                let task_id = ids.opt_task(e.task_id.as_ref())?;
                let parent_issue_id = ids.opt_issue(e.parent_issue_id.as_ref())?;
                ids.done(|| {
                    Event::CreateIssue(CreateIssue {
                        task_id,
                        parent_issue_id,
                        ..e.clone()
                    })
                })
            }
            Event::UpdateIssue(e) => {
                let task_id = ids.opt_task(e.task_id.as_ref())?;
                let issue_id = ids.issue(&e.issue_id)?;
                ids.done(|| {
                    Event::UpdateIssue(UpdateIssue {
                        task_id,
                        issue_id,
                        ..e.clone()
                    })
                })
            }
            Event::BatchUpdate(e) => {
                let task_id = ids.opt_task(e.task_id.as_ref())?;
                let mut issue_ids = Vec::with_capacity(e.issue_ids.len());
                for i in &e.issue_ids {
                    issue_ids.push(ids.issue(i)?);
                }
                ids.done(|| {
                    Event::BatchUpdate(BatchUpdate {
                        task_id,
                        issue_ids,
                        ..e.clone()
                    })
                })
            }
            Event::DeleteIssue(e) => {
                let issue_id = ids.issue(&e.issue_id)?;
                ids.done(|| {
                    Event::DeleteIssue(DeleteIssue {
                        issue_id,
                        ..e.clone()
                    })
                })
            }
            Event::Comment(e) => {
                let task_id = ids.opt_task(e.task_id.as_ref())?;
                let issue_id = ids.issue(&e.issue_id)?;
                let parent_id = match &e.parent_id {
                    Some(c) => Some(ids.comment(c)?),
                    None => None,
                };
                ids.done(|| {
                    Event::Comment(PostComment {
                        task_id,
                        issue_id,
                        parent_id,
                        ..e.clone()
                    })
                })
            }
            Event::SaveAutopilot(e) => {
                let task_id = ids.opt_task(e.task_id.as_ref())?;
                ids.done(|| {
                    Event::SaveAutopilot(SaveAutopilot {
                        task_id,
                        ..e.clone()
                    })
                })
            }
            Event::RecordEvaluation(e) => {
                // The task id is text here, in any case: keep the text unless the id changes.
                let task_id = match &e.task_id {
                    Some(text) => match TaskId::new(text.to_ascii_lowercase()) {
                        Ok(t) => {
                            let u = ids.task(&t, false)?;
                            Some(if u == t {
                                text.clone()
                            } else {
                                u.as_str().to_owned()
                            })
                        }
                        Err(_) => Some(text.clone()),
                    },
                    None => None,
                };
                let issue_id = ids.issue(&e.issue_id)?;
                ids.done(|| {
                    Event::RecordEvaluation(RecordEvaluation {
                        task_id,
                        issue_id,
                        ..e.clone()
                    })
                })
            }
            Event::TaskStatus(e) => {
                let fire = e.status == TaskStatus::Queued;
                let task_id = ids.task(&e.task_id, fire)?;
                ids.done(|| {
                    Event::TaskStatus(SetTaskStatus {
                        task_id,
                        ..e.clone()
                    })
                })
            }
            Event::Claim(e) => {
                let task_id = ids.task(&e.task_id, false)?;
                ids.done(|| Event::Claim(ClaimTask { task_id }))
            }
            _ => To::Same,
        };
        Ok(out)
    }
}

/// The ids of one event being translated.
struct Ids<'t, 'a> {
    t: &'t mut Translator<'a>,
    index: usize,
    dir: &'t dyn Directory,
    changed: bool,
    skip: bool,
}

impl Ids<'_, '_> {
    /// The id a translation gives `id`, noting whether the event changed or is skipped.
    fn take<T: Clone>(&mut self, id: &T, to: To<T>) -> T {
        match to {
            To::Same => id.clone(),
            To::Id(u) => {
                self.changed = true;
                u
            }
            To::Skip => {
                self.skip = true;
                id.clone()
            }
        }
    }

    fn task(&mut self, id: &TaskId, fire: bool) -> Result<TaskId, Aborted> {
        let to = self.t.task(id, self.index, self.dir, fire)?;
        Ok(self.take(id, to))
    }

    fn opt_task(&mut self, id: Option<&TaskId>) -> Result<Option<TaskId>, Aborted> {
        id.map(|t| self.task(t, false)).transpose()
    }

    fn comment(&mut self, id: &CommentId) -> Result<CommentId, Aborted> {
        let to = self.t.comment(id, self.index)?;
        Ok(self.take(id, to))
    }

    fn issue(&mut self, id: &IssueId) -> Result<IssueId, Aborted> {
        let to = self.t.issue(id, self.index)?;
        Ok(self.take(id, to))
    }

    fn opt_issue(&mut self, id: Option<&IssueId>) -> Result<Option<IssueId>, Aborted> {
        id.map(|i| self.issue(i)).transpose()
    }

    fn done(&self, build: impl FnOnce() -> Event) -> To<Event> {
        if self.skip {
            To::Skip
        } else if self.changed {
            To::Id(build())
        } else {
            To::Same
        }
    }
}

/// The principal acting in an event, when it names one.
pub(crate) fn actor(event: &Event) -> Option<&Principal> {
    match event {
        Event::CreateIssue(e) => Some(&e.actor),
        Event::UpdateIssue(e) => Some(&e.actor),
        Event::BatchUpdate(e) => Some(&e.actor),
        Event::DeleteIssue(e) => Some(&e.actor),
        Event::Comment(e) => Some(&e.author),
        Event::SaveAutopilot(e) => Some(&e.actor),
        _ => None,
    }
}

/// The task an event names (the request's task, or the task it acts on).
pub(crate) fn event_task(event: &Event) -> Option<&TaskId> {
    match event {
        Event::CreateIssue(e) => e.task_id.as_ref(),
        Event::UpdateIssue(e) => e.task_id.as_ref(),
        Event::BatchUpdate(e) => e.task_id.as_ref(),
        Event::Comment(e) => e.task_id.as_ref(),
        Event::SaveAutopilot(e) => e.task_id.as_ref(),
        Event::TaskStatus(e) => Some(&e.task_id),
        Event::Claim(e) => Some(&e.task_id),
        _ => None,
    }
}

/// The issue an event is about, when it names one.
pub(crate) fn event_issue(event: &Event) -> Option<&IssueId> {
    match event {
        Event::CreateIssue(e) => Some(&e.issue_id),
        Event::UpdateIssue(e) => Some(&e.issue_id),
        Event::DeleteIssue(e) => Some(&e.issue_id),
        Event::Comment(e) => Some(&e.issue_id),
        Event::RecordEvaluation(e) => Some(&e.issue_id),
        _ => None,
    }
}
