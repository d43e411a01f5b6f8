//! Policy simulation: one trace replayed under several [`RoutingPolicy`]s, side by side, with
//! the metrics researchers compare (wakes, redundant wakes, wakes after the end, agent loops,
//! time to first wake, cost), a per-event diff of the decisions, and the decision log of one
//! issue. `squad route simulate` prints it.
//!
//! ```
//! use squad_routing::RoutingPolicy;
//! use squad_routing::generate::{generate, GenConfig};
//! use squad_routing::simulate::{simulate, NamedPolicy, SimOptions, Trace};
//!
//! let g = generate(&GenConfig { squads: 3, events: 200, ..GenConfig::default() }).unwrap();
//! let trace = Trace::from_generated(&g);
//! let policies = [
//!     NamedPolicy::new("default", RoutingPolicy::default()),
//!     NamedPolicy::new("era-c", RoutingPolicy { cancel_tasks_on_reassign: false, ..RoutingPolicy::default() }),
//! ];
//! let report = simulate(&trace, &policies, &SimOptions::default()).unwrap();
//! assert_eq!(report.policies.len(), 2);
//! assert!(report.policies[0].metrics.enqueued > 0);
//! assert_eq!(report.policies[0].metrics.events, 200);
//! ```
//!
//! # Recorded and counterfactual runs
//!
//! A trace names the tasks (and system comments, and autopilot issues) that the engine minted
//! when it was recorded, under some policy: the *reference* ([`SimOptions::reference`], the
//! default policy unless told otherwise). A policy equal to the reference replays the trace
//! exactly as `squad route replay` does: same decisions, same errors (a *recorded* run). Any
//! other policy is a *counterfactual* run, open-loop: the trace's events still happen at their
//! times, whatever the policy decided; and
//!
//! - a minted id is translated to the run's own record in the same place: the same agent's
//!   oldest task on the same issue that no other id stands for yet and that is neither waiting
//!   (deferred) nor finished, the system comment on the same issue, the issue of the same
//!   autopilot (what each minted id stood for is learnt from the recorded run, which runs
//!   alongside);
//! - an event whose id stands for nothing in this run (the work of a wake that this policy did
//!   not make: its claim, its comments, what it created), or that acts on something such an
//!   event would have created, is **skipped** and counted (`skipped_events`);
//! - deferred tasks (escalations, leader barriers) come due at their due time, by the
//!   simulation's own scheduler (`scheduler_fired`), not when the trace made the recorded run's
//!   deferred tasks due.
//!
//! In every run, deferred tasks still waiting when the trace ends come due after it, at their
//! due times (the trace is a window on a system that goes on), so that a wake a policy only
//! postponed is still counted.
//!
//! Each run is single-threaded and deterministic; the runs go on in parallel (one thread each,
//! [`std::thread::scope`]). A counterfactual run waits for the recorded run only when it needs an
//! id the recorded run has not minted yet; when no policy equals the reference, a hidden recorded
//! run serves them.

mod metrics;
mod translate;

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::hash::{BuildHasher, Hash, Hasher};

use foldhash::fast::FixedState;
use serde::Serialize;
use squad_model::{AgentId, IssueId, TaskId, TaskStatus, Timestamp};

use metrics::Collector;
pub use metrics::{Latency, Loop, MAX_LOOPS_LISTED, Metrics, Spread};
use translate::{Publisher, RefLog, To, Translator, event_issue, event_task};

use crate::apply::apply_drain;
use crate::decision::Decision;
use crate::directory::{Directory, InMemoryDirectory};
use crate::engine::{Decisions, Engine};
use crate::error::{Error, ErrorKind, Result};
use crate::event::{Event, SetTaskStatus};
use crate::generate::Generated;
use crate::policy::RoutingPolicy;
use crate::records::Principal;
use crate::trace::{Order, TraceLine, check_event, default_clock, load_entity, parse_line};

/// The most policies one simulation compares.
pub const MAX_POLICIES: usize = 16;

/// One event of a trace, with its line and time.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceEvent {
    /// The 1-based line.
    pub line: usize,
    /// Its time, if the line gives one (else the previous event's).
    pub at: Option<Timestamp>,
    /// The event.
    pub event: Event,
}

