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
    assert_eq!(err.kind(), squad_notes::ErrorKind::Backend, "{err:#}");
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
