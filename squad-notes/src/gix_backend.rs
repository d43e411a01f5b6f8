//! The gix (gitoxide) notes backend: reads any fanout, writes git's fanout, updates refs by CAS.

use std::path::Path;

use gix::bstr::ByteSlice;
use gix::error::ResultExt as _;
use gix::refs::transaction::PreviousValue;

use crate::backend::{NoteEdit, NotesBackend, WriteLock};
use crate::error::{Error, ErrorKind, Result};
use crate::format::{self, ParsedNote};
use crate::gix_bulk;
use crate::oid::{NotesRef, Oid};
use crate::parallel::{self, PARALLEL_MIN};

/// A [`NotesBackend`] on a git repository, through gix 0.90 (feature `gix`, on by default).
///
/// - **Reads** walk the notes tree themselves, so they accept any fanout (flat as libgit2 writes,
///   2/38, 2/2/36 as `git fast-import` writes, mixed inside one tree) and several entries for one
///   object, which they join as git does. Non-note entries are ignored by reads.
/// - **Bulk reads** (`read_all`, used by [`Notes::read_all`](crate::Notes::read_all) and
///   promotion) walk large trees on several threads and decode the blobs straight from the
///   pack files in pack order, each blob's delta base usually decoded just before it.
/// - **Writes** rebuild git's own notes trie (lazily loaded fanout directories, git's fanout
///   rule per subtree, non-note entries preserved), so the tree written is the one `git notes
///   add` writes on the same state, id for id. A tree holding several entries for one object
///   (a flat one and one under `xx/`, say) is folded as git folds it: identical blobs count
///   once, different ones are joined with a blank line.
/// - **Ref updates** are compare-and-swap (`MustExistAndMatch` / `MustNotExist`), with the reflog
///   message `notes: <message>` as git writes it. A lost race or a ref lock held by another writer
///   is [`ErrorKind::Conflict`].
/// - **Large updates** (see [`GixNotes::with_pack_threshold`]) write their blobs and trees as one
///   pack instead of one loose file per object.
/// - **Handles** are pooled, each with a small object cache, so a host that keeps a `GixNotes`
///   pays for opening the repository once.
/// - **Identity**: notes commits use the repository's configured author and committer (git
///   config or the `GIT_AUTHOR_*` / `GIT_COMMITTER_*` variables); without one, an update fails
///   with [`ErrorKind::Backend`] saying so.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use squad_notes::{GixNotes, NotesBackend, NotesRef};
/// let dir = tempfile::tempdir()?;
/// std::process::Command::new("git").args(["init", "-q"]).arg(dir.path()).status()?;
/// let notes = GixNotes::open(dir.path())?;
/// assert_eq!(notes.tip(&NotesRef::new("refs/notes/squad/data")?)?, None);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct GixNotes {
    repo: gix::ThreadSafeRepository,
    /// Thread-local handles kept for reuse: opening one per call costs more than a lookup.
    pool: std::sync::Arc<std::sync::Mutex<Vec<gix::Repository>>>,
    /// Updates with at least this many edits write their objects as one pack.
    pack_threshold: usize,
}

/// A full walk of a notes tree whose root has at least this many fanout subtrees uses several
/// threads.
const PARALLEL_WALK_MIN: usize = 16;
/// Updates with at least this many edits write their objects as one pack.
const PACK_MIN: usize = 2048;
/// How many idle repository handles are kept.
const POOL_SIZE: usize = 8;
/// The object cache of each pooled handle.
const OBJECT_CACHE_BYTES: usize = 8 * 1024 * 1024;

/// A pooled repository handle, returned to the pool when dropped.
struct Local<'a> {
    repo: Option<gix::Repository>,
    pool: &'a std::sync::Mutex<Vec<gix::Repository>>,
}

impl std::ops::Deref for Local<'_> {
    type Target = gix::Repository;
    fn deref(&self) -> &gix::Repository {
        self.repo.as_ref().expect("present until dropped")
    }
}

impl Drop for Local<'_> {
    fn drop(&mut self) {
        if let (Some(repo), Ok(mut pool)) = (self.repo.take(), self.pool.lock())
            && pool.len() < POOL_SIZE
        {
            pool.push(repo);
        }
    }
}

pub(crate) fn backend_err(
    op: &'static str,
    message: impl Into<String>,
) -> impl FnOnce(gix::Error) -> Error {
    let message = message.into();
    move |e| Error::new(ErrorKind::Backend, op, message).with_source(e)
}

impl GixNotes {
    /// Opens the repository at `path` (a work tree, its `.git` directory or a bare repository).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::NotFound`] when `path` is not a git repository.
    pub fn open(path: &Path) -> Result<Self> {
        let repo = gix::ThreadSafeRepository::open(path).map_err(|e| {
            Error::new(
                ErrorKind::NotFound,
                "notes.open",
                format!("{} is not a git repository", path.display()),
            )
            .with_source(e)
        })?;
        Ok(Self::from_repo(repo))
    }

    /// Finds the repository containing `path`, like git does from a working directory.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::NotFound`] when neither `path` nor a parent is in a git repository.
    pub fn discover(path: &Path) -> Result<Self> {
        let repo = gix::ThreadSafeRepository::discover(path).map_err(|e| {
            Error::new(
                ErrorKind::NotFound,
                "notes.open",
                format!("not a git repository (or any parent): {}", path.display()),
            )
            .with_source(e)
        })?;
        Ok(Self::from_repo(repo))
    }

    /// Resolves a revision (`HEAD`, a branch, an abbreviated or full id) to the id of a commit.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::NotFound`] naming `rev` when it does not resolve to a commit in this repository.
    pub fn resolve_commit(&self, rev: &str) -> Result<Oid> {
        let repo = self.repo.to_thread_local();
        peel_commit(&repo, rev, "notes.resolve").map(|id| from_gix(&id))
    }

    /// The commits of `<base>..<head>` (reachable from `head`, not from `base`), oldest first:
    /// the commits of a pull request, for [`Notes::carry`](crate::Notes::carry).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::NotFound`] naming a revision that does not resolve to a commit.
    pub fn commits_between(&self, base: &str, head: &str) -> Result<Vec<Oid>> {
        const OP: &str = "notes.range";
        let repo = self.local();
        let base = peel_commit(&repo, base, OP)?;
        let head = peel_commit(&repo, head, OP)?;
        let walk = repo
            .rev_walk([head])
            .with_hidden([base])
            .all()
            .map_err(backend_err(OP, format!("cannot walk from {head}")))?;
        let mut out = Vec::new();
        for info in walk {
            let info = info.map_err(backend_err(OP, format!("cannot walk from {head}")))?;
            out.push(from_gix(&info.id));
        }
        out.reverse();
        Ok(out)
    }

    /// Resolves a revision to an object id the way `git notes show` does: `HEAD`, a branch, a
    /// tag (an annotated tag is **not** peeled: it is the tag object), `<rev>^{tree}`,
    /// `<rev>:<path>`, an abbreviated id. A full hex id (40 or 64 digits) is taken as it is,
    /// whether the object is present or not, since notes may annotate missing objects.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::NotFound`] naming `rev` when it does not resolve.
    pub fn resolve_object(&self, rev: &str) -> Result<Oid> {
        let repo = self.local();
        if rev.len() == repo.object_hash().len_in_hex()
            && rev.bytes().all(|b| b.is_ascii_hexdigit())
        {
            return Oid::new(rev);
        }
        let not_found = || {
            Error::new(
                ErrorKind::NotFound,
                "notes.resolve",
                format!("object {rev:?} not found"),
            )
        };
        let id = repo
            .rev_parse_single(rev.as_bytes().as_bstr())
            .map_err(|e| not_found().with_source(e))?;
        Ok(from_gix(&id))
    }

    /// The object an annotated tag points at, or `None` when `object` is not a tag (or missing).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Corrupt`] when the tag cannot be read.
    pub fn tag_target(&self, object: &Oid) -> Result<Option<Oid>> {
        let repo = self.local();
        let id = to_gix(&repo, object)?;
        match repo.try_find_object(id) {
            Ok(Some(o)) if o.kind == gix::object::Kind::Tag => {
                let tag = o.into_tag();
                let target = tag.target_id().map_err(|e| {
                    Error::new(
                        ErrorKind::Corrupt,
                        "notes.resolve",
                        format!("tag {object} cannot be read"),
                    )
                    .with_source(e)
                })?;
                Ok(Some(from_gix(&target)))
            }
            _ => Ok(None),
        }
    }

