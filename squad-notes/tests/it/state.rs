//! The state conformance suite on the in-memory and work-tree stores, and work-tree specifics.

use std::sync::Arc;

use squad_notes::state::{
    InMemoryStateStore, StateEdit, StateStore, StateStoreExt, WorktreeStateStore, conformance,
    validate_key,
};

#[test]
fn in_memory_store_conforms() {
    conformance::run_all(&InMemoryStateStore::new());
}

#[test]
fn boxed_in_memory_store_conforms() {
    conformance::run_all(&Box::new(InMemoryStateStore::new()));
}

#[test]
fn shared_dyn_in_memory_store_conforms() {
    let store: Arc<dyn StateStore> = Arc::new(InMemoryStateStore::new());
    conformance::run_all(&store);
}

#[test]
fn worktree_store_conforms() {
    let dir = tempfile::tempdir().unwrap();
    conformance::run_all(&WorktreeStateStore::new(dir.path().join(".squad")));
}

#[test]
fn boxed_worktree_store_conforms() {
    let dir = tempfile::tempdir().unwrap();
    conformance::run_all(&Box::new(WorktreeStateStore::new(
        dir.path().join(".squad"),
    )));
}

#[test]
fn shared_dyn_worktree_store_conforms() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn StateStore> = Arc::new(WorktreeStateStore::new(dir.path().join(".squad")));
    conformance::run_all(&store);
}

#[test]
fn worktree_appends_from_separate_handles_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join(".squad");
    conformance::concurrent_appends_from(|| WorktreeStateStore::new(&root));
}

#[test]
fn worktree_store_keeps_plain_files_and_leaves_no_temporaries() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join(".squad");
    let store = WorktreeStateStore::new(&root);
    store.delete("nothing.md").unwrap();
    assert!(!root.exists(), "nothing is created before the first write");
    store.write("decisions.md", b"# Decisions\n").unwrap();
    store
        .apply(&[
            StateEdit::append("decisions.md", "- one\n"),
            StateEdit::write("research/2026-11-30-jwt.md", "jwt\n"),
        ])
        .unwrap();
    assert_eq!(
        std::fs::read(root.join("decisions.md")).unwrap(),
        b"# Decisions\n- one\n"
    );
    assert_eq!(
        std::fs::read(root.join("research").join("2026-11-30-jwt.md")).unwrap(),
        b"jwt\n"
    );
    // Files written by hand are state too.
    std::fs::write(root.join("team.md"), "hand-written\n").unwrap();
    assert_eq!(
        store.read("team.md").unwrap().as_deref(),
        Some(&b"hand-written\n"[..])
    );
    store.delete("research/2026-11-30-jwt.md").unwrap();
    assert!(
        !root.join("research").exists(),
        "emptied directories are pruned"
    );
    let mut names: Vec<String> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    // Only the lock file besides the keys: no temporary files are left behind.
    assert_eq!(names, [".squad-lock", "decisions.md", "team.md"]);
    assert_eq!(store.list("").unwrap(), ["decisions.md", "team.md"]);
}

#[test]
fn worktree_store_reports_io_failures_as_backend_errors() {
    let dir = tempfile::tempdir().unwrap();
    // The root is a file: nothing can be written below it.
    let root = dir.path().join("not-a-dir");
    std::fs::write(&root, "x").unwrap();
    let store = WorktreeStateStore::new(&root);
    let err = store.write("a.md", b"x").unwrap_err();
    assert_eq!(
        err.kind(),
        squad_notes::ErrorKind::Backend,
        "{}",
        crate::common::with_sources(&err)
    );
    assert_eq!(std::fs::read(&root).unwrap(), b"x");
}

#[test]
fn invalid_key_messages_name_the_problem() {
    let err = validate_key("a//b").unwrap_err();
    assert_eq!(err.kind(), squad_notes::ErrorKind::InvalidInput);
    assert_eq!(
        err.to_string(),
        "invalid state key \"a//b\": it has an empty segment ('//')"
    );
    let err = validate_key("../x").unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid state key \"../x\": it has a '..' segment"
    );
}

const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<InMemoryStateStore>();
    assert_send_sync::<WorktreeStateStore>();
    #[cfg(feature = "gix")]
    assert_send_sync::<squad_notes::state::OrphanBranchStore>();
    assert_send_sync::<squad_notes::transport::GitCliTransport>();
};

/// The state a writer leaves when it dies in the middle of a multi-key batch: the journal (with
/// the new values) is written, `a` is in place, `b` is not, and `old` is not deleted yet. The
/// next reader completes the batch before it reads.
#[test]
fn worktree_batch_cut_short_by_a_crash_is_completed_by_the_next_reader() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join(".squad");
    let store = WorktreeStateStore::new(&root);
    store
        .apply(&[
            StateEdit::write("a.md", "a1\n"),
            StateEdit::write("notes/b.md", "b1\n"),
            StateEdit::write("old.md", "old\n"),
        ])
        .unwrap();
    // The crashed batch: a -> a2, notes/b -> b2, delete old.
    std::fs::write(root.join("a.md"), "a2\n").unwrap();
    std::fs::write(
        root.join(".squad-journal"),
        r#"{"delete":["old.md"],"write":[["a.md","61320a"],["notes/b.md","62320a"]]}"#,
    )
    .unwrap();

    let fresh = WorktreeStateStore::new(&root);
    assert_eq!(fresh.read("notes/b.md").unwrap().unwrap(), b"b2\n");
    assert_eq!(fresh.read("a.md").unwrap().unwrap(), b"a2\n");
    assert_eq!(fresh.read("old.md").unwrap(), None);
    let mut names: Vec<String> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [".squad-lock", "a.md", "notes"],
        "journal and temporaries gone"
    );

    // A journal that cannot be parsed is reported by the next writer, which changes nothing.
    std::fs::write(root.join(".squad-journal"), "{torn").unwrap();
    let err = fresh.write("c.md", b"c\n").unwrap_err();
    assert_eq!(
        err.kind(),
        squad_notes::ErrorKind::Corrupt,
        "{}",
        crate::common::with_sources(&err)
    );
    assert!(
        err.to_string().contains(".squad-journal"),
        "{}",
        crate::common::with_sources(&err)
    );
    assert_eq!(fresh.list("").unwrap(), ["a.md", "notes/b.md"]);
}

