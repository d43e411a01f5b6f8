//! The state directory is a boundary: symlinks below it are never followed, and files too large
//! are refused by name.
#![cfg(unix)]

use std::os::unix::fs::symlink;

use squad_memory::{
    Budget, DocRef, ExtractiveSummarizer, FsStore, LoadPlan, MemoryStore, Scribe, ScribeConfig,
    Situation, Touch, spawn, validate,
};

use crate::{agent, at};

fn setup() -> (tempfile::TempDir, FsStore) {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join(".squad");
    let store = FsStore::new(&state);
    store
        .write(&DocRef::Hot(agent("data")), "Current task: auth tokens\n")
        .unwrap();
    (dir, store)
}

#[test]
fn a_symlinked_wiki_document_is_never_loaded_and_validate_names_it() {
    let (dir, store) = setup();
    let outside = dir.path().join("outside.md");
    std::fs::write(&outside, "SECRET auth tokens rotate nightly\n").unwrap();
    store
        .write(
            &DocRef::Wiki("deploy".parse().unwrap()),
            "# Deploy\ncanary first\n",
        )
        .unwrap();
    symlink(&outside, dir.path().join(".squad/memory/wiki/auth.md")).unwrap();
    let plan = LoadPlan::new(Situation::Onboarding).task("auth tokens");
    let out = spawn(&store, &agent("data"), &plan, &Budget::default(), Touch::No).unwrap();
    assert!(!out.prompt.contains("SECRET"), "{}", out.prompt);
    // Named explicitly, it is an error naming the file.
    let named = LoadPlan::new(Situation::Onboarding).include_wiki("auth".parse().unwrap());
    let e = spawn(
        &store,
        &agent("data"),
        &named,
        &Budget::default(),
        Touch::No,
    )
    .unwrap_err();
    assert!(e.is_user_error());
    assert!(e.to_string().starts_with("wiki/auth.md:1:"), "{e}");
    assert!(e.to_string().contains("symbolic link"), "{e}");
    let problems = validate(&store, &Budget::default()).unwrap();
    assert!(
        problems.iter().any(|p| p.is_error()
            && p.file == "wiki/auth.md"
            && p.message.contains("symbolic link")),
        "{problems:?}"
    );
}

#[test]
fn a_symlinked_cold_directory_is_never_written_through() {
    let (dir, store) = setup();
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    symlink(&elsewhere, dir.path().join(".squad/memory/cold")).unwrap();
    let summarizer = ExtractiveSummarizer;
    let e = Scribe::new(&store, &summarizer, ScribeConfig::default())
        .run(&agent("data"), at("2026-11-30T00:00:00Z"))
        .unwrap_err();
    assert!(e.is_user_error(), "{e}");
    assert!(e.to_string().contains("cold"), "{e}");
    assert!(!elsewhere.join("data.md").exists());
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
    // Hot is untouched: nothing was moved.
    assert_eq!(
        store.read(&DocRef::Hot(agent("data"))).unwrap().unwrap(),
        "Current task: auth tokens\n"
    );
    let problems = validate(&store, &Budget::default()).unwrap();
    assert!(
        problems.iter().any(|p| p.file == "cold" && p.is_error()),
        "{problems:?}"
    );
}

#[test]
fn a_symlinked_memory_directory_is_refused_but_the_state_root_may_be_a_link() {
    let dir = tempfile::tempdir().unwrap();
    // The state root the user chose may itself be a symlink.
    let real = dir.path().join("real-state");
    std::fs::create_dir(&real).unwrap();
    symlink(&real, dir.path().join(".squad")).unwrap();
    let store = FsStore::new(dir.path().join(".squad"));
    store
        .write(&DocRef::Hot(agent("data")), "Current task: x\n")
        .unwrap();
    assert!(real.join("memory/hot/data.md").is_file());
    // But `memory` itself may not be one.
    let other = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(other.path().join("hot")).unwrap();
    std::fs::write(other.path().join("hot/data.md"), "Current task: outside\n").unwrap();
    let state = dir.path().join("state2");
    std::fs::create_dir(&state).unwrap();
    symlink(other.path(), state.join("memory")).unwrap();
    let store = FsStore::new(&state);
    let e = store.read(&DocRef::Hot(agent("data"))).unwrap_err();
    assert!(e.to_string().contains("symbolic link"), "{e}");
    let problems = validate(&store, &Budget::default()).unwrap();
    assert!(
        problems.iter().any(|p| p.file.is_empty() && p.is_error()),
        "{problems:?}"
    );
}