/// A whole trace in memory, parsed once and shared by the runs: its entity records and its
/// events, checked for order as [`Replay`](crate::Replay) checks them (the schema version first,
/// entities before events). References are checked when a run loads and replays it.
#[derive(Debug, Clone, Default)]
pub struct Trace {
    entities: Vec<(usize, TraceLine)>,
    events: Vec<TraceEvent>,
    lines: usize,
    order: Order,
}

impl Trace {
    /// An empty trace.
    pub fn new() -> Self {
        Self::default()
    }

    /// A generated trace.
    pub fn from_generated(g: &Generated) -> Self {
        let mut t = Self::new();
        t.lines = 1;
        t.order = Order::after(!g.events.is_empty());
        for e in &g.entities {
            t.lines += 1;
            t.entities.push((t.lines, e.clone()));
        }
        for (at, event) in &g.events {
            t.lines += 1;
            t.events.push(TraceEvent {
                line: t.lines,
                at: Some(*at),
                event: event.clone(),
            });
        }
        t
    }

    /// Adds the next line. Blank lines are counted and ignored.
    ///
    /// # Errors
    ///
    /// As [`Replay::feed_line`](crate::Replay::feed_line) for what a line alone can show: any
    /// [`parse_line`] error, a schema version that is not first, an entity after the first
    /// event; with the line number.
    pub fn push_line(&mut self, line: &str) -> Result<()> {
        self.lines += 1;
        if line.trim().is_empty() {
            return Ok(());
        }
        let n = self.lines;
        let record = parse_line(line).map_err(|e| e.at_line(n))?;
        self.add(record).map_err(|e| e.at_line(n))
    }

    /// Adds one parsed record as the next line.
    ///
    /// # Errors
    ///
    /// As [`push_line`](Self::push_line), without the line number.
    pub fn push(&mut self, record: TraceLine) -> Result<()> {
        self.lines += 1;
        self.add(record)
    }

    fn add(&mut self, record: TraceLine) -> Result<()> {
        self.order.check(&record)?;
        match record {
            TraceLine::SchemaVersion { .. } => {}
            TraceLine::Event { at, event } => self.events.push(TraceEvent {
                line: self.lines,
                at,
                event,
            }),
            entity => self.entities.push((self.lines, entity)),
        }
        Ok(())
    }

    /// The events.
    pub fn events(&self) -> &[TraceEvent] {
        &self.events
    }

    /// The number of entity records.
    pub fn entity_count(&self) -> usize {
        self.entities.len()
    }

    /// Whether the trace defines the issue (an entity record) or creates it (a `create_issue`
    /// event).
    pub fn has_issue(&self, id: &IssueId) -> bool {
        self.entities
            .iter()
            .any(|(_, e)| matches!(e, TraceLine::Issue(r) if &r.issue.id == id))
            || self
                .events
                .iter()
                .any(|e| matches!(&e.event, Event::CreateIssue(c) if &c.issue_id == id))
    }
}

/// A policy and the name a report gives it (`squad route simulate` uses the file's stem).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedPolicy {
    /// The name.
    pub name: String,
    /// The policy.
    pub policy: RoutingPolicy,
}

impl NamedPolicy {
    /// A named policy.
    pub fn new(name: impl Into<String>, policy: RoutingPolicy) -> Self {
        Self {
            name: name.into(),
            policy,
        }
    }
}

/// How to simulate.
#[derive(Debug, Clone, PartialEq)]
pub struct SimOptions {
    /// The policy the trace was recorded under (its minted ids are this policy's).
    pub reference: RoutingPolicy,
    /// The shortest chain of agent-triggered wakes reported as a loop (at least 1; default 4).
    pub loop_min: u32,
    /// The cost of one wake (default 1).
    pub task_cost: f64,
    /// Per-agent weights of the cost (default 1 for every agent).
    pub agent_weights: BTreeMap<AgentId, f64>,
    /// The issue whose decision log each run keeps ([`PolicyReport::explain`]).
    pub explain: Option<IssueId>,
    /// The most differing events [`Report::diff`] lists; 0 computes no diff.
    pub diff_limit: usize,
}

