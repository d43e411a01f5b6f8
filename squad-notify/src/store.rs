//! `state.json`: the `notify` object and the `approval` object, with atomic writes and a lock.
//!
//! The file is a JSON object. This crate owns two keys and keeps every other key as it found it:
//!
//! - `notify`: [`NotifySettings`], replace semantics, validated by the notify-state schema;
//! - `approval`: [`ApprovalState`]: the current run, the runs, the pending gate (`pendingGate`),
//!   the last decided gates and the head of the `notifications.md` hash chain.
//!
//! Writes go to a temporary file in the same directory, which is synced and renamed over
//! `state.json`, then the directory is synced: a reader (or a crash) sees the old file or the new
//! one, never a torn one. Read-modify-write cycles hold an exclusive lock on `.state.lock`, so
//! concurrent `squad` processes lose nothing.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use fs4::fs_std::FileExt;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use squad_model::{NotifySettings, Timestamp};

use crate::error::{Error, ErrorKind, Result};
use crate::gate::{Gate, GateId, RunId};

/// How many decided gates `approval.recent` keeps.
pub const RECENT_GATES: usize = 20;

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
    /// The gate waiting for a decision, if any: a fresh process resumes here.
    #[serde(default)]
    pub pending_gate: Option<Gate>,
    /// The gate the last `request` opened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_gate: Option<GateId>,
    /// The last decided gates, newest last (at most [`RECENT_GATES`]).
    #[serde(default)]
    pub recent: Vec<Gate>,
    /// SHA-256 of the last `notifications.md` entry (the hash chain's head).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_head: Option<String>,
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

    /// A gate by id: the pending one or a recent one.
    pub fn gate(&self, id: &GateId) -> Option<&Gate> {
        self.pending_gate
            .iter()
            .chain(self.recent.iter().rev())
            .find(|g| &g.id == id)
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
            Error::new(
                ErrorKind::Corrupt,
                "state.read",
                format!("state.json is not valid JSON: {e}"),
            )
        })?;
        let Value::Object(mut map) = value else {
            return Err(Error::new(
                ErrorKind::Corrupt,
                "state.read",
                "state.json is not a JSON object",
            ));
        };
        let notify = match map.remove("notify") {
            None | Some(Value::Null) => None,
            Some(v) => Some(NotifySettings::from_value(v).map_err(|e| {
                Error::new(
                    ErrorKind::Corrupt,
                    "state.read",
                    format!("state.json `notify` is invalid: {e}"),
                )
            })?),
        };
        let approval = match map.remove("approval") {
            None | Some(Value::Null) => ApprovalState::default(),
            Some(v) => serde_json::from_value(v).map_err(|e| {
                Error::new(
                    ErrorKind::Corrupt,
                    "state.read",
                    format!("state.json `approval` is invalid: {e}"),
                )
            })?,
        };
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
            Error::new(
                ErrorKind::InvalidInput,
                "state.write",
                format!("cannot encode the approval state: {e}"),
            )
        })?;
        map.insert("approval".to_owned(), approval);
        let mut text = serde_json::to_string_pretty(&Value::Object(map)).map_err(|e| {
            Error::new(
                ErrorKind::InvalidInput,
                "state.write",
                format!("cannot encode state.json: {e}"),
            )
        })?;
        text.push('\n');
        Ok(text)
    }
}

/// The squad state directory (`.squad/`): `state.json`, `notifications.md` and the lock file.
#[derive(Debug, Clone)]
pub struct StateDir {
    dir: PathBuf,
}

/// An exclusive lock on the state directory; released on drop.
#[derive(Debug)]
pub struct StateLock {
    file: File,
}

impl Drop for StateLock {
    fn drop(&mut self) {
        let _ = FileExt::unlock(&self.file);
    }
}

impl StateDir {
    /// The state directory at `dir` (created on first write).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// `<dir>/state.json`.
    pub fn state_path(&self) -> PathBuf {
        self.dir.join("state.json")
    }

    /// `<dir>/notifications.md`.
    pub fn log_path(&self) -> PathBuf {
        self.dir.join("notifications.md")
    }

    /// Takes the exclusive lock (blocking until other processes release it).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Io`] when the directory or the lock file cannot be created or locked.
    pub fn lock(&self) -> Result<StateLock> {
        std::fs::create_dir_all(&self.dir)
            .map_err(|e| Error::io("state.lock", "cannot create the state directory", e))?;
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(self.dir.join(".state.lock"))
            .map_err(|e| Error::io("state.lock", "cannot open the lock file", e))?;
        FileExt::lock_exclusive(&file)
            .map_err(|e| Error::io("state.lock", "cannot lock the state directory", e))?;
        Ok(StateLock { file })
    }

    /// Reads `state.json` (an empty document when the file does not exist).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Corrupt`] as [`StateDoc::from_json`]; [`ErrorKind::Io`] when it cannot be read.
    pub fn read(&self) -> Result<StateDoc> {
        match std::fs::read_to_string(self.state_path()) {
            Ok(text) => StateDoc::from_json(&text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(StateDoc::default()),
            Err(e) => Err(Error::io("state.read", "cannot read state.json", e)),
        }
    }

    /// Writes `state.json` atomically: temporary file in the same directory, fsync, rename,
    /// fsync of the directory. Call it while holding [`StateDir::lock`].
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidInput`] when the document does not validate (the file is untouched);
    /// [`ErrorKind::Io`] when writing fails (the file is untouched).
    ///
    /// A writer killed between creating its temporary file and the rename leaves that file
    /// behind; readers never look at it, and the next write sweeps every such leftover (under
    /// the lock no other writer of `state.json` is between those steps).
    pub fn write(&self, doc: &StateDoc, _lock: &StateLock) -> Result<()> {
        let text = doc.to_json()?;
        write_atomic(&self.state_path(), text.as_bytes())?;
        self.sweep_temporaries();
        Ok(())
    }

    /// Removes the temporary files of `state.json` that killed writers left. Best effort.
    fn sweep_temporaries(&self) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        for entry in entries.flatten() {
            if entry
                .file_name()
                .to_str()
                .is_some_and(|n| n.starts_with(".state.json.tmp-"))
            {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

/// Replaces `path` with `bytes` atomically (temp file in the same directory, fsync, rename, fsync
/// of the directory).
///
/// # Errors
///
/// [`ErrorKind::Io`] when any step fails; the temporary file is removed and `path` is untouched.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)
        .map_err(|e| Error::io("state.write", "cannot create the state directory", e))?;
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("state.json");
    let tmp = dir.join(format!(
        ".{name}.tmp-{}-{}",
        std::process::id(),
        squad_model::EntryId::generate()
    ));
    let result = (|| {
        let mut f = OpenOptions::new().create_new(true).write(true).open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        std::fs::rename(&tmp, path)?;
        // Make the rename durable. Directories cannot be opened for syncing everywhere; where
        // they cannot, the rename is still atomic.
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
        Ok::<(), std::io::Error>(())
    })();
    result.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        Error::io("state.write", "cannot write state.json", e)
    })
}
