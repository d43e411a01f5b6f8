use std::sync::Arc;

use squad_memory::conformance::run_all;
use squad_memory::{FsStore, InMemoryStore, MemoryStore};

#[test]
fn in_memory_store_conforms() {
    run_all(&InMemoryStore::new());
}

#[test]
fn boxed_and_arc_dyn_stores_conform() {
    let boxed: Box<InMemoryStore> = Box::new(InMemoryStore::new());
    run_all(&boxed);
    let arc: Arc<dyn MemoryStore> = Arc::new(InMemoryStore::new());
    run_all(&arc);
}

#[test]
fn fs_store_conforms() {
    let dir = tempfile::tempdir().unwrap();
    run_all(&FsStore::new(dir.path().join(".squad")));
}

#[test]
fn fs_store_uses_the_seed_layout_and_leaves_no_temp_files() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join(".squad/memory");
    let store = FsStore::new(dir.path().join(".squad"));
    run_all(&store);
    for (tier, name) in [
        ("hot", "nobody"),
        ("cold", "conf-rt"),
        ("wiki", "conf-ow"),
        ("archive", "aa-list"),
    ] {
        let p = root.join(tier).join(format!("{name}.md"));
        assert_eq!(p.exists(), name != "nobody", "{}", p.display());
    }
    for tier in ["hot", "cold", "wiki", "archive"] {
        let leftovers: Vec<_> = std::fs::read_dir(root.join(tier))
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().contains(".tmp-"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }
}

#[test]
fn fs_lock_is_exclusive_across_store_instances() {
    let dir = tempfile::tempdir().unwrap();
    let a = FsStore::new(dir.path());
    let b = FsStore::new(dir.path());
    let held = a.lock().unwrap();
    let err = b.lock().unwrap_err();
    assert_eq!(err.kind(), squad_memory::ErrorKind::Locked);
    // The message names the holder (this process) and no Scribe: none runs.
    let me = format!("pid {}", std::process::id());
    assert!(err.to_string().contains(&me), "{err}");
    assert!(!err.to_string().contains("Scribe"), "{err}");
    drop(held);
    b.lock().unwrap();
}

#[test]
fn fs_store_reports_non_utf8_with_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let store = FsStore::new(dir.path());
    std::fs::create_dir_all(dir.path().join("memory/hot")).unwrap();
    std::fs::write(
        dir.path().join("memory/hot/data.md"),
        b"Current task: x\nbad \xff byte\n",
    )
    .unwrap();
    let err = store
        .read(&squad_memory::DocRef::Hot(crate::agent("data")))
        .unwrap_err();
    assert_eq!(err.to_string(), "hot/data.md:2: not valid UTF-8");
}