    /// The type of each object of `objects` (in their order): commit, tag, tree, blob, or
    /// missing when the repository does not have it. Packed objects are typed from their pack
    /// entry headers alone, so typing every annotated object of a large namespace is cheap.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Corrupt`] for an unreadable pack entry; backend failures.
    pub fn object_types(&self, objects: &[Oid]) -> Result<Vec<crate::ObjectType>> {
        let repo = self.local();
        let ids = objects
            .iter()
            .map(|o| to_gix(&repo, o))
            .collect::<Result<Vec<_>>>()?;
        let packs = gix_bulk::Packs::open(&repo);
        let located = packs.locate_all(&ids, |id| id)?;
        let pairs: Vec<(gix::ObjectId, Option<gix_bulk::Location>)> =
            ids.into_iter().zip(located).collect();
        parallel::map_chunks(&pairs, PARALLEL_MIN, "notes.list", |part| {
            let repo = self.repo.to_thread_local();
            part.iter()
                .map(|(id, at)| {
                    let packed = at.and_then(|at| packs.kind_at(at).transpose());
                    object_type(&repo, id, packed)
                })
                .collect()
        })
    }

    /// Writes the blobs of `edits` (on several threads for large batches) and pairs each
    /// annotated object with its new blob id.
    fn write_blobs(
        &self,
        repo: &gix::Repository,
        edits: &[NoteEdit],
    ) -> Result<Vec<(gix::ObjectId, Option<gix::ObjectId>)>> {
        if edits.len() < PARALLEL_MIN {
            return write_blob_chunk(repo, edits);
        }
        parallel::map_chunks(edits, PARALLEL_MIN, "notes.update", |part| {
            write_blob_chunk(&self.repo.to_thread_local(), part)
        })
    }

    /// Every note at `tip`, mapped by `map`, sorted by object: one walk of the tree (on several
    /// threads for large trees), then every blob straight from the packs, in pack order, on
    /// several threads (see `gix_bulk`): packed note blobs are mostly deltas of each other, and
    /// in pack order each one's base has just been decoded. `map` runs on the decoding thread,
    /// on the decoder's own buffer; the entries of an object with several (mixed fanout) are
    /// joined first, as git joins them.
    fn bulk_read<T: Send>(
        &self,
        tip: &Oid,
        map: impl Fn(&[u8]) -> T + Sync,
    ) -> Result<Vec<(Oid, T)>> {
        let repo = self.local();
        let root = root_tree(&repo, &to_gix(&repo, tip)?)?;
        let packs = gix_bulk::Packs::open(&repo);
        let walked = walk_notes(Some(self), Some(&packs), &repo, root, false)?;
        let mut all = Vec::new();
        let how = ReadHow {
            sweep: false,
            types: false,
            batch: usize::MAX,
        };
        let make = |id, value, _| (id, value);
        self.read_walked(&repo, &packs, &walked, how, map, make, |part| {
            all = part;
            Ok(())
        })?;
        Ok(all)
    }

    /// The notes of `walked` (sorted by object), mapped by `map`, each made into an element by
    /// `make` (with its object's type when `how.types` asks for it) and handed to `emit` in
    /// order, at most `how.batch` at a time: the read half of [`GixNotes::bulk_read`]. The
    /// packed blobs are decoded from a plan of their delta trees ([`gix_bulk::decode_all`]), or
    /// with `how.sweep` in pack order keeping one delta chain per thread
    /// ([`gix_bulk::decode_sweep`]). The objects are located in the same pass over the pack
    /// indexes as the blobs, and typed from their entry headers (as
    /// [`GixNotes::object_types`] types them).
    #[expect(clippy::too_many_arguments, reason = "the reads share every part")]
    fn read_walked<T: Send, E>(
        &self,
        repo: &gix::Repository,
        packs: &gix_bulk::Packs,
        walked: &[Walked],
        how: ReadHow,
        map: impl Fn(&[u8]) -> T + Sync,
        make: impl Fn(Oid, T, Option<crate::ObjectType>) -> E,
        mut emit: impl FnMut(Vec<E>) -> Result<()>,
    ) -> Result<()> {
        /// A walked entry once read: mapped already, or kept to be joined with the other
        /// entries of its object.
        enum Slot<T> {
            Done(T),
            Raw(Vec<u8>),
        }
        // Objects with several entries (mixed fanout) are rare; their entries are joined later.
        let mut shared = vec![false; walked.len()];
        let mut i = 0;
        for entries in walked.chunk_by(|a, b| a.0 == b.0) {
            if entries.len() > 1 {
                shared[i..i + entries.len()].fill(true);
            }
            i += entries.len();
        }
        let slot = |i: usize, bytes: &[u8]| {
            if shared[i] {
                Slot::Raw(bytes.to_vec())
            } else {
                Slot::Done(map(bytes))
            }
        };
        let located = packs.locate_all(walked, |w| &w.1)?;
        // To type them, the objects' locations: `walked` is in object order, so each index is
        // merged with it.
        let objects_at = if how.types {
            packs.locate_sorted(walked, |w| &w.0)?
        } else {
            Vec::new()
        };
        // (blob id, location) of the packed blobs, with their index in `walked`; the others
        // are read through the object database.
        let mut in_packs = Vec::with_capacity(walked.len());
        let mut at_walked = Vec::with_capacity(walked.len());
        let mut loose = Vec::new();
        for (i, at) in located.into_iter().enumerate() {
            match at {
                Some(at) => {
                    in_packs.push((walked[i].1, at));
                    at_walked.push(i);
                }
                None => loose.push(i),
            }
        }
        let wanted = gix_bulk::Wanted {
            objects: &in_packs,
            kind: gix::object::Kind::Blob,
            what: "note entry",
        };
        let each = |w: usize, bytes: &[u8]| slot(at_walked[w], bytes);
        let loaded = if how.sweep {
            gix_bulk::decode_sweep(packs, &self.repo, &wanted, each)?
        } else {
            gix_bulk::decode_all(packs, &self.repo, &wanted, each)?
        };
        drop(in_packs);
        let mut slots: Vec<Option<Slot<T>>> =
            std::iter::repeat_with(|| None).take(walked.len()).collect();
        for (w, s) in loaded.into_iter().flatten() {
            slots[at_walked[w]] = Some(s);
        }
        drop(at_walked);
        for i in loose {
            slots[i] = Some(slot(i, &load_blob(repo, walked[i].1)?));
        }
        // The objects' types from their pack entries' headers (empty when not asked).
        let packed = parallel::map_chunks(&objects_at, PARALLEL_MIN, "notes.list", |part| {
            Ok(part
                .iter()
                .map(|at| at.map(|at| packs.kind_at(at).ok()))
                .collect())
        })?;
        let mut slots = slots.into_iter();
        let batch = how.batch.clamp(1, walked.len().max(1));
        let mut out = Vec::with_capacity(batch);
        let mut i = 0;
        for entries in walked.chunk_by(|a, b| a.0 == b.0) {
            let value = if entries.len() == 1 {
                match slots.next().flatten() {
                    Some(Slot::Done(value)) => value,
                    Some(Slot::Raw(bytes)) => map(&bytes),
                    None => map(&[]),
                }
            } else {
                let parts = slots.by_ref().take(entries.len()).map(|s| match s {
                    Some(Slot::Raw(bytes)) => bytes,
                    _ => Vec::new(),
                });
                map(&join_git(parts))
            };
            let id = &entries[0].0;
            let kind = if how.types {
                let from_pack = match packed.get(i).copied().flatten() {
                    // Not in a pack: the object database tells.
                    None => None,
                    Some(Some(Some(kind))) => Some(Ok(kind)),
                    // Its chain leaves the pack: the object database tells.
                    Some(Some(None)) => None,
                    // Its entry cannot be read: read again for the error.
                    Some(None) => objects_at[i].and_then(|at| packs.kind_at(at).transpose()),
                };
                Some(object_type(repo, id, from_pack)?)
            } else {
                None
            };
            i += entries.len();
            out.push(make(from_gix(id), value, kind));
            if out.len() >= batch {
                emit(std::mem::replace(&mut out, Vec::with_capacity(batch)))?;
            }
        }
        if !out.is_empty() {
            emit(out)?;
        }
        Ok(())
    }

