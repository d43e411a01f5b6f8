//! The storage trait: note blobs per (notes ref, annotated object), with compare-and-swap writes.

use std::sync::Arc;

use crate::error::Result;
use crate::format::ParsedNote;
use crate::oid::{NotesRef, Oid};

/// One change to a notes tree: set the note of `object` to `blob`, or remove it (`blob: None`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoteEdit {
    /// The annotated object.
    pub object: Oid,
    /// The new note bytes, stored verbatim; `None` removes the note.
    pub blob: Option<Vec<u8>>,
}

impl NoteEdit {
    /// Sets the note of `object` to `blob`.
    pub fn set(object: Oid, blob: impl Into<Vec<u8>>) -> Self {
        Self {
            object,
            blob: Some(blob.into()),
        }
    }

    /// Removes the note of `object`.
    pub fn remove(object: Oid) -> Self {
        Self { object, blob: None }
    }
}

/// The one rule every `update` shares: an update without edits is
/// [`ErrorKind::InvalidInput`](crate::ErrorKind::InvalidInput).
pub(crate) fn require_edits(edits: &[NoteEdit]) -> Result<()> {
    if edits.is_empty() {
        return Err(crate::Error::new(
            crate::ErrorKind::InvalidInput,
            "notes.update",
            "an update needs at least one edit",
        ));
    }
    Ok(())
}

/// A held advisory write lock (see [`NotesBackend::lock_writes`]); released when dropped.
pub struct WriteLock {
    held: Option<Box<dyn std::any::Any + Send>>,
}

impl WriteLock {
    /// No lock: what backends without cooperative locking return.
    pub fn none() -> Self {
        Self { held: None }
    }

    /// A lock that is held until `guard` is dropped.
    pub fn new(guard: impl std::any::Any + Send) -> Self {
        Self {
            held: Some(Box::new(guard)),
        }
    }

    /// `true` when a lock is actually held.
    pub fn is_held(&self) -> bool {
        self.held.is_some()
    }
}

impl std::fmt::Debug for WriteLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteLock")
            .field("held", &self.is_held())
            .finish()
    }
}

/// A store of git notes: note blobs keyed by (notes ref, annotated object), versioned by the tip
/// of the notes ref, and written only by compare-and-swap.
///
/// The trait is **synchronous**: git object stores are synchronous (gix is), and `squad-notes`
/// must not pull an async runtime into hosts that use it alone. Hosts on an async runtime call it
/// from a blocking task.
///
/// # Contract
///
/// - A notes ref has a *tip* (for git: the notes commit it points to) or does not exist.
///   Every successful [`update`](Self::update) produces a new tip, different from every tip the
///   ref had before.
/// - A tip is an immutable snapshot: [`read`](Self::read), [`list`](Self::list) and
///   [`read_all`](Self::read_all) at a tip always return the same answer, even after the ref moved.
/// - [`update`](Self::update) applies all its edits as **one** change (for git: one notes commit
///   whose parent is the expected tip), and only if the ref still points at `expected`;
///   otherwise it fails with [`ErrorKind::Conflict`](crate::ErrorKind::Conflict) and changes nothing.
/// - Note bytes are stored and returned verbatim (no newline is added or removed).
///
/// # Behavior
///
/// - `tip`: `Ok(None)` when the ref does not exist.
/// - `read`: `Ok(None)` when the object has no note at that tip. When a git notes tree holds
///   several entries for one object (mixed fanout), their contents are joined as git joins them
///   (the first without one trailing `\n`, then `\n\n`, then the next).
///   An unknown tip is [`ErrorKind::NotFound`](crate::ErrorKind::NotFound).
/// - `list`: the annotated objects with a note at that tip, sorted, without duplicates.
/// - `read_all`: every (object, bytes) pair at that tip, sorted by object, duplicates joined as in `read`.
/// - `read_all_parsed`: `read_all` with every blob parsed by `format::parse_note`.
/// - `update`: `expected: None` means "the ref must not exist yet". An empty `edits` slice is
///   [`ErrorKind::InvalidInput`](crate::ErrorKind::InvalidInput). Two edits for one object in one
///   call: the last wins. Removing a note that does not exist is not an error. A concurrent writer
///   holding the ref (a lock) is reported as `Conflict`, like a moved tip, so callers retry.
///
/// # Implementing
///
/// Implement the four required methods; override `read_all` (and `read_all_parsed`) when a
/// bulk read is cheaper than `list` plus one `read` per object. Implement `list_refs`, `is_ancestor`, `merge` and
/// `fast_forward` too if the backend is to be synced between clones (the conformance suite
/// checks them). Run [`conformance::run_all`](crate#conformance) (feature
/// `conformance`) against your type, a `Box` of it and an `Arc<dyn NotesBackend>`.
/// [`InMemoryNotes`](crate::InMemoryNotes) is the reference implementation.
///
/// # Wrappers
///
/// `&T`, `Box<T>` and `Arc<T>` forward every method, including the provided ones.
#[diagnostic::on_unimplemented(
    note = "implement the four required methods of NotesBackend; InMemoryNotes is the reference"
)]
pub trait NotesBackend: Send + Sync + std::fmt::Debug {
    /// The tip of `notes_ref`, or `None` when the ref does not exist.
    fn tip(&self, notes_ref: &NotesRef) -> Result<Option<Oid>>;

