//! The work-tree store: plain files under a directory, usually `.squad/`.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};

use super::plan::{Base, plan};
use super::{RESERVED_PREFIX, StateEdit, StateStore, prefix_dir, validate_key};
use crate::{Error, ErrorKind, Result};

/// The lock file every writer holds while it applies a batch.
const LOCK_FILE: &str = ".squad-lock";
/// The intent record of a multi-key batch being applied (see [`Journal`]).
const JOURNAL_FILE: &str = ".squad-journal";

/// What a multi-key batch is about to do, written (durably, by rename) before its first delete
/// or rename and removed after its last: a batch cut short by a crash is completed from it by
/// the next writer or reader, so a batch is applied all or nothing. Every step is idempotent:
/// a delete of a missing file and a rename whose temporary file is gone are done already.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct Journal {
    /// Keys to delete.
    delete: Vec<String>,
    /// (temporary file name in the root, key) to rename into place.
    rename: Vec<(String, String)>,
}

/// A [`StateStore`] of plain files under a root directory (usually the repository's `.squad/`):
/// the key `research/jwt.md` is the file `<root>/research/jwt.md`.
///
/// # Behavior
///
/// - Writers take an exclusive lock on `<root>/.squad-lock` (an advisory OS file lock, released
///   when the batch ends or the process dies), so concurrent batches from any thread or process
///   using this store are serialised and appends are never lost.
/// - Every changed key is written to a temporary file in the root, flushed to disk, then
///   renamed over the old file, so a reader sees the old or the new bytes, never a mix.
///   The temporary files of a batch are all written before the first rename.
/// - A batch of several keys is all or nothing, crashes included: its intent is recorded in
///   `<root>/.squad-journal` before the first delete or rename, and a batch cut short is
///   completed by the next writer, or by the next reader, before anything else happens.
/// - Readers take no lock, except to complete a batch cut short (they then wait for the lock).
/// - The root is created on the first write. Directories emptied by a delete are removed (the
///   root itself is kept).
/// - Files whose names are not valid keys (for example the store's own `.squad-*` files, or
///   names that are not UTF-8) are not listed and cannot be read; neither are symbolic links.
/// - Other programs editing the files directly bypass the lock; their edits can race with ours.
#[derive(Debug, Clone)]
pub struct WorktreeStateStore {
    root: PathBuf,
}

impl WorktreeStateStore {
    /// A store rooted at `root`. Nothing is created until the first write.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn path_of(&self, key: &str) -> PathBuf {
        let mut p = self.root.clone();
        p.extend(key.split('/'));
        p
    }
}

fn io_error(op: &'static str, what: String, e: io::Error) -> Error {
    Error::new(ErrorKind::Backend, op, what).with_source(e)
}

impl Base for WorktreeStateStore {
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>> {
        let path = self.path_of(key);
        match fs::symlink_metadata(&path) {
            Ok(m) if m.is_file() => {}
            Ok(_) => return Ok(None),
            Err(e) if is_missing(&e) => return Ok(None),
            Err(e) => return Err(io_error("state.read", format!("cannot read {key:?}"), e)),
        }
        match fs::read(&path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if is_missing(&e) => Ok(None),
            Err(e) => Err(io_error("state.read", format!("cannot read {key:?}"), e)),
        }
    }

    fn keys_under(&self, dir: &str) -> Result<Vec<String>> {
        let mut out = Vec::new();
        walk(&self.path_of(dir), dir, &mut out)?;
        Ok(out)
    }
}

fn is_missing(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
    )
}