    /// Every note at `tip`, each mapped by `map` on the thread that decoded it, straight from
    /// the decoder's buffer (no copy of the blobs), sorted by object: the bulk read behind
    /// `read_all` and `read_all_parsed`, for callers that need less than a parsed note (for
    /// example [`format::count_entries`]).
    ///
    /// # Errors
    ///
    /// As [`NotesBackend::read_all`].
    pub fn read_all_map<T: Send>(
        &self,
        tip: &Oid,
        map: impl Fn(&[u8]) -> T + Sync,
    ) -> Result<Vec<(Oid, T)>> {
        self.bulk_read(tip, map)
    }

    /// Every note at `tip` in object order, as [`GixNotes::read_all_map`] gives them, handed to
    /// `sink` one batch at a time instead of all at once: a batch is the notes whose ids share
    /// their first byte (one top-level fanout directory, with any flat entries of that byte).
    /// Each batch is walked, read and mapped, then dropped, so memory stays bounded whatever
    /// the number of notes: the blobs are read one by one with a delta cache of at most
    /// `cache_bytes` bytes (see also [`GixNotes::read_all_map`], faster when all notes fit in
    /// memory, since it decodes every pack entry exactly once in pack order).
    ///
    /// # Errors
    ///
    /// As [`NotesBackend::read_all`]; an error of `sink` stops the walk and is returned.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use squad_notes::{GixNotes, NoteEdit, NotesBackend, NotesRef};
    /// let dir = tempfile::tempdir()?;
    /// let git = |args: &[&str]| std::process::Command::new("git").arg("-C").arg(dir.path())
    ///     .args(args).env("GIT_AUTHOR_NAME", "A").env("GIT_AUTHOR_EMAIL", "a@test.invalid")
    ///     .env("GIT_COMMITTER_NAME", "A").env("GIT_COMMITTER_EMAIL", "a@test.invalid").output();
    /// git(&["init", "-q"])?;
    /// git(&["config", "user.name", "A"])?;
    /// git(&["config", "user.email", "a@test.invalid"])?;
    /// git(&["commit", "-q", "--allow-empty", "-m", "one"])?;
    /// let head = String::from_utf8(git(&["rev-parse", "HEAD"])?.stdout)?;
    /// let notes = GixNotes::open(dir.path())?;
    /// let r = NotesRef::new("refs/notes/squad/data")?;
    /// let tip = notes.update(&r, None, &[NoteEdit::set(head.trim().parse()?, "x\n")], "add")?;
    /// let mut seen = Vec::new();
    /// notes.stream_map(&tip, 1 << 20, <[u8]>::len, |batch| {
    ///     seen.extend(batch);
    ///     Ok(())
    /// })?;
    /// assert_eq!(seen, vec![(head.trim().parse()?, 2)]);
    /// # Ok(()) }
    /// ```
    pub fn stream_map<T>(
        &self,
        tip: &Oid,
        cache_bytes: usize,
        map: impl Fn(&[u8]) -> T,
        mut sink: impl FnMut(Vec<(Oid, T)>) -> Result<()>,
    ) -> Result<()> {
        let repo = self.local();
        let root = root_tree(&repo, &to_gix(&repo, tip)?)?;
        let packs = gix_bulk::Packs::open(&repo);
        let tree = read_tree(&repo, root)?;
        let top = decode_tree(&tree)?;
        let hex_len = repo.object_hash().len_in_hex();
        let mut reader = TreeReader {
            repo: &repo,
            packs: Some(&packs),
            inflate: gix::zlib::Inflate::default(),
        };
        let mut bufs = vec![Vec::new(); hex_len / 2];
        let mut blobs = gix_bulk::ChainReader::new(&packs, cache_bytes);
        let mut blob = Vec::new();
        let mut read = |id: gix::ObjectId, out: &mut Vec<u8>| -> Result<()> {
            match blobs.read(&id, out)? {
                Some(gix::object::Kind::Blob) => Ok(()),
                Some(kind) => Err(Error::new(
                    ErrorKind::Corrupt,
                    "notes.read",
                    format!("note entry {id} is a {kind}, not a blob"),
                )),
                None => {
                    *out = load_blob(&repo, id)?;
                    Ok(())
                }
            }
        };
        let entries = by_first_byte(&top.entries);
        for group in entries.chunk_by(|a, b| a.0 == b.0) {
            let mut walked = Vec::new();
            let mut state = WalkState {
                prefix: Vec::with_capacity(hex_len),
                path: Vec::new(),
                hex_len,
                paths: false,
            };
            walk_entries(
                &mut reader,
                group.iter().map(|e| Ok(e.1)),
                &mut state,
                &mut walked,
                &mut bufs,
            )?;
            walked.sort_by_key(|w| w.0);
            let mut out = Vec::with_capacity(walked.len());
            for notes in walked.chunk_by(|a, b| a.0 == b.0) {
                let value = if let [(_, id, _)] = notes {
                    read(*id, &mut blob)?;
                    map(&blob)
                } else {
                    let mut parts = Vec::with_capacity(notes.len());
                    for (_, id, _) in notes {
                        read(*id, &mut blob)?;
                        parts.push(blob.clone());
                    }
                    map(&join_git(parts))
                };
                out.push((from_gix(&notes[0].0), value));
            }
            if !out.is_empty() {
                sink(out)?;
            }
        }
        Ok(())
    }

    /// Every note at `tip` in object order, mapped as [`GixNotes::read_all_map`] maps them (on
    /// several threads), handed to `sink` in batches of at most 4096 notes, a window at a
    /// time. A window is the notes of consecutive first bytes (whole top-level fanout
    /// directories). Each window is walked, read, mapped and handed over, then dropped, so
    /// memory is bounded by the window whatever the number of notes or the size of the pack:
    /// - with no more than `window` notes this is one window, read as
    ///   [`GixNotes::read_all_map`] reads (a plan of the blobs' delta trees, each entry decoded
    ///   once), as fast;
    /// - a larger namespace is read in windows of about `window / 2` notes, each reading its
    ///   blobs in pack order with one delta chain per thread (a plan would hold every base its
    ///   notes need: for a window of a large pack, most of the pack). It pays in time: a delta
    ///   chain is decoded again by every window that needs part of it. The smaller windows
    ///   keep its peak heap at about that of one window of `window` notes.
    ///
    /// Each batch is built as it is handed over, so the caller's copy of the notes is never
    /// more than a batch.
    ///
    /// ([`GixNotes::stream_map`] bounds memory by a delta cache instead, reading blob by blob.)
    ///
    /// # Errors
    ///
    /// As [`NotesBackend::read_all`]; an error of `sink` stops the read and is returned.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use squad_notes::{GixNotes, NoteEdit, NotesBackend, NotesRef};
    /// let dir = tempfile::tempdir()?;
    /// let git = |args: &[&str]| std::process::Command::new("git").arg("-C").arg(dir.path())
    ///     .args(args).env("GIT_AUTHOR_NAME", "A").env("GIT_AUTHOR_EMAIL", "a@test.invalid")
    ///     .env("GIT_COMMITTER_NAME", "A").env("GIT_COMMITTER_EMAIL", "a@test.invalid").output();
    /// git(&["init", "-q"])?;
    /// git(&["config", "user.name", "A"])?;
    /// git(&["config", "user.email", "a@test.invalid"])?;
    /// git(&["commit", "-q", "--allow-empty", "-m", "one"])?;
    /// let head = String::from_utf8(git(&["rev-parse", "HEAD"])?.stdout)?;
    /// let notes = GixNotes::open(dir.path())?;
    /// let r = NotesRef::new("refs/notes/squad/data")?;
    /// let tip = notes.update(&r, None, &[NoteEdit::set(head.trim().parse()?, "x\n")], "add")?;
    /// let mut seen = Vec::new();
    /// notes.stream_windows(&tip, 1 << 17, <[u8]>::len, |window| {
    ///     seen.extend(window);
    ///     Ok(())
    /// })?;
    /// assert_eq!(seen, vec![(head.trim().parse()?, 2)]);
    /// # Ok(()) }
    /// ```
    pub fn stream_windows<T: Send>(
        &self,
        tip: &Oid,
        window: usize,
        map: impl Fn(&[u8]) -> T + Sync,
        sink: impl FnMut(Vec<(Oid, T)>) -> Result<()>,
    ) -> Result<()> {
        self.stream(tip, window, false, map, |id, value, _| (id, value), sink)
    }

