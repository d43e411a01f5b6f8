//! `state.json` and the write protocol that keeps it in step with `notifications.md`.
//!
//! The file is a JSON object. This crate owns two keys and keeps every other key as it found it:
//!
//! - `notify`: [`NotifySettings`], replace semantics, validated by the notify-state schema;
//! - `approval`: [`ApprovalState`]: the current run, the runs, the pending gates (`pendingGates`,
//!   at most one per run; an older file's single `pendingGate` is read into it and the next
//!   write stores the list), the last decided gates, the head of the `notifications.md` hash chain, the batch in
//!   progress and a detected tampering.
//!
//! Every file is reached through [`squad_fs::StateDir`]: paths stay inside the state
//! directory and no symbolic link below it is followed, so a link committed as
//! `.squad/notifications.md` can neither be read nor appended to.
//!
//! # Writing: check, then act, in batches
//!
//! A command holds the exclusive lock on `.state.lock` from its first read to its last write.
//! Under it, it reads and validates `state.json` and `notifications.md` *before* it sends
//! anything to a human or a remote service. Each change is then one batch:
//!
//! 1. `state.json` is replaced (temporary file, fsync, rename, fsync of the directory) with the
//!    new state, whose `approval.batch` holds the log text about to be appended and the length of
//!    the log before it;
//! 2. that text is appended to `notifications.md` in one `O_APPEND` write, fsynced;
//! 3. `state.json` is replaced again without `approval.batch`.
//!
//! A process killed anywhere in between leaves `state.json` old or new, never torn. The next
//! command (or [`crate::Approvals::fix`]) finds the batch and completes it: when the log holds
//! the bytes it had before plus a prefix of the batch's text (nothing, part, or all of it), the
//! rest is appended; the log is never rewritten. So a crash is never reported as tampering,
//! and a log entry never refers to a gate that `state.json` does not hold.
//!
//! Sending a ping is guarded the same way: before the channels are notified, the pending gate
//! is written with `approval.batch.notifying` naming it. A process killed while sending leaves a
//! gate that exists (so no ping refers to a missing gate); the next command appends an entry
//! saying the notification was interrupted and that it may not have arrived.
//!
//! Leftover temporary files of killed writers (`.state.json.tmp-<pid>-<n>`) are removed by the
//! next command under the lock, when no other writer of `state.json` can be between its two
//! steps.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use squad_fs::{Lock, StateDir};
use squad_model::{NotifySettings, Timestamp};

use crate::error::{Error, ErrorKind, Result};
use crate::gate::{Gate, GateId, RunId};
use crate::log::{LogEntry, MAX_LOG_BYTES, render_append, verify_log};

/// How many decided gates `approval.recent` keeps.
pub const RECENT_GATES: usize = 20;

/// The state file, relative to the state directory.
pub const STATE_FILE: &str = "state.json";
/// The audit log, relative to the state directory.
pub const LOG_FILE: &str = "notifications.md";
/// The lock file every writer of the two holds.
pub const LOCK_FILE: &str = ".state.lock";
/// Most bytes of `state.json` read (a larger file is refused as corrupt).
pub const MAX_STATE_BYTES: u64 = 16 * 1024 * 1024;

/// The prefix of the temporary files of `state.json` (see [`squad_fs::StateDir::write_atomic`]).
pub(crate) const STATE_TEMP_PREFIX: &str = ".state.json.tmp-";

/// The tampering found when `state.json` records log entries and the log is gone.
pub(crate) const LOG_MISSING: &str =
    "notifications.md is missing, yet state.json records entries in it";

/// One run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunRecord {
    /// The run id.
    pub id: RunId,
    /// When its first gate was requested.
    pub started: Timestamp,
    /// When `/stop` ended it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<Timestamp>,
    /// The gate whose `/approve-all` pre-approves the run's later impactful-action gates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approve_all: Option<GateId>,
}

/// A batch of changes in progress (see the module docs): written into `state.json` before
/// `notifications.md` is appended to, removed after.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Batch {
    /// What wrote it (`request`, `decide`, `acknowledge-tamper`, ...).
    pub op: String,
    /// The length of `notifications.md` in bytes before the batch.
    pub log_len_before: u64,
    /// The text appended to `notifications.md` after those bytes.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub append: String,
    /// The gate whose notification is being sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notifying: Option<GateId>,
}