    /// The note bytes of `object` at `tip`, or `None` when it has no note there.
    fn read(&self, tip: &Oid, object: &Oid) -> Result<Option<Vec<u8>>>;

    /// The annotated objects that have a note at `tip`, sorted.
    fn list(&self, tip: &Oid) -> Result<Vec<Oid>>;

    /// Applies `edits` as one change on top of `expected`, and moves `notes_ref` to it only if the
    /// ref still points at `expected` (`None`: the ref must not exist). Returns the new tip.
    ///
    /// `message` is the commit message of the change (backends without commits may ignore it).
    fn update(
        &self,
        notes_ref: &NotesRef,
        expected: Option<&Oid>,
        edits: &[NoteEdit],
        message: &str,
    ) -> Result<Oid>;

    /// Takes an advisory lock that makes cooperating writers of `notes_ref` (other threads, other
    /// processes on the same storage) take turns for the lifetime of the returned guard.
    ///
    /// Correctness never depends on it (compare-and-swap does): it only saves the work of lost
    /// races when many writers share one ref. It may give up and return [`WriteLock::none`]
    /// after waiting a while. The default takes no lock.
    fn lock_writes(&self, notes_ref: &NotesRef) -> Result<WriteLock> {
        let _ = notes_ref;
        Ok(WriteLock::none())
    }

    /// The notes refs whose full name starts with `prefix` (for example `refs/notes/squad/`),
    /// with their tips, sorted by name.
    ///
    /// Used by [`sync`](crate::sync) to find the local refs to push. The default is
    /// [`ErrorKind::Unsupported`](crate::ErrorKind::Unsupported).
    fn list_refs(&self, prefix: &str) -> Result<Vec<(NotesRef, Oid)>> {
        let _ = prefix;
        Err(unsupported("notes.list_refs"))
    }

    /// `true` when `ancestor` is `descendant` itself or reachable from it through the parents of
    /// tips (for git: commit ancestry). An unknown tip is
    /// [`ErrorKind::NotFound`](crate::ErrorKind::NotFound).
    ///
    /// The default is [`ErrorKind::Unsupported`](crate::ErrorKind::Unsupported).
    fn is_ancestor(&self, ancestor: &Oid, descendant: &Oid) -> Result<bool> {
        let _ = (ancestor, descendant);
        Err(unsupported("notes.is_ancestor"))
    }

    /// Joins the tip `theirs` (usually fetched from another clone) into `notes_ref`: writes a
    /// new tip whose parents are `expected` then `theirs` and whose notes are those at
    /// `expected` with `edits` applied, and moves the ref to it only if it still points at
    /// `expected` (compare-and-swap, like [`update`](Self::update)). Returns the new tip.
    ///
    /// # Contract
    ///
    /// - Afterwards `is_ancestor(theirs, new_tip)` and `is_ancestor(expected, new_tip)` hold, so a
    ///   later push of the ref fast-forwards the remote and `git notes merge` of `theirs` is a
    ///   no-op.
    /// - `edits` may be empty (the notes of both sides already agree). The caller computes the
    ///   edits (the union of both sides); the backend only records the result.
    /// - A moved ref is [`ErrorKind::Conflict`](crate::ErrorKind::Conflict) and changes nothing;
    ///   an unknown `theirs` is [`ErrorKind::NotFound`](crate::ErrorKind::NotFound).
    ///
    /// The default is [`ErrorKind::Unsupported`](crate::ErrorKind::Unsupported): such a backend
    /// cannot be synced.
    fn merge(
        &self,
        notes_ref: &NotesRef,
        expected: &Oid,
        theirs: &Oid,
        edits: &[NoteEdit],
        message: &str,
    ) -> Result<Oid> {
        let _ = (notes_ref, expected, theirs, edits, message);
        Err(unsupported("notes.merge"))
    }