    /// [`GixNotes::stream_windows`], each note with the type of the object it annotates (as
    /// [`GixNotes::object_types`] gives it), found in the same pass over the pack indexes as
    /// the notes' blobs and read on the decoding threads: `notes list --json`'s read.
    ///
    /// # Errors
    ///
    /// As [`GixNotes::stream_windows`]; [`ErrorKind::Corrupt`] for an object whose pack entry
    /// cannot be read.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use squad_notes::{GixNotes, NoteEdit, NotesBackend, NotesRef, ObjectType};
    /// let dir = tempfile::tempdir()?;
    /// let git = |args: &[&str]| std::process::Command::new("git").arg("-C").arg(dir.path())
    ///     .args(args).env("GIT_AUTHOR_NAME", "A").env("GIT_AUTHOR_EMAIL", "a@test.invalid")
    ///     .env("GIT_COMMITTER_NAME", "A").env("GIT_COMMITTER_EMAIL", "a@test.invalid").output();
    /// git(&["init", "-q"])?;
    /// git(&["commit", "-q", "--allow-empty", "-m", "one"])?;
    /// let head: squad_notes::Oid =
    ///     String::from_utf8(git(&["rev-parse", "HEAD"])?.stdout)?.trim().parse()?;
    /// let tree: squad_notes::Oid =
    ///     String::from_utf8(git(&["rev-parse", "HEAD^{tree}"])?.stdout)?.trim().parse()?;
    /// let missing: squad_notes::Oid = "1234567890123456789012345678901234567890".parse()?;
    /// let notes = GixNotes::open(dir.path())?;
    /// let r = NotesRef::new("refs/notes/squad/data")?;
    /// let edits = [
    ///     NoteEdit::set(head.clone(), "x\n"),
    ///     NoteEdit::set(tree.clone(), "y\n"),
    ///     NoteEdit::set(missing.clone(), "z\n"),
    /// ];
    /// let tip = notes.update(&r, None, &edits, "add")?;
    /// let mut seen = Vec::new();
    /// notes.stream_windows_typed(&tip, 1 << 17, <[u8]>::len, |window| {
    ///     seen.extend(window);
    ///     Ok(())
    /// })?;
    /// seen.sort_by(|a, b| a.0.cmp(&b.0));
    /// let mut want = vec![
    ///     (head, 2, ObjectType::Commit),
    ///     (tree, 2, ObjectType::Tree),
    ///     (missing, 2, ObjectType::Missing),
    /// ];
    /// want.sort_by(|a, b| a.0.cmp(&b.0));
    /// assert_eq!(seen, want);
    /// # Ok(()) }
    /// ```
    pub fn stream_windows_typed<T: Send>(
        &self,
        tip: &Oid,
        window: usize,
        map: impl Fn(&[u8]) -> T + Sync,
        sink: impl FnMut(Vec<(Oid, T, crate::ObjectType)>) -> Result<()>,
    ) -> Result<()> {
        let make = |id, value, kind: Option<crate::ObjectType>| {
            (id, value, kind.unwrap_or(crate::ObjectType::Missing))
        };
        self.stream(tip, window, true, map, make, sink)
    }

    /// The read behind [`GixNotes::stream_windows`] and [`GixNotes::stream_windows_typed`].
    fn stream<T: Send, E>(
        &self,
        tip: &Oid,
        window: usize,
        types: bool,
        map: impl Fn(&[u8]) -> T + Sync,
        make: impl Fn(Oid, T, Option<crate::ObjectType>) -> E,
        mut sink: impl FnMut(Vec<E>) -> Result<()>,
    ) -> Result<()> {
        let repo = self.local();
        let root = root_tree(&repo, &to_gix(&repo, tip)?)?;
        let packs = gix_bulk::Packs::open(&repo);
        let tree = read_tree(&repo, root)?;
        let top = decode_tree(&tree)?;
        let entries: Vec<_> = by_first_byte(&top.entries);
        let mut walked: Vec<Walked> = Vec::new();
        let mut groups = entries.chunk_by(|a, b| a.0 == b.0).peekable();
        // The notes the window being walked takes: `window` for the first one, half of it for
        // the others.
        let mut target = window.max(1);
        // Root entries walked so far and the notes under them: the next run takes about as
        // many entries as the window has room for, so that a window holds about `target` notes
        // however many notes a first byte has (about 3,900 at a million notes).
        let (mut entries_walked, mut notes_walked) = (0usize, 0usize);
        while groups.peek().is_some() {
            // A run of whole first-byte groups, walked at once (on several threads when it has
            // two subtrees or more), then added to the window.
            let room = target.saturating_sub(walked.len());
            let left = entries.len().saturating_sub(entries_walked);
            let per_entry = notes_walked.checked_div(entries_walked);
            let take = match per_entry {
                // All the rest when it fits in the window as the entries walked so far
                // suggest: one walk over every thread rather than several runs of a few
                // entries, each waiting for its slowest thread.
                Some(per_entry) if per_entry.saturating_mul(left) <= room => left,
                Some(per_entry) => (room / per_entry.max(1)).clamp(1, WINDOW_WALK_RUN),
                None => WINDOW_WALK_FIRST,
            };
            let mut run = Vec::with_capacity(take);
            while run.len() < take
                && let Some(group) = groups.next()
            {
                run.extend(group.iter().map(|e| e.1));
            }
            let expected = per_entry.unwrap_or(0).saturating_mul(run.len());
            let before = walked.len();
            // Runs come in first-byte order, each sorted: the window stays sorted.
            walk_top(
                Some(self),
                Some(&packs),
                &repo,
                &run,
                false,
                2,
                expected,
                &mut walked,
            )?;
            (entries_walked, notes_walked) = (
                entries_walked + run.len(),
                notes_walked + (walked.len() - before),
            );
            let last = groups.peek().is_none();
            if walked.len() < target && !last {
                continue;
            }
            if last && notes_walked == walked.len() {
                // The only window, read as a whole read is, from a plan of its delta trees.
                let how = ReadHow {
                    sweep: false,
                    types,
                    batch: STREAM_BATCH,
                };
                self.read_walked(&repo, &packs, &walked, how, &map, &make, &mut sink)?;
            } else {
                // The windows of a larger namespace sweep the pack, each in about half a
                // window's notes (the first one, walked whole, in pieces).
                target = (window / 2).max(1);
                let mut rest = walked.as_slice();
                while !rest.is_empty() {
                    // Cut between two objects: the entries of one object are read together.
                    let mut end = target.min(rest.len());
                    while end < rest.len() && rest[end].0 == rest[end - 1].0 {
                        end += 1;
                    }
                    let (piece, after) = rest.split_at(end);
                    let how = ReadHow {
                        sweep: true,
                        types,
                        batch: STREAM_BATCH,
                    };
                    self.read_walked(&repo, &packs, piece, how, &map, &make, &mut sink)?;
                    rest = after;
                }
            }
            walked = Vec::new();
        }
        Ok(())
    }

    fn from_repo(repo: gix::ThreadSafeRepository) -> Self {
        Self {
            repo,
            pool: std::sync::Arc::default(),
            pack_threshold: PACK_MIN,
        }
    }

    /// Updates with at least `edits` edits (default 2048) build their objects in memory and write
    /// them as one pack instead of one loose file per object; bulk imports are several times
    /// faster that way. `usize::MAX` turns it off.
    pub fn with_pack_threshold(mut self, edits: usize) -> Self {
        self.pack_threshold = edits.max(1);
        self
    }

