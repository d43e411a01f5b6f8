//! The work-tree store: plain files under a directory, usually `.squad/`.

use std::path::{Path, PathBuf};

use squad_fs::{EntryKind, StateDir};

use super::plan::{Base, Plan, plan};
use super::{RESERVED_PREFIX, StateEdit, StateStore, prefix_dir, validate_key};
use crate::{Error, ErrorKind, Result};

/// The lock file every writer holds while it applies a batch.
const LOCK_FILE: &str = ".squad-lock";
/// The intent record of a multi-key batch being applied (see [`Journal`]).
const JOURNAL_FILE: &str = ".squad-journal";

/// What a multi-key batch is about to do, with the new values, written atomically before its
/// first change and removed after its last: a batch cut short by a crash is completed from it
/// by the next writer or reader, so a batch is applied all or nothing. Every step is
/// idempotent: deleting a missing file, or writing a value that is there already.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct Journal {
    /// Keys to delete.
    delete: Vec<String>,
    /// (key, new value in hex) to write.
    write: Vec<(String, String)>,
}

/// A [`StateStore`] of plain files under a root directory (usually the repository's `.squad/`):
/// the key `research/jwt.md` is the file `<root>/research/jwt.md`.
///
/// Every file operation goes through `squad-fs` ([`StateDir`]): paths never leave the root and
/// no symbolic link below the root is ever followed, so a symlink committed under `.squad/`
/// cannot make the store read or write anything outside it. (The root itself may be a symlink
/// the user chose.)
///
/// # Behavior
///
/// - Writers take an exclusive lock on `<root>/.squad-lock` (an advisory OS file lock, released
///   when the batch ends or the process dies), so concurrent batches from any thread or process
///   using this store are serialised and appends are never lost.
/// - Every changed key is written to a temporary file beside it, flushed to disk, then renamed
///   over the old file, so a reader sees the old or the new bytes, never a mix.
/// - A batch of several keys is all or nothing, crashes included: its intent (with the new
///   values) is recorded in `<root>/.squad-journal` before the first change, and a batch cut
///   short is completed by the next writer, or by the next reader, before anything else happens.
/// - Readers take no lock, except to complete a batch cut short (they then wait for the lock).
/// - The root is created on the first write. Directories emptied by a delete are removed (the
///   root itself is kept).
/// - Files whose names are not valid keys (for example the store's own `.squad-*` files, or
///   names that are not UTF-8) are not listed and cannot be read; neither are symbolic links
///   (a key whose path holds one reads as missing, and writing it is refused).
/// - Other programs editing the files directly bypass the lock; their edits can race with ours.
#[derive(Debug, Clone)]
pub struct WorktreeStateStore {
    dir: StateDir,
}

impl WorktreeStateStore {
    /// A store rooted at `root`. Nothing is created until the first write.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            dir: StateDir::new(root),
        }
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        self.dir.root()
    }
}

/// A `squad-fs` error as ours: a symlink or a path in the way is refused (nothing changed).
fn fs_error(op: &'static str, what: String, e: squad_fs::Error) -> Error {
    let kind = match e.kind() {
        squad_fs::ErrorKind::Symlink => ErrorKind::PermissionDenied,
        squad_fs::ErrorKind::InvalidPath
        | squad_fs::ErrorKind::NotAFile
        | squad_fs::ErrorKind::NotADirectory => ErrorKind::InvalidInput,
        _ => ErrorKind::Backend,
    };
    Error::new(kind, op, format!("{what}: {e}")).with_source(e)
}

impl Base for WorktreeStateStore {
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>> {
        match self.dir.kind(key) {
            Ok(Some(EntryKind::File)) => {}
            Ok(_) => return Ok(None),
            Err(e) if e.kind() == squad_fs::ErrorKind::Symlink => return Ok(None),
            Err(e) if e.kind() == squad_fs::ErrorKind::NotADirectory => return Ok(None),
            Err(e) => return Err(fs_error("state.read", format!("cannot read {key:?}"), e)),
        }
        match self.dir.read(key) {
            Ok(bytes) => Ok(bytes),
            Err(e) if e.kind() == squad_fs::ErrorKind::Symlink => Ok(None),
            Err(e) => Err(fs_error("state.read", format!("cannot read {key:?}"), e)),
        }
    }

