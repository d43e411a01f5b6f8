//! [`Git2Notes`]: a second git notes backend, on libgit2 (`git2`, no network features).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::backend::{NoteEdit, NotesBackend};
use crate::error::{Error, ErrorKind, Result};
use crate::oid::{NotesRef, Oid};

/// A directory holding more note files than this is split into 2-hex subdirectories.
const FANOUT_LIMIT: usize = 256;

/// A [`NotesBackend`] on libgit2 (feature `git2`).
///
/// libgit2's own notes API force-updates the ref and never fans out (see the crate docs), so this
/// backend writes notes trees and commits itself:
///
/// - **Reads** accept any fanout, including mixed ones (several entries for one object are
///   joined as git joins them, deepest directory first as in git's tree order).
/// - **Writes** remove every entry of an edited object at every depth, follow the existing
///   2-hex directories, and split a directory into 2-hex subdirectories once it holds more than
///   256 notes (the fast-import / JGit threshold), so trees stay shallow and git-readable.
///   Entries that are not notes are kept. Each write rebuilds the tree (linear in the notes of
///   the ref), which suits moderate note counts; [`GixNotes`](crate::GixNotes) is the fast one.
/// - **Ref updates** are compare-and-swap: libgit2 takes the ref's lock file and checks the old
///   value under it (`git_reference_create_matching`), and "must not exist" is a non-forced
///   create. A lost race is [`ErrorKind::Conflict`]; a ref blocked by a lock file that no
///   running process holds (left by a killed writer) is [`ErrorKind::Locked`], naming the file,
///   as in the gix backend, so callers stop retrying at once.
///
/// The commit identity is the repository's `user.name` / `user.email`.
///
/// ```
/// use squad_notes::{Git2Notes, NoteEdit, NotesBackend, NotesRef, Oid};
/// # let dir = tempfile::tempdir()?;
/// # std::process::Command::new("git").args(["init", "-q"]).current_dir(dir.path()).status()?;
/// # std::process::Command::new("git").args(["config", "user.name", "Doc"]).current_dir(dir.path()).status()?;
/// # std::process::Command::new("git").args(["config", "user.email", "doc@example.invalid"]).current_dir(dir.path()).status()?;
/// let notes = Git2Notes::open(dir.path())?;
/// let r = NotesRef::new("refs/notes/squad/data")?;
/// let commit: Oid = "1111111111111111111111111111111111111111".parse()?;
/// let tip = notes.update(&r, None, &[NoteEdit::set(commit.clone(), "hi\n")], "Notes added by 'git notes add'\n")?;
/// assert_eq!(notes.read(&tip, &commit)?, Some(b"hi\n".to_vec()));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Git2Notes {
    repo: Mutex<git2::Repository>,
}

impl std::fmt::Debug for Git2Notes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let repo = self.lock();
        f.debug_struct("Git2Notes")
            .field("path", &repo.path())
            .finish()
    }
}

fn git_err(op: &'static str, message: impl Into<String>) -> impl FnOnce(git2::Error) -> Error {
    let message = message.into();
    move |e| {
        let kind = match e.code() {
            git2::ErrorCode::NotFound => ErrorKind::NotFound,
            _ => ErrorKind::Backend,
        };
        Error::new(kind, op, message).with_source(e)
    }
}

impl Git2Notes {
    /// Opens the repository at `path` (a work tree or a bare repository).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::NotFound`] when there is no repository there.
    pub fn open(path: &Path) -> Result<Self> {
        let repo = git2::Repository::open(path).map_err(|e| {
            Error::new(
                ErrorKind::NotFound,
                "notes.open",
                format!("{} is not a git repository", path.display()),
            )
            .with_source(e)
        })?;
        Ok(Self {
            repo: Mutex::new(repo),
        })
    }

