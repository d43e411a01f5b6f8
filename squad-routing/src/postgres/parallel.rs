//! [`replay_parallel`]: one trace, many workers, one database.
//!
//! # Which events may run at once
//!
//! Every event gets a set of keys before any runs: the roots (top ancestors) of the issues it acts
//! on, so that an issue, its children and its parent share one key. A task or comment an event
//! names adds the keys of the event that created it (its position is in its id) or, for one the
//! database or the trace's entities hold, the root of its issue. Squad, member, agent, autopilot
//! and quick-create events, and events naming a task whose issue cannot be told, are barriers.
//!
//! The scheduler walks the events in trace order with a window of [`WINDOW`] events: an event
//! starts when no running event and no earlier waiting event shares a key with it; a barrier
//! starts only when nothing runs and nothing before it waits, and nothing after it starts until it
//! is done. So every two events that share a key run in trace order, and each barrier sees every
//! earlier event done and no later one started.

use std::collections::{HashMap, HashSet};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use squad_model::{IssueId, Timestamp};

use super::{Ahead, Handled, PostgresDirectory, storage};
use crate::engine::Engine;
use crate::error::{Error, ErrorKind, Result};
use crate::event::Event;
use crate::trace::{MINTED_KINDS, Order, TraceLine, default_clock, load_entity, parse_line};

/// How many events ahead of the oldest waiting one the scheduler looks for one it may start.
pub const WINDOW: usize = 256;

/// The most workers a replay may use.
pub const MAX_WORKERS: usize = 256;

/// What [`replay_parallel`] did.
#[derive(Debug, Clone, PartialEq)]
pub struct ParallelReplay {
    /// One decision line per event, in trace order (the same lines whatever the number of
    /// workers).
    pub outputs: Vec<String>,
    /// The workers.
    pub workers: usize,
    /// The events in the trace.
    pub events: usize,
    /// Of those, the events an earlier run of the same trace had handled (nothing was done for
    /// them again).
    pub already: usize,
    /// Transactions run again after a serialization failure or deadlock.
    pub retries: u64,
    /// Events that ran as barriers (alone).
    pub barriers: usize,
    /// Wall-clock seconds, from the first connection to the last commit.
    pub seconds: f64,
    /// The trace's epoch in this database (its minted ids carry it).
    pub epoch: u16,
    /// Round trips the workers made to the server, for the events (the trace's entities and the
    /// scheduler's own queries aside): see [`PostgresDirectory::round_trips`].
    pub round_trips: u64,
}

impl ParallelReplay {
    /// Events per second.
    pub fn events_per_second(&self) -> f64 {
        if self.seconds > 0.0 {
            self.events as f64 / self.seconds
        } else {
            0.0
        }
    }

    /// The one-line summary `--stats` prints.
    pub fn stats_line(&self) -> String {
        format!(
            "route replay: workers {}, events {}, seconds {:.3}, events per second {:.0} \
             (retried {}, barriers {}, already handled {}, round trips per event {:.2})",
            self.workers,
            self.events,
            self.seconds,
            self.events_per_second(),
            self.retries,
            self.barriers,
            self.already,
            if self.events > 0 {
                self.round_trips as f64 / self.events as f64
            } else {
                0.0
            }
        )
    }
}

/// An event's keys: the issue roots it touches, or a barrier.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Keys {
    Barrier,
    Set(Vec<u32>),
}

impl Keys {
    fn merge(self, other: Keys) -> Keys {
        match (self, other) {
            (Keys::Set(mut a), Keys::Set(b)) => {
                for k in b {
                    if !a.contains(&k) {
                        a.push(k);
                    }
                }
                Keys::Set(a)
            }
            _ => Keys::Barrier,
        }
    }
}

/// The 1-based event index whose transaction minted `id` in this epoch, when `id` is a minted
/// position id.
fn minted_by(id: &str, epoch: u16) -> Option<u64> {
    let b = id.as_bytes();
    if b.len() != 36 || !MINTED_KINDS.contains(&id.get(..8)?) || id.get(13..24)? != "-4000-8000-" {
        return None;
    }
    let e = u16::from_str_radix(id.get(9..13)?, 16).ok()?;
    let tail = u64::from_str_radix(id.get(24..)?, 16).ok()?;
    (e == epoch).then_some(tail >> 16)
}

