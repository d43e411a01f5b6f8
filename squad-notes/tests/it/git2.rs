//! The libgit2 backend: the conformance suite, git CLI interop, fanout, and sync through it.

use std::collections::BTreeSet;
use std::sync::Arc;

use squad_notes::transport::GitCliTransport;
use squad_notes::{Git2Notes, NoteEdit, NotesBackend, NotesRef, Oid, conformance};

use crate::common::Repo;

fn git2_factory() -> (Vec<Repo>, impl FnMut(&mut Vec<Repo>) -> Git2Notes) {
    (Vec::new(), |repos: &mut Vec<Repo>| {
        let repo = Repo::new();
        let b = Git2Notes::open(repo.path()).unwrap();
        repos.push(repo);
        b
    })
}

#[test]
fn git2_passes() {
    let (mut repos, mut make) = git2_factory();
    conformance::run_all(&mut || make(&mut repos));
}

#[test]
fn git2_boxed_passes() {
    let (mut repos, mut make) = git2_factory();
    conformance::run_all(&mut || Box::new(make(&mut repos)));
}

#[test]
fn git2_arc_dyn_passes() {
    let (mut repos, mut make) = git2_factory();
    conformance::run_all(&mut || -> Arc<dyn NotesBackend> { Arc::new(make(&mut repos)) });
}

fn data() -> NotesRef {
    NotesRef::new("refs/notes/squad/data").unwrap()
}

/// git reads what git2 writes, byte for byte, and `git fsck` is clean; the message is ours.
#[test]
fn git_reads_git2_notes() {
    let repo = Repo::new();
    let c = repo.commit("one");
    let b = Git2Notes::open(repo.path()).unwrap();
    b.update(
        &data(),
        None,
        &[NoteEdit::set(c.clone(), "{\"a\":1}\n")],
        "Notes added by 'git notes append'\n",
    )
    .unwrap();
    assert_eq!(
        repo.git_ok(&["notes", "--ref=squad/data", "show", c.as_str()]),
        "{\"a\":1}\n"
    );
    assert_eq!(
        repo.git_ok(&["log", "-1", "--format=%B", "refs/notes/squad/data"]),
        "Notes added by 'git notes append'\n\n"
    );
    repo.fsck();
}

/// git2 reads notes written by git at any fanout, including a mixed tree, and a write removes
/// every old entry of the object.
#[test]
fn git2_reads_mixed_fanout_and_repairs_it_on_write() {
    let repo = Repo::new();
    let c = repo.commit("one");
    let hex = c.as_str();
    let flat = repo.git_stdin(&["hash-object", "-w", "--stdin"], b"flat\n");
    let fan = repo.git_stdin(&["hash-object", "-w", "--stdin"], b"fan\n");
    let sub = repo.git_stdin(
        &["mktree"],
        format!("100644 blob {}\t{}\n", fan.trim(), &hex[2..]).as_bytes(),
    );
    let root = repo.git_stdin(
        &["mktree"],
        format!(
            "040000 tree {}\t{}\n100644 blob {}\t{hex}\n",
            sub.trim(),
            &hex[..2],
            flat.trim()
        )
        .as_bytes(),
    );
    let commit = repo.git_ok(&["commit-tree", root.trim(), "-m", "mixed"]);
    repo.git_ok(&["update-ref", "refs/notes/squad/data", commit.trim()]);
    let b = Git2Notes::open(repo.path()).unwrap();
    let tip: Oid = commit.trim().parse().unwrap();
    let git_view = repo.git_ok(&["notes", "--ref=squad/data", "show", hex]);
    assert_eq!(
        String::from_utf8(b.read(&tip, &c).unwrap().unwrap()).unwrap(),
        git_view,
        "joined as git joins"
    );
    assert_eq!(b.list(&tip).unwrap(), vec![c.clone()]);
    let t2 = b
        .update(
            &data(),
            Some(&tip),
            &[NoteEdit::set(c.clone(), "one\n")],
            "m\n",
        )
        .unwrap();
    assert_eq!(b.read(&t2, &c).unwrap(), Some(b"one\n".to_vec()));
    let tree = repo.git_ok(&["ls-tree", "-r", "--name-only", t2.as_str()]);
    assert_eq!(tree.lines().count(), 1, "one entry left: {tree}");
    repo.fsck();
}