impl Batch {
    /// How many bytes of [`Batch::append`] `log` already ends with, when `log` is the log
    /// before the batch followed by a prefix of what it appends; `None` when it is not (the
    /// batch cannot be completed from `log`).
    pub(crate) fn appended_in(&self, log: &[u8]) -> Option<usize> {
        let before = usize::try_from(self.log_len_before).unwrap_or(usize::MAX);
        let want = self.append.as_bytes();
        (log.len() >= before
            && log.len() <= before.saturating_add(want.len())
            && want.starts_with(&log[before..]))
        .then(|| log.len() - before)
    }
}

/// A tampering of `notifications.md` that was detected and not yet acknowledged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TamperRecord {
    /// When it was first detected.
    pub detected: Timestamp,
    /// What was found, in one sentence.
    pub problem: String,
}

/// The `approval` object of `state.json`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalState {
    /// The run that gates without `--run` belong to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_run: Option<RunId>,
    /// Every run seen, oldest first.
    #[serde(default)]
    pub runs: Vec<RunRecord>,
    /// The gates waiting for a decision, at most one per run, oldest first: a fresh process
    /// resumes here.
    #[serde(default)]
    pub pending_gates: Vec<Gate>,
    /// The single pending gate of the format before several runs could each have one: read,
    /// folded into `pending_gates` by [`StateDoc::from_json`], never written.
    #[serde(default, rename = "pendingGate", skip_serializing)]
    legacy_pending_gate: Option<Gate>,
    /// The gate the last `request` opened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_gate: Option<GateId>,
    /// The last decided gates, newest last (at most [`RECENT_GATES`]).
    #[serde(default)]
    pub recent: Vec<Gate>,
    /// SHA-256 of the last `notifications.md` entry (the hash chain's head).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_head: Option<String>,
    /// The batch in progress, present only while a command writes (or after it was killed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch: Option<Batch>,
    /// A detected tampering of `notifications.md`, until a human acknowledges it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tamper: Option<TamperRecord>,
    /// Unknown keys, kept.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ApprovalState {
    /// The record of `run`, if known.
    pub fn run(&self, run: &RunId) -> Option<&RunRecord> {
        self.runs.iter().find(|r| &r.id == run)
    }

    pub(crate) fn run_mut(&mut self, run: &RunId) -> Option<&mut RunRecord> {
        self.runs.iter_mut().find(|r| &r.id == run)
    }

    /// A gate by id: a pending one or a recent one.
    pub fn gate(&self, id: &GateId) -> Option<&Gate> {
        self.pending_gates
            .iter()
            .chain(self.recent.iter().rev())
            .find(|g| &g.id == id)
    }

    /// The pending gate of `run`, if it has one.
    pub fn pending_of(&self, run: &RunId) -> Option<&Gate> {
        self.pending_gates.iter().find(|g| &g.run == run)
    }

    /// The pending gate `id`, if it is pending.
    pub fn pending(&self, id: &GateId) -> Option<&Gate> {
        self.pending_gates.iter().find(|g| &g.id == id)
    }

    pub(crate) fn pending_mut(&mut self, id: &GateId) -> Option<&mut Gate> {
        self.pending_gates.iter_mut().find(|g| &g.id == id)
    }

    /// Removes the pending gate `id` and returns it.
    pub(crate) fn take_pending(&mut self, id: &GateId) -> Option<Gate> {
        let i = self.pending_gates.iter().position(|g| &g.id == id)?;
        Some(self.pending_gates.remove(i))
    }

    /// Stores `gate` as pending: replaces the pending gate with its id, else appends it.
    pub(crate) fn put_pending(&mut self, gate: Gate) {
        match self.pending_mut(&gate.id) {
            Some(g) => *g = gate,
            None => self.pending_gates.push(gate),
        }
    }

    /// Folds an older file's single `pendingGate` into `pending_gates`.
    fn upgrade(&mut self) {
        if let Some(g) = self.legacy_pending_gate.take()
            && self.pending(&g.id).is_none()
        {
            self.pending_gates.insert(0, g);
        }
    }

    pub(crate) fn push_recent(&mut self, gate: Gate) {
        self.recent.push(gate);
        let excess = self.recent.len().saturating_sub(RECENT_GATES);
        self.recent.drain(..excess);
    }
}

/// The whole `state.json` document: our two keys, typed, and every other key kept as is.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StateDoc {
    /// The `notify` object, if present.
    pub notify: Option<NotifySettings>,
    /// The `approval` object (empty when absent).
    pub approval: ApprovalState,
    /// Every other top-level key, in file order.
    pub other: Map<String, Value>,
}

