//! The orphan-branch store: state as commits on `refs/heads/squad-state`, written with plumbing
//! only (gix), never touching HEAD, the index or the work tree.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use gix::ObjectId;
use gix::bstr::{BString, ByteSlice};
use gix::objs::tree::EntryKind;
use gix::refs::Target;
use gix::refs::transaction::{Change, LogChange, PreviousValue, RefEdit, RefLog};

use super::plan::{Base, Plan, plan};
use super::{StateEdit, StateStore, prefix_dir, validate_key};
use crate::{Error, ErrorKind, Result};

/// The default state ref: the branch `squad-state`.
pub const STATE_REF: &str = "refs/heads/squad-state";

/// Name and email of the commits made when the repository has no identity configured, and of
/// the shared root commit.
const SQUAD_NAME: &str = "squad";
const SQUAD_EMAIL: &str = "squad@localhost";
/// The message of the deterministic root commit every clone shares.
const ROOT_MESSAGE: &str = "Initialize squad-state branch\n";

/// A [`StateStore`] kept as commits on an orphan branch (by default `squad-state`, see
/// [`STATE_REF`]) of a git repository.
///
/// # Behavior
///
/// - **Plumbing only.** Blobs, trees and commits are written to the object database and the ref
///   is moved; HEAD, the index and the work tree are never read or written, so the branch can be
///   used from any checkout, with a dirty work tree, and in bare repositories.
/// - **One commit per batch.** [`apply`](StateStore::apply) makes exactly one commit, whose
///   message names the edits (`Update decisions.md`, `Append to ledger/promoted`,
///   `Delete research/x.md`, or `Update <n> keys` with one line per edit). A batch that changes
///   nothing makes no commit.
/// - **Deterministic root.** The first write creates a parentless root commit with an empty
///   tree, a fixed identity (`squad <squad@localhost>`), the date 0 and the message
///   `Initialize squad-state branch`, then commits the batch on top of it. Every clone that
///   creates the branch independently therefore shares the same root, and their histories can
///   be merged later.
/// - **Identity.** Commits use the repository's committer identity (`user.name`/`user.email`,
///   `GIT_COMMITTER_*`) when there is one, else `squad <squad@localhost>`.
/// - **Writers take turns.** Writers of one ref in one process (through any number of handles)
///   are serialised by an in-process lock; writers in other processes (or other tools) are
///   handled by the compare-and-swap below.
/// - **Compare-and-swap.** The ref moves only if it still points at the commit the batch was
///   built on (it must not exist when the branch is created). On a lost race the whole batch,
///   appended bytes included, is recomputed from the new tip and retried after a jittered
///   backoff, up to [`with_max_attempts`](Self::with_max_attempts) times (default 64); then the
///   error is [`ErrorKind::Conflict`]. Concurrent appends to one key therefore all land. A ref
///   that cannot be updated although nobody moved or locked it (three times in a row) is
///   [`ErrorKind::Backend`] at once.
/// - **Pruning.** Directories left empty by a delete disappear from the tree.
/// - The store is `Send + Sync`: it keeps the path of the git directory, and each thread opens
///   (and caches) its own handle on the repository.
#[derive(Debug, Clone)]
pub struct OrphanBranchStore {
    git_dir: PathBuf,
    /// The canonical common directory (shared by linked work trees): the writer lock's key.
    common_dir: PathBuf,
    ref_name: gix::refs::FullName,
    max_attempts: u32,
}

fn backend(op: &'static str, message: impl Into<String>, e: gix::Error) -> Error {
    Error::new(ErrorKind::Backend, op, message).with_source(e)
}

