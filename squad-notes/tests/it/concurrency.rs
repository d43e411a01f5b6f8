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