/// Computes the keys of every event (see the module documentation).
struct Keyer {
    epoch: u16,
    parent: HashMap<String, String>,
    task_issue: HashMap<String, Option<String>>,
    comment_issue: HashMap<String, String>,
    interned: HashMap<String, u32>,
    keys: Vec<Keys>,
}

impl Keyer {
    fn root(&mut self, issue: &str) -> u32 {
        let mut cur = issue;
        // A parent chain is short; a cycle (impossible through the engine) stops here.
        for _ in 0..10_000 {
            match self.parent.get(cur) {
                Some(p) if p != cur => cur = p,
                _ => break,
            }
        }
        let next = u32::try_from(self.interned.len()).unwrap_or(u32::MAX);
        *self.interned.entry(cur.to_owned()).or_insert(next)
    }

    fn issue(&mut self, issue: &IssueId) -> Keys {
        Keys::Set(vec![self.root(issue.as_str())])
    }

    /// The keys of a task an event names.
    fn task(&mut self, id: &str, index: usize) -> Keys {
        if let Some(by) = minted_by(id, self.epoch)
            && by >= 1
            && (by as usize) <= index
        {
            return self.keys[by as usize - 1].clone();
        }
        match self.task_issue.get(id).cloned() {
            Some(Some(issue)) => Keys::Set(vec![self.root(&issue)]),
            _ => Keys::Barrier,
        }
    }

    /// The keys of a comment an event names (none when unknown: it is then not read).
    fn comment(&mut self, id: &str, index: usize) -> Keys {
        if let Some(by) = minted_by(id, self.epoch)
            && by >= 1
            && (by as usize) <= index
        {
            return self.keys[by as usize - 1].clone();
        }
        match self.comment_issue.get(id).cloned() {
            Some(issue) => Keys::Set(vec![self.root(&issue)]),
            None => Keys::Set(Vec::new()),
        }
    }

    fn task_opt(&mut self, id: Option<&squad_model::TaskId>, index: usize) -> Keys {
        id.map_or(Keys::Set(Vec::new()), |t| self.task(t.as_str(), index))
    }

    /// The keys of the event at 0-based `index` (every earlier event's keys are known).
    fn event(&mut self, index: usize, event: &Event) -> Keys {
        match event {
            Event::CreateIssue(e) => {
                if let Some(p) = &e.parent_issue_id {
                    self.parent
                        .insert(e.issue_id.as_str().to_owned(), p.as_str().to_owned());
                }
                let own = self.issue(&e.issue_id);
                own.merge(self.task_opt(e.task_id.as_ref(), index))
            }
            Event::UpdateIssue(e) => {
                let own = self.issue(&e.issue_id);
                own.merge(self.task_opt(e.task_id.as_ref(), index))
            }
            Event::BatchUpdate(e) => {
                let mut keys = self.task_opt(e.task_id.as_ref(), index);
                for i in &e.issue_ids {
                    let k = self.issue(i);
                    keys = keys.merge(k);
                }
                keys
            }
            Event::DeleteIssue(e) => self.issue(&e.issue_id),
            Event::Comment(e) => {
                self.comment_issue.insert(
                    e.comment_id.as_str().to_owned(),
                    e.issue_id.as_str().to_owned(),
                );
                let mut keys = self.issue(&e.issue_id);
                keys = keys.merge(self.task_opt(e.task_id.as_ref(), index));
                if let Some(p) = &e.parent_id {
                    keys = keys.merge(self.comment(p.as_str(), index));
                }
                keys
            }
            Event::RecordEvaluation(e) => {
                let own = self.issue(&e.issue_id);
                match &e.task_id {
                    Some(t) => own.merge(self.task(t, index)),
                    None => own,
                }
            }
            Event::TaskStatus(e) => self.task(e.task_id.as_str(), index),
            Event::Claim(e) => self.task(e.task_id.as_str(), index),
            // Squads, members, agents, autopilots and quick-create act across issues.
            _ => Keys::Barrier,
        }
    }
}