impl OrphanBranchStore {
    /// Opens the git repository at `path` (a work tree or a git directory) and uses the ref
    /// [`STATE_REF`].
    ///
    /// Fails with [`ErrorKind::NotFound`] when `path` is not a git repository.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let repo = gix::open(path).map_err(|e| {
            Error::new(
                ErrorKind::NotFound,
                "state.open",
                format!("{} is not a git repository", path.display()),
            )
            .with_source(e)
        })?;
        let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_owned());
        Ok(Self {
            git_dir: canonical(repo.git_dir()),
            // One spelling per repository, so that every handle finds the same writer lock.
            common_dir: canonical(repo.common_dir()),
            ref_name: full_name(STATE_REF)?,
            max_attempts: 64,
        })
    }

    /// A handle on the repository for this thread. Handles are cached per thread (a few
    /// repositories at most); refs are read from disk on every call and objects written by other
    /// handles are found, so a cached handle sees every change.
    fn with_repo<T>(&self, f: impl FnOnce(&gix::Repository) -> Result<T>) -> Result<T> {
        thread_local! {
            static REPOS: RefCell<Vec<(PathBuf, gix::Repository)>> = const { RefCell::new(Vec::new()) };
        }
        const CACHED: usize = 4;
        let cached = REPOS.with(|repos| {
            let mut repos = repos.borrow_mut();
            let pos = repos.iter().position(|(p, _)| *p == self.git_dir)?;
            Some(repos.remove(pos).1)
        });
        let repo = match cached {
            Some(repo) => repo,
            None => gix::open(&self.git_dir).map_err(|e| {
                backend(
                    "state.open",
                    format!("cannot open {}", self.git_dir.display()),
                    e,
                )
            })?,
        };
        let result = f(&repo);
        REPOS.with(|repos| {
            let mut repos = repos.borrow_mut();
            repos.insert(0, (self.git_dir.clone(), repo));
            repos.truncate(CACHED);
        });
        result
    }

    /// Uses `ref_name` (a full ref name such as `refs/squad/state`) instead of [`STATE_REF`].
    ///
    /// Refused with [`ErrorKind::InvalidInput`]: names that are not valid full ref names, names
    /// outside `refs/`, and `refs/notes/squad` or anything below it (that namespace belongs to the
    /// agents' notes; a ref there would collide with `refs/notes/squad/<agent>`).
    pub fn with_ref(mut self, ref_name: &str) -> Result<Self> {
        let invalid = |why: &str| {
            Error::new(
                ErrorKind::InvalidInput,
                "state.open",
                format!("invalid state ref {ref_name:?}: {why}"),
            )
        };
        if !ref_name.starts_with("refs/") {
            return Err(invalid("it must start with 'refs/'"));
        }
        if ref_name == "refs/notes/squad" || ref_name.starts_with("refs/notes/squad/") {
            return Err(invalid("refs/notes/squad/ is reserved for agent notes"));
        }
        self.ref_name = full_name(ref_name)?;
        Ok(self)
    }

    /// Sets how many times a batch is tried before a lost race is reported as
    /// [`ErrorKind::Conflict`] (at least 1).
    pub fn with_max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = attempts.max(1);
        self
    }

    /// The full name of the state ref.
    pub fn ref_name(&self) -> &str {
        // Ref names were validated as UTF-8 on the way in.
        self.ref_name.as_bstr().to_str().unwrap_or(STATE_REF)
    }

    /// The commit the state ref points at, or `None` before the first write.
    pub fn tip(&self) -> Result<Option<String>> {
        self.with_repo(|repo| Ok(self.tip_of(repo)?.map(|id| id.to_string())))
    }

    fn tip_of(&self, repo: &gix::Repository) -> Result<Option<ObjectId>> {
        let reference = repo
            .try_find_reference(self.ref_name.as_ref())
            .map_err(|e| backend("state.read", format!("cannot read {}", self.ref_name), e))?;
        match reference {
            None => Ok(None),
            Some(r) => match r.target().try_id() {
                Some(id) => Ok(Some(id.to_owned())),
                None => Err(Error::new(
                    ErrorKind::Corrupt,
                    "state.read",
                    format!("{} is a symbolic ref", self.ref_name),
                )),
            },
        }
    }

    /// The root tree of `tip`, or the empty tree.
    fn tree_of(&self, repo: &gix::Repository, tip: Option<ObjectId>) -> Result<ObjectId> {
        let Some(tip) = tip else {
            return Ok(ObjectId::empty_tree(repo.object_hash()));
        };
        let commit = repo.find_commit(tip).map_err(|e| {
            Error::new(
                ErrorKind::Corrupt,
                "state.read",
                format!("{} does not point at a commit", self.ref_name),
            )
            .with_source(e)
        })?;
        commit.tree_id().map(|id| id.detach()).map_err(|e| {
            Error::new(
                ErrorKind::Corrupt,
                "state.read",
                format!("cannot read the tree of {tip}"),
            )
            .with_source(e)
        })
    }

    fn signature(&self, repo: &gix::Repository) -> gix::actor::Signature {
        if let Some(Ok(sig)) = repo.committer()
            && let Ok(owned) = sig.to_owned()
        {
            return owned;
        }
        gix::actor::Signature {
            name: SQUAD_NAME.into(),
            email: SQUAD_EMAIL.into(),
            time: gix::date::Time::now_utc(),
        }
    }

    /// `true` while another writer holds the lock of the state ref.
    fn is_locked(&self, repo: &gix::Repository) -> bool {
        crate::health::ref_lock_path(repo.common_dir(), self.ref_name()).exists()
    }

    /// Writes the shared root commit (idempotent: same bytes, same id).
    fn root_commit(&self, repo: &gix::Repository) -> Result<ObjectId> {
        let sig = gix::actor::Signature {
            name: SQUAD_NAME.into(),
            email: SQUAD_EMAIL.into(),
            time: gix::date::Time {
                seconds: 0,
                offset: 0,
            },
        };
        // The empty tree is special-cased by gix and may not exist on disk; git fsck wants it.
        let tree = repo
            .write_object(gix::objs::Tree::empty())
            .map_err(|e| backend("state.apply", "cannot write the empty tree", e))?
            .detach();
        let commit = gix::objs::Commit {
            tree,
            parents: Default::default(),
            author: sig.clone(),
            committer: sig,
            encoding: None,
            message: ROOT_MESSAGE.into(),
            extra_headers: Vec::new(),
        };
        repo.write_object(&commit)
            .map(|id| id.detach())
            .map_err(|e| backend("state.apply", "cannot write the root commit", e))
    }

    /// Creates the branch at the root commit unless it exists. The inner error says the ref
    /// could not be created (lost to another writer, locked, or blocked).
    fn create_at_root(
        &self,
        repo: &gix::Repository,
    ) -> Result<std::result::Result<(), gix::Error>> {
        let root = self.root_commit(repo)?;
        let sig = self.signature(repo);
        Ok(self.move_ref(repo, &sig, None, root, "create the state branch"))
    }

    /// One attempt: builds the batch on `tip` and moves the ref if it still points at `tip`.
    /// `Ok(false)` means the ref moved (or was locked) in between.
    fn try_commit(
        &self,
        repo: &gix::Repository,
        tip: Option<ObjectId>,
        edits: &[StateEdit],
        message: &str,
        theirs: Option<ObjectId>,
    ) -> Result<Attempt> {
        let base_tree = self.tree_of(repo, tip)?;
        let plan: Plan = plan(
            &TreeBase {
                repo,
                tree: base_tree,
            },
            edits,
        )?;
        if plan.is_empty() && theirs.is_none() {
            return Ok(Attempt::Done);
        }
        let Some(tip) = tip else {
            // A new branch starts at the shared root commit, created on its own. gix accepts a
            // create-only update when the ref already holds the new value, so two writers whose
            // first commits are byte-identical would both succeed and one append would be lost;
            // from the root on, every batch moves the ref with a strict compare-and-swap.
            // When nobody created it, something is in the way (a ref below the branch name).
            if let Err(e) = self.create_at_root(repo)?
                && self.tip_of(repo)?.is_none()
            {
                return Ok(Attempt::Lost(e));
            }
            return Ok(Attempt::Retry);
        };
        let mut editor = repo
            .edit_tree(base_tree)
            .map_err(|e| backend("state.apply", "cannot read the state tree", e))?;
        for (key, value) in &plan {
            match value {
                Some(bytes) => {
                    let blob = repo
                        .write_blob(bytes)
                        .map_err(|e| backend("state.apply", format!("cannot store {key:?}"), e))?;
                    editor
                        .upsert(key.as_str(), EntryKind::Blob, blob.detach())
                        .map_err(|e| backend("state.apply", format!("cannot store {key:?}"), e))?;
                }
                None => {
                    editor
                        .remove(key.as_str())
                        .map_err(|e| backend("state.apply", format!("cannot delete {key:?}"), e))?;
                }
            }
        }
        let tree = editor
            .write()
            .map_err(|e| backend("state.apply", "cannot write the state tree", e))?
            .detach();
        let parent = tip;
        let sig = self.signature(repo);
        let commit = gix::objs::Commit {
            tree,
            parents: std::iter::once(parent).chain(theirs).collect(),
            author: sig.clone(),
            committer: sig.clone(),
            encoding: None,
            message: message.into(),
            extra_headers: Vec::new(),
        };
        let commit_id = repo
            .write_object(&commit)
            .map_err(|e| backend("state.apply", "cannot write the state commit", e))?
            .detach();
        let first_line = message.lines().next().unwrap_or_default();
        match self.move_ref(repo, &sig, Some(tip), commit_id, first_line) {
            Ok(()) => Ok(Attempt::Done),
            Err(e) => Ok(Attempt::Lost(e)),
        }
    }
}

