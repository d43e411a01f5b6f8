//! Concurrent writers on one repository and one commit lose nothing.

use std::sync::Arc;

use squad_notes::{GixNotes, Notes};

use crate::common::{Repo, agent, entry};

#[test]
fn eight_threads_times_fifty_writes_keep_all_400_entries() {
    let repo = Repo::new();
    let commit = repo.commit("target");
    let notes = Arc::new(Notes::new(GixNotes::open(repo.path()).unwrap()));
    let data = agent("data");
    let handles: Vec<_> = (0..8)
        .map(|t| {
            let notes = Arc::clone(&notes);
            let (data, commit) = (data.clone(), commit.clone());
            std::thread::spawn(move || {
                for i in 0..50 {
                    notes
                        .write(&data, &commit, &entry("data", &format!("t{t} w{i}")))
                        .unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let shown = notes.show(&data, &commit).unwrap();
    assert_eq!(shown.entries.len(), 400);
    assert!(shown.unparsed.is_empty());
    // One notes commit per write, in one line of history.
    assert_eq!(
        repo.git_ok(&["rev-list", "--count", "refs/notes/squad/data"])
            .trim(),
        "400"
    );
    let git = repo.git_ok(&["notes", "--ref=squad/data", "show", commit.as_str()]);
    assert_eq!(git.lines().count(), 400);
    repo.fsck();
}

/// The same without the advisory lock: compare-and-swap and retries alone lose nothing.
#[test]
fn without_the_advisory_lock_cas_alone_loses_nothing() {
    use squad_notes::{NoteEdit, NotesBackend, NotesRef, Oid, Result};

    /// Forwards everything except `lock_writes`, which keeps the trait's no-lock default.
    #[derive(Debug)]
    struct NoLock(GixNotes);
    impl NotesBackend for NoLock {
        fn tip(&self, r: &NotesRef) -> Result<Option<Oid>> {
            self.0.tip(r)
        }
        fn read(&self, tip: &Oid, object: &Oid) -> Result<Option<Vec<u8>>> {
            self.0.read(tip, object)
        }
        fn list(&self, tip: &Oid) -> Result<Vec<Oid>> {
            self.0.list(tip)
        }
        fn update(
            &self,
            r: &NotesRef,
            expected: Option<&Oid>,
            edits: &[NoteEdit],
            message: &str,
        ) -> Result<Oid> {
            self.0.update(r, expected, edits, message)
        }
    }

    let repo = Repo::new();
    let commit = repo.commit("target");
    let notes = Arc::new(Notes::new(NoLock(repo.backend())));
    assert!(
        !notes
            .backend()
            .lock_writes(&NotesRef::new("refs/notes/squad/data").unwrap())
            .unwrap()
            .is_held()
    );
    assert!(
        repo.backend()
            .lock_writes(&NotesRef::new("refs/notes/squad/data").unwrap())
            .unwrap()
            .is_held()
    );
    let data = agent("data");
    let handles: Vec<_> = (0..6)
        .map(|t| {
            let notes = Arc::clone(&notes);
            let (data, commit) = (data.clone(), commit.clone());
            std::thread::spawn(move || {
                let mut attempts = 0;
                for i in 0..25 {
                    attempts += notes
                        .write(&data, &commit, &entry("data", &format!("t{t} w{i}")))
                        .unwrap()
                        .attempts;
                }
                attempts
            })
        })
        .collect();
    let attempts: u32 = handles.into_iter().map(|h| h.join().unwrap()).sum();
    assert_eq!(notes.show(&data, &commit).unwrap().entries.len(), 150);
    assert!(attempts >= 150);
    repo.fsck();
}