    fn local(&self) -> Local<'_> {
        let pooled = self.pool.lock().ok().and_then(|mut p| p.pop());
        let repo = pooled.unwrap_or_else(|| {
            let mut repo = self.repo.to_thread_local();
            // Notes trees are immutable by id: the root and first-level fanout trees are read by
            // every lookup, so a small cache per pooled handle saves most inflating.
            repo.object_cache_size_if_unset(OBJECT_CACHE_BYTES);
            repo
        });
        Local {
            repo: Some(repo),
            pool: &self.pool,
        }
    }
}

pub(crate) fn to_gix(repo: &gix::Repository, oid: &Oid) -> Result<gix::ObjectId> {
    let id = gix::ObjectId::from_hex(oid.as_str().as_bytes()).map_err(|e| {
        Error::new(
            ErrorKind::InvalidInput,
            "notes",
            format!("invalid object id {oid}"),
        )
        .with_source(e)
    })?;
    if id.kind() != repo.object_hash() {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            "notes",
            format!("object id {oid} does not match the repository's hash function"),
        ));
    }
    Ok(id)
}

/// The type of object `id`: `packed` when its pack entry's headers gave it (an error there is
/// reported), otherwise from the object database ([`crate::ObjectType::Missing`] when it does
/// not have it).
fn object_type(
    repo: &gix::Repository,
    id: &gix::oid,
    packed: Option<Result<gix::object::Kind>>,
) -> Result<crate::ObjectType> {
    if let Some(kind) = packed {
        return kind.map(type_of);
    }
    match repo.try_find_header(id) {
        Ok(Some(header)) => Ok(type_of(header.kind())),
        Ok(None) => Ok(crate::ObjectType::Missing),
        Err(e) => Err(Error::new(
            ErrorKind::Backend,
            "notes.list",
            format!("cannot read object {id}"),
        )
        .with_source(e)),
    }
}

fn type_of(kind: gix::object::Kind) -> crate::ObjectType {
    match kind {
        gix::object::Kind::Commit => crate::ObjectType::Commit,
        gix::object::Kind::Tag => crate::ObjectType::Tag,
        gix::object::Kind::Tree => crate::ObjectType::Tree,
        gix::object::Kind::Blob => crate::ObjectType::Blob,
    }
}

/// The commit `rev` names (any revision syntax, peeled to a commit); a
/// [`ErrorKind::NotFound`] of `op` naming `rev` otherwise.
pub(crate) fn peel_commit(
    repo: &gix::Repository,
    rev: &str,
    op: &'static str,
) -> Result<gix::ObjectId> {
    let not_found = || Error::new(ErrorKind::NotFound, op, format!("commit {rev:?} not found"));
    let id = repo
        .rev_parse_single(rev.as_bytes().as_bstr())
        .map_err(|e| not_found().with_source(e))?;
    let object = id.object().map_err(|e| not_found().with_source(e))?;
    let commit = object
        .peel_to_commit()
        .map_err(|e| not_found().with_source(e))?;
    Ok(commit.id)
}

pub(crate) fn from_gix(id: &gix::oid) -> Oid {
    let mut buf = [0u8; 64];
    Oid::from_lower_hex(id.hex_to_buf(&mut buf))
}

pub(crate) fn current_tip(
    repo: &gix::Repository,
    notes_ref: &NotesRef,
) -> Result<Option<gix::ObjectId>> {
    let reference = repo
        .try_find_reference(notes_ref.as_str())
        .map_err(backend_err("notes.tip", format!("cannot read {notes_ref}")))?;
    match reference {
        None => Ok(None),
        Some(mut r) => Ok(Some(
            r.follow_to_object()
                .map_err(backend_err(
                    "notes.tip",
                    format!("cannot resolve {notes_ref}"),
                ))?
                .detach(),
        )),
    }
}

/// The root tree of notes commit `tip` (a notes ref may also point at a tree directly).
fn root_tree(repo: &gix::Repository, tip: &gix::oid) -> Result<gix::ObjectId> {
    let object = repo.find_object(tip).map_err(|e| {
        Error::new(
            ErrorKind::NotFound,
            "notes.read",
            format!("notes tip {tip} not found"),
        )
        .with_source(e)
    })?;
    match object.kind {
        gix::object::Kind::Tree => Ok(object.id),
        _ => Ok(object
            .peel_to_commit()
            .map_err(backend_err(
                "notes.read",
                format!("notes tip {tip} is not a commit"),
            ))?
            .tree_id()
            .map_err(backend_err(
                "notes.read",
                format!("notes commit {tip} has no tree"),
            ))?
            .detach()),
    }
}

/// Collects the note blobs of the object whose hex id is `hex`, in git's tree order, at every depth.
fn find_note(
    repo: &gix::Repository,
    tree_id: gix::ObjectId,
    hex: &[u8],
    consumed: usize,
    out: &mut Vec<gix::ObjectId>,
) -> Result<()> {
    let tree = repo.find_tree(tree_id).map_err(backend_err(
        "notes.read",
        format!("cannot read notes tree {tree_id}"),
    ))?;
    let rest = &hex[consumed..];
    for entry in gix::objs::TreeRefIter::from_bytes(&tree.data, repo.object_hash()) {
        let entry = entry.map_err(|e| {
            Error::new(
                ErrorKind::Corrupt,
                "notes.read",
                format!("corrupt notes tree {tree_id}"),
            )
            .with_source(e)
        })?;
        let name: &[u8] = entry.filename;
        if entry.mode.is_blob() && name.eq_ignore_ascii_case(rest) {
            out.push(entry.oid.to_owned());
        } else if entry.mode.is_tree()
            && name.len() == 2
            && rest.len() > 2
            && name.eq_ignore_ascii_case(&rest[..2])
        {
            find_note(repo, entry.oid.to_owned(), hex, consumed + 2, out)?;
        }
    }
    Ok(())
}

/// A note found by a full walk: (annotated object, blob, path in the tree). The path is empty
/// unless the walk was asked for paths.
type Walked = (gix::ObjectId, gix::ObjectId, Vec<u8>);

/// How [`GixNotes::read_walked`] reads and hands over its notes.
#[derive(Clone, Copy)]
struct ReadHow {
    /// Sweep the pack in pack order with one delta chain per thread, rather than plan the
    /// blobs' delta trees (see `gix_bulk`).
    sweep: bool,
    /// Also give each note's object type.
    types: bool,
    /// Hand over at most this many notes at a time.
    batch: usize,
}

/// Where a walk is: the hex prefix and the path of the tree being walked.
struct WalkState {
    prefix: Vec<u8>,
    path: Vec<u8>,
    hex_len: usize,
    paths: bool,
}

fn read_tree(repo: &gix::Repository, tree_id: gix::ObjectId) -> Result<gix::Tree<'_>> {
    repo.find_tree(tree_id)
        .map_err(|e| backend_err("notes.list", format!("cannot read notes tree {tree_id}"))(e))
}

fn decode_tree<'t>(tree: &'t gix::Tree<'_>) -> Result<gix::objs::TreeRef<'t>> {
    tree.decode()
        .map_err(|e| backend_err("notes.list", format!("corrupt notes tree {}", tree.id))(e))
}

/// Reads the trees of a walk: straight from the packs when it has them (into a buffer per
/// depth, without an object cache), else through the object database.
struct TreeReader<'a> {
    repo: &'a gix::Repository,
    packs: Option<&'a gix_bulk::Packs>,
    inflate: gix::zlib::Inflate,
}

impl TreeReader<'_> {
    fn read(&mut self, id: gix::ObjectId, buf: &mut Vec<u8>) -> Result<()> {
        if let Some(packs) = self.packs {
            match packs.read_into(&id, buf, &mut self.inflate)? {
                Some(gix::object::Kind::Tree) => return Ok(()),
                Some(kind) => {
                    return Err(Error::new(
                        ErrorKind::Corrupt,
                        "notes.list",
                        format!("notes tree {id} is a {kind}"),
                    ));
                }
                None => {}
            }
        }
        let tree = read_tree(self.repo, id)?;
        buf.clear();
        buf.extend_from_slice(&tree.data);
        Ok(())
    }
}