/// A stable digest of the trace (two FNV-1a passes and the length), naming it in
/// `squad_replays`.
fn digest(lines: &[&str]) -> String {
    let mut a: u64 = 0xcbf2_9ce4_8422_2325;
    let mut b: u64 = 0x84222325_cbf29ce4;
    let mut len: u64 = 0;
    for line in lines {
        for &byte in line.as_bytes().iter().chain(std::iter::once(&b'\n')) {
            a = (a ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3);
            b = (b ^ u64::from(byte))
                .wrapping_mul(0x0000_0100_0000_01b3)
                .rotate_left(5);
            len += 1;
        }
    }
    format!("{a:016x}{b:016x}-{len}")
}

/// One event for a worker.
struct Job {
    index: usize,
    position: u64,
    line: usize,
    at: Timestamp,
    event: Arc<Event>,
}

/// Replays the trace (its lines, as `squad route replay` reads them) into the PostgreSQL
/// database at `url` with `workers` connections. Entity records are loaded once per database (a
/// rerun of the same trace skips them, and every event already handled); each event is one
/// transaction ([`PostgresDirectory::handle_event`]), and ids derive from event positions.
///
/// # Errors
///
/// A trace error ([`ErrorKind::InvalidTrace`], [`ErrorKind::UnknownReference`], ...) with its
/// line: events before it, and some after it that ran at the same time, stay committed, and a
/// rerun of the corrected trace is a new trace. [`ErrorKind::Storage`] when the server cannot be
/// reached or its schema is not this build's (naming `squad route migrate`).
/// [`ErrorKind::OutOfRange`] for 0 or more than [`MAX_WORKERS`] workers, or more than 2^32 - 1
/// events.
pub fn replay_parallel(
    url: &str,
    engine: &Engine,
    lines: &[&str],
    workers: usize,
) -> Result<ParallelReplay> {
    if workers == 0 || workers > MAX_WORKERS {
        return Err(Error::new(
            ErrorKind::OutOfRange,
            format!("workers is {workers}, not between 1 and {MAX_WORKERS}"),
        ));
    }
    let start = Instant::now();
    // Parse and order-check every line first: a malformed trace changes nothing.
    let mut order = Order::default();
    let mut entities = Vec::new();
    let mut events: Vec<(usize, Timestamp, Arc<Event>)> = Vec::new();
    let mut clock = default_clock();
    for (i, line) in lines.iter().enumerate() {
        let n = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let record = parse_line(line).map_err(|e| e.at_line(n))?;
        order.check(&record).map_err(|e| e.at_line(n))?;
        match record {
            TraceLine::SchemaVersion { .. } => {}
            TraceLine::Event { at, event } => {
                if let Some(at) = at {
                    clock = at;
                }
                events.push((n, clock, Arc::new(event)));
            }
            other => entities.push((n, other)),
        }
    }
    if events.len() as u64 > crate::trace::MAX_POSITION {
        return Err(Error::new(
            ErrorKind::OutOfRange,
            "more events than position ids allow (2^32 - 1)",
        ));
    }
    let mut dir = PostgresDirectory::connect(url)?;
    let digest = digest(lines);
    let epoch = start_replay(&mut dir, &digest, &entities)?;

    // What the database already holds: parents, tasks' and comments' issues.
    let mut keyer = Keyer {
        epoch,
        parent: HashMap::new(),
        task_issue: HashMap::new(),
        comment_issue: HashMap::new(),
        interned: HashMap::new(),
        keys: Vec::with_capacity(events.len()),
    };
    {
        let client = dir.client_mut();
        for row in client
            .query(
                "SELECT id, parent_issue_id FROM issues WHERE parent_issue_id IS NOT NULL",
                &[],
            )
            .map_err(storage)?
        {
            keyer.parent.insert(row.get(0), row.get(1));
        }
        for row in client
            .query("SELECT id, issue_id FROM tasks", &[])
            .map_err(storage)?
        {
            keyer.task_issue.insert(row.get(0), row.get(1));
        }
        for row in client
            .query("SELECT id, record->>'issue_id' FROM comments", &[])
            .map_err(storage)?
        {
            let issue: Option<String> = row.get(1);
            if let Some(issue) = issue {
                keyer.comment_issue.insert(row.get(0), issue);
            }
        }
    }
    for (index, (_, _, event)) in events.iter().enumerate() {
        let k = keyer.event(index, event);
        keyer.keys.push(k);
    }
    let keys = keyer.keys;
    drop(dir);

    let (job_tx, job_rx) = mpsc::channel::<Job>();
    let job_rx = Arc::new(Mutex::new(job_rx));
    let (res_tx, res_rx) = mpsc::channel::<(usize, Result<Handled>)>();
    let mut handles = Vec::new();
    for _ in 0..workers {
        let job_rx = Arc::clone(&job_rx);
        let res_tx = res_tx.clone();
        let url = url.to_owned();
        let engine = engine.clone();
        handles.push(std::thread::spawn(move || {
            let mut dir = match PostgresDirectory::connect(&url).and_then(|mut d| {
                // The scheduler never runs two events of one issue tree at once: repeatable
                // read and the schema's constraints suffice, and durability may lag (a lost
                // commit loses its processed_events row too, and a rerun redoes it).
                d.set_isolation(super::Isolation::RepeatableRead);
                d.relax_durability()?;
                Ok(d)
            }) {
                Ok(d) => Some(d),
                Err(e) => {
                    let _ = res_tx.send((usize::MAX, Err(e)));
                    None
                }
            };
            loop {
                let trips = dir.as_ref().map_or(0, PostgresDirectory::round_trips);
                let job = match job_rx.lock() {
                    Ok(rx) => rx.recv(),
                    Err(_) => return trips,
                };
                let Ok(job) = job else {
                    return trips;
                };
                let r = match dir.as_mut() {
                    Some(d) => d.handle_event(&engine, job.position, job.line, job.at, &job.event),
                    None => Err(storage("this worker could not connect")),
                };
                if res_tx.send((job.index, r)).is_err() {
                    return trips;
                }
            }
        }));
    }
    drop(res_tx);

    let n = events.len();
    let mut outputs: Vec<Option<String>> = vec![None; n];
    let mut already = 0;
    let mut retries = 0u64;
    let barriers = keys.iter().filter(|k| **k == Keys::Barrier).count();
    let mut window: Vec<usize> = Vec::new();
    let mut next = 0;
    let mut running: HashMap<u32, usize> = HashMap::new();
    let mut running_count = 0;
    let mut running_barrier = false;
    let mut finished = 0;
    let mut first_error: Option<Error> = None;
    let base = u64::from(epoch) << 32;
    while finished < n {
        if first_error.is_none() {
            while window.len() < WINDOW && next < n {
                window.push(next);
                next += 1;
            }
            // Start what may start.
            let mut blocked: HashSet<u32> = HashSet::new();
            let mut started = Vec::new();
            for (w, &index) in window.iter().enumerate() {
                if running_count >= workers || running_barrier {
                    break;
                }
                let ok = match &keys[index] {
                    Keys::Barrier => w == 0 && running_count == 0,
                    Keys::Set(ks) => ks
                        .iter()
                        .all(|k| !running.contains_key(k) && !blocked.contains(k)),
                };
                if ok {
                    match &keys[index] {
                        Keys::Barrier => running_barrier = true,
                        Keys::Set(ks) => {
                            for k in ks {
                                *running.entry(*k).or_insert(0) += 1;
                            }
                        }
                    }
                    running_count += 1;
                    started.push(w);
                    let (line, at, event) = &events[index];
                    let job = Job {
                        index,
                        position: base | (index as u64 + 1),
                        line: *line,
                        at: *at,
                        event: Arc::clone(event),
                    };
                    if job_tx.send(job).is_err() {
                        first_error.get_or_insert_with(|| storage("the workers stopped"));
                        break;
                    }
                    if matches!(keys[index], Keys::Barrier) {
                        break;
                    }
                } else {
                    match &keys[index] {
                        // Nothing after a waiting barrier may start.
                        Keys::Barrier => break,
                        Keys::Set(ks) => blocked.extend(ks.iter().copied()),
                    }
                }
            }
            for w in started.into_iter().rev() {
                window.remove(w);
            }
        }
        if running_count == 0 {
            break;
        }
        let Ok((index, r)) = res_rx.recv() else {
            first_error.get_or_insert_with(|| storage("the workers stopped"));
            break;
        };
        if index == usize::MAX {
            // A worker could not connect: the others go on, but the replay reports it.
            if let Err(e) = r {
                first_error.get_or_insert(e);
            }
            continue;
        }
        running_count -= 1;
        match &keys[index] {
            Keys::Barrier => running_barrier = false,
            Keys::Set(ks) => {
                for k in ks {
                    if let Some(c) = running.get_mut(k) {
                        *c -= 1;
                        if *c == 0 {
                            running.remove(k);
                        }
                    }
                }
            }
        }
        finished += 1;
        match r {
            Ok(h) => {
                if h.already {
                    already += 1;
                }
                retries += u64::from(h.retries);
                outputs[index] = Some(h.output);
            }
            Err(e) => {
                // The first error in trace order is the one reported.
                let line = e.line().unwrap_or(usize::MAX);
                match &first_error {
                    Some(f) if f.line().unwrap_or(usize::MAX) <= line => {}
                    _ => first_error = Some(e),
                }
            }
        }
    }
    drop(job_tx);
    let mut round_trips = 0;
    for h in handles {
        round_trips += h.join().unwrap_or(0);
    }
    if let Some(e) = first_error {
        return Err(e);
    }
    let outputs: Vec<String> = outputs.into_iter().flatten().collect();
    if outputs.len() != n {
        return Err(storage("some events were not handled"));
    }
    Ok(ParallelReplay {
        outputs,
        workers,
        events: n,
        already,
        retries,
        barriers,
        seconds: start.elapsed().as_secs_f64(),
        epoch,
        round_trips,
    })
}