const BATCH_CHILD_ENV: &str = "SQUAD_NOTES_BATCH_CHILD_ROOT";

/// The writer of `worktree_batches_of_killed_writers_are_all_or_nothing`, run as a child process
/// with `SQUAD_NOTES_BATCH_CHILD_ROOT` set: it applies batches that set three keys to the same
/// generation until it is killed. Run on its own it applies a few and checks them.
#[test]
fn worktree_batch_writer_child() {
    let root = std::env::var(BATCH_CHILD_ENV).ok();
    let rounds = if root.is_some() { u64::MAX } else { 5 };
    let tmp = tempfile::tempdir().unwrap();
    let store = WorktreeStateStore::new(root.map_or(tmp.path().join(".squad"), Into::into));
    for n in 0..rounds {
        let v = format!("{n}\n");
        store
            .apply(&[
                StateEdit::write("a.md", v.clone()),
                StateEdit::write("b/b.md", v.clone()),
                StateEdit::write("c.md", v.clone()),
            ])
            .unwrap();
        assert_eq!(store.read("b/b.md").unwrap().unwrap(), v.as_bytes());
    }
}

/// Writers killed at varied moments in a loop of three-key batches: every reader afterwards sees
/// the three keys at one generation, and no journal or temporary file is left once read.
#[test]
fn worktree_batches_of_killed_writers_are_all_or_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join(".squad");
    let exe = std::env::current_exe().unwrap();
    let mut seen = std::collections::BTreeSet::new();
    for round in 0..10u64 {
        let mut child = std::process::Command::new(&exe)
            .args([
                "state::worktree_batch_writer_child",
                "--exact",
                "--test-threads=1",
            ])
            .env(BATCH_CHILD_ENV, &root)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(30 + (round * 41) % 100));
        child.kill().unwrap();
        child.wait().unwrap();
        let store = WorktreeStateStore::new(&root);
        let a = store.read("a.md").unwrap();
        let b = store.read("b/b.md").unwrap();
        let c = store.read("c.md").unwrap();
        assert_eq!(a, b, "round {round}");
        assert_eq!(b, c, "round {round}");
        seen.insert(a);
        let leftovers: Vec<String> = std::fs::read_dir(&root)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.starts_with(".squad-") && n != ".squad-lock")
            .collect();
        assert!(
            leftovers.is_empty() || leftovers.iter().all(|n| n.starts_with(".squad-tmp-")),
            "round {round}: {leftovers:?}"
        );
    }
    assert!(seen.len() > 1, "the writers made progress: {seen:?}");
    // The next writer sweeps the temporary files of writers killed before their journal.
    let store = WorktreeStateStore::new(&root);
    store.write("d.md", b"d\n").unwrap();
    let mut names: Vec<String> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, [".squad-lock", "a.md", "b", "c.md", "d.md"]);
}

/// A symlink committed under the state directory never makes the store read or write outside
/// it (issue 14): a linked directory lists nothing and reads as missing, and writing through it
/// is refused with nothing created outside.
#[cfg(unix)]
#[test]
fn worktree_store_never_follows_a_symlink_below_its_root() {
    let dir = tempfile::tempdir().unwrap();
    let outside = dir.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("secret.md"), "secret\n").unwrap();
    let root = dir.path().join(".squad");
    let store = WorktreeStateStore::new(&root);
    store.write("decisions.md", b"# Decisions\n").unwrap();
    std::os::unix::fs::symlink(&outside, root.join("research")).unwrap();
    std::os::unix::fs::symlink(outside.join("secret.md"), root.join("linked.md")).unwrap();
    assert_eq!(store.list("").unwrap(), ["decisions.md"]);
    assert_eq!(store.read("research/secret.md").unwrap(), None);
    assert_eq!(store.read("linked.md").unwrap(), None);
    let err = store.write("research/new.md", b"x\n").unwrap_err();
    assert_eq!(
        err.kind(),
        squad_notes::ErrorKind::PermissionDenied,
        "{}",
        crate::common::with_sources(&err)
    );
    let err = store.append("linked.md", b"more\n").unwrap_err();
    assert_eq!(
        err.kind(),
        squad_notes::ErrorKind::PermissionDenied,
        "{}",
        crate::common::with_sources(&err)
    );
    assert!(!outside.join("new.md").exists());
    assert_eq!(
        std::fs::read(outside.join("secret.md")).unwrap(),
        b"secret\n"
    );
}