impl Default for SimOptions {
    fn default() -> Self {
        Self {
            reference: RoutingPolicy::default(),
            loop_min: 4,
            task_cost: 1.0,
            agent_weights: BTreeMap::new(),
            explain: None,
            diff_limit: 0,
        }
    }
}

/// One event in the decision log of an issue.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExplainEntry {
    /// The trace line; `null` for a deferred task the simulation's scheduler made due.
    pub line: Option<usize>,
    /// When.
    pub at: Timestamp,
    /// The event's type.
    pub event: &'static str,
    /// Who acted, when the event names someone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub by: Option<Principal>,
    /// The event was skipped in this (counterfactual) run.
    pub skipped: bool,
    /// The decisions, each with its rule.
    pub decisions: Vec<Decision>,
}

/// What one policy did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PolicyReport {
    /// The policy's name.
    pub name: String,
    /// `true` when the policy is not the reference (an open-loop run: see the module docs).
    pub counterfactual: bool,
    /// The metrics.
    pub metrics: Metrics,
    /// The decision log of [`SimOptions::explain`]'s issue.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explain: Option<Vec<ExplainEntry>>,
    /// The time of every wake, in order, in milliseconds since the Unix epoch (what the chart
    /// of cumulative wakes plots; see [`Timestamp::unix_millis`]).
    #[serde(skip)]
    pub wake_times: Vec<i64>,
}

/// One policy's side of a [`DiffEntry`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DiffSide {
    /// The policy's name.
    pub name: String,
    /// The event was skipped in this run.
    pub skipped: bool,
    /// The decisions.
    pub decisions: Vec<Decision>,
}

/// A trace event on which the policies decided differently.
///
/// Decisions are compared for what they mean, not for the ids the runs minted: two enqueues
/// are the same when they wake the same agent on the same issue, in the same role, for the same
/// reason; a cancel, a coalesce or a status change is compared by the agent of its task.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DiffEntry {
    /// The trace line.
    pub line: usize,
    /// The event's type.
    pub event: &'static str,
    /// Each policy's decisions.
    pub policies: Vec<DiffSide>,
}

/// The result of a simulation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// One report per policy, in the order given.
    pub policies: Vec<PolicyReport>,
    /// The first events on which the policies differ (empty unless
    /// [`SimOptions::diff_limit`] is positive).
    pub diff: Vec<DiffEntry>,
    /// The time of the trace's first event (where the chart's time axis starts).
    #[serde(skip)]
    pub start: Option<Timestamp>,
}

/// What a run decided for one event, as [`simulate_observed`] hands it to its observer.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Observation<'o> {
    /// The index of the policy in the list given.
    pub policy: usize,
    /// The trace line; `None` for a deferred task the simulation's scheduler made due.
    pub line: Option<usize>,
    /// When.
    pub at: Timestamp,
    /// The event as this run replayed it (minted ids translated), or as the trace has it when
    /// skipped.
    pub event: &'o Event,
    /// The run skipped the event (see the module docs); no decisions.
    pub skipped: bool,
    /// The decisions, before their effects are applied.
    pub decisions: &'o [Decision],
}

/// Replays `trace` once per policy, in parallel, and reports what each did.
///
/// # Errors
///
/// [`ErrorKind::OutOfRange`] for no policy or more than [`MAX_POLICIES`]; any error a replay of
/// the trace under the reference policy would give (an unknown reference, a duplicate id), with
/// its line.
pub fn simulate(trace: &Trace, policies: &[NamedPolicy], opts: &SimOptions) -> Result<Report> {
    simulate_observed(trace, policies, opts, &|_| {})
}