    fn keys_under(&self, dir: &str) -> Result<Vec<String>> {
        let mut out = Vec::new();
        self.walk(dir, &mut out, 0)?;
        Ok(out)
    }
}

impl WorktreeStateStore {
    /// Collects the keys of every file below the directory `dir_key` (`""` for the root),
    /// never entering a symbolic link.
    fn walk(&self, dir_key: &str, out: &mut Vec<String>, depth: usize) -> Result<()> {
        if depth > 64 {
            return Ok(());
        }
        let listed = if dir_key.is_empty() {
            self.dir.list_root()
        } else {
            match self.dir.kind(dir_key) {
                Ok(Some(EntryKind::Dir)) => self.dir.list(dir_key),
                Ok(_) => return Ok(()),
                Err(e) if e.kind() == squad_fs::ErrorKind::Symlink => return Ok(()),
                Err(e) if e.kind() == squad_fs::ErrorKind::NotADirectory => return Ok(()),
                Err(e) => {
                    return Err(fs_error(
                        "state.list",
                        format!("cannot list {dir_key:?}"),
                        e,
                    ));
                }
            }
        };
        let entries =
            listed.map_err(|e| fs_error("state.list", format!("cannot list {dir_key:?}"), e))?;
        for entry in entries {
            let key = if dir_key.is_empty() {
                entry.name
            } else {
                format!("{dir_key}/{}", entry.name)
            };
            if validate_key(&key).is_err() {
                continue;
            }
            match entry.kind {
                EntryKind::Dir => self.walk(&key, out, depth + 1)?,
                EntryKind::File => out.push(key),
                _ => {}
            }
        }
        Ok(())
    }
}

impl StateStore for WorktreeStateStore {
    fn read(&self, key: &str) -> Result<Option<Vec<u8>>> {
        validate_key(key)?;
        self.recover_before_read();
        self.get(key)
    }

    fn list(&self, prefix: &str) -> Result<Vec<String>> {
        let dir = prefix_dir(prefix)?;
        self.recover_before_read();
        let mut out = Vec::new();
        self.walk(dir, &mut out, 0)?;
        out.retain(|k| k.starts_with(prefix));
        out.sort();
        Ok(out)
    }

    fn apply(&self, edits: &[StateEdit]) -> Result<()> {
        for edit in edits {
            validate_key(edit.key())?;
        }
        let only_deletes = edits.iter().all(|e| matches!(e, StateEdit::Delete { .. }));
        if edits.is_empty() || (only_deletes && !self.dir.exists()) {
            // Nothing to change, and no reason to create the root.
            return Ok(());
        }
        let _lock = self.lock()?;
        self.recover()?;
        self.sweep_temporaries();
        let plan = plan(self, edits)?;
        if plan.is_empty() {
            return Ok(());
        }
        if plan.len() == 1 {
            return self.commit(&plan);
        }
        let journal = Journal {
            delete: plan
                .iter()
                .filter(|(_, v)| v.is_none())
                .map(|(k, _)| k.clone())
                .collect(),
            write: plan
                .iter()
                .filter_map(|(k, v)| v.as_ref().map(|v| (k.clone(), hex::encode(v))))
                .collect(),
        };
        let bytes = serde_json::to_vec(&journal).map_err(|e| {
            Error::new(ErrorKind::Backend, "state.apply", "cannot record the batch").with_source(e)
        })?;
        self.dir
            .write_atomic(JOURNAL_FILE, &bytes)
            .map_err(|e| fs_error("state.apply", "cannot record the batch".into(), e))?;
        self.commit(&plan)?;
        self.dir
            .remove(JOURNAL_FILE)
            .map_err(|e| fs_error("state.apply", "cannot remove the batch record".into(), e))?;
        Ok(())
    }
}