impl OrphanBranchStore {
    /// Like [`StateStore::apply`], with `message` as the commit message instead of the
    /// generated summary (for example `Promote 3 decisions`). A message that is empty or only
    /// whitespace is [`ErrorKind::InvalidInput`]; a final newline is added when missing.
    pub fn apply_with_message(&self, edits: &[StateEdit], message: &str) -> Result<()> {
        if message.trim().is_empty() {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                "state.apply",
                "the commit message is empty",
            ));
        }
        let mut message = message.to_owned();
        if !message.ends_with('\n') {
            message.push('\n');
        }
        self.commit_batch(edits, &message)
    }

    fn commit_batch(&self, edits: &[StateEdit], message: &str) -> Result<()> {
        let _span = tracing::debug_span!("notes.state_commit", edits = edits.len()).entered();
        for edit in edits {
            validate_key(edit.key())?;
        }
        if edits.is_empty() {
            return Ok(());
        }
        // Writers in this process take turns (a lost race costs a whole rebuild); the
        // compare-and-swap below still guards against other processes.
        let turn = writer_lock(&self.common_dir, &self.ref_name);
        let _turn = turn.lock().unwrap_or_else(|p| p.into_inner());
        let mut last_error = None;
        // Failures with the ref unchanged and unlocked: not a race but a broken ref (for
        // example a ref `<state ref>/x` in the way). Three in a row end the retries.
        let mut stuck = 0;
        for attempt in 0..self.max_attempts {
            if attempt > 0 {
                std::thread::sleep(backoff(attempt));
            }
            let outcome = self.with_repo(|repo| {
                let tip = self.tip_of(repo)?;
                let outcome = self.try_commit(repo, tip, edits, message, None)?;
                let raced = match &outcome {
                    Attempt::Done | Attempt::Retry => true,
                    Attempt::Lost(_) => {
                        self.check_stale_lock(repo)?;
                        self.tip_of(repo)? != tip || self.is_locked(repo)
                    }
                };
                Ok((outcome, raced))
            })?;
            match outcome {
                (Attempt::Done, _) => return Ok(()),
                (Attempt::Retry, _) => stuck = 0,
                (Attempt::Lost(e), raced) => {
                    stuck = if raced { 0 } else { stuck + 1 };
                    if stuck == 3 {
                        return Err(Error::new(
                            ErrorKind::Backend,
                            "state.apply",
                            format!("cannot update {}", self.ref_name),
                        )
                        .with_source(e));
                    }
                    last_error = Some(e);
                }
            }
        }
        let mut err = Error::new(
            ErrorKind::Conflict,
            "state.apply",
            format!(
                "{} kept moving: gave up after {} attempts",
                self.ref_name, self.max_attempts
            ),
        );
        if let Some(e) = last_error {
            err = err.with_source(e);
        }
        Err(err)
    }
}

