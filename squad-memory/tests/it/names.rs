//! Bad names and malformed files.

use squad_memory::{
    Budget, DocRef, ErrorKind, InMemoryStore, LoadPlan, MemoryStore, Situation, Tier, TopicName,
    Touch, spawn, validate,
};

const BAD: [&str; 8] = [
    "..",
    "../x",
    "a/b",
    "/etc/passwd",
    "a\\b",
    "a\0b",
    "",
    "C:x",
];

#[test]
fn bad_topic_and_agent_names_are_refused_with_the_reason() {
    for bad in BAD {
        let e = TopicName::new(bad).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{bad:?}");
        for tier in Tier::ALL {
            assert!(DocRef::new(tier, bad).is_err(), "{tier} {bad:?}");
        }
    }
    assert!(
        TopicName::new("../x")
            .unwrap_err()
            .to_string()
            .contains("'..'")
    );
    assert!(
        TopicName::new("a/b")
            .unwrap_err()
            .to_string()
            .contains("'/'")
    );
    assert!(
        TopicName::new("a\0b")
            .unwrap_err()
            .to_string()
            .contains("NUL")
    );
    assert!(
        TopicName::new("/etc")
            .unwrap_err()
            .to_string()
            .contains("absolute")
    );
    assert!(
        TopicName::new("")
            .unwrap_err()
            .to_string()
            .contains("empty")
    );
}

#[test]
fn a_malformed_file_is_skipped_by_the_spawn_and_named_in_the_manifest() {
    let store = InMemoryStore::new();
    let who = crate::agent("data");
    store
        .write(&DocRef::Hot(who.clone()), "Current task: x\n")
        .unwrap();
    store
        .write(
            &DocRef::Cold(who.clone()),
            "\n### 2026-11-02: decision: ok\nbad \0 byte\n---\n",
        )
        .unwrap();
    store
        .write(&DocRef::Archive(who.clone()), "### Older\nstill readable\n")
        .unwrap();
    let out = spawn(
        &store,
        &who,
        &LoadPlan::new(Situation::Resuming),
        &Budget::default(),
        Touch::No,
    )
    .unwrap();
    assert!(out.prompt.contains("Current task: x"));
    assert!(out.prompt.contains("still readable"), "{}", out.prompt);
    let skipped: Vec<String> = out
        .manifest
        .skipped
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(skipped, ["cold/data.md:3: line contains a NUL byte"]);
    // A field line with a bad value is read as text, and reported by validate.
    store
        .write(
            &DocRef::Cold(who.clone()),
            "### 2026-11-02: decision: ok\n**last_loaded:** soon\n---\n",
        )
        .unwrap();
    let out = spawn(
        &store,
        &who,
        &LoadPlan::new(Situation::Resuming),
        &Budget::default(),
        Touch::No,
    )
    .unwrap();
    assert!(out.prompt.contains("**last_loaded:** soon"));
    let problems = validate(&store, &Budget::default()).unwrap();
    assert_eq!(
        problems[0].to_string(),
        "cold/data.md:2: bad date \"soon\" in last_loaded; the line is read as body text"
    );
}

#[test]
fn validate_reports_every_problem_including_size_and_bad_file_names() {
    let store = InMemoryStore::new();
    let who = crate::agent("data");
    store
        .write(&DocRef::Hot(who.clone()), &"Last actions: x\n".repeat(300))
        .unwrap();
    store
        .write(
            &DocRef::Cold(who),
            "### 2026-11-02: note: a\n**id:** x\n**id:** y\n",
        )
        .unwrap();
    store
        .write(
            &DocRef::Wiki("auth".parse().unwrap()),
            "# Auth\n### 2026-13-45: note: x\n",
        )
        .unwrap();
    let problems = validate(&store, &Budget::default()).unwrap();
    let lines: Vec<String> = problems.iter().map(ToString::to_string).collect();
    assert_eq!(
        lines,
        [
            "hot/data.md:1: 4800 bytes, over the hot cap of 4096 bytes; run `squad memory scribe \
             --agent <name>` to move it to cold",
            "cold/data.md:3: field id given twice; the first is used",
            "wiki/auth.md:2: warning: heading \"2026-13-45: note: x\" starts with something shaped \
             like a date that is not one; read as a title",
        ]
    );
}

#[test]
fn validate_reports_files_whose_names_are_not_valid() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("memory/wiki")).unwrap();
    std::fs::write(dir.path().join("memory/wiki/Bad Name.md"), "x\n").unwrap();
    let store = squad_memory::FsStore::new(dir.path());
    let problems = validate(&store, &Budget::default()).unwrap();
    assert_eq!(problems.len(), 1);
    assert!(
        problems[0]
            .to_string()
            .starts_with("wiki/Bad Name.md:1: invalid topic name"),
        "{}",
        problems[0]
    );
}

#[test]
fn a_clean_store_validates() {
    let store = InMemoryStore::new();
    squad_memory::conformance::fixture::Fixture::upstream_like()
        .unwrap()
        .install(&store)
        .unwrap();
    assert_eq!(validate(&store, &Budget::default()).unwrap(), vec![]);
}