impl WorktreeStateStore {
    /// Completes a batch that a crash cut short, if its journal is there. Call it holding the
    /// writers' lock.
    fn recover(&self) -> Result<()> {
        let bytes = self
            .dir
            .read(JOURNAL_FILE)
            .map_err(|e| fs_error("state.recover", "cannot read the batch record".into(), e))?;
        let Some(bytes) = bytes else {
            return Ok(());
        };
        let corrupt = || {
            Error::new(
                ErrorKind::Corrupt,
                "state.recover",
                format!(
                    "{} cannot be parsed",
                    self.dir.display_path(JOURNAL_FILE).display()
                ),
            )
        };
        let journal: Journal =
            serde_json::from_slice(&bytes).map_err(|e| corrupt().with_source(e))?;
        let mut plan: Plan = Plan::new();
        for key in journal.delete {
            validate_key(&key)?;
            plan.insert(key, None);
        }
        for (key, value) in journal.write {
            validate_key(&key)?;
            let value = hex::decode(value).map_err(|e| corrupt().with_source(e))?;
            plan.insert(key, Some(value));
        }
        self.commit(&plan)?;
        self.dir
            .remove(JOURNAL_FILE)
            .map_err(|e| fs_error("state.recover", "cannot remove the batch record".into(), e))?;
        Ok(())
    }

    /// Removes the temporary files of writers that died before renaming them (and those of
    /// the store's earlier layout). Call it holding the writers' lock. Best effort.
    fn sweep_temporaries(&self) {
        let _ = self.dir.remove_dead_temp_files("");
        let prefix = format!("{RESERVED_PREFIX}tmp-");
        if let Ok(entries) = self.dir.list_root() {
            for entry in entries {
                if entry.kind == EntryKind::File && entry.name.starts_with(&prefix) {
                    let _ = self.dir.remove(&entry.name);
                }
            }
        }
    }

    /// For readers: completes a batch cut short before reading. Best effort: a reader that
    /// cannot take the lock (a read-only checkout) reads what is there.
    fn recover_before_read(&self) {
        if matches!(self.dir.kind(JOURNAL_FILE), Ok(Some(EntryKind::File)))
            && let Ok(_lock) = self.lock()
        {
            let _ = self.recover();
        }
    }

    /// Deletes the keys the plan removes (pruning emptied directories), then writes the new
    /// values, each atomically.
    fn commit(&self, plan: &Plan) -> Result<()> {
        for (key, value) in plan {
            if value.is_none() {
                self.dir
                    .remove(key)
                    .map_err(|e| fs_error("state.apply", format!("cannot delete {key:?}"), e))?;
                self.prune(key);
            }
        }
        for (key, value) in plan {
            if let Some(bytes) = value {
                self.dir
                    .write_atomic(key, bytes)
                    .map_err(|e| fs_error("state.apply", format!("cannot write {key:?}"), e))?;
            }
        }
        Ok(())
    }

    /// Creates the root and takes the writers' lock; released when the guard is dropped.
    fn lock(&self) -> Result<squad_fs::Lock> {
        self.dir
            .lock(LOCK_FILE)
            .map_err(|e| fs_error("state.apply", "cannot take the writers' lock".into(), e))
    }

    /// Removes the now-empty directories above `key` (never the root). Each directory is
    /// checked to be a real directory below the root (no symlink on the way) before it goes;
    /// removing a directory that is not empty fails harmlessly.
    fn prune(&self, key: &str) {
        let mut parts: Vec<&str> = key.split('/').collect();
        parts.pop();
        while !parts.is_empty() {
            let dir = parts.join("/");
            // `kind` opens every directory on the way without following a link, and fails on
            // one that is a symlink or not a directory: one look checks the whole path.
            let real = matches!(self.dir.kind(&dir), Ok(Some(EntryKind::Dir)));
            if !real || std::fs::remove_dir(self.dir.display_path(&dir)).is_err() {
                break;
            }
            parts.pop();
        }
    }
}