impl OrphanBranchStore {
    /// Fails with [`ErrorKind::Locked`] when a lock file that no running process holds blocks
    /// updates of the state ref: retrying cannot help.
    fn check_stale_lock(&self, repo: &gix::Repository) -> Result<()> {
        match crate::health::stale_lock_error("state.apply", repo.common_dir(), self.ref_name()) {
            Some(locked) => Err(locked),
            None => Ok(()),
        }
    }

    /// `true` when the commit `ancestor` is `descendant` or one of its ancestors.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::NotFound`] when either is not a commit of the repository.
    pub fn is_ancestor(&self, ancestor: &str, descendant: &str) -> Result<bool> {
        self.with_repo(|repo| {
            let a = commit_id(repo, ancestor)?;
            let d = commit_id(repo, descendant)?;
            is_ancestor(repo, a, d)
        })
    }

    /// Joins `theirs`, the state ref of another clone (a commit already in the object store,
    /// for example the tracking ref `refs/remotes/origin/squad-state` after a fetch), into the
    /// state ref:
    ///
    /// - nothing to do when `theirs` is the tip or one of its ancestors;
    /// - a fast-forward when the tip is an ancestor of `theirs` (or the ref does not exist);
    /// - otherwise one merge commit whose parents are the tip, then `theirs`, and whose files
    ///   are those of the tip, with every file of `theirs` joined in by `merge(key, ours,
    ///   theirs)` (a file only `theirs` has is taken as it is). `source` names `theirs` in the
    ///   commit message.
    ///
    /// The ref moves by compare-and-swap; a race with a local writer is retried from the new
    /// tip. The local ref only ever moves to a commit that contains its old value.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::NotFound`] when `theirs` is not a commit; [`ErrorKind::Locked`] for a
    /// left-over lock file; [`ErrorKind::Conflict`] when local writers won every attempt.
    pub fn merge_remote(
        &self,
        theirs: &str,
        source: &str,
        merge: &MergeFile,
    ) -> Result<(crate::sync::MergeAction, String)> {
        use crate::sync::MergeAction;
        let turn = writer_lock(&self.common_dir, &self.ref_name);
        let _turn = turn.lock().unwrap_or_else(|p| p.into_inner());
        let message = format!("Merge {source} into {}\n", self.ref_name());
        for attempt in 0..self.max_attempts {
            if attempt > 0 {
                std::thread::sleep(backoff(attempt));
            }
            let step = self.with_repo(|repo| {
                let theirs = commit_id(repo, theirs)?;
                let tip = self.tip_of(repo)?;
                let tip = match tip {
                    Some(tip) if tip == theirs => return Ok(Some((MergeAction::UpToDate, tip))),
                    Some(tip) if is_ancestor(repo, theirs, tip)? => {
                        return Ok(Some((MergeAction::LocalAhead, tip)));
                    }
                    // Diverged: merged below.
                    Some(tip) if !is_ancestor(repo, tip, theirs)? => tip,
                    // No branch yet, or behind `theirs`: a fast-forward.
                    _ => {
                        let sig = self.signature(repo);
                        return Ok(
                            match self.move_ref(repo, &sig, tip, theirs, "fast-forward") {
                                Ok(()) => Some((MergeAction::FastForward, theirs)),
                                Err(_) => {
                                    self.check_stale_lock(repo)?;
                                    None
                                }
                            },
                        );
                    }
                };
                let ours_base = TreeBase {
                    repo,
                    tree: self.tree_of(repo, Some(tip))?,
                };
                let theirs_base = TreeBase {
                    repo,
                    tree: self.tree_of(repo, Some(theirs))?,
                };
                let mut keys = Vec::new();
                theirs_base.walk(theirs_base.tree, "", &mut keys)?;
                let mut edits = Vec::new();
                for key in keys {
                    let Some(their_value) = theirs_base.get(&key)? else {
                        continue;
                    };
                    let merged = match ours_base.get(&key)? {
                        None => their_value,
                        Some(ours) if ours == their_value => continue,
                        Some(ours) => {
                            let merged = merge(&key, &ours, &their_value);
                            if merged == ours {
                                continue;
                            }
                            merged
                        }
                    };
                    edits.push(StateEdit::write(key, merged));
                }
                match self.try_commit(repo, Some(tip), &edits, &message, Some(theirs))? {
                    Attempt::Done => Ok(self.tip_of(repo)?.map(|t| (MergeAction::Merged, t))),
                    Attempt::Retry => Ok(None),
                    Attempt::Lost(_) => {
                        self.check_stale_lock(repo)?;
                        Ok(None)
                    }
                }
            })?;
            if let Some((action, tip)) = step {
                return Ok((action, tip.to_string()));
            }
        }
        Err(Error::new(
            ErrorKind::Conflict,
            "state.merge",
            format!(
                "{} kept moving: gave up merging {source} after {} attempts",
                self.ref_name, self.max_attempts
            ),
        ))
    }