/// [`simulate`], calling `observer` with every event each run decides (from that run's thread,
/// in that run's order), for measures of one's own.
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use squad_routing::RoutingPolicy;
/// use squad_routing::generate::{generate, GenConfig};
/// use squad_routing::simulate::{simulate_observed, NamedPolicy, SimOptions, Trace};
///
/// let g = generate(&GenConfig { squads: 2, events: 50, ..GenConfig::default() }).unwrap();
/// let claims = AtomicUsize::new(0);
/// simulate_observed(
///     &Trace::from_generated(&g),
///     &[NamedPolicy::new("default", RoutingPolicy::default())],
///     &SimOptions::default(),
///     &|o| if o.event.kind() == "claim" { claims.fetch_add(1, Ordering::Relaxed); },
/// ).unwrap();
/// assert!(claims.into_inner() > 0);
/// ```
///
/// # Errors
///
/// As [`simulate`].
pub fn simulate_observed(
    trace: &Trace,
    policies: &[NamedPolicy],
    opts: &SimOptions,
    observer: &(dyn Fn(&Observation<'_>) + Sync),
) -> Result<Report> {
    if policies.is_empty() || policies.len() > MAX_POLICIES {
        return Err(Error::new(
            ErrorKind::OutOfRange,
            format!(
                "{} policies given: a simulation compares 1 to {MAX_POLICIES}",
                policies.len()
            ),
        ));
    }
    let log = RefLog::new();
    let producer = policies.iter().position(|p| p.policy == opts.reference);
    let needs_log = policies.iter().any(|p| p.policy != opts.reference);
    let specs: Vec<RunSpec<'_>> = policies
        .iter()
        .enumerate()
        .map(|(n, p)| RunSpec {
            index: n,
            observer,
            policy: &p.policy,
            role: if p.policy != opts.reference {
                Role::Counterfactual(&log)
            } else if needs_log && producer == Some(n) {
                Role::Recorded(Some(&log))
            } else {
                Role::Recorded(None)
            },
            opts,
            capture: &[],
            sigs: opts.diff_limit > 0 && policies.len() > 1,
            explain: opts.explain.is_some(),
        })
        .collect();
    // A hidden recorded run serves the counterfactual ones when no policy is the reference.
    let hidden = (needs_log && producer.is_none()).then_some(RunSpec {
        index: usize::MAX,
        observer: &|_| {},
        policy: &opts.reference,
        role: Role::Recorded(Some(&log)),
        opts,
        capture: &[],
        sigs: false,
        explain: false,
    });
    let (outs, hidden_out) = run_all(trace, &specs, hidden.as_ref());
    let outs = settle(outs, hidden_out)?;
    // The diff: the first events whose signatures differ, then a second pass that keeps the
    // decisions of just those events (the recorded run's mints are all known by now).
    let mut diff = Vec::new();
    if opts.diff_limit > 0 && outs.len() > 1 {
        let at: Vec<usize> = (0..trace.events.len())
            .filter(|&i| outs.iter().any(|o| o.sigs[i] != outs[0].sigs[i]))
            .take(opts.diff_limit)
            .collect();
        if !at.is_empty() {
            let specs2: Vec<RunSpec<'_>> = specs
                .iter()
                .map(|s| RunSpec {
                    observer: &|_| {},
                    capture: &at,
                    sigs: false,
                    explain: false,
                    role: match s.role {
                        Role::Recorded(_) => Role::Recorded(None),
                        r @ Role::Counterfactual(_) => r,
                    },
                    ..*s
                })
                .collect();
            let (outs2, _) = run_all(trace, &specs2, None);
            let outs2 = settle(outs2, None)?;
            for (k, &i) in at.iter().enumerate() {
                let ev = &trace.events[i];
                diff.push(DiffEntry {
                    line: ev.line,
                    event: ev.event.kind(),
                    policies: policies
                        .iter()
                        .zip(&outs2)
                        .map(|(p, o)| {
                            let captured = o.captured.get(k).cloned().flatten();
                            DiffSide {
                                name: p.name.clone(),
                                skipped: captured.is_none(),
                                decisions: captured.unwrap_or_default(),
                            }
                        })
                        .collect(),
                });
            }
        }
    }
    let start = trace
        .events
        .iter()
        .find_map(|e| e.at)
        .or(Some(default_clock()));
    Ok(Report {
        policies: policies
            .iter()
            .zip(outs)
            .map(|(p, o)| PolicyReport {
                name: p.name.clone(),
                counterfactual: p.policy != opts.reference,
                metrics: o.metrics,
                explain: opts.explain.as_ref().map(|_| o.explain),
                wake_times: o.wake_times,
            })
            .collect(),
        diff,
        start,
    })
}

/// The metrics as rows of (metric, value), for CSV: nested objects give dotted names
/// (`cancelled.reassigned`, `time_to_first_wake.p95`), the list of loops its length (`loops`),
/// `null` an empty value.
///
/// ```
/// use squad_routing::simulate::{metric_rows, Metrics};
///
/// let rows = metric_rows(&Metrics::default());
/// assert_eq!(rows[0], ("enqueued".to_owned(), "0".to_owned()));
/// assert!(rows.contains(&("time_to_first_wake.p50".to_owned(), String::new())));
/// assert!(rows.contains(&("loops".to_owned(), "0".to_owned())));
/// ```
pub fn metric_rows(m: &Metrics) -> Vec<(String, String)> {
    fn walk(prefix: &str, v: &serde_json::Value, out: &mut Vec<(String, String)>) {
        match v {
            serde_json::Value::Object(map) => {
                for (k, v) in map {
                    let name = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    walk(&name, v, out);
                }
            }
            serde_json::Value::Array(a) => out.push((prefix.to_owned(), a.len().to_string())),
            serde_json::Value::Null => out.push((prefix.to_owned(), String::new())),
            serde_json::Value::String(s) => out.push((prefix.to_owned(), s.clone())),
            other => out.push((prefix.to_owned(), other.to_string())),
        }
    }
    let mut out = Vec::new();
    if let Ok(v) = serde_json::to_value(m) {
        walk("", &v, &mut out);
    }
    out
}

#[derive(Debug, Clone, Copy)]
enum Role<'a> {
    /// The policy is the reference; publishes its mints when counterfactual runs need them.
    Recorded(Option<&'a RefLog>),
    /// Another policy: translates the trace's minted ids.
    Counterfactual(&'a RefLog),
}

#[derive(Clone, Copy)]
struct RunSpec<'a> {
    /// The policy's index (`usize::MAX` for the hidden recorded run).
    index: usize,
    observer: &'a (dyn Fn(&Observation<'_>) + Sync),
    policy: &'a RoutingPolicy,
    role: Role<'a>,
    opts: &'a SimOptions,
    /// Event indices (sorted) whose decisions to keep.
    capture: &'a [usize],
    /// Keep a signature per event (for the diff).
    sigs: bool,
    /// Keep the decision log of `opts.explain`.
    explain: bool,
}