    fn lock(&self) -> MutexGuard<'_, git2::Repository> {
        // The repository handle holds no state that a panic could leave half-updated.
        self.repo.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn to_git2(oid: &Oid) -> Result<git2::Oid> {
    git2::Oid::from_str(oid.as_str()).map_err(|e| {
        Error::new(
            ErrorKind::InvalidInput,
            "notes",
            format!("invalid object id {oid}"),
        )
        .with_source(e)
    })
}

fn from_git2(id: git2::Oid) -> Result<Oid> {
    Oid::new(&id.to_string())
}

fn current_tip(repo: &git2::Repository, notes_ref: &NotesRef) -> Result<Option<git2::Oid>> {
    match repo.find_reference(notes_ref.as_str()) {
        Ok(r) => {
            let resolved = r
                .resolve()
                .map_err(git_err("notes.tip", format!("cannot resolve {notes_ref}")))?;
            Ok(resolved.target())
        }
        Err(e) if e.code() == git2::ErrorCode::NotFound => Ok(None),
        Err(e) => Err(Error::new(
            ErrorKind::Backend,
            "notes.tip",
            format!("cannot read {notes_ref}"),
        )
        .with_source(e)),
    }
}

/// The tree of notes tip `tip` (a commit, or a tree as git allows).
fn root_tree<'r>(repo: &'r git2::Repository, tip: &Oid) -> Result<git2::Tree<'r>> {
    let id = to_git2(tip)?;
    let object = repo.find_object(id, None).map_err(|e| {
        Error::new(
            ErrorKind::NotFound,
            "notes.read",
            format!("notes tip {tip} not found"),
        )
        .with_source(e)
    })?;
    object.peel_to_tree().map_err(git_err(
        "notes.read",
        format!("notes tip {tip} has no tree"),
    ))
}