/// `Ok(None)` for a path that does not exist (or whose parent is not a directory).
fn present<T>(result: io::Result<T>) -> io::Result<Option<T>> {
    match result {
        Ok(value) => Ok(Some(value)),
        Err(e) if is_missing(&e) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Collects the keys of every file below `dir_path` (whose key is `dir_key`, `""` for the root).
fn walk(dir_path: &Path, dir_key: &str, out: &mut Vec<String>) -> Result<()> {
    let Some(entries) = present(fs::read_dir(dir_path)).map_err(|e| {
        io_error(
            "state.list",
            format!("cannot list {}", dir_path.display()),
            e,
        )
    })?
    else {
        return Ok(());
    };
    for entry in entries {
        let entry = entry.map_err(|e| {
            io_error(
                "state.list",
                format!("cannot list {}", dir_path.display()),
                e,
            )
        })?;
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        let key = if dir_key.is_empty() {
            name
        } else {
            format!("{dir_key}/{name}")
        };
        if validate_key(&key).is_err() {
            continue;
        }
        let file_type = entry.file_type().map_err(|e| {
            io_error(
                "state.list",
                format!("cannot list {}", dir_path.display()),
                e,
            )
        })?;
        if file_type.is_dir() {
            walk(&entry.path(), &key, out)?;
        } else if file_type.is_file() {
            out.push(key);
        }
    }
    Ok(())
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
        walk(&self.path_of(dir), dir, &mut out)?;
        out.retain(|k| k.starts_with(prefix));
        out.sort();
        Ok(out)
    }

    fn apply(&self, edits: &[StateEdit]) -> Result<()> {
        for edit in edits {
            validate_key(edit.key())?;
        }
        let only_deletes = edits.iter().all(|e| matches!(e, StateEdit::Delete { .. }));
        if edits.is_empty() || (only_deletes && !self.root.exists()) {
            // Nothing to change, and no reason to create the root.
            return Ok(());
        }
        let _lock = self.lock()?;
        self.recover()?;
        self.sweep_temporaries();
        let plan = plan(self, edits)?;

        // Stage every new value in the root first, then delete, then rename the values in: a
        // failure before the first delete changes nothing, and deletes come first so that a
        // directory emptied by the batch can become a value (and the reverse).
        // (temporary file, key) of every value to rename into place.
        let mut staged: Vec<(PathBuf, String)> = Vec::new();
        for (key, value) in &plan {
            if let Some(bytes) = value {
                match self.stage(key, bytes) {
                    Ok(tmp) => staged.push((tmp, key.clone())),
                    Err(e) => {
                        for (tmp, _) in &staged {
                            let _ = fs::remove_file(tmp);
                        }
                        return Err(e);
                    }
                }
            }
        }
        let journal = (plan.len() > 1)
            .then(|| self.write_journal(&plan, &staged))
            .transpose();
        let result = journal.and_then(|journal| {
            self.commit(&plan, &staged)?;
            match journal {
                Some(path) => fs::remove_file(&path).map_err(|e| {
                    io_error(
                        "state.apply",
                        format!("cannot remove {}", path.display()),
                        e,
                    )
                }),
                None => Ok(()),
            }
        });
        if result.is_err() && !self.root.join(JOURNAL_FILE).exists() {
            for (tmp, _) in &staged {
                // Nothing was renamed without a journal; clean up after the failure.
                let _ = fs::remove_file(tmp);
            }
        }
        result
    }
}

impl WorktreeStateStore {
    /// Records the intent of a multi-key batch durably: a temporary file, flushed, renamed to
    /// the journal's name, then the root directory flushed.
    fn write_journal(
        &self,
        plan: &super::plan::Plan,
        staged: &[(PathBuf, String)],
    ) -> Result<PathBuf> {
        let rename = staged
            .iter()
            .map(|(tmp, key)| {
                let name = tmp.file_name().and_then(|n| n.to_str()).unwrap_or_default();
                (name.to_owned(), key.clone())
            })
            .collect();
        let journal = Journal {
            delete: plan
                .iter()
                .filter(|(_, v)| v.is_none())
                .map(|(k, _)| k.clone())
                .collect(),
            rename,
        };
        let bytes = serde_json::to_vec(&journal).map_err(|e| {
            Error::new(ErrorKind::Backend, "state.apply", "cannot record the batch").with_source(e)
        })?;
        let tmp = self.stage(JOURNAL_FILE, &bytes)?;
        let path = self.root.join(JOURNAL_FILE);
        fs::rename(&tmp, &path).map_err(|e| {
            let _ = fs::remove_file(&tmp);
            io_error("state.apply", format!("cannot write {}", path.display()), e)
        })?;
        if let Ok(dir) = File::open(&self.root) {
            let _ = dir.sync_all();
        }
        Ok(path)
    }

    /// Completes a batch that a crash cut short, if its journal is there. Call it holding the
    /// writers' lock.
    fn recover(&self) -> Result<()> {
        let path = self.root.join(JOURNAL_FILE);
        let Some(bytes) = present(fs::read(&path)).map_err(|e| {
            io_error(
                "state.recover",
                format!("cannot read {}", path.display()),
                e,
            )
        })?
        else {
            return Ok(());
        };
        let journal: Journal = serde_json::from_slice(&bytes).map_err(|e| {
            Error::new(
                ErrorKind::Corrupt,
                "state.recover",
                format!("{} cannot be parsed", path.display()),
            )
            .with_source(e)
        })?;
        for key in journal
            .delete
            .iter()
            .chain(journal.rename.iter().map(|(_, k)| k))
        {
            validate_key(key)?;
        }
        let plan: super::plan::Plan = journal.delete.into_iter().map(|k| (k, None)).collect();
        let staged: Vec<(PathBuf, String)> = journal
            .rename
            .into_iter()
            .map(|(tmp, key)| (self.root.join(tmp), key))
            // A temporary file that is gone was renamed into place before the crash.
            .filter(|(tmp, _)| tmp.exists())
            .collect();
        self.commit(&plan, &staged)?;
        fs::remove_file(&path).map_err(|e| {
            io_error(
                "state.recover",
                format!("cannot remove {}", path.display()),
                e,
            )
        })
    }

    /// Removes the temporary files of writers killed before they recorded a batch. Call it
    /// holding the writers' lock, after [`WorktreeStateStore::recover`]: no other writer is
    /// between staging and renaming then, and no journal names them. Best effort.
    fn sweep_temporaries(&self) {
        let Ok(entries) = fs::read_dir(&self.root) else {
            return;
        };
        let prefix = format!("{RESERVED_PREFIX}tmp-");
        for entry in entries.flatten() {
            if entry
                .file_name()
                .to_str()
                .is_some_and(|n| n.starts_with(&prefix))
            {
                let _ = fs::remove_file(entry.path());
            }
        }
    }

    /// For readers: completes a batch cut short before reading. Best effort: a reader that
    /// cannot take the lock (a read-only checkout) reads what is there.
    fn recover_before_read(&self) {
        if self.root.join(JOURNAL_FILE).exists()
            && let Ok(_lock) = self.lock_existing()
        {
            let _ = self.recover();
        }
    }
}

impl WorktreeStateStore {
    /// Deletes the keys the plan removes, then renames the staged values into place.
    fn commit(&self, plan: &super::plan::Plan, staged: &[(PathBuf, String)]) -> Result<()> {
        for (key, value) in plan {
            if value.is_none() {
                let path = self.path_of(key);
                match fs::remove_file(&path) {
                    Ok(()) => {}
                    Err(e) if is_missing(&e) => {}
                    Err(e) => {
                        return Err(io_error("state.apply", format!("cannot delete {key:?}"), e));
                    }
                }
                self.prune(&path);
            }
        }
        for (tmp, key) in staged {
            let target = self.path_of(key);
            if let Some(dir) = target.parent() {
                fs::create_dir_all(dir).map_err(|e| {
                    io_error("state.apply", format!("cannot create {}", dir.display()), e)
                })?;
            }
            fs::rename(tmp, &target).map_err(|e| {
                io_error(
                    "state.apply",
                    format!("cannot replace {}", target.display()),
                    e,
                )
            })?;
        }
        Ok(())
    }
}

impl WorktreeStateStore {
    /// Creates the root and takes the writers' lock; it is released when the file is dropped.
    fn lock(&self) -> Result<File> {
        fs::create_dir_all(&self.root).map_err(|e| {
            io_error(
                "state.apply",
                format!("cannot create {}", self.root.display()),
                e,
            )
        })?;
        let path = self.root.join(LOCK_FILE);
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| io_error("state.apply", format!("cannot open {}", path.display()), e))?;
        FileExt::lock_exclusive(&file)
            .map_err(|e| io_error("state.apply", format!("cannot lock {}", path.display()), e))?;
        Ok(file)
    }

    /// Takes the writers' lock of an existing root (creating nothing but the lock file).
    fn lock_existing(&self) -> Result<File> {
        if !self.root.is_dir() {
            return Err(Error::new(
                ErrorKind::NotFound,
                "state.recover",
                format!("{} does not exist", self.root.display()),
            ));
        }
        self.lock()
    }

    /// Writes `bytes` to a new temporary file in the root and flushes it to disk.
    fn stage(&self, key: &str, bytes: &[u8]) -> Result<PathBuf> {
        let tmp = self
            .root
            .join(format!("{RESERVED_PREFIX}tmp-{:016x}", super::random_u64()));
        let write = || -> io::Result<()> {
            let mut f = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
            f.write_all(bytes)?;
            f.sync_all()
        };
        write().map_err(|e| {
            let _ = fs::remove_file(&tmp);
            io_error("state.apply", format!("cannot write {key:?}"), e)
        })?;
        Ok(tmp)
    }

    /// Removes the now-empty directories between `path` and the root.
    fn prune(&self, path: &Path) {
        let mut dir = path.parent();
        while let Some(d) = dir {
            if d == self.root || !d.starts_with(&self.root) {
                break;
            }
            if fs::remove_dir(d).is_err() {
                break;
            }
            dir = d.parent();
        }
    }
}

use fs4::fs_std::FileExt;