    /// Moves the state ref from `expected` (`None`: it must not exist) to `to` by
    /// compare-and-swap, logging `squad-state: <why>` in the reflog as `sig`.
    fn move_ref(
        &self,
        repo: &gix::Repository,
        sig: &gix::actor::Signature,
        expected: Option<ObjectId>,
        to: ObjectId,
        why: &str,
    ) -> std::result::Result<(), gix::Error> {
        let edit = RefEdit {
            change: Change::Update {
                log: LogChange {
                    mode: RefLog::AndReference,
                    force_create_reflog: false,
                    message: BString::from(format!("squad-state: {why}")),
                },
                expected: match expected {
                    Some(tip) => PreviousValue::MustExistAndMatch(Target::Object(tip)),
                    None => PreviousValue::MustNotExist,
                },
                new: Target::Object(to),
            },
            name: self.ref_name.clone(),
            deref: false,
        };
        let mut time_buf = gix::date::parse::TimeBuf::default();
        repo.edit_references_as([edit], Some(sig.to_ref(&mut time_buf)))
            .map(drop)
    }
}

/// The commit `hex` names, or [`ErrorKind::NotFound`].
fn commit_id(repo: &gix::Repository, hex: &str) -> Result<ObjectId> {
    let not_found = || {
        Error::new(
            ErrorKind::NotFound,
            "state.merge",
            format!("state commit {hex} not found"),
        )
    };
    let id = ObjectId::from_hex(hex.as_bytes()).map_err(|_| not_found())?;
    repo.find_commit(id)
        .map_err(|e| not_found().with_source(e))?;
    Ok(id)
}