    /// Moves `notes_ref` from `expected` (`None`: the ref must not exist) to the existing tip
    /// `to`, by compare-and-swap, without writing anything new.
    ///
    /// # Contract
    ///
    /// - Only a fast-forward: when `expected` is not an ancestor of `to`, the call is
    ///   [`ErrorKind::InvalidInput`](crate::ErrorKind::InvalidInput) and changes nothing, so no
    ///   note can be lost.
    /// - A moved ref is [`ErrorKind::Conflict`](crate::ErrorKind::Conflict); an unknown `to` is
    ///   [`ErrorKind::NotFound`](crate::ErrorKind::NotFound).
    ///
    /// The default is [`ErrorKind::Unsupported`](crate::ErrorKind::Unsupported).
    fn fast_forward(&self, notes_ref: &NotesRef, expected: Option<&Oid>, to: &Oid) -> Result<()> {
        let _ = (notes_ref, expected, to);
        Err(unsupported("notes.fast_forward"))
    }

    /// Every note at `tip` as (object, bytes), sorted by object.
    fn read_all(&self, tip: &Oid) -> Result<Vec<(Oid, Vec<u8>)>> {
        let mut out = Vec::new();
        for object in self.list(tip)? {
            if let Some(bytes) = self.read(tip, &object)? {
                out.push((object, bytes));
            }
        }
        Ok(out)
    }

    /// Every note at `tip`, parsed with [`format::parse_note`](crate::format::parse_note),
    /// sorted by object: exactly `read_all` with each blob parsed. The default does just that
    /// (parsing large sets on several threads); a backend that decodes blobs in bulk overrides
    /// it to parse each one where it was decoded, without keeping a copy.
    fn read_all_parsed(&self, tip: &Oid) -> Result<Vec<(Oid, ParsedNote)>> {
        crate::notes::parse_all(&self.read_all(tip)?, "notes.read")
    }
}

/// Conveniences on top of [`NotesBackend`]: reads at the current tip.
///
/// Implemented for every backend; do not implement this trait yourself.
pub trait NotesBackendExt: NotesBackend {
    /// The note of `object` at the current tip of `notes_ref` (`None` when the ref or the note is missing).
    fn read_current(&self, notes_ref: &NotesRef, object: &Oid) -> Result<Option<Vec<u8>>> {
        match self.tip(notes_ref)? {
            Some(tip) => self.read(&tip, object),
            None => Ok(None),
        }
    }

    /// The annotated objects with a note at the current tip of `notes_ref` (empty when the ref is missing).
    fn list_current(&self, notes_ref: &NotesRef) -> Result<Vec<Oid>> {
        match self.tip(notes_ref)? {
            Some(tip) => self.list(&tip),
            None => Ok(Vec::new()),
        }
    }
}

impl<T: NotesBackend + ?Sized> NotesBackendExt for T {}

macro_rules! forward {
    ($($ty:ty),*) => {$(
        #[deny(clippy::missing_trait_methods)]
        impl<T: NotesBackend + ?Sized> NotesBackend for $ty {
            fn tip(&self, notes_ref: &NotesRef) -> Result<Option<Oid>> {
                (**self).tip(notes_ref)
            }
            fn read(&self, tip: &Oid, object: &Oid) -> Result<Option<Vec<u8>>> {
                (**self).read(tip, object)
            }
            fn list(&self, tip: &Oid) -> Result<Vec<Oid>> {
                (**self).list(tip)
            }
            fn update(
                &self,
                notes_ref: &NotesRef,
                expected: Option<&Oid>,
                edits: &[NoteEdit],
                message: &str,
            ) -> Result<Oid> {
                (**self).update(notes_ref, expected, edits, message)
            }
            fn read_all(&self, tip: &Oid) -> Result<Vec<(Oid, Vec<u8>)>> {
                (**self).read_all(tip)
            }
            fn read_all_parsed(&self, tip: &Oid) -> Result<Vec<(Oid, ParsedNote)>> {
                (**self).read_all_parsed(tip)
            }
            fn lock_writes(&self, notes_ref: &NotesRef) -> Result<WriteLock> {
                (**self).lock_writes(notes_ref)
            }
            fn list_refs(&self, prefix: &str) -> Result<Vec<(NotesRef, Oid)>> {
                (**self).list_refs(prefix)
            }
            fn is_ancestor(&self, ancestor: &Oid, descendant: &Oid) -> Result<bool> {
                (**self).is_ancestor(ancestor, descendant)
            }
            fn merge(
                &self,
                notes_ref: &NotesRef,
                expected: &Oid,
                theirs: &Oid,
                edits: &[NoteEdit],
                message: &str,
            ) -> Result<Oid> {
                (**self).merge(notes_ref, expected, theirs, edits, message)
            }
            fn fast_forward(&self, notes_ref: &NotesRef, expected: Option<&Oid>, to: &Oid) -> Result<()> {
                (**self).fast_forward(notes_ref, expected, to)
            }
        }
    )*};
}

forward!(&T, Box<T>, Arc<T>);

fn unsupported(op: &'static str) -> crate::Error {
    crate::Error::new(
        crate::ErrorKind::Unsupported,
        op,
        format!(
            "this notes backend does not support {}",
            op.trim_start_matches("notes.")
        ),
    )
}