fn is_hex(s: &str) -> bool {
    s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The annotated object of a note path (`ab/cd/ef…` or flat), or `None` for a non-note.
fn note_object(path: &str) -> Option<String> {
    let mut parts: Vec<&str> = path.split('/').collect();
    let file = parts.pop()?;
    if !parts.iter().all(|d| d.len() == 2 && is_hex(d)) || !is_hex(file) {
        return None;
    }
    let hex: String = parts.into_iter().chain([file]).collect();
    (hex.len() == 40 || hex.len() == 64).then(|| hex.to_ascii_lowercase())
}

/// Every non-tree entry of `tree` as (path, id, file mode), in git's tree order.
fn flatten(tree: &git2::Tree<'_>) -> Result<Vec<(String, git2::Oid, i32)>> {
    let mut out = Vec::new();
    tree.walk(git2::TreeWalkMode::PreOrder, |root, entry| {
        if entry.kind() != Some(git2::ObjectType::Tree) {
            let name = String::from_utf8_lossy(entry.name_bytes());
            out.push((format!("{root}{name}"), entry.id(), entry.filemode()));
        }
        git2::TreeWalkResult::Ok
    })
    .map_err(git_err("notes.read", "cannot walk the notes tree"))?;
    Ok(out)
}

/// The blobs of `object` at every depth of `tree`, in git's tree order (directories first).
fn find_parts(
    repo: &git2::Repository,
    tree: &git2::Tree<'_>,
    rest: &str,
    out: &mut Vec<Vec<u8>>,
) -> Result<()> {
    if rest.len() > 2
        && let Some(dir) = tree.get_name(&rest[..2])
        && dir.kind() == Some(git2::ObjectType::Tree)
    {
        let sub = repo
            .find_tree(dir.id())
            .map_err(git_err("notes.read", "cannot read a notes subtree"))?;
        find_parts(repo, &sub, &rest[2..], out)?;
    }
    if let Some(file) = tree.get_name(rest)
        && file.kind() == Some(git2::ObjectType::Blob)
    {
        let blob = repo
            .find_blob(file.id())
            .map_err(git_err("notes.read", "cannot read a note blob"))?;
        out.push(blob.content().to_vec());
    }
    Ok(())
}

/// Joins several entries of one object as git's notes code does: an entry with the same bytes
/// (the same blob) as the one held so far adds nothing; otherwise `combine_notes_concatenate`.
fn join_git(parts: Vec<Vec<u8>>) -> Vec<u8> {
    let mut acc: Vec<u8> = Vec::new();
    let mut combined = false;
    for part in parts.into_iter().filter(|p| !p.is_empty()) {
        if acc.is_empty() {
            acc = part;
        } else if !combined && part == acc {
            continue;
        } else {
            combined = true;
            if acc.ends_with(b"\n") {
                acc.pop();
            }
            acc.extend_from_slice(b"\n\n");
            acc.extend_from_slice(&part);
        }
    }
    acc
}

type Flat = BTreeMap<String, (git2::Oid, i32)>;

/// Where a new note of `hex` goes: down the existing 2-hex directories.
fn note_path(flat: &Flat, hex: &str) -> String {
    let mut prefix = String::new();
    let mut rest = hex;
    while rest.len() > 2 {
        let dir = format!("{prefix}{}/", &rest[..2]);
        let exists = flat
            .range(dir.clone()..)
            .next()
            .is_some_and(|(k, _)| k.starts_with(&dir));
        if !exists {
            break;
        }
        prefix = dir;
        rest = &rest[2..];
    }
    format!("{prefix}{rest}")
}

/// Splits every directory with more than [`FANOUT_LIMIT`] note files into 2-hex subdirectories.
fn fan_out(flat: &mut Flat) {
    loop {
        let mut per_dir: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for path in flat.keys() {
            if note_object(path).is_none() {
                continue;
            }
            let (dir, file) = match path.rfind('/') {
                Some(i) => (&path[..=i], &path[i + 1..]),
                None => ("", path.as_str()),
            };
            if file.len() > 2 {
                per_dir
                    .entry(dir.to_owned())
                    .or_default()
                    .push(path.clone());
            }
        }
        let crowded: Vec<Vec<String>> = per_dir
            .into_values()
            .filter(|files| files.len() > FANOUT_LIMIT)
            .collect();
        if crowded.is_empty() {
            return;
        }
        for path in crowded.into_iter().flatten() {
            if let Some(value) = flat.remove(&path) {
                let i = path.rfind('/').map_or(0, |i| i + 1);
                let (dir, file) = path.split_at(i);
                flat.insert(format!("{dir}{}/{}", &file[..2], &file[2..]), value);
            }
        }
    }
}

#[derive(Default)]
struct Dir {
    files: Vec<(String, git2::Oid, i32)>,
    dirs: BTreeMap<String, Dir>,
}

fn build(repo: &git2::Repository, dir: &Dir) -> std::result::Result<git2::Oid, git2::Error> {
    let mut builder = repo.treebuilder(None)?;
    for (name, sub) in &dir.dirs {
        let id = build(repo, sub)?;
        builder.insert(name.as_str(), id, 0o040000)?;
    }
    for (name, id, mode) in &dir.files {
        builder.insert(name.as_str(), *id, *mode)?;
    }
    builder.write()
}

/// Writes the tree for `flat`.
fn write_tree(repo: &git2::Repository, flat: &Flat) -> Result<git2::Oid> {
    let mut root = Dir::default();
    for (path, (id, mode)) in flat {
        let mut parts: Vec<&str> = path.split('/').collect();
        let file = parts.pop().unwrap_or_default();
        let mut dir = &mut root;
        for p in parts {
            dir = dir.dirs.entry(p.to_owned()).or_default();
        }
        dir.files.push((file.to_owned(), *id, *mode));
    }
    build(repo, &root).map_err(git_err("notes.update", "cannot write the notes tree"))
}

impl Git2Notes {
    /// One notes commit (parents: `expected`, then `theirs`) with `edits` applied to the tree of
    /// `expected`, published by compare-and-swap.
    fn commit_and_swap(
        &self,
        op: &'static str,
        notes_ref: &NotesRef,
        expected: Option<&Oid>,
        theirs: Option<&Oid>,
        edits: &[NoteEdit],
        message: &str,
    ) -> Result<Oid> {
        let repo = self.lock();
        let expected_id = expected.map(to_git2).transpose()?;
        let current = current_tip(&repo, notes_ref)?;
        if current != expected_id {
            return Err(moved(op, notes_ref, expected_id, current));
        }
        let mut parents = Vec::new();
        for id in expected_id
            .iter()
            .chain(theirs.map(to_git2).transpose()?.iter())
        {
            parents.push(repo.find_commit(*id).map_err(|e| {
                Error::new(ErrorKind::NotFound, op, format!("notes tip {id} not found"))
                    .with_source(e)
            })?);
        }
        let mut flat: Flat = match expected {
            Some(tip) => flatten(&root_tree(&repo, tip)?)?
                .into_iter()
                .map(|(p, id, mode)| (p, (id, mode)))
                .collect(),
            None => Flat::new(),
        };
        for edit in edits {
            let hex = edit.object.as_str();
            flat.retain(|path, _| note_object(path).as_deref() != Some(hex));
            if let Some(bytes) = &edit.blob {
                let blob = repo
                    .blob(bytes)
                    .map_err(git_err(op, "cannot write a note blob"))?;
                let path = note_path(&flat, hex);
                flat.insert(path, (blob, 0o100644));
            }
        }
        fan_out(&mut flat);
        let tree_id = write_tree(&repo, &flat)?;
        let tree = repo
            .find_tree(tree_id)
            .map_err(git_err(op, "cannot read the notes tree"))?;
        let sig = repo.signature().map_err(|e| {
            Error::new(
                ErrorKind::Backend,
                op,
                format!("cannot create the notes commit for {notes_ref} (is user.name/user.email configured?)"),
            )
            .with_source(e)
        })?;
        let parent_refs: Vec<&git2::Commit<'_>> = parents.iter().collect();
        let commit = repo
            .commit(None, &sig, &sig, message, &tree, &parent_refs)
            .map_err(git_err(
                op,
                format!("cannot create the notes commit for {notes_ref}"),
            ))?;
        let log = format!("notes: {}", message.lines().next().unwrap_or_default());
        swap(&repo, op, notes_ref, expected_id, commit, &log)?;
        from_git2(commit)
    }
}

/// Moves `notes_ref` from `expected` to `new` under libgit2's ref lock.
fn swap(
    repo: &git2::Repository,
    op: &'static str,
    notes_ref: &NotesRef,
    expected: Option<git2::Oid>,
    new: git2::Oid,
    log: &str,
) -> Result<()> {
    // libgit2 checks "must not exist" of a plain create (`force = false`) *before* it takes the
    // ref lock, so two creators can both succeed and the first one's commit is lost. The zero id
    // as the expected value means "must not exist" and is checked under the lock.
    // (Without git2's unstable SHA-256 feature every repository it opens is SHA-1.)
    let old = expected.unwrap_or(git2::Oid::ZERO_SHA1);
    let result = repo.reference_matching(notes_ref.as_str(), new, true, old, log);
    match result {
        Ok(_) => Ok(()),
        Err(e) => {
            if let Some(locked) =
                crate::health::stale_lock_error(op, repo.commondir(), notes_ref.as_str())
            {
                // A lock nobody holds will not go away by retrying: say so at once, as the gix
                // backend does.
                return Err(locked.with_source(e));
            }
            let now = current_tip(repo, notes_ref)?;
            if now != expected
                || matches!(
                    e.code(),
                    git2::ErrorCode::Locked | git2::ErrorCode::Modified | git2::ErrorCode::Exists
                )
            {
                Err(moved(op, notes_ref, expected, now).with_source(e))
            } else {
                Err(
                    Error::new(ErrorKind::Backend, op, format!("cannot update {notes_ref}"))
                        .with_source(e),
                )
            }
        }
    }
}

fn moved(
    op: &'static str,
    notes_ref: &NotesRef,
    expected: Option<git2::Oid>,
    found: Option<git2::Oid>,
) -> Error {
    Error::new(
        ErrorKind::Conflict,
        op,
        format!(
            "{notes_ref} moved: expected {}, found {}",
            expected.map_or_else(|| "nothing".to_owned(), |e| e.to_string()),
            found.map_or_else(|| "nothing".to_owned(), |e| e.to_string()),
        ),
    )
}

fn require_commit(repo: &git2::Repository, op: &'static str, tip: &Oid) -> Result<git2::Oid> {
    let id = to_git2(tip)?;
    repo.find_commit(id).map_err(|e| {
        Error::new(
            ErrorKind::NotFound,
            op,
            format!("notes tip {tip} not found"),
        )
        .with_source(e)
    })?;
    Ok(id)
}

impl NotesBackend for Git2Notes {
    fn tip(&self, notes_ref: &NotesRef) -> Result<Option<Oid>> {
        current_tip(&self.lock(), notes_ref)?
            .map(from_git2)
            .transpose()
    }

    fn read(&self, tip: &Oid, object: &Oid) -> Result<Option<Vec<u8>>> {
        let repo = self.lock();
        let tree = root_tree(&repo, tip)?;
        let mut parts = Vec::new();
        find_parts(&repo, &tree, object.as_str(), &mut parts)?;
        Ok((!parts.is_empty()).then(|| {
            if parts.len() == 1 {
                parts.pop().unwrap_or_default()
            } else {
                join_git(parts)
            }
        }))
    }

    fn list(&self, tip: &Oid) -> Result<Vec<Oid>> {
        let repo = self.lock();
        let tree = root_tree(&repo, tip)?;
        let mut out: Vec<Oid> = flatten(&tree)?
            .into_iter()
            .filter_map(|(path, _, _)| note_object(&path))
            .map(|hex| Oid::new(&hex))
            .collect::<Result<_>>()?;
        out.sort();
        out.dedup();
        Ok(out)
    }

    fn read_all(&self, tip: &Oid) -> Result<Vec<(Oid, Vec<u8>)>> {
        let repo = self.lock();
        let tree = root_tree(&repo, tip)?;
        let mut grouped: BTreeMap<Oid, Vec<Vec<u8>>> = BTreeMap::new();
        for (path, id, _) in flatten(&tree)? {
            let Some(hex) = note_object(&path) else {
                continue;
            };
            let blob = repo
                .find_blob(id)
                .map_err(git_err("notes.read", "cannot read a note blob"))?;
            grouped
                .entry(Oid::new(&hex)?)
                .or_default()
                .push(blob.content().to_vec());
        }
        Ok(grouped
            .into_iter()
            .map(|(object, mut parts)| {
                let bytes = if parts.len() == 1 {
                    parts.pop().unwrap_or_default()
                } else {
                    join_git(parts)
                };
                (object, bytes)
            })
            .collect())
    }

    fn update(
        &self,
        notes_ref: &NotesRef,
        expected: Option<&Oid>,
        edits: &[NoteEdit],
        message: &str,
    ) -> Result<Oid> {
        crate::backend::require_edits(edits)?;
        self.commit_and_swap("notes.update", notes_ref, expected, None, edits, message)
    }

    fn list_refs(&self, prefix: &str) -> Result<Vec<(NotesRef, Oid)>> {
        const OP: &str = "notes.list_refs";
        let repo = self.lock();
        let refs = repo
            .references()
            .map_err(git_err(OP, "cannot list references"))?;
        let mut out = Vec::new();
        for r in refs {
            let r = r.map_err(git_err(OP, "cannot read a reference"))?;
            let Some(name) = r.name().ok().filter(|n| n.starts_with(prefix)) else {
                continue;
            };
            let Ok(notes_ref) = NotesRef::new(name) else {
                continue;
            };
            let resolved = r
                .resolve()
                .map_err(git_err(OP, format!("cannot resolve {name}")))?;
            if let Some(id) = resolved.target() {
                out.push((notes_ref, from_git2(id)?));
            }
        }
        out.sort();
        Ok(out)
    }

    fn is_ancestor(&self, ancestor: &Oid, descendant: &Oid) -> Result<bool> {
        const OP: &str = "notes.is_ancestor";
        let repo = self.lock();
        let a = require_commit(&repo, OP, ancestor)?;
        let d = require_commit(&repo, OP, descendant)?;
        if a == d {
            return Ok(true);
        }
        repo.graph_descendant_of(d, a).map_err(git_err(
            OP,
            format!("cannot compare {ancestor} and {descendant}"),
        ))
    }

    fn merge(
        &self,
        notes_ref: &NotesRef,
        expected: &Oid,
        theirs: &Oid,
        edits: &[NoteEdit],
        message: &str,
    ) -> Result<Oid> {
        require_commit(&self.lock(), "notes.merge", theirs)?;
        self.commit_and_swap(
            "notes.merge",
            notes_ref,
            Some(expected),
            Some(theirs),
            edits,
            message,
        )
    }

    fn fast_forward(&self, notes_ref: &NotesRef, expected: Option<&Oid>, to: &Oid) -> Result<()> {
        const OP: &str = "notes.fast_forward";
        let repo = self.lock();
        let to_id = require_commit(&repo, OP, to)?;
        let expected_id = expected.map(to_git2).transpose()?;
        let current = current_tip(&repo, notes_ref)?;
        if current != expected_id {
            return Err(moved(OP, notes_ref, expected_id, current));
        }
        if let Some(from) = expected_id
            && from != to_id
            && !repo
                .graph_descendant_of(to_id, from)
                .map_err(git_err(OP, "cannot compare tips"))?
        {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                OP,
                format!("cannot fast-forward {notes_ref}: {from} is not an ancestor of {to}"),
            ));
        }
        swap(
            &repo,
            OP,
            notes_ref,
            expected_id,
            to_id,
            &format!("notes: fast-forward to {to}"),
        )
    }
}