/// 300 notes: the root is split into 2-hex directories, git lists every note, and a later
/// write into a fanned-out tree follows the directories.
#[test]
fn many_notes_fan_out_and_git_reads_them_all() {
    let repo = Repo::new();
    let b = Git2Notes::open(repo.path()).unwrap();
    let objects: Vec<Oid> = (0..300u32)
        .map(|i| {
            let h = repo.git_stdin(
                &["hash-object", "-w", "--stdin"],
                format!("o{i}").as_bytes(),
            );
            h.trim().parse().unwrap()
        })
        .collect();
    let edits: Vec<NoteEdit> = objects
        .iter()
        .map(|o| NoteEdit::set(o.clone(), format!("note {o}\n")))
        .collect();
    let tip = b.update(&data(), None, &edits, "m\n").unwrap();
    let top = repo.git_ok(&["ls-tree", "--name-only", tip.as_str()]);
    assert!(top.lines().all(|l| l.len() == 2), "root fanned out: {top}");
    let listed: BTreeSet<String> = repo
        .git_ok(&["notes", "--ref=squad/data", "list"])
        .lines()
        .map(|l| l.split(' ').nth(1).unwrap().to_owned())
        .collect();
    let want: BTreeSet<String> = objects.iter().map(|o| o.to_string()).collect();
    assert_eq!(listed, want);
    let one = &objects[7];
    let t2 = b
        .update(
            &data(),
            Some(&tip),
            &[NoteEdit::set(one.clone(), "changed\n")],
            "m\n",
        )
        .unwrap();
    assert_eq!(
        repo.git_ok(&["notes", "--ref=squad/data", "show", one.as_str()]),
        "changed\n"
    );
    assert_eq!(b.list(&t2).unwrap().len(), 300);
    repo.fsck();
}

/// Sync through the git2 backend: two clones converge.
#[test]
fn sync_works_through_git2() {
    let w = crate::sync::world(2);
    let (a, b) = (&w.clones[0], &w.clones[1]);
    let (ca, cb) = (&w.commits[0], &w.commits[1]);
    for (clone, commit, text) in [(a, ca, "a\n"), (b, cb, "b\n")] {
        let g = Git2Notes::open(clone).unwrap();
        g.update(&data(), None, &[NoteEdit::set(commit.clone(), text)], "m\n")
            .unwrap();
    }
    let t = |p: &std::path::Path| -> GitCliTransport { crate::sync::transport(p) };
    squad_notes::sync::sync(&Git2Notes::open(a).unwrap(), &t(a), "origin").unwrap();
    let rb = squad_notes::sync::sync(&Git2Notes::open(b).unwrap(), &t(b), "origin").unwrap();
    assert_eq!((rb.fetched, rb.merged, rb.pushed), (1, 1, 1));
    squad_notes::sync::sync(&Git2Notes::open(a).unwrap(), &t(a), "origin").unwrap();
    for clone in [a, b] {
        let g = Git2Notes::open(clone).unwrap();
        let tip = g.tip(&data()).unwrap().unwrap();
        assert_eq!(g.read(&tip, ca).unwrap(), Some(b"a\n".to_vec()));
        assert_eq!(g.read(&tip, cb).unwrap(), Some(b"b\n".to_vec()));
    }
}

/// Writers on git2 and on gix, in parallel threads on one ref and one commit, lose nothing:
/// both update the ref by compare-and-swap under git's ref lock.
#[test]
fn concurrent_git2_and_gix_writers_lose_nothing() {
    use squad_notes::Notes;
    let repo = Repo::new();
    let c = repo.commit("one");
    let written = std::sync::Mutex::new(BTreeSet::new());
    std::thread::scope(|s| {
        for t in 0..4 {
            let (repo, c, written) = (&repo, &c, &written);
            s.spawn(move || {
                let store: Box<dyn NotesBackend> = if t % 2 == 0 {
                    Box::new(Git2Notes::open(repo.path()).unwrap())
                } else {
                    Box::new(repo.backend())
                };
                let notes = Notes::new(store);
                for i in 0..10 {
                    let e = crate::common::entry("data", &format!("t{t} i{i}"));
                    notes.write(&crate::common::agent("data"), c, &e).unwrap();
                    written.lock().unwrap().insert(e.id.to_string());
                }
            });
        }
    });
    let b = Git2Notes::open(repo.path()).unwrap();
    let tip = b.tip(&data()).unwrap().unwrap();
    let note = squad_notes::format::parse_note(&b.read(&tip, &c).unwrap().unwrap());
    let ids: BTreeSet<String> = note.entries.iter().map(|e| e.id.to_string()).collect();
    assert_eq!(ids, written.into_inner().unwrap());
    assert_eq!(ids.len(), 40);
    repo.fsck();
}