impl StateDoc {
    /// Reads a document from JSON text, validating the `notify` object against its schema.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Corrupt`] when the text is not a JSON object, `notify` breaks its schema, or
    /// `approval` does not have its shape.
    pub fn from_json(text: &str) -> Result<Self> {
        let value: Value = serde_json::from_str(text).map_err(|e| {
            Error::corrupt("state.read", format!("state.json is not valid JSON: {e}"))
        })?;
        let Value::Object(mut map) = value else {
            return Err(Error::corrupt(
                "state.read",
                "state.json is not a JSON object",
            ));
        };
        let notify = match map.remove("notify") {
            None | Some(Value::Null) => None,
            Some(v) => Some(NotifySettings::from_value(v).map_err(|e| {
                Error::corrupt("state.read", format!("state.json `notify` is invalid: {e}"))
            })?),
        };
        let mut approval: ApprovalState = match map.remove("approval") {
            None | Some(Value::Null) => ApprovalState::default(),
            Some(v) => serde_json::from_value(v).map_err(|e| {
                Error::corrupt(
                    "state.read",
                    format!("state.json `approval` is invalid: {e}"),
                )
            })?,
        };
        approval.upgrade();
        Ok(Self {
            notify,
            approval,
            other: map,
        })
    }

    /// The document as pretty JSON text (other keys first, in their order, then `notify` and
    /// `approval`), with a final newline.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidInput`] when `notify` breaks its schema (nothing is produced).
    pub fn to_json(&self) -> Result<String> {
        let mut map = self.other.clone();
        if let Some(n) = &self.notify {
            let v = n.to_value();
            squad_model::schema::validate_notify(&v)?;
            map.insert("notify".to_owned(), v);
        }
        let approval = serde_json::to_value(&self.approval).map_err(|e| {
            Error::invalid(
                "state.write",
                format!("cannot encode the approval state: {e}"),
            )
        })?;
        map.insert("approval".to_owned(), approval);
        let mut text = serde_json::to_string_pretty(&Value::Object(map))
            .map_err(|e| Error::invalid("state.write", format!("cannot encode state.json: {e}")))?;
        text.push('\n');
        Ok(text)
    }
}

/// Reads `state.json` (an empty document when the file does not exist), without the lock.
///
/// # Errors
///
/// [`ErrorKind::Corrupt`] as [`StateDoc::from_json`], and when `state.json` (or the directory)
/// is a symbolic link, not a regular file, larger than [`MAX_STATE_BYTES`] or not UTF-8;
/// [`ErrorKind::Io`] when it cannot be read.
pub fn read(dir: &StateDir) -> Result<StateDoc> {
    match dir.read_capped(STATE_FILE, MAX_STATE_BYTES)? {
        None => Ok(StateDoc::default()),
        Some(bytes) => {
            let text = String::from_utf8(bytes)
                .map_err(|_| Error::corrupt("state.read", "state.json is not valid UTF-8"))?;
            StateDoc::from_json(&text)
        }
    }
}

/// Takes the exclusive lock of the state files (blocking until other processes release it;
/// released on drop and when the process dies), creating the directory when needed.
///
/// # Errors
///
/// [`ErrorKind::Io`] when the directory or the lock file cannot be created or locked;
/// [`ErrorKind::Corrupt`] when the lock file is a symbolic link.
pub fn lock(dir: &StateDir) -> Result<Lock> {
    Ok(dir.lock(LOCK_FILE)?)
}

/// Writes `state.json` atomically. Call it while holding [`lock`].
///
/// # Errors
///
/// [`ErrorKind::InvalidInput`] when the document does not validate; [`ErrorKind::Io`] when
/// writing fails; [`ErrorKind::Corrupt`] when `state.json` is a symbolic link. The file is
/// untouched in each case.
pub fn write(dir: &StateDir, doc: &StateDoc, lock: &Lock) -> Result<()> {
    let _ = lock;
    let text = doc.to_json()?;
    Ok(dir.write_atomic(STATE_FILE, text.as_bytes())?)
}

/// The temporary files of `state.json` in the state directory, with whether their writer runs.
///
/// # Errors
///
/// [`ErrorKind::Io`] when the directory cannot be read.
pub(crate) fn state_temp_files(dir: &StateDir) -> Result<Vec<squad_fs::TempFile>> {
    let mut out = Vec::new();
    for entry in dir.list_root()? {
        if entry.kind == squad_fs::EntryKind::File
            && entry.name.starts_with(STATE_TEMP_PREFIX)
            && let Some(pid) = squad_fs::temp_file_pid(&entry.name)
        {
            out.push(squad_fs::TempFile {
                path: PathBuf::from(&entry.name),
                pid,
                writer_alive: pid == std::process::id(),
            });
        }
    }
    Ok(out)
}