#[test]
fn a_file_over_the_cap_is_an_error_naming_it() {
    let (dir, store) = setup();
    let big = dir.path().join(".squad/memory/archive/data.md");
    std::fs::create_dir_all(big.parent().unwrap()).unwrap();
    let f = std::fs::File::create(&big).unwrap();
    f.set_len(squad_memory::MAX_FILE_BYTES + 1).unwrap();
    let e = store.read(&DocRef::Archive(agent("data"))).unwrap_err();
    assert!(e.is_user_error());
    assert!(e.to_string().starts_with("archive/data.md:1:"), "{e}");
    assert!(e.to_string().contains("at most"), "{e}");
}

#[test]
fn spawn_writes_nothing_and_works_on_a_read_only_state_directory() {
    use std::os::unix::fs::PermissionsExt;
    let (dir, store) = setup();
    store
        .write(
            &DocRef::Cold(agent("data")),
            "### 2026-11-20: note: auth tokens rotate\n**id:** c1\n---\n",
        )
        .unwrap();
    let mem = dir.path().join(".squad/memory");
    let snapshot = |p: &std::path::Path| -> Vec<(String, Vec<u8>)> {
        let mut v = Vec::new();
        for t in ["hot", "cold"] {
            for e in std::fs::read_dir(p.join(t)).unwrap() {
                let e = e.unwrap();
                v.push((
                    e.path().display().to_string(),
                    std::fs::read(e.path()).unwrap(),
                ));
            }
        }
        v.sort();
        v
    };
    let before = snapshot(&mem);
    for d in [&mem, &mem.join("hot"), &mem.join("cold")] {
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o555)).unwrap();
    }
    let plan = LoadPlan::new(Situation::Resuming).task("auth tokens");
    let out = spawn(&store, &agent("data"), &plan, &Budget::default(), Touch::No);
    for d in [&mem, &mem.join("hot"), &mem.join("cold")] {
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let out = out.unwrap();
    assert!(out.prompt.contains("auth tokens rotate"));
    assert!(!out.manifest.touched);
    assert_eq!(snapshot(&mem), before);
    assert!(!mem.join(".scribe.lock").exists(), "no lock taken");
}

#[test]
fn the_next_writer_removes_what_a_killed_writer_left() {
    let (dir, store) = setup();
    // A writer killed between creating its temporary file and renaming it (a process id no
    // system hands out), in two tiers.
    let memory = dir.path().join(".squad/memory");
    std::fs::write(memory.join("hot/.data.md.tmp-999999999-0"), "half").unwrap();
    std::fs::create_dir_all(memory.join("cold")).unwrap();
    std::fs::write(memory.join("cold/.data.md.tmp-999999999-1"), "half").unwrap();
    // Outside memory/: not the memory writers' to remove.
    std::fs::write(dir.path().join(".squad/.state.json.tmp-999999999-2"), "x").unwrap();
    let entry = squad_memory::Entry::new(at("2026-03-01T00:00:00Z"), squad_memory::Kind::Note, "t");
    squad_memory::add(&store, &agent("data"), entry, &Budget::default()).unwrap();
    let left: Vec<_> = store
        .state()
        .leftover_temp_files()
        .unwrap()
        .into_iter()
        .map(|t| t.path)
        .collect();
    assert_eq!(left, [std::path::Path::new(".state.json.tmp-999999999-2")]);
}