/// Finds or assigns the trace's epoch, and loads its entities once (one transaction).
fn start_replay(
    dir: &mut PostgresDirectory,
    digest: &str,
    entities: &[(usize, TraceLine)],
) -> Result<u16> {
    for _ in 0..1000 {
        dir.begin()?;
        let client = dir.client_mut();
        let step = (|| -> std::result::Result<(i32, bool), postgres::Error> {
            client.execute(
                "INSERT INTO squad_replays (epoch, digest) \
                 SELECT coalesce(max(epoch) + 1, 0), $1 FROM squad_replays \
                 ON CONFLICT (digest) DO NOTHING",
                &[&digest],
            )?;
            let row = client.query_one(
                "SELECT epoch, entities_loaded FROM squad_replays WHERE digest = $1",
                &[&digest],
            )?;
            Ok((row.get(0), row.get(1)))
        })();
        let (epoch, loaded) = match step {
            Ok(v) => v,
            Err(e) if super::is_retryable(&e) => {
                dir.rollback()?;
                continue;
            }
            Err(e) => {
                dir.rollback()?;
                return Err(storage(e));
            }
        };
        let epoch = u16::try_from(epoch)
            .map_err(|_| storage("the database holds 65536 replayed traces, the most it can"))?;
        if !loaded {
            // What the entities read (are they new? do their references exist?) in one round
            // trip, their writes in the commit's.
            if let Err(e) = dir.read_ahead(&Ahead::of_entities(entities.iter().map(|(_, r)| r))) {
                dir.rollback()?;
                if super::is_retryable(&e) {
                    continue;
                }
                return Err(storage(e));
            }
            dir.buffer_writes();
            for (line, record) in entities {
                if let Err(e) = load_entity(dir, record.clone()) {
                    let kept = dir.check();
                    dir.rollback()?;
                    kept?;
                    return Err(e.at_line(*line));
                }
            }
            dir.client_mut()
                .execute(
                    "UPDATE squad_replays SET entities_loaded = true WHERE digest = $1",
                    &[&digest],
                )
                .map_err(storage)?;
        }
        match dir.commit_kept() {
            Ok(()) => return Ok(epoch),
            Err(k) if k.retry => continue,
            Err(k) => return Err(storage(k.message)),
        }
    }
    Err(storage("could not register the trace: too many conflicts"))
}