/// `notifications.md` as a command found it.
#[derive(Debug)]
pub(crate) enum LogFile {
    /// It does not exist.
    Missing,
    /// Its bytes.
    Bytes(Vec<u8>),
    /// It cannot be used: a symbolic link, a directory, too large, unreadable.
    Unusable(Error),
}

impl LogFile {
    fn read(dir: &StateDir) -> Result<Self> {
        match dir.read_capped(LOG_FILE, MAX_LOG_BYTES) {
            Ok(None) => Ok(Self::Missing),
            Ok(Some(bytes)) => Ok(Self::Bytes(bytes)),
            Err(e) if e.kind() == squad_fs::ErrorKind::Io => Err(e.into()),
            Err(e) => Ok(Self::Unusable(e.into())),
        }
    }

    fn bytes(&self) -> Option<&[u8]> {
        match self {
            Self::Missing => Some(&[]),
            Self::Bytes(b) => Some(b),
            Self::Unusable(_) => None,
        }
    }
}

/// One command's session on the state files: the lock, the state as read (with an interrupted
/// batch completed), and the log.
#[derive(Debug)]
pub(crate) struct Txn {
    dir: StateDir,
    lock: Lock,
    pub(crate) doc: StateDoc,
    log: LogFile,
    /// The gate whose notification is about to be sent: carried into every batch written until
    /// the channels were notified.
    pub(crate) notifying: Option<GateId>,
    /// What this session repaired on the way in (an interrupted batch completed).
    pub(crate) recovered: Vec<String>,
    /// Temporary files of killed writers that this session removed.
    pub(crate) swept: Vec<PathBuf>,
}

impl Txn {
    /// Takes the lock, removes leftover temporary files of `state.json`, reads and validates
    /// `state.json`, reads `notifications.md`, completes an interrupted batch, and records a
    /// tampering of the log it finds (persisted before anything else happens).
    pub(crate) fn begin(dir: &StateDir, now: Timestamp) -> Result<Self> {
        let lock = lock(dir)?;
        let mut swept = Vec::new();
        for t in state_temp_files(dir)? {
            // Under the lock no writer of state.json is between its two steps: every
            // temporary file of state.json belongs to a writer that was killed.
            if !t.writer_alive && dir.remove(&t.path)? {
                swept.push(t.path);
            }
        }
        let doc = read(dir)?;
        let log = LogFile::read(dir)?;
        let mut txn = Self {
            dir: dir.clone(),
            lock,
            doc,
            log,
            notifying: None,
            recovered: Vec::new(),
            swept,
        };
        txn.complete_batch()?;
        txn.detect_tampering(now)?;
        if txn.doc.approval.tamper.is_none() {
            txn.complete_notifying(now)?;
        }
        Ok(txn)
    }

    /// The log's text, for commands that append to it.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Corrupt`] when the log is unusable (a symbolic link, not UTF-8, ...).
    pub(crate) fn log_text(&self) -> Result<&str> {
        match &self.log {
            LogFile::Missing => Ok(""),
            LogFile::Bytes(b) => std::str::from_utf8(b).map_err(|e| {
                let line = 1 + b[..e.valid_up_to()].iter().filter(|c| **c == b'\n').count();
                Error::corrupt(
                    "log.read",
                    format!("notifications.md is not valid UTF-8 (line {line})"),
                )
            }),
            LogFile::Unusable(e) => Err(Error::new(ErrorKind::Corrupt, "log.read", e.message())),
        }
    }

    /// Whether the log file exists.
    pub(crate) fn log_exists(&self) -> bool {
        !matches!(self.log, LogFile::Missing)
    }

    /// Refuses when a tampering is recorded and not acknowledged.
    pub(crate) fn refuse_if_tampered(&self, op: &'static str) -> Result<()> {
        match &self.doc.approval.tamper {
            None => Ok(()),
            Some(t) => Err(Error::new(
                ErrorKind::Tampered,
                op,
                format!(
                    "notifications.md was tampered with (detected {}: {}); nothing is recorded until a human checks it and runs `squad approval acknowledge-tamper`",
                    t.detected, t.problem
                ),
            )),
        }
    }

    /// Writes `state.json` (with the notifying marker, if set).
    pub(crate) fn save(&mut self) -> Result<()> {
        self.doc.approval.batch = self.notifying.clone().map(|g| Batch {
            op: "request".to_owned(),
            log_len_before: self.log_len(),
            append: String::new(),
            notifying: Some(g),
        });
        write(&self.dir, &self.doc, &self.lock)
    }

    fn log_len(&self) -> u64 {
        self.log.bytes().map_or(0, |b| b.len() as u64)
    }

