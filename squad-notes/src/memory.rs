//! The in-memory reference backend.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};

use crate::backend::{NoteEdit, NotesBackend};
use crate::error::{Error, ErrorKind, Result};
use crate::oid::{NotesRef, Oid};

type Tree = Arc<BTreeMap<Oid, Vec<u8>>>;

#[derive(Debug, Default)]
struct Inner {
    refs: HashMap<NotesRef, Oid>,
    snapshots: HashMap<Oid, Tree>,
    counter: u64,
}

/// An in-memory [`NotesBackend`]: the reference implementation, good for tests and for hosts that
/// do not want git storage.
///
/// Every update stores a new immutable snapshot under a fresh tip id (a counter in hex, never
/// reused), so reads at old tips keep working. Nothing is persisted.
///
/// ```
/// use squad_notes::{InMemoryNotes, NoteEdit, NotesBackend, NotesRef, Oid};
///
/// let store = InMemoryNotes::new();
/// let r = NotesRef::new("refs/notes/squad/data")?;
/// let c: Oid = "1111111111111111111111111111111111111111".parse()?;
/// let tip = store.update(&r, None, &[NoteEdit::set(c.clone(), "hi\n")], "add")?;
/// assert_eq!(store.read(&tip, &c)?, Some(b"hi\n".to_vec()));
/// // A stale expected tip loses the compare-and-swap.
/// assert!(store.update(&r, None, &[NoteEdit::remove(c)], "rm").is_err());
/// # Ok::<(), squad_notes::Error>(())
/// ```
#[derive(Debug, Default, Clone)]
pub struct InMemoryNotes {
    inner: Arc<Mutex<Inner>>,
}

impl InMemoryNotes {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding the lock cannot leave `Inner` half-updated: every update builds
        // the new snapshot first and then inserts it with plain assignments.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn snapshot(inner: &Inner, tip: &Oid) -> Result<Tree> {
        inner.snapshots.get(tip).cloned().ok_or_else(|| {
            Error::new(
                ErrorKind::NotFound,
                "notes.read",
                format!("notes tip {tip} not found"),
            )
        })
    }
}

impl NotesBackend for InMemoryNotes {
    fn tip(&self, notes_ref: &NotesRef) -> Result<Option<Oid>> {
        Ok(self.lock().refs.get(notes_ref).cloned())
    }

    fn read(&self, tip: &Oid, object: &Oid) -> Result<Option<Vec<u8>>> {
        let tree = Self::snapshot(&self.lock(), tip)?;
        Ok(tree.get(object).cloned())
    }

    fn list(&self, tip: &Oid) -> Result<Vec<Oid>> {
        let tree = Self::snapshot(&self.lock(), tip)?;
        Ok(tree.keys().cloned().collect())
    }

    fn read_all(&self, tip: &Oid) -> Result<Vec<(Oid, Vec<u8>)>> {
        let tree = Self::snapshot(&self.lock(), tip)?;
        Ok(tree.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
    }

    fn update(
        &self,
        notes_ref: &NotesRef,
        expected: Option<&Oid>,
        edits: &[NoteEdit],
        _message: &str,
    ) -> Result<Oid> {
        if edits.is_empty() {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                "notes.update",
                "an update needs at least one edit",
            ));
        }
        let mut inner = self.lock();
        let current = inner.refs.get(notes_ref).cloned();
        if current.as_ref() != expected {
            return Err(Error::new(
                ErrorKind::Conflict,
                "notes.update",
                format!(
                    "{notes_ref} moved: expected {}, found {}",
                    expected.map_or("nothing", Oid::as_str),
                    current.as_ref().map_or("nothing", Oid::as_str)
                ),
            ));
        }
        let mut tree: BTreeMap<Oid, Vec<u8>> = match &current {
            Some(tip) => (*Self::snapshot(&inner, tip)?).clone(),
            None => BTreeMap::new(),
        };
        for edit in edits {
            match &edit.blob {
                Some(bytes) => tree.insert(edit.object.clone(), bytes.clone()),
                None => tree.remove(&edit.object),
            };
        }
        inner.counter += 1;
        let tip = Oid::new(&format!("{:040x}", inner.counter))?;
        inner.snapshots.insert(tip.clone(), Arc::new(tree));
        inner.refs.insert(notes_ref.clone(), tip.clone());
        Ok(tip)
    }
}