#[derive(Debug)]
struct RunOut {
    metrics: Metrics,
    wake_times: Vec<i64>,
    explain: Vec<ExplainEntry>,
    sigs: Vec<u64>,
    /// Per captured index: the decisions, or `None` when skipped.
    captured: Vec<Option<Vec<Decision>>>,
}

#[derive(Debug)]
enum RunError {
    Trace(Error),
    Aborted,
}

type RunResult = std::result::Result<RunOut, RunError>;

/// Runs every spec (and the hidden one) on its own thread; one run alone stays on this thread.
fn run_all(
    trace: &Trace,
    specs: &[RunSpec<'_>],
    hidden: Option<&RunSpec<'_>>,
) -> (Vec<RunResult>, Option<RunResult>) {
    if specs.len() == 1 && hidden.is_none() {
        return (vec![run(trace, &specs[0])], None);
    }
    std::thread::scope(|s| {
        let hidden = hidden.map(|h| s.spawn(move || run(trace, h)));
        let handles: Vec<_> = specs
            .iter()
            .map(|spec| s.spawn(move || run(trace, spec)))
            .collect();
        let outs = handles
            .into_iter()
            .map(|h| h.join().unwrap_or(Err(RunError::Aborted)))
            .collect();
        let hidden = hidden.map(|h| h.join().unwrap_or(Err(RunError::Aborted)));
        (outs, hidden)
    })
}

/// The outputs, or the first trace error (a counterfactual run that stopped because the
/// recorded run failed reports the recorded run's error).
fn settle(outs: Vec<RunResult>, hidden: Option<RunResult>) -> Result<Vec<RunOut>> {
    let count = outs.len();
    let mut first_aborted = false;
    let mut ok = Vec::with_capacity(outs.len());
    let mut error = None;
    for (n, o) in outs.into_iter().chain(hidden).enumerate() {
        match o {
            Ok(o) if n < count => ok.push(o),
            Ok(_) => {}
            Err(RunError::Trace(e)) => {
                error.get_or_insert(e);
            }
            Err(RunError::Aborted) => first_aborted = true,
        }
    }
    if let Some(e) = error {
        return Err(e);
    }
    if first_aborted {
        return Err(Error::new(
            ErrorKind::InvalidTrace,
            "a simulation run stopped unexpectedly",
        ));
    }
    Ok(ok)
}

/// One run: the engine over the trace, with the metrics, the signatures, the decision log.
struct Runner<'t, 'a> {
    spec: &'t RunSpec<'a>,
    engine: Engine,
    dir: InMemoryDirectory,
    col: Collector,
    out: Decisions,
    translator: Option<Translator<'a>>,
    publisher: Option<Publisher<'a>>,
    /// This run's deferred tasks, by due time (counterfactual runs).
    due: BinaryHeap<Reverse<(Timestamp, u64, TaskId)>>,
    due_seq: u64,
    explain: Vec<ExplainEntry>,
    sigs: Vec<u64>,
    captured: Vec<Option<Vec<Decision>>>,
}

fn run(trace: &Trace, spec: &RunSpec<'_>) -> RunResult {
    let mut dir = InMemoryDirectory::new();
    let (translator, publisher) = match spec.role {
        Role::Recorded(log) => (None, log.map(Publisher::new)),
        Role::Counterfactual(log) => (Some(Translator::new(log)), None),
    };
    for (line, record) in &trace.entities {
        load_entity(&mut dir, record.clone()).map_err(|e| RunError::Trace(e.at_line(*line)))?;
    }
    let mut r = Runner {
        spec,
        engine: Engine::new(spec.policy.clone()),
        dir,
        col: Collector::new(
            spec.opts.loop_min,
            spec.opts.task_cost,
            &spec.opts.agent_weights,
        ),
        out: Decisions::default(),
        translator,
        publisher,
        due: BinaryHeap::new(),
        due_seq: 0,
        explain: Vec::new(),
        sigs: Vec::with_capacity(if spec.sigs { trace.events.len() } else { 0 }),
        captured: Vec::new(),
    };
    let last_capture = spec.capture.last().copied();
    let mut clock = default_clock();
    for (index, ev) in trace.events.iter().enumerate() {
        if last_capture.is_some_and(|l| index > l) {
            break;
        }
        if let Some(at) = ev.at {
            clock = at;
        }
        if r.translator.is_some() {
            r.fire_due(Some(clock));
        }
        r.event(index, ev, clock)?;
    }
    if last_capture.is_none() {
        r.fire_due(None);
    }
    if let Some(p) = r.publisher.take() {
        p.finish(trace.events.len());
    }
    let (metrics, wake_times) = r.col.finish();
    Ok(RunOut {
        metrics,
        wake_times,
        explain: r.explain,
        sigs: r.sigs,
        captured: r.captured,
    })
}

/// Signature of an event skipped in a counterfactual run.
const SKIPPED: u64 = 0x5c1f_fed0_5c1f_fed0;

impl Runner<'_, '_> {
    fn event(
        &mut self,
        index: usize,
        ev: &TraceEvent,
        clock: Timestamp,
    ) -> std::result::Result<(), RunError> {
        let translated;
        let event = match &mut self.translator {
            None => &ev.event,
            Some(t) => match t
                .event(&ev.event, index, &self.dir)
                .map_err(|_| RunError::Aborted)?
            {
                To::Same => &ev.event,
                To::Id(e) => {
                    translated = e;
                    &translated
                }
                To::Skip => {
                    self.skip(index, ev, clock);
                    return Ok(());
                }
            },
        };
        if let Err(e) = check_event(&self.dir, event) {
            if self.translator.is_some() {
                // Acts on something a skipped event would have created.
                self.skip(index, ev, clock);
                return Ok(());
            }
            return Err(RunError::Trace(e.at_line(ev.line)));
        }
        self.decide(Some(ev.line), clock, event);
        self.col.count_event(false);
        if self.spec.sigs {
            let sig = signature(&self.out.decisions, &self.dir, &self.col);
            self.sigs.push(sig);
        }
        if self.spec.capture.get(self.captured.len()) == Some(&index) {
            self.captured.push(Some(self.out.decisions.clone()));
        }
        if let Some(p) = &mut self.publisher {
            p.record(index, event, &self.out.decisions);
        }
        self.after(clock, event);
        Ok(())
    }

    /// Counts, logs and signs a skipped event.
    fn skip(&mut self, index: usize, ev: &TraceEvent, clock: Timestamp) {
        self.col.count_event(true);
        (self.spec.observer)(&Observation {
            policy: self.spec.index,
            line: Some(ev.line),
            at: clock,
            event: &ev.event,
            skipped: true,
            decisions: &[],
        });
        if self.spec.sigs {
            self.sigs.push(SKIPPED);
        }
        if self.spec.capture.get(self.captured.len()) == Some(&index) {
            self.captured.push(None);
        }
        if self.spec.explain
            && let Some(issue) = &self.spec.opts.explain
            && (event_issue(&ev.event) == Some(issue)
                || event_task(&ev.event).is_some_and(|t| {
                    self.translator.as_ref().and_then(|tr| tr.recorded_issue(t)) == Some(issue)
                }))
        {
            self.explain.push(ExplainEntry {
                line: Some(ev.line),
                at: clock,
                event: ev.event.kind(),
                by: translate::actor(&ev.event).cloned(),
                skipped: true,
                decisions: Vec::new(),
            });
        }
    }

    /// Bookkeeping after an event's decisions: this run's mints and deferred tasks, then the
    /// effects.
    fn after(&mut self, clock: Timestamp, event: &Event) {
        if let Some(t) = &mut self.translator {
            t.record_own(event, &self.out.decisions);
        }
        for d in &self.out.decisions {
            if let Decision::Enqueue {
                task,
                delay_seconds: Some(delay),
                ..
            } = d
            {
                self.due_seq += 1;
                let due = clock.plus_seconds(i64::from(*delay));
                self.due.push(Reverse((due, self.due_seq, task.id.clone())));
            }
        }
        apply_drain(&mut self.dir, &mut self.out);
    }

    /// Makes this run's deferred tasks due up to `until` (`None`: all of them, after the
    /// trace), at their due times, as the host's scheduler would.
    fn fire_due(&mut self, until: Option<Timestamp>) {
        while let Some(Reverse((due, _, _))) = self.due.peek() {
            if until.is_some_and(|u| *due > u) {
                break;
            }
            let Some(Reverse((due, _, task_id))) = self.due.pop() else {
                break;
            };
            if self
                .dir
                .task(&task_id)
                .is_none_or(|t| t.status != TaskStatus::Deferred)
            {
                continue;
            }
            let at = due;
            let event = Event::TaskStatus(SetTaskStatus {
                task_id,
                status: TaskStatus::Queued,
            });
            self.decide(None, at, &event);
            self.col.count_scheduler_fire();
            self.after(at, &event);
        }
    }

    /// Decides an event this run does not skip (`line`: `None` for a deferred task the
    /// scheduler made due) into `self.out`, and hands the decisions to the metrics, the observer
    /// and the decision log.
    fn decide(&mut self, line: Option<usize>, at: Timestamp, event: &Event) {
        self.engine.decide_into(&self.dir, at, event, &mut self.out);
        self.col.observe(&self.dir, at, event, &self.out.decisions);
        (self.spec.observer)(&Observation {
            policy: self.spec.index,
            line,
            at,
            event,
            skipped: false,
            decisions: &self.out.decisions,
        });
        if self.spec.explain {
            self.log(line, at, event);
        }
    }

    /// Keeps the (decided, not skipped) event in the decision log when it concerns the
    /// explained issue.
    fn log(&mut self, line: Option<usize>, at: Timestamp, event: &Event) {
        let Some(issue) = &self.spec.opts.explain else {
            return;
        };
        if concerns(issue, event, &self.out.decisions, &self.dir) {
            self.explain.push(ExplainEntry {
                line,
                at,
                event: event.kind(),
                by: translate::actor(event).cloned(),
                skipped: false,
                decisions: self.out.decisions.clone(),
            });
        }
    }
}

/// Whether an event or its decisions touch the issue.
fn concerns(issue: &IssueId, event: &Event, decisions: &[Decision], dir: &dyn Directory) -> bool {
    let task_on = |t: &TaskId| {
        dir.task(t).and_then(|t| t.issue_id.as_ref()) == Some(issue)
            || decisions.iter().any(|d| {
                matches!(d, Decision::Enqueue { task, .. }
                    if &task.id == t && task.issue_id.as_ref() == Some(issue))
            })
    };
    if event_issue(event) == Some(issue) || event_task(event).is_some_and(task_on) {
        return true;
    }
    match event {
        Event::BatchUpdate(b) if b.issue_ids.contains(issue) => return true,
        Event::CreateIssue(c) if c.parent_issue_id.as_ref() == Some(issue) => return true,
        _ => {}
    }
    decisions.iter().any(|d| match d {
        Decision::Enqueue { task, .. } => task.issue_id.as_ref() == Some(issue),
        Decision::PostComment { comment, .. } => &comment.issue_id == issue,
        Decision::UpdateIssue { issue_id, .. } | Decision::DeleteIssue { issue_id } => {
            issue_id == issue
        }
        Decision::CreateIssue { issue: i, .. } => {
            &i.id == issue || i.parent_issue_id.as_ref() == Some(issue)
        }
        Decision::Cancel { task_id, .. }
        | Decision::Coalesce { task_id, .. }
        | Decision::SetTaskStatus { task_id, .. }
        | Decision::Claim { task_id, .. } => task_on(task_id),
        _ => false,
    })
}

/// What an event's decisions mean, as a hash that does not depend on the ids a run minted.
fn signature(decisions: &[Decision], dir: &dyn Directory, col: &Collector) -> u64 {
    let mut h = FixedState::default().build_hasher();
    let agent_of = |t: &TaskId| -> Option<AgentId> {
        col.task_agent(t)
            .cloned()
            .or_else(|| dir.task(t).map(|t| t.agent_id.clone()))
    };
    decisions.len().hash(&mut h);
    for d in decisions {
        std::mem::discriminant(d).hash(&mut h);
        match d {
            Decision::Reject { code, message } => (code, message).hash(&mut h),
            Decision::Noop {
                reason,
                agent_id,
                rule,
            } => (reason, agent_id, rule).hash(&mut h),
            Decision::Enqueue {
                task,
                source,
                delay_seconds,
                rule,
            } => (
                &task.agent_id,
                &task.issue_id,
                task.is_leader_task,
                &task.squad_id,
                source,
                delay_seconds,
                rule,
            )
                .hash(&mut h),
            Decision::Coalesce {
                agent_id,
                comment_id,
                rule,
                ..
            } => (agent_id, comment_id, rule).hash(&mut h),
            Decision::Cancel {
                task_id,
                reason,
                rule,
            } => (agent_of(task_id), reason, rule).hash(&mut h),
            Decision::Mention {
                mention_type,
                mention_id,
                outcome,
                reason,
                rule,
            } => (mention_type, mention_id, outcome, reason, rule).hash(&mut h),
            Decision::PostComment { comment, system } => {
                (&comment.issue_id, &comment.author, system).hash(&mut h);
            }
            Decision::SetTaskStatus { task_id, status } => (agent_of(task_id), status).hash(&mut h),
            Decision::Claim {
                task_id,
                is_leader_task,
                squad_id,
                owns_issue_status,
                ..
            } => (
                agent_of(task_id),
                is_leader_task,
                squad_id,
                owns_issue_status,
            )
                .hash(&mut h),
            Decision::UpdateIssue {
                issue_id,
                status,
                assignee,
                ..
            } => (issue_id, status, assignee).hash(&mut h),
            _ => {}
        }
    }
    h.finish()
}