    /// Writes the state and appends `entries` as one batch (see the module docs).
    pub(crate) fn commit(&mut self, op: &str, entries: &[LogEntry]) -> Result<()> {
        if entries.is_empty() {
            return self.save();
        }
        let (append, head) = render_append(self.log_text()?, entries)?;
        self.commit_text(op, append, head)
    }

    /// Writes the state and appends `append` (ending in an entry whose hash is `head`).
    pub(crate) fn commit_text(&mut self, op: &str, append: String, head: String) -> Result<()> {
        let before = self.log_len();
        self.doc.approval.log_head = Some(head);
        self.doc.approval.batch = Some(Batch {
            op: op.to_owned(),
            log_len_before: before,
            append: append.clone(),
            notifying: self.notifying.clone(),
        });
        write(&self.dir, &self.doc, &self.lock)?;
        self.dir.append(LOG_FILE, append.as_bytes())?;
        let mut bytes = match std::mem::replace(&mut self.log, LogFile::Missing) {
            LogFile::Bytes(b) => b,
            _ => Vec::new(),
        };
        bytes.extend_from_slice(append.as_bytes());
        self.log = LogFile::Bytes(bytes);
        self.save()
    }

    /// Completes the log append of a batch a killed process left (see the module docs).
    fn complete_batch(&mut self) -> Result<()> {
        let Some(batch) = self.doc.approval.batch.clone() else {
            return Ok(());
        };
        let Some(bytes) = self.log.bytes() else {
            // The log cannot be read: nothing can be completed; the batch stays for later.
            return Ok(());
        };
        if batch.append.is_empty() {
            return Ok(());
        }
        let want = batch.append.as_bytes();
        self.notifying = batch.notifying.clone();
        if let Some(done) = batch.appended_in(bytes) {
            if done < want.len() {
                self.dir.append(LOG_FILE, &want[done..])?;
                let mut all = bytes.to_vec();
                all.extend_from_slice(&want[done..]);
                self.log = LogFile::Bytes(all);
                self.recovered.push(format!(
                    "completed the interrupted `{}`: appended {} of {} bytes to notifications.md",
                    batch.op,
                    want.len() - done,
                    want.len()
                ));
            } else {
                self.recovered.push(format!(
                    "finished the interrupted `{}` (notifications.md already held its entries)",
                    batch.op
                ));
            }
        }
        // When the log does not hold what the batch started from, it was changed by someone
        // else: the tampering check below reports it.
        self.save()
    }

    /// A notification that was being sent when its process was killed: the gate exists; an
    /// entry now says that the ping may not have arrived.
    pub(crate) fn complete_notifying(&mut self, now: Timestamp) -> Result<()> {
        let Some(gate_id) = self
            .doc
            .approval
            .batch
            .as_ref()
            .and_then(|b| b.notifying.clone())
            .or_else(|| self.notifying.clone())
        else {
            return Ok(());
        };
        self.notifying = None;
        let gate = self.doc.approval.pending(&gate_id).cloned();
        let Some(gate) = gate else {
            return self.save();
        };
        if self.log_text().is_err() {
            // The log cannot take the entry now; the marker stays until it can.
            self.notifying = Some(gate_id);
            return Ok(());
        }
        let entry = crate::approvals::gate_entry(
            &gate,
            squad_model::ChannelKind::InChat,
            "unknown (interrupted while notifying)",
            now,
        )
        .field(
            "Delivery",
            "interrupted: the squad process stopped while sending the notification; it may not have arrived",
        )
        .field("Resolved", "pending");
        self.commit("recover", &[entry])?;
        self.recovered.push(format!(
            "gate {} was being notified when its process stopped: recorded as interrupted",
            gate.id
        ));
        Ok(())
    }

    /// Verifies the log against the head in `state.json`; a failure is recorded in
    /// `approval.tamper` and written at once.
    fn detect_tampering(&mut self, now: Timestamp) -> Result<()> {
        let problem = match &self.log {
            LogFile::Unusable(_) => return Ok(()),
            LogFile::Missing => self
                .doc
                .approval
                .log_head
                .as_ref()
                .map(|_| LOG_MISSING.to_owned()),
            LogFile::Bytes(_) => match self.log_text() {
                Err(e) => Some(e.message().to_owned()),
                Ok(text) => verify_log(text, self.doc.approval.log_head.as_deref())
                    .err()
                    .map(|e| e.message().to_owned()),
            },
        };
        if let Some(problem) = problem
            && self.doc.approval.tamper.is_none()
        {
            self.doc.approval.tamper = Some(TamperRecord {
                detected: now,
                problem,
            });
            self.save()?;
        }
        Ok(())
    }
}