fn is_ancestor(repo: &gix::Repository, ancestor: ObjectId, descendant: ObjectId) -> Result<bool> {
    if ancestor == descendant {
        return Ok(true);
    }
    let base = repo
        .merge_base(ancestor, descendant)
        .map_err(|e| backend("state.merge", "cannot compare state commits", e))?;
    Ok(base.is_some_and(|b| b.detach() == ancestor))
}

/// Joins two versions of one state file: `(key, ours, theirs) -> merged`.
pub type MergeFile = dyn Fn(&str, &[u8], &[u8]) -> Vec<u8>;

enum Attempt {
    Done,
    /// The branch was just created at the root commit (by us or a racing writer): go again.
    Retry,
    /// The ref could not be moved: it changed under us, or another writer held its lock.
    Lost(gix::Error),
}

fn full_name(name: &str) -> Result<gix::refs::FullName> {
    gix::refs::FullName::try_from(name).map_err(|e| {
        Error::new(
            ErrorKind::InvalidInput,
            "state.open",
            format!("invalid state ref {name:?}"),
        )
        .with_source(e)
    })
}

struct TreeBase<'r> {
    repo: &'r gix::Repository,
    tree: ObjectId,
}

impl TreeBase<'_> {
    /// The entry at `path`: its kind and object id.
    fn entry(&self, path: &str) -> Result<Option<(EntryKind, ObjectId)>> {
        let tree = self
            .repo
            .find_tree(self.tree)
            .map_err(|e| corrupt(format!("cannot read tree {}", self.tree), e))?;
        let entry = tree
            .lookup_entry(path.split('/').map(str::as_bytes))
            .map_err(|e| corrupt(format!("cannot look up {path:?}"), e))?;
        Ok(entry.map(|e| (e.mode().kind(), e.object_id())))
    }

    fn walk(&self, tree_id: ObjectId, dir_key: &str, out: &mut Vec<String>) -> Result<()> {
        let tree = self
            .repo
            .find_tree(tree_id)
            .map_err(|e| corrupt(format!("cannot read tree {tree_id}"), e))?;
        let decoded = tree
            .decode()
            .map_err(|e| corrupt(format!("cannot decode tree {tree_id}"), e))?;
        for entry in &decoded.entries {
            let Ok(name) = entry.filename.to_str() else {
                continue;
            };
            let key = if dir_key.is_empty() {
                name.to_owned()
            } else {
                format!("{dir_key}/{name}")
            };
            match entry.mode.kind() {
                EntryKind::Tree => self.walk(entry.oid.to_owned(), &key, out)?,
                EntryKind::Blob | EntryKind::BlobExecutable => {
                    if validate_key(&key).is_ok() {
                        out.push(key);
                    }
                }
                EntryKind::Link | EntryKind::Commit => {}
            }
        }
        Ok(())
    }
}

fn corrupt(message: String, e: gix::Error) -> Error {
    Error::new(ErrorKind::Corrupt, "state.read", message).with_source(e)
}

