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
    /// The parents of every tip (one for an update on top of a tip, two for a merge).
    parents: HashMap<Oid, Vec<Oid>>,
    counter: u64,
}

impl Inner {
    fn moved(&self, op: &'static str, notes_ref: &NotesRef, expected: Option<&Oid>) -> Result<()> {
        let current = self.refs.get(notes_ref);
        if current == expected {
            return Ok(());
        }
        Err(Error::new(
            ErrorKind::Conflict,
            op,
            format!(
                "{notes_ref} moved: expected {}, found {}",
                expected.map_or("nothing", Oid::as_str),
                current.map_or("nothing", Oid::as_str)
            ),
        ))
    }

    fn require(&self, op: &'static str, tip: &Oid) -> Result<()> {
        if self.snapshots.contains_key(tip) {
            Ok(())
        } else {
            Err(Error::new(
                ErrorKind::NotFound,
                op,
                format!("notes tip {tip} not found"),
            ))
        }
    }

    fn is_ancestor(&self, ancestor: &Oid, descendant: &Oid) -> bool {
        let mut todo = vec![descendant];
        let mut seen = std::collections::HashSet::new();
        while let Some(tip) = todo.pop() {
            if tip == ancestor {
                return true;
            }
            if seen.insert(tip) {
                todo.extend(self.parents.get(tip).into_iter().flatten());
            }
        }
        false
    }

    /// Stores `tree` under a fresh tip with `parents` and points `notes_ref` at it.
    fn commit(
        &mut self,
        notes_ref: &NotesRef,
        tree: BTreeMap<Oid, Vec<u8>>,
        parents: Vec<Oid>,
    ) -> Result<Oid> {
        self.counter += 1;
        let tip = Oid::new(&format!("{:040x}", self.counter))?;
        self.snapshots.insert(tip.clone(), Arc::new(tree));
        self.parents.insert(tip.clone(), parents);
        self.refs.insert(notes_ref.clone(), tip.clone());
        Ok(tip)
    }
}

fn apply(tree: &mut BTreeMap<Oid, Vec<u8>>, edits: &[NoteEdit]) {
    for edit in edits {
        match &edit.blob {
            Some(bytes) => tree.insert(edit.object.clone(), bytes.clone()),
            None => tree.remove(&edit.object),
        };
    }
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
        crate::backend::require_edits(edits)?;
        let mut inner = self.lock();
        inner.moved("notes.update", notes_ref, expected)?;
        let mut tree: BTreeMap<Oid, Vec<u8>> = match expected {
            Some(tip) => (*Self::snapshot(&inner, tip)?).clone(),
            None => BTreeMap::new(),
        };
        apply(&mut tree, edits);
        inner.commit(notes_ref, tree, expected.into_iter().cloned().collect())
    }

    fn list_refs(&self, prefix: &str) -> Result<Vec<(NotesRef, Oid)>> {
        let mut out: Vec<(NotesRef, Oid)> = self
            .lock()
            .refs
            .iter()
            .filter(|(name, _)| name.as_str().starts_with(prefix))
            .map(|(name, tip)| (name.clone(), tip.clone()))
            .collect();
        out.sort();
        Ok(out)
    }

    fn is_ancestor(&self, ancestor: &Oid, descendant: &Oid) -> Result<bool> {
        let inner = self.lock();
        inner.require("notes.is_ancestor", ancestor)?;
        inner.require("notes.is_ancestor", descendant)?;
        Ok(inner.is_ancestor(ancestor, descendant))
    }

    fn merge(
        &self,
        notes_ref: &NotesRef,
        expected: &Oid,
        theirs: &Oid,
        edits: &[NoteEdit],
        _message: &str,
    ) -> Result<Oid> {
        let mut inner = self.lock();
        inner.require("notes.merge", theirs)?;
        inner.moved("notes.merge", notes_ref, Some(expected))?;
        let mut tree = (*Self::snapshot(&inner, expected)?).clone();
        apply(&mut tree, edits);
        inner.commit(notes_ref, tree, vec![expected.clone(), theirs.clone()])
    }

    fn fast_forward(&self, notes_ref: &NotesRef, expected: Option<&Oid>, to: &Oid) -> Result<()> {
        let mut inner = self.lock();
        inner.require("notes.fast_forward", to)?;
        inner.moved("notes.fast_forward", notes_ref, expected)?;
        if let Some(from) = expected
            && !inner.is_ancestor(from, to)
        {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                "notes.fast_forward",
                format!("cannot fast-forward {notes_ref}: {from} is not an ancestor of {to}"),
            ));
        }
        inner.refs.insert(notes_ref.clone(), to.clone());
        Ok(())
    }
}