/// Racing creators of one notes ref, each with its own handle (libgit2 and gix mixed): exactly
/// one wins each round, every other one gets a conflict. libgit2 checks a plain create's "must
/// not exist" before it takes the ref lock, so without an expected zero id two creators could
/// both succeed and the first commit would be lost.
#[test]
fn racing_creators_of_one_ref_have_exactly_one_winner() {
    const WRITERS: usize = 6;
    let repo = Repo::new();
    let c = repo.commit("one");
    for round in 0..40 {
        let nr = NotesRef::new(&format!("refs/notes/squad/race{round}")).unwrap();
        let barrier = std::sync::Barrier::new(WRITERS);
        let outcomes: Vec<Result<Oid, squad_notes::ErrorKind>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..WRITERS)
                .map(|t| {
                    let (repo, c, nr, barrier) = (&repo, &c, &nr, &barrier);
                    s.spawn(move || {
                        let store: Box<dyn NotesBackend> = if t % 2 == 0 {
                            Box::new(Git2Notes::open(repo.path()).unwrap())
                        } else {
                            Box::new(repo.backend())
                        };
                        let edit = NoteEdit::set(c.clone(), format!("writer {t}\n"));
                        barrier.wait();
                        store
                            .update(nr, None, &[edit], "create")
                            .map_err(|e| e.kind())
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let winners: Vec<&Oid> = outcomes.iter().filter_map(|o| o.as_ref().ok()).collect();
        assert_eq!(winners.len(), 1, "round {round}: {outcomes:?}");
        assert!(
            outcomes
                .iter()
                .filter_map(|o| o.as_ref().err())
                .all(|k| *k == squad_notes::ErrorKind::Conflict),
            "round {round}: {outcomes:?}"
        );
        let tip = Git2Notes::open(repo.path())
            .unwrap()
            .tip(&nr)
            .unwrap()
            .unwrap();
        assert_eq!(&tip, winners[0], "round {round}: the ref holds the winner");
    }
    repo.fsck();
}

/// A lock file left by a killed writer (nobody holds it) is not a lost race: the git2 backend
/// fails with `Locked`, naming the file, within seconds, as the gix backend does, instead of
/// retrying through a long retry budget. Tried: the ref's own `.lock`, and `packed-refs.lock`
/// with the ref packed (libgit2 must rewrite packed-refs only to delete, so a write may pass).
#[test]
fn git2_fails_fast_on_a_left_over_lock_file() {
    use squad_notes::{ErrorKind, Notes, RetryPolicy};
    let repo = Repo::new();
    let c = repo.commit("one");
    // A retry loop through this budget would take many minutes (the test would hang).
    let notes = Notes::new(Git2Notes::open(repo.path()).unwrap()).with_retry(RetryPolicy {
        max_attempts: 10_000,
        base: std::time::Duration::from_millis(5),
        cap: std::time::Duration::from_millis(50),
    });
    let agent = crate::common::agent("data");
    notes
        .write(&agent, &c, &crate::common::entry("data", "first"))
        .unwrap();
    let backend = notes.backend();
    let tip = backend.tip(&data()).unwrap();

    let lock = repo.path().join(".git/refs/notes/squad/data.lock");
    std::fs::write(&lock, "").unwrap();
    let err = notes
        .write(&agent, &c, &crate::common::entry("data", "second"))
        .unwrap_err();
    assert_eq!(
        err.kind(),
        ErrorKind::Locked,
        "{}",
        crate::common::with_sources(&err)
    );
    assert!(!err.is_retryable() && !err.is_user_error());
    assert_eq!(
        err.path().map(|p| p.canonicalize().unwrap()),
        Some(lock.canonicalize().unwrap())
    );
    assert!(err.to_string().contains("data.lock"), "{err}");
    assert_eq!(backend.tip(&data()).unwrap(), tip, "the ref is unchanged");

    // Once the lock is gone, the same write goes through.
    std::fs::remove_file(&lock).unwrap();
    notes
        .write(&agent, &c, &crate::common::entry("data", "second"))
        .unwrap();
    assert_eq!(notes.show(&agent, &c).unwrap().entries.len(), 2);
    repo.fsck();
}