/// Walks the whole notes tree in git's order, classifying entries as git's `load_subtree` does.
/// `bufs` holds one buffer per remaining depth.
fn walk(
    reader: &mut TreeReader<'_>,
    tree_id: gix::ObjectId,
    state: &mut WalkState,
    out: &mut Vec<Walked>,
    bufs: &mut [Vec<u8>],
) -> Result<()> {
    let Some((buf, deeper)) = bufs.split_first_mut() else {
        return Err(Error::new(
            ErrorKind::Corrupt,
            "notes.list",
            format!("notes tree {tree_id} is nested deeper than any fanout"),
        ));
    };
    reader.read(tree_id, buf)?;
    let hash = reader.repo.object_hash();
    let entries = gix::objs::TreeRefIter::from_bytes(buf, hash).map(|e| {
        e.map_err(|e| backend_err("notes.list", format!("corrupt notes tree {tree_id}"))(e))
    });
    walk_entries(reader, entries, state, out, deeper)
}

fn walk_entries<'e>(
    reader: &mut TreeReader<'_>,
    entries: impl Iterator<Item = Result<gix::objs::tree::EntryRef<'e>>>,
    state: &mut WalkState,
    out: &mut Vec<Walked>,
    bufs: &mut [Vec<u8>],
) -> Result<()> {
    for entry in entries {
        let entry = entry?;
        let name: &[u8] = entry.filename;
        let (plen, pathlen) = (state.prefix.len(), state.path.len());
        if state.paths {
            if !state.path.is_empty() {
                state.path.push(b'/');
            }
            state.path.extend_from_slice(name);
        }
        if entry.mode.is_blob() && plen + name.len() == state.hex_len {
            // The whole id must be hex: `from_hex` checks that.
            state.prefix.extend_from_slice(name);
            if let Ok(object) = gix::ObjectId::from_hex(&state.prefix) {
                out.push((object, entry.oid.to_owned(), state.path.clone()));
            }
        } else if entry.mode.is_tree()
            && name.len() == 2
            && plen + 2 < state.hex_len
            && name.iter().all(u8::is_ascii_hexdigit)
        {
            state.prefix.extend_from_slice(name);
            walk(reader, entry.oid.to_owned(), state, out, bufs)?;
        }
        state.prefix.truncate(plen);
        state.path.truncate(pathlen);
    }
    Ok(())
}

/// Every note of a notes tree, sorted by annotated object; the entries of one object keep their
/// tree order (use `chunk_by` on the object to group them). Paths are collected only when
/// `paths` is set. Trees are read straight from `packs` when given. A root with many fanout
/// subtrees is walked on several threads, each taking a contiguous run of the root's entries,
/// so the result is the same as a walk on one thread.
fn walk_notes(
    parallel: Option<&GixNotes>,
    packs: Option<&gix_bulk::Packs>,
    repo: &gix::Repository,
    root: gix::ObjectId,
    paths: bool,
) -> Result<Vec<Walked>> {
    let tree = read_tree(repo, root)?;
    let top = decode_tree(&tree)?;
    let mut walked = Vec::new();
    walk_top(
        parallel,
        packs,
        repo,
        &top.entries,
        paths,
        PARALLEL_WALK_MIN,
        0,
        &mut walked,
    )?;
    Ok(walked)
}

