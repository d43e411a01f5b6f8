//! add, supersede, search, show.

use squad_memory::{
    Budget, DocRef, Entry, ErrorKind, InMemoryStore, Kind, LoadPlan, MemoryStore, Situation, Tier,
    Touch, add, search, show, spawn, supersede,
};

use crate::{agent, at};

#[test]
fn add_appends_to_hot_and_refuses_to_go_over_the_cap() {
    let store = InMemoryStore::new();
    let who = agent("data");
    let e = Entry::new(at("2026-11-30T10:00:00Z"), Kind::Decision, "keep RS256")
        .with_body("Keys rotate.");
    let added = add(&store, &who, e.clone(), &Budget::default()).unwrap();
    let again = add(&store, &who, e, &Budget::default()).unwrap();
    assert_eq!(
        added.id, again.id,
        "adding the same entry twice changes nothing"
    );
    let hot = store.read(&DocRef::Hot(who.clone())).unwrap().unwrap();
    assert_eq!(hot.matches("keep RS256").count(), 1);
    let big = Entry::new(at("2026-11-30T11:00:00Z"), Kind::Note, "big").with_body("x".repeat(5000));
    let err = add(&store, &who, big, &Budget::default()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert!(
        err.to_string().contains("squad memory scribe --agent data"),
        "{err}"
    );
    assert_eq!(store.read(&DocRef::Hot(who.clone())).unwrap().unwrap(), hot);
    let bad = Entry::new(at("2026-11-30T12:00:00Z"), Kind::Note, "rule").with_body("a\n---\nb");
    assert!(
        add(&store, &who, bad, &Budget::default())
            .unwrap_err()
            .to_string()
            .contains("would end the entry")
    );
}

#[test]
fn supersede_hides_the_old_entry_and_show_finds_both() {
    let store = InMemoryStore::new();
    let who = agent("data");
    store
        .write(
            &DocRef::Cold(who.clone()),
            "### 2026-11-01: decision: OLD cookie 24h\n**id:** d-1\n---\n### 2026-11-02: decision: NEW cookie 1h\n**id:** d-2\n---\n",
        )
        .unwrap();
    let found = supersede(&store, &"d-1".parse().unwrap(), &"d-2".parse().unwrap()).unwrap();
    assert_eq!(
        (found.tier, found.path.as_str()),
        (Tier::Cold, "cold/data.md")
    );
    let out = spawn(
        &store,
        &who,
        &LoadPlan::new(Situation::Resuming).task("cookie"),
        &Budget::default(),
        Touch::No,
    )
    .unwrap();
    assert!(out.prompt.contains("NEW cookie") && !out.prompt.contains("OLD cookie"));
    let shown = show(&store, &"d-1".parse().unwrap()).unwrap();
    assert_eq!(shown.entry.superseded_by.unwrap().as_str(), "d-2");
    for (old, by, kind) in [
        ("d-9", "d-2", ErrorKind::NotFound),
        ("d-1", "d-9", ErrorKind::NotFound),
        ("d-2", "d-2", ErrorKind::InvalidInput),
    ] {
        let e = supersede(&store, &old.parse().unwrap(), &by.parse().unwrap()).unwrap_err();
        assert_eq!(e.kind(), kind, "{old} {by}");
    }
    assert_eq!(
        show(&store, &"nope".parse().unwrap()).unwrap_err().kind(),
        ErrorKind::NotFound
    );
}

#[test]
fn search_ranks_every_tier_archive_included() {
    let store = InMemoryStore::new();
    let who = agent("data");
    store
        .write(&DocRef::Hot(who.clone()), "Current task: nothing related\n")
        .unwrap();
    store
        .write(
            &DocRef::Cold(who.clone()),
            "### Staging deploys\nthe deploy to staging is slow\n",
        )
        .unwrap();
    store
        .write(
            &DocRef::Archive(who.clone()),
            "### Deploy timeout (2025-01-02)\nthe staging deploy timed out: DNS cache TTL\n",
        )
        .unwrap();
    store
        .write(
            &DocRef::Wiki("ops".parse().unwrap()),
            "# Ops\nunrelated text\n",
        )
        .unwrap();
    let hits = search(&store, &who, "staging deploy timeout", &[], 10).unwrap();
    assert_eq!(hits[0].tier, Tier::Archive);
    assert_eq!(hits[0].path, "archive/data.md");
    assert!(hits[0].score > hits[1].score);
    assert_eq!(hits.len(), 2);
    let only_cold = search(&store, &who, "staging deploy timeout", &[Tier::Cold], 10).unwrap();
    assert!(only_cold.iter().all(|h| h.tier == Tier::Cold));
    assert_eq!(search(&store, &who, "staging", &[], 1).unwrap().len(), 1);
}

#[test]
fn search_hits_of_split_free_text_chunks_keep_their_line() {
    let store = InMemoryStore::new();
    let who = agent("data");
    let filler = |topic: &str, i: usize| {
        format!(
            "- {topic} note {i}: {}",
            "words about nothing in particular ".repeat(3)
        )
    };
    // Two free-text chunks, each long enough to be offered in parts, each matching the query
    // in one of its parts.
    let mut lines: Vec<String> = vec!["## Deploys".into()];
    lines.extend((0..20).map(|i| filler("deploy", i)));
    lines.push("- the kubernetes ingress dropped requests during the rollout".into());
    let second = lines.len() + 2;
    lines.push(String::new());
    lines.push("## Auth".into());
    lines.extend((0..20).map(|i| filler("auth", i)));
    lines.push("- the kubernetes secret held the signing key".into());
    store
        .write(&DocRef::Cold(who.clone()), &(lines.join("\n") + "\n"))
        .unwrap();
    let out = spawn(
        &store,
        &who,
        &LoadPlan::new(Situation::Resuming).task("kubernetes"),
        &Budget::default(),
        Touch::No,
    )
    .unwrap();
    for first in [1, second] {
        let part = format!("line {first} (part ");
        assert!(
            out.manifest
                .loaded
                .iter()
                .any(|l| l.item.starts_with(&part)),
            "the chunk at line {first} is split into parts: {:?}",
            out.manifest.loaded
        );
    }
    let hits = search(&store, &who, "kubernetes", &[], 10).unwrap();
    let mut at: Vec<(Option<String>, usize)> =
        hits.iter().map(|h| (h.id.clone(), h.line)).collect();
    at.sort_unstable();
    assert_eq!(at, [(None, 1), (None, second)], "{hits:?}");
}