impl Base for TreeBase<'_> {
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>> {
        match self.entry(key)? {
            Some((EntryKind::Blob | EntryKind::BlobExecutable, id)) => {
                let blob = self
                    .repo
                    .find_blob(id)
                    .map_err(|e| corrupt(format!("cannot read the blob of {key:?}"), e))?;
                Ok(Some(blob.detach().data))
            }
            _ => Ok(None),
        }
    }

    fn keys_under(&self, dir: &str) -> Result<Vec<String>> {
        let mut out = Vec::new();
        if let Some((EntryKind::Tree, id)) = self.entry(dir)? {
            self.walk(id, dir, &mut out)?;
        }
        Ok(out)
    }
}

impl StateStore for OrphanBranchStore {
    fn read(&self, key: &str) -> Result<Option<Vec<u8>>> {
        validate_key(key)?;
        self.with_repo(|repo| {
            let tip = self.tip_of(repo)?;
            if tip.is_none() {
                return Ok(None);
            }
            let tree = self.tree_of(repo, tip)?;
            TreeBase { repo, tree }.get(key)
        })
    }

    fn list(&self, prefix: &str) -> Result<Vec<String>> {
        let dir = prefix_dir(prefix)?;
        self.with_repo(|repo| {
            let tip = self.tip_of(repo)?;
            if tip.is_none() {
                return Ok(Vec::new());
            }
            let tree = self.tree_of(repo, tip)?;
            let base = TreeBase { repo, tree };
            let mut out = if dir.is_empty() {
                let mut out = Vec::new();
                base.walk(tree, "", &mut out)?;
                out
            } else {
                base.keys_under(dir)?
            };
            out.retain(|k| k.starts_with(prefix));
            out.sort();
            Ok(out)
        })
    }

    fn apply(&self, edits: &[StateEdit]) -> Result<()> {
        self.commit_batch(edits, &summary(edits))
    }
}

/// The in-process lock of the writers of one ref of one repository.
fn writer_lock(common_dir: &Path, ref_name: &gix::refs::FullName) -> Arc<Mutex<()>> {
    type Locks = Mutex<HashMap<(PathBuf, BString), Arc<Mutex<()>>>>;
    static LOCKS: OnceLock<Locks> = OnceLock::new();
    let locks = LOCKS.get_or_init(Default::default);
    let mut locks = locks.lock().unwrap_or_else(|p| p.into_inner());
    locks
        .entry((common_dir.to_owned(), ref_name.as_bstr().to_owned()))
        .or_default()
        .clone()
}

/// Jittered exponential backoff: about 1, 2, 4, … ms, capped at 64 ms, each between 50% and 150%.
fn backoff(attempt: u32) -> Duration {
    let base_us = 1000u64 << attempt.min(6);
    let jitter = super::random_u64() % base_us;
    Duration::from_micros(base_us / 2 + jitter)
}

/// A one-line summary of a batch, used as the commit message by the orphan branch store.
fn summary(edits: &[StateEdit]) -> String {
    let line = |e: &StateEdit| match e {
        StateEdit::Write { key, .. } => format!("Update {key}"),
        StateEdit::Append { key, .. } => format!("Append to {key}"),
        StateEdit::Delete { key } => format!("Delete {key}"),
        StateEdit::Expect { .. } => String::new(),
    };
    let edits: Vec<&StateEdit> = edits
        .iter()
        .filter(|e| !matches!(e, StateEdit::Expect { .. }))
        .collect();
    match edits.as_slice() {
        [one] => format!("{}\n", line(one)),
        many => {
            let mut s = format!("Update {} keys\n\n", many.len());
            for e in many {
                s.push_str(&line(e));
                s.push('\n');
            }
            s
        }
    }
}

impl crate::sync::StateBranch for OrphanBranchStore {
    fn ref_name(&self) -> &str {
        OrphanBranchStore::ref_name(self)
    }

    fn tip(&self) -> Result<Option<String>> {
        OrphanBranchStore::tip(self)
    }

    fn is_ancestor(&self, ancestor: &str, descendant: &str) -> Result<bool> {
        OrphanBranchStore::is_ancestor(self, ancestor, descendant)
    }

    /// Joins the squad's files with [`merge_state_file`](crate::promote::merge_state_file).
    fn merge_remote(&self, theirs: &str, source: &str) -> Result<crate::sync::MergeAction> {
        OrphanBranchStore::merge_remote(self, theirs, source, &crate::promote::merge_state_file)
            .map(|(action, _)| action)
    }
}