/// [`walk_notes`] for some entries of the root tree: appends the notes under `entries` to
/// `out`, sorted by object (the entries of one object in walk order), walked on several threads
/// when they hold at least `parallel_min` subtrees. `expected` is about how many notes they
/// hold (0 when unknown): each thread makes room for its share at once.
#[expect(clippy::too_many_arguments, reason = "the walks share every part")]
fn walk_top(
    parallel: Option<&GixNotes>,
    packs: Option<&gix_bulk::Packs>,
    repo: &gix::Repository,
    entries: &[gix::objs::tree::EntryRef<'_>],
    paths: bool,
    parallel_min: usize,
    expected: usize,
    out: &mut Vec<Walked>,
) -> Result<()> {
    let hex_len = repo.object_hash().len_in_hex();
    let state = || WalkState {
        prefix: Vec::with_capacity(hex_len),
        path: Vec::new(),
        hex_len,
        paths,
    };
    // One buffer per fanout level below the root.
    let bufs = || vec![Vec::new(); hex_len / 2];
    let subtrees = entries.iter().filter(|e| e.mode.is_tree()).count();
    // Walks `run`, entries of the root, reading trees with `repo`.
    let walk_run = |repo: &gix::Repository, run: &[gix::objs::tree::EntryRef<'_>]| {
        let share = expected.saturating_mul(run.len()) / entries.len().max(1);
        let mut part = Vec::with_capacity(share + share / 8);
        let mut reader = TreeReader {
            repo,
            packs,
            inflate: gix::zlib::Inflate::default(),
        };
        let entries = run.iter().map(|e| Ok(*e));
        walk_entries(&mut reader, entries, &mut state(), &mut part, &mut bufs()).map(|()| part)
    };
    let parts = match parallel.filter(|_| subtrees >= parallel_min.max(2)) {
        // A fresh handle per thread without an object cache: a full walk reads each tree once,
        // so a cache would only cost copies (and make repeated walks look faster than a cold one).
        Some(notes) => parallel::map_parts(entries, 2, "notes.list", |run| {
            walk_run(&notes.repo.to_thread_local(), run)
        })?,
        None => vec![walk_run(repo, entries)?],
    };
    // Moved once, into `out`: each part is in walk order, which is object order but where
    // fanouts mix.
    let start = out.len();
    out.reserve(parts.iter().map(Vec::len).sum());
    for part in parts {
        out.extend(part);
    }
    let added = &mut out[start..];
    if !added.is_sorted_by_key(|n| n.0) {
        // Stable: entries of one object keep their tree order.
        added.sort_by_key(|n| n.0);
    }
    Ok(())
}

/// The root entries whose names start with a hex byte (the others are not notes), with that
/// byte, sorted by it (stable: the entries of one byte keep their tree order).
fn by_first_byte<'t>(
    entries: &[gix::objs::tree::EntryRef<'t>],
) -> Vec<(u8, gix::objs::tree::EntryRef<'t>)> {
    let first = |name: &[u8]| {
        (name.len() >= 2)
            .then(|| hex::decode(&name[..2]).ok())
            .flatten()
            .map(|b| b[0])
    };
    let mut out: Vec<_> = entries
        .iter()
        .filter_map(|e| first(e.filename).map(|b| (b, *e)))
        .collect();
    out.sort_by_key(|e| e.0);
    out
}

/// The most root entries [`GixNotes::stream_windows`] walks at a time (whole first-byte groups,
/// so possibly a few more) while the window may not hold them all: fewer when the window has
/// room for fewer notes, all the rest when it has room for them.
const WINDOW_WALK_RUN: usize = 32;

/// The root entries [`GixNotes::stream_windows`] walks first, before it knows how many notes a
/// root entry holds.
const WINDOW_WALK_FIRST: usize = 4;

/// The most notes [`GixNotes::stream_windows`] hands over at a time from a window of a large
/// namespace (a window is read at once, then handed over in batches of this many, each built
/// as it is handed over).
const STREAM_BATCH: usize = 1 << 12;

fn load_blob(repo: &gix::Repository, id: gix::ObjectId) -> Result<Vec<u8>> {
    let mut blob = repo.find_blob(id).map_err(|e| {
        Error::new(
            ErrorKind::Corrupt,
            "notes.read",
            format!("note blob {id} cannot be read"),
        )
        .with_source(e)
    })?;
    Ok(blob.take_data())
}

/// Joins the entries of one object, in tree order, as git's notes code does when it loads a
/// tree with several entries for one object: an entry whose blob is the one held so far adds
/// nothing (two entries in two fanouts pointing at the same blob are one note), an empty one
/// adds nothing, and otherwise `combine_notes_concatenate` applies (the held text without one
/// trailing `\n`, then `\n\n`, then the entry; the result is a new blob, which later entries
/// are compared with). git compares blob ids; two blobs have the same id exactly when they
/// have the same bytes, so the bytes are compared here, with no hashing.
fn join_git(parts: impl IntoIterator<Item = Vec<u8>>) -> Vec<u8> {
    let mut acc = Vec::new();
    for part in parts {
        if part.is_empty() || part == acc {
            continue;
        }
        if acc.is_empty() {
            acc = part;
            continue;
        }
        if acc.ends_with(b"\n") {
            acc.pop();
        }
        acc.extend_from_slice(b"\n\n");
        acc.extend_from_slice(&part);
    }
    acc
}

/// How long a writer waits for its turn before writing without it (CAS still protects it).
const LOCK_PATIENCE: std::time::Duration = std::time::Duration::from_secs(10);

impl NotesBackend for GixNotes {
    /// An advisory `flock` on `<git common dir>/squad-notes.lock`, shared by every notes ref of
    /// the repository, polled with short jittered sleeps for up to 10 s. Released when the
    /// guard is dropped, or by the OS when the process dies.
    fn lock_writes(&self, _notes_ref: &NotesRef) -> Result<WriteLock> {
        use fs4::fs_std::FileExt;
        use rand::{Rng, SeedableRng};
        let path = self
            .repo
            .to_thread_local()
            .common_dir()
            .join("squad-notes.lock");
        let Ok(file) = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
        else {
            return Ok(WriteLock::none());
        };
        let start = std::time::Instant::now();
        let mut rng = rand::rngs::StdRng::from_os_rng();
        while start.elapsed() < LOCK_PATIENCE {
            match file.try_lock_exclusive() {
                Ok(true) => return Ok(WriteLock::new(file)),
                Ok(false) => std::thread::sleep(std::time::Duration::from_micros(
                    rng.random_range(200..=2000),
                )),
                Err(_) => break,
            }
        }
        Ok(WriteLock::none())
    }

    fn tip(&self, notes_ref: &NotesRef) -> Result<Option<Oid>> {
        let repo = self.local();
        Ok(current_tip(&repo, notes_ref)?.map(|id| from_gix(&id)))
    }

    fn read(&self, tip: &Oid, object: &Oid) -> Result<Option<Vec<u8>>> {
        let repo = self.local();
        let root = root_tree(&repo, &to_gix(&repo, tip)?)?;
        let mut blobs = Vec::new();
        find_note(&repo, root, object.as_str().as_bytes(), 0, &mut blobs)?;
        match blobs.len() {
            0 => Ok(None),
            1 => Ok(Some(load_blob(&repo, blobs[0])?)),
            _ => {
                let parts = blobs
                    .into_iter()
                    .map(|b| load_blob(&repo, b))
                    .collect::<Result<Vec<_>>>()?;
                Ok(Some(join_git(parts)))
            }
        }
    }

    fn list(&self, tip: &Oid) -> Result<Vec<Oid>> {
        let repo = self.local();
        let root = root_tree(&repo, &to_gix(&repo, tip)?)?;
        let packs = gix_bulk::Packs::open(&repo);
        let walked = walk_notes(Some(self), Some(&packs), &repo, root, false)?;
        Ok(walked
            .chunk_by(|a, b| a.0 == b.0)
            .map(|entries| from_gix(&entries[0].0))
            .collect())
    }

    /// One walk of the tree (on several threads for large trees), then every blob straight
    /// from the packs, in pack order, on several threads.
    fn read_all(&self, tip: &Oid) -> Result<Vec<(Oid, Vec<u8>)>> {
        self.bulk_read(tip, <[u8]>::to_vec)
    }

    /// As `read_all`, with each blob parsed on the thread that decoded it, straight from the
    /// decoder's buffer: no copy of the blobs is made.
    fn read_all_parsed(&self, tip: &Oid) -> Result<Vec<(Oid, ParsedNote)>> {
        self.bulk_read(tip, format::parse_note)
    }

    fn update(
        &self,
        notes_ref: &NotesRef,
        expected: Option<&Oid>,
        edits: &[NoteEdit],
        message: &str,
    ) -> Result<Oid> {
        crate::backend::require_edits(edits)?;
        self.commit_and_swap(notes_ref, expected, None, edits, message)
    }

    fn list_refs(&self, prefix: &str) -> Result<Vec<(NotesRef, Oid)>> {
        crate::gix_sync::list_refs(&self.local(), prefix)
    }

    fn is_ancestor(&self, ancestor: &Oid, descendant: &Oid) -> Result<bool> {
        crate::gix_sync::is_ancestor(&self.local(), ancestor, descendant)
    }

    fn merge(
        &self,
        notes_ref: &NotesRef,
        expected: &Oid,
        theirs: &Oid,
        edits: &[NoteEdit],
        message: &str,
    ) -> Result<Oid> {
        crate::gix_sync::require_commit(&self.local(), "notes.merge", theirs)?;
        self.commit_and_swap(notes_ref, Some(expected), Some(theirs), edits, message)
    }

    fn fast_forward(&self, notes_ref: &NotesRef, expected: Option<&Oid>, to: &Oid) -> Result<()> {
        crate::gix_sync::fast_forward(&self.local(), notes_ref, expected, to)
    }
}

impl GixNotes {
    /// Writes one notes commit (parents: `expected`, then `theirs` for a merge) with `edits`
    /// applied to the tree of `expected`, and moves the ref by compare-and-swap.
    fn commit_and_swap(
        &self,
        notes_ref: &NotesRef,
        expected: Option<&Oid>,
        theirs: Option<&Oid>,
        edits: &[NoteEdit],
        message: &str,
    ) -> Result<Oid> {
        const OP: &str = "notes.update";
        let repo = self.local();
        let theirs = theirs.map(|t| to_gix(&repo, t)).transpose()?;
        let expected = expected.map(|e| to_gix(&repo, e)).transpose()?;
        let moved = |found: Option<gix::ObjectId>| {
            Error::new(
                ErrorKind::Conflict,
                OP,
                format!(
                    "{notes_ref} moved: expected {}, found {}",
                    expected.map_or_else(|| "nothing".to_owned(), |e| e.to_string()),
                    found.map_or_else(|| "nothing".to_owned(), |e| e.to_string()),
                ),
            )
        };
        let current = current_tip(&repo, notes_ref)?;
        if current != expected {
            return Err(moved(current));
        }
        let commit = if edits.len() >= self.pack_threshold {
            // Large batches: objects are built in memory and written as one pack, since a
            // hundred thousand loose-object files cost seconds of file-system work.
            let builder = PackBuilder::new(&repo);
            let staged = edits
                .iter()
                .map(|edit| {
                    let object = to_gix(&repo, &edit.object)?;
                    let blob = match &edit.blob {
                        Some(bytes) => Some(
                            gix::objs::Write::write_buf(&builder, gix::object::Kind::Blob, bytes)
                                .map_err(backend_err(OP, "cannot hash a note blob"))?,
                        ),
                        None => None,
                    };
                    Ok((object, blob))
                })
                .collect::<Result<Vec<_>>>()?;
            let take = || builder.objects.take().into_values().collect::<Vec<_>>();
            build_commit(
                &repo,
                &builder,
                notes_ref,
                expected,
                theirs,
                &staged,
                message,
                Some(&take),
            )?
        } else {
            let staged = self.write_blobs(&repo, edits)?;
            build_commit(
                &repo, &*repo, notes_ref, expected, theirs, &staged, message, None,
            )?
        };
        let constraint = match expected {
            Some(tip) => PreviousValue::MustExistAndMatch(gix::refs::Target::Object(tip)),
            None => PreviousValue::MustNotExist,
        };
        let log = format!("notes: {}", message.lines().next().unwrap_or_default());
        match repo.reference(notes_ref.as_str(), commit, constraint, log) {
            Ok(_) => Ok(from_gix(&commit)),
            Err(e) => {
                let now = current_tip(&repo, notes_ref)?;
                let text = format!("{e:?}");
                if let Some(locked) =
                    crate::health::stale_lock_error(OP, repo.common_dir(), notes_ref.as_str())
                {
                    // A lock nobody holds will not go away by retrying: say so at once.
                    Err(locked.with_source(e))
                } else if now != expected || text.contains("lock") || text.contains("Lock") {
                    Err(moved(now).with_source(e))
                } else {
                    Err(
                        Error::new(ErrorKind::Backend, OP, format!("cannot update {notes_ref}"))
                            .with_source(e),
                    )
                }
            }
        }
    }
}

/// Writes the blobs of `edits` through `repo`, pairing each annotated object with its blob.
fn write_blob_chunk(
    repo: &gix::Repository,
    edits: &[NoteEdit],
) -> Result<Vec<(gix::ObjectId, Option<gix::ObjectId>)>> {
    edits
        .iter()
        .map(|edit| {
            let object = to_gix(repo, &edit.object)?;
            let blob = match &edit.blob {
                Some(bytes) => Some(
                    repo.write_blob(bytes)
                        .map_err(backend_err("notes.update", "cannot write a note blob"))?
                        .detach(),
                ),
                None => None,
            };
            Ok((object, blob))
        })
        .collect()
}

/// Writes the tree and the notes commit for `staged` edits on top of `expected`.
#[expect(
    clippy::too_many_arguments,
    reason = "a private helper shared by the loose and packed write paths; the arguments are the commit's parts"
)]
fn build_commit(
    repo: &gix::Repository,
    objects: &(impl gix::objs::Find + gix::objs::Write),
    notes_ref: &NotesRef,
    expected: Option<gix::ObjectId>,
    theirs: Option<gix::ObjectId>,
    staged: &[(gix::ObjectId, Option<gix::ObjectId>)],
    message: &str,
    pack: Option<&dyn Fn() -> Vec<PackObject>>,
) -> Result<gix::ObjectId> {
    const OP: &str = "notes.update";
    let root = match &expected {
        Some(tip) => root_tree(repo, tip)?,
        None => gix::ObjectId::empty_tree(repo.object_hash()),
    };
    // git's own notes trie, so the tree is the one `git notes add` would write: the same
    // fanout, and several entries of one object folded where git folds them.
    let mut trie = crate::git_trie::Trie::open(objects, repo.object_hash(), root)?;
    for (object, blob) in staged {
        trie.edit(object, *blob)?;
    }
    let tree = trie.write()?;
    if let Some(pack) = pack {
        // The tree and blobs go to disk as one pack before the commit that refers to them.
        write_pack(repo, &pack())?;
    }
    Ok(repo
        .new_commit(message, tree, expected.into_iter().chain(theirs))
        .map_err(|e| {
            Error::new(
                ErrorKind::Backend,
                OP,
                format!(
                    "cannot create the notes commit for {notes_ref} (is user.name/user.email configured?)"
                ),
            )
            .with_source(e)
        })?
        .id)
}

/// An object to be written into a pack: its kind and its encoded bytes.
type PackObject = (gix::object::Kind, Vec<u8>);

/// An object sink for large updates: objects are kept in memory (without asking the object
/// database whether each one exists, which costs a file-system lookup per object) and written
/// as one pack; reads see them first and fall through to the repository.
struct PackBuilder<'r> {
    repo: &'r gix::Repository,
    objects:
        std::cell::RefCell<std::collections::HashMap<gix::ObjectId, (gix::object::Kind, Vec<u8>)>>,
}

impl<'r> PackBuilder<'r> {
    fn new(repo: &'r gix::Repository) -> Self {
        Self {
            repo,
            objects: std::cell::RefCell::default(),
        }
    }
}

impl gix::objs::Find for PackBuilder<'_> {
    fn try_find<'a>(
        &self,
        id: &gix::oid,
        buffer: &'a mut Vec<u8>,
    ) -> gix::error::Result<Option<gix::objs::Data<'a>>> {
        if let Some((kind, data)) = self.objects.borrow().get(id) {
            buffer.clear();
            buffer.extend_from_slice(data);
            return Ok(Some(gix::objs::Data::new(buffer, *kind, id.kind())));
        }
        gix::objs::Find::try_find(self.repo, id, buffer)
    }
}

impl gix::objs::Write for PackBuilder<'_> {
    fn write_buf(&self, kind: gix::object::Kind, from: &[u8]) -> gix::error::Result<gix::ObjectId> {
        let id = gix::objs::compute_hash(self.repo.object_hash(), kind, from)?;
        self.write_buf_with_known_id(kind, from, id)
    }

    fn write_buf_with_known_id(
        &self,
        kind: gix::object::Kind,
        from: &[u8],
        id: gix::ObjectId,
    ) -> gix::error::Result<gix::ObjectId> {
        self.objects
            .borrow_mut()
            .entry(id)
            .or_insert_with(|| (kind, from.to_vec()));
        Ok(id)
    }

    fn write_stream(
        &self,
        kind: gix::object::Kind,
        _size: u64,
        from: &mut dyn std::io::Read,
    ) -> gix::error::Result<gix::ObjectId> {
        let mut buf = Vec::new();
        std::io::Read::read_to_end(from, &mut buf).or_error()?;
        self.write_buf(kind, &buf)
    }

    fn write_stream_with_known_id(
        &self,
        kind: gix::object::Kind,
        _size: u64,
        from: &mut dyn std::io::Read,
        id: gix::ObjectId,
    ) -> gix::error::Result<gix::ObjectId> {
        let mut buf = Vec::new();
        std::io::Read::read_to_end(from, &mut buf).or_error()?;
        self.write_buf_with_known_id(kind, &buf, id)
    }
}

/// Writes `objects` as one new pack (with its index) into the repository's object directory.
fn write_pack(repo: &gix::Repository, objects: &[PackObject]) -> Result<()> {
    const OP: &str = "notes.update";
    let count = u32::try_from(objects.len())
        .map_err(|_| Error::new(ErrorKind::InvalidInput, OP, "too many objects for one pack"))?;
    let mut pack =
        Vec::with_capacity(objects.iter().map(|(_, d)| d.len() / 2 + 16).sum::<usize>() + 32);
    pack.extend_from_slice(b"PACK");
    pack.extend_from_slice(&2u32.to_be_bytes());
    pack.extend_from_slice(&count.to_be_bytes());
    let mut deflate = gix::zlib::stream::deflate::Compress::new(gix::zlib::Compression::BEST_SPEED);
    let mut out = vec![0u8; 64 * 1024];
    for (kind, data) in objects {
        let type_id: u8 = match kind {
            gix::object::Kind::Commit => 1,
            gix::object::Kind::Tree => 2,
            gix::object::Kind::Blob => 3,
            gix::object::Kind::Tag => 4,
        };
        let mut size = data.len();
        let mut byte = (type_id << 4) | (size & 0x0f) as u8;
        size >>= 4;
        while size > 0 {
            pack.push(byte | 0x80);
            byte = (size & 0x7f) as u8;
            size >>= 7;
        }
        pack.push(byte);
        deflate.reset();
        loop {
            let (seen_in, seen_out) = (deflate.total_in(), deflate.total_out());
            let consumed = usize::try_from(seen_in)
                .unwrap_or(usize::MAX)
                .min(data.len());
            let status = deflate
                .compress(
                    &data[consumed..],
                    &mut out,
                    gix::zlib::stream::deflate::FlushCompress::Finish,
                )
                .map_err(|e| {
                    Error::new(ErrorKind::Backend, OP, "cannot compress a note object")
                        .with_source(e)
                })?;
            let produced = usize::try_from(deflate.total_out() - seen_out).unwrap_or(0);
            pack.extend_from_slice(&out[..produced]);
            if status == gix::zlib::Status::StreamEnd {
                break;
            }
            if produced == 0 && deflate.total_in() == seen_in {
                return Err(Error::new(
                    ErrorKind::Backend,
                    OP,
                    "cannot compress a note object",
                ));
            }
        }
    }
    let mut hasher = gix::hash::hasher(repo.object_hash());
    hasher.update(&pack);
    let checksum = hasher
        .try_finalize()
        .map_err(|e| Error::new(ErrorKind::Backend, OP, "cannot hash the pack").with_source(e))?;
    pack.extend_from_slice(checksum.as_bytes());
    let dir = repo.objects.store_ref().path().join("pack");
    let mut reader: &[u8] = &pack;
    gix_pack::Bundle::write_to_directory(
        &mut reader,
        Some(&dir),
        &mut gix::progress::Discard,
        &std::sync::atomic::AtomicBool::new(false),
        None::<gix::objs::find::Never>,
        repo.object_hash(),
        gix_pack::bundle::write::Options {
            thread_limit: Some(1),
            iteration_mode: gix_pack::data::input::Mode::Verify,
            ..Default::default()
        },
    )
    .map_err(|e| {
        Error::new(
            ErrorKind::Backend,
            OP,
            "cannot write a pack of note objects",
        )
        .with_source(e)
    })?;
    Ok(())
}
