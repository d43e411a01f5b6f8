//! The Scribe: conservation, TTL, promotion, merging, the lock, and crashes between write and
//! trim.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};

use proptest::prelude::*;
use squad_memory::{
    Budget, DocRef, Error, ErrorKind, ExtractiveSummarizer, InMemoryStore, LoadPlan, MemoryDoc,
    MemoryStore, Result, Scribe, ScribeConfig, Situation, StoreLock, Tier, Touch, spawn,
};
use squad_model::{AgentName, Timestamp};

use crate::{agent, at};

/// Every id (own and merged) in every document of the store, with how often it appears.
fn census(store: &dyn MemoryStore) -> BTreeMap<String, usize> {
    let mut ids = BTreeMap::new();
    for tier in Tier::ALL {
        for name in store.list(tier).unwrap() {
            let d = DocRef::new(tier, &name).unwrap();
            let text = store.read(&d).unwrap().unwrap();
            for e in MemoryDoc::parse(&d.path(), &text).unwrap().entries() {
                *ids.entry(e.id.to_string()).or_insert(0) += 1;
                for m in &e.merged {
                    *ids.entry(m.to_string()).or_insert(0) += 1;
                }
            }
        }
    }
    ids
}

fn run(store: &dyn MemoryStore, who: &AgentName, now: &str) -> Result<squad_memory::ScribeReport> {
    Scribe::new(store, &ExtractiveSummarizer, ScribeConfig::default()).run(who, at(now))
}

fn entry(date: &str, kind: &str, summary: &str, fields: &str) -> String {
    format!("### {date}: {kind}: {summary}\n{fields}\n---\n\n")
}

#[test]
fn end_of_session_moves_hot_to_cold_verbatim_and_empties_hot() {
    let store = InMemoryStore::new();
    let who = agent("data");
    let free = "Current task: fix login\nActive decisions: use RS256; keep sessions 1h\nLast actions: wrote tests\nBlockers: none\nTalking to: worf\n";
    let hot = format!(
        "{free}\n{}",
        entry(
            "2026-11-30T09:00:00Z",
            "action",
            "ran the suite",
            "**id:** h1\n"
        )
    );
    store.write(&DocRef::Hot(who.clone()), &hot).unwrap();
    let r = run(&store, &who, "2026-11-30T12:00:00Z").unwrap();
    assert_eq!(r.before, 1);
    assert_eq!(r.moved.get("hot->cold"), Some(&1));
    // The free text itself (one session entry) plus summaries: the task and two decisions.
    assert_eq!(r.created, 4);
    assert_eq!(r.summarized_lines, 5);
    assert_eq!(r.written, vec!["cold/data.md", "hot/data.md"]);
    let cold = store.read(&DocRef::Cold(who.clone())).unwrap().unwrap();
    for want in free.lines().chain([
        "note: Task: fix login",
        "decision: use RS256",
        "decision: keep sessions 1h",
        "**id:** h1",
        "**entered:** 2026-11-30T12:00:00Z",
    ]) {
        assert!(cold.contains(want), "{want} missing from\n{cold}");
    }
    assert!(r.text_bytes_after >= r.text_bytes_before);
    assert_eq!(store.read(&DocRef::Hot(who)).unwrap().unwrap(), "");
}

#[test]
fn a_history_shaped_hot_file_loses_no_line() {
    let store = InMemoryStore::new();
    let who = agent("data");
    let hot = "# DATA\n\nPreamble line — café.\n\n## Core Context\n\n- owns the CLI\n- works with worf\n\n## Learnings\n\n### 2026-03-14: Token refresh\n- refresh 5 minutes early\n\n### Flaky test (#12) (2026-03-02)\n**Fix:** compare realpaths\n\n---\n\nTrailing note after a rule.\n";
    store.write(&DocRef::Hot(who.clone()), hot).unwrap();
    let r = run(&store, &who, "2026-11-30T12:00:00Z").unwrap();
    let mut all = String::new();
    for tier in Tier::ALL {
        for name in store.list(tier).unwrap() {
            all.push_str(
                &store
                    .read(&DocRef::new(tier, &name).unwrap())
                    .unwrap()
                    .unwrap(),
            );
        }
    }
    let lines: BTreeSet<&str> = all.lines().map(str::trim).collect();
    for l in hot.lines().map(str::trim).filter(|l| !l.is_empty()) {
        assert!(lines.contains(l), "lost {l:?}:\n{all}");
    }
    assert!(r.text_lines_after >= r.text_lines_before);
    assert_eq!(r.before, r.kept + r.moved_total() + r.merged);
    // And it passes validate.
    assert!(
        squad_memory::validate(&store, &Budget::default())
            .unwrap()
            .iter()
            .all(|p| !p.is_error())
    );
}

#[test]
fn a_fresh_import_is_not_archived_on_the_first_run() {
    let store = InMemoryStore::new();
    let who = agent("data");
    let mut history = String::from("# DATA\n\n## Learnings\n\n");
    for d in 1..=30 {
        history.push_str(&format!(
            "### 2025-{:02}-{:02}: Lesson {d}\n- text {d}\n\n",
            1 + d % 12,
            1 + d % 28
        ));
    }
    let src = squad_memory::ImportSource {
        name: "history.md".into(),
        text: history,
    };
    squad_memory::import(
        &store,
        &squad_memory::ImportTarget::Agent(who.clone()),
        &[src],
        &squad_memory::ImportOptions::new(at("2026-11-29T00:00:00Z")),
    )
    .unwrap();
    let r = run(&store, &who, "2026-11-30T00:00:00Z").unwrap();
    assert_eq!(r.moved_total(), 0, "{r:?}");
    assert_eq!(store.read(&DocRef::Archive(who.clone())).unwrap(), None);
    // Past the TTL counted from the import, they move (and stay searchable).
    let r = run(&store, &who, "2027-01-15T00:00:00Z").unwrap();
    assert_eq!(r.moved.get("cold->archive"), Some(&30));
    let hits = squad_memory::search(&store, &who, "lesson 17", &[Tier::Archive], 3).unwrap();
    assert_eq!(hits[0].tier, Tier::Archive);
}

#[test]
fn aged_cold_entries_go_to_wiki_or_archive_and_nothing_is_deleted() {
    let store = InMemoryStore::new();
    let who = agent("data");
    let cold = [
        entry(
            "2026-10-01T00:00:00Z",
            "decision",
            "use postgres",
            "**id:** dec\n",
        ),
        entry(
            "2026-10-01T00:00:00Z",
            "contract",
            "API v2 is frozen",
            "**id:** con\n**topic:** api\n",
        ),
        entry(
            "2026-10-01T00:00:00Z",
            "decision",
            "use mysql",
            "**id:** sup\n**superseded_by:** dec\n",
        ),
        entry(
            "2026-10-01T00:00:00Z",
            "note",
            "an old note",
            "**id:** old\n",
        ),
        // Exactly 30 days old: the TTL is strict, it stays.
        entry(
            "2026-10-31T12:00:00Z",
            "note",
            "exactly at the TTL",
            "**id:** edge\n",
        ),
        // Old, but loaded recently: the rolling TTL keeps it.
        entry(
            "2026-09-01T00:00:00Z",
            "note",
            "loaded lately",
            "**id:** warm\n**last_loaded:** 2026-11-20T00:00:00Z\n",
        ),
        entry(
            "2026-11-25T00:00:00Z",
            "convention",
            "recent convention",
            "**id:** fresh\n",
        ),
    ]
    .concat();
    store.write(&DocRef::Cold(who.clone()), &cold).unwrap();
    let before = census(&store);
    let r = run(&store, &who, "2026-11-30T12:00:00Z").unwrap();
    assert_eq!(r.before, 7);
    assert_eq!(r.kept, 3);
    assert_eq!(r.moved.get("cold->wiki"), Some(&2));
    assert_eq!(r.moved.get("cold->archive"), Some(&2));
    assert_eq!(r.before, r.kept + r.moved_total() + r.merged);
    // Destinations are written before the source is trimmed.
    assert_eq!(
        r.written,
        vec![
            "wiki/api.md",
            "wiki/decisions.md",
            "archive/data.md",
            "cold/data.md"
        ]
    );
    let wiki = store
        .read(&DocRef::Wiki("decisions".parse().unwrap()))
        .unwrap()
        .unwrap();
    assert!(wiki.contains("**id:** dec") && !wiki.contains("**id:** sup"));
    let archive = store.read(&DocRef::Archive(who.clone())).unwrap().unwrap();
    assert!(archive.contains("**id:** sup") && archive.contains("**id:** old"));
    assert_eq!(
        census(&store),
        before,
        "every id exactly once, before and after"
    );
}

#[test]
fn a_spawn_that_loads_an_entry_refreshes_its_ttl() {
    let store = InMemoryStore::new();
    let who = agent("data");
    let cold = entry(
        "2026-11-01T00:00:00Z",
        "note",
        "the flaky staging deploy timeout",
        "**id:** t1\n",
    );
    store.write(&DocRef::Cold(who.clone()), &cold).unwrap();
    let plan = LoadPlan::new(Situation::Debugging).task("staging deploy timeout");
    let out = spawn(
        &store,
        &who,
        &plan,
        &Budget::default(),
        Touch::At(at("2026-11-25T00:00:00Z")),
    )
    .unwrap();
    assert!(out.manifest.touched);
    // Without the refresh the entry would be 40 days old at the next run and leave cold.
    let r = run(&store, &who, "2026-12-11T00:00:00Z").unwrap();
    assert_eq!(r.kept, 1, "{r:?}");
    // --no-touch writes nothing.
    let text = store.read(&DocRef::Cold(who.clone())).unwrap();
    spawn(&store, &who, &plan, &Budget::default(), Touch::No).unwrap();
    assert_eq!(store.read(&DocRef::Cold(who)).unwrap(), text);
}

#[test]
fn duplicates_are_merged_and_their_ids_kept() {
    let store = InMemoryStore::new();
    let who = agent("data");
    let cold = [
        entry("2026-11-20T00:00:00Z", "note", "same fact", "**id:** a\n"),
        entry("2026-11-20T00:00:00Z", "note", "same   fact", "**id:** b\n"),
    ]
    .concat();
    store.write(&DocRef::Cold(who.clone()), &cold).unwrap();
    let r = run(&store, &who, "2026-11-30T00:00:00Z").unwrap();
    assert_eq!((r.before, r.kept, r.merged, r.after), (2, 1, 1, 1));
    let doc = MemoryDoc::parse("c", &store.read(&DocRef::Cold(who)).unwrap().unwrap()).unwrap();
    let entries: Vec<_> = doc.entries().collect();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].merged[0].as_str(), "b");
}

#[test]
fn union_merge_duplicates_are_merged_not_fatal() {
    let store = InMemoryStore::new();
    let who = agent("data");
    let section = "### 2026-03-14: Token refresh\n- refresh 5 minutes early\n\n";
    let near = "### 2026-03-14: Token refresh\n- refresh 4 minutes early\n\n";
    let cold = format!("## Learnings\n\n{section}{section}{near}");
    store.write(&DocRef::Cold(who.clone()), &cold).unwrap();
    let problems = squad_memory::validate(&store, &Budget::default()).unwrap();
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(problems.iter().all(|p| !p.is_error()), "{problems:?}");
    let r = run(&store, &who, "2026-11-30T00:00:00Z").unwrap();
    assert_eq!((r.before, r.merged, r.after), (3, 1, 2));
    let text = format!(
        "{}{}",
        store
            .read(&DocRef::Cold(who.clone()))
            .unwrap()
            .unwrap_or_default(),
        store
            .read(&DocRef::Archive(who))
            .unwrap()
            .unwrap_or_default()
    );
    assert_eq!(text.matches("5 minutes early").count(), 1, "{text}");
    assert_eq!(text.matches("4 minutes early").count(), 1);
}

#[test]
fn a_second_scribe_gets_a_clear_error_and_nothing_changes() {
    let store = InMemoryStore::new();
    let who = agent("data");
    store
        .write(&DocRef::Hot(who.clone()), "Current task: x\n")
        .unwrap();
    let held = store.lock().unwrap();
    let err = run(&store, &who, "2026-11-30T00:00:00Z").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Locked);
    assert!(err.is_retryable());
    assert_eq!(
        store.read(&DocRef::Hot(who.clone())).unwrap().as_deref(),
        Some("Current task: x\n")
    );
    assert!(store.read(&DocRef::Cold(who.clone())).unwrap().is_none());
    drop(held);
    run(&store, &who, "2026-11-30T00:00:00Z").unwrap();
}

#[test]
fn a_malformed_file_stops_the_scribe_before_any_write() {
    let store = InMemoryStore::new();
    let who = agent("data");
    store
        .write(&DocRef::Hot(who.clone()), "Current task: x\n")
        .unwrap();
    store
        .write(&DocRef::Cold(who.clone()), "ok\nbad \0 byte\n")
        .unwrap();
    let err = run(&store, &who, "2026-11-30T00:00:00Z").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert_eq!(
        err.problems()[0].to_string(),
        "cold/data.md:2: line contains a NUL byte"
    );
    assert_eq!(
        store.read(&DocRef::Hot(who)).unwrap().as_deref(),
        Some("Current task: x\n")
    );
}

#[test]
fn a_malformed_wiki_document_blocks_nothing_else() {
    let store = InMemoryStore::new();
    let who = agent("data");
    store
        .write(&DocRef::Hot(who.clone()), "Current task: x\n")
        .unwrap();
    store
        .write(&DocRef::Wiki("broken".parse().unwrap()), "# Broken\n\0\n")
        .unwrap();
    store
        .write(
            &DocRef::Wiki("auth".parse().unwrap()),
            "# Auth\nRS256 keys rotate monthly.\n",
        )
        .unwrap();
    let r = run(&store, &who, "2026-11-30T00:00:00Z").unwrap();
    assert!(
        r.warnings.iter().any(|w| w.file == "wiki/broken.md"),
        "{:?}",
        r.warnings
    );
    assert!(
        store
            .read(&DocRef::Cold(who.clone()))
            .unwrap()
            .unwrap()
            .contains("Current task: x")
    );
    // A task-ranked wiki spawn still works, and names what it skipped.
    let plan = LoadPlan::new(Situation::Onboarding).task("auth key rotation");
    let out = spawn(&store, &who, &plan, &Budget::default(), Touch::No).unwrap();
    assert!(out.prompt.contains("RS256 keys rotate monthly."));
    assert_eq!(out.manifest.skipped[0].file, "wiki/broken.md");
}

#[test]
fn a_second_run_is_a_no_op() {
    let store = InMemoryStore::new();
    let who = agent("data");
    store
        .write(
            &DocRef::Hot(who.clone()),
            "Current task: x\nActive decisions: y\n",
        )
        .unwrap();
    store
        .write(
            &DocRef::Cold(who.clone()),
            &entry("2026-09-01T00:00:00Z", "decision", "old", ""),
        )
        .unwrap();
    run(&store, &who, "2026-11-30T00:00:00Z").unwrap();
    let snapshot = census(&store);
    let r = run(&store, &who, "2026-11-30T00:00:00Z").unwrap();
    assert_eq!(r.moved_total(), 0);
    assert!(r.written.is_empty(), "{r:?}");
    assert_eq!(census(&store), snapshot);
}

/// A store that "crashes" (fails every write) after `budget` successful writes: the state on
/// disk is what a process killed at that point leaves behind.
#[derive(Debug)]
struct CrashAfter<S = InMemoryStore> {
    inner: S,
    budget: AtomicUsize,
}

impl<S: MemoryStore> MemoryStore for CrashAfter<S> {
    fn read(&self, doc: &DocRef) -> Result<Option<String>> {
        self.inner.read(doc)
    }
    fn write(&self, doc: &DocRef, text: &str) -> Result<()> {
        if self
            .budget
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |b| b.checked_sub(1))
            .is_err()
        {
            return Err(Error::new(
                ErrorKind::Backend,
                "test.crash",
                "simulated crash",
            ));
        }
        self.inner.write(doc, text)
    }
    fn list(&self, tier: Tier) -> Result<Vec<String>> {
        self.inner.list(tier)
    }
    fn lock(&self) -> Result<StoreLock> {
        self.inner.lock()
    }
}

fn session_fixture(store: &dyn MemoryStore, who: &AgentName) {
    let hot = format!(
        "Current task: ship it\nActive decisions: a; b\n\n{}{}",
        entry(
            "2026-11-29T00:00:00Z",
            "action",
            "did a thing",
            "**id:** h1\n"
        ),
        entry(
            "2026-09-01T00:00:00Z",
            "decision",
            "carried old decision",
            "**id:** h2\n"
        ),
    );
    let cold = [
        entry(
            "2026-09-01T00:00:00Z",
            "convention",
            "tabs not spaces",
            "**id:** c1\n",
        ),
        entry("2026-09-01T00:00:00Z", "note", "old note", "**id:** c2\n"),
        entry("2026-11-20T00:00:00Z", "note", "new note", "**id:** c3\n"),
    ]
    .concat();
    store.write(&DocRef::Hot(who.clone()), &hot).unwrap();
    store.write(&DocRef::Cold(who.clone()), &cold).unwrap();
}

#[test]
fn a_crash_between_any_write_and_the_next_loses_nothing_and_the_rerun_duplicates_nothing() {
    let who = agent("data");
    let reference = InMemoryStore::new();
    session_fixture(&reference, &who);
    let full = run(&reference, &who, "2026-11-30T00:00:00Z").unwrap();
    let expected = census(&reference);
    assert!(full.written.len() >= 4, "{full:?}");
    for crash_after in 0..full.written.len() {
        let inner = InMemoryStore::new();
        session_fixture(&inner, &who);
        let originals: BTreeSet<String> = census(&inner).into_keys().collect();
        let crashing = CrashAfter {
            inner: inner.clone(),
            budget: AtomicUsize::new(crash_after),
        };
        let err = run(&crashing, &who, "2026-11-30T00:00:00Z").unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Backend);
        // Right after the crash: nothing lost (a copy may exist in two places).
        let mid = census(&inner);
        for id in &originals {
            assert!(
                mid.contains_key(id),
                "crash after {crash_after} writes lost {id}"
            );
        }
        // The next run (a different clock, even) converges: every id exactly once.
        run(&inner, &who, "2026-11-30T06:00:00Z").unwrap();
        let after = census(&inner);
        assert!(
            after.values().all(|n| *n == 1),
            "crash after {crash_after}: {after:?}"
        );
        assert_eq!(after, expected, "crash after {crash_after}");
    }
}

#[test]
fn a_crash_on_real_files_loses_nothing_and_the_rerun_converges() {
    let who = agent("data");
    for crash_after in 0..4 {
        let dir = tempfile::tempdir().unwrap();
        let fs = squad_memory::FsStore::new(dir.path());
        session_fixture(&fs, &who);
        let originals: BTreeSet<String> = census(&fs).into_keys().collect();
        let crashing = CrashAfter {
            inner: fs.clone(),
            budget: AtomicUsize::new(crash_after),
        };
        let err = run(&crashing, &who, "2026-11-30T00:00:00Z").unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Backend, "crash after {crash_after}");
        let mid = census(&fs);
        assert!(
            originals.iter().all(|id| mid.contains_key(id)),
            "crash after {crash_after}: {mid:?}"
        );
        run(&fs, &who, "2026-11-30T00:00:00Z").unwrap();
        let after = census(&fs);
        assert!(
            after.values().all(|n| *n == 1),
            "crash after {crash_after}: {after:?}"
        );
        assert!(originals.iter().all(|id| after.contains_key(id)));
        // The lock was released by the crashed run.
        drop(fs.lock().unwrap());
    }
}

#[test]
fn touch_fails_with_locked_and_writes_nothing_while_another_writer_holds_the_lock() {
    let store = InMemoryStore::new();
    let who = agent("data");
    let cold = entry(
        "2026-11-20T00:00:00Z",
        "note",
        "deploy timeout",
        "**id:** t1\n",
    );
    store.write(&DocRef::Cold(who.clone()), &cold).unwrap();
    let held = store.lock().unwrap();
    let plan = LoadPlan::new(Situation::Debugging).task("deploy timeout");
    let err = spawn(
        &store,
        &who,
        &plan,
        &Budget::default(),
        Touch::At(at("2026-11-25T00:00:00Z")),
    )
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Locked);
    assert_eq!(
        store.read(&DocRef::Cold(who.clone())).unwrap().unwrap(),
        cold
    );
    drop(held);
    // Free again: the touch is recorded.
    let out = spawn(
        &store,
        &who,
        &plan,
        &Budget::default(),
        Touch::At(at("2026-11-25T00:00:00Z")),
    )
    .unwrap();
    assert!(out.manifest.touched && out.prompt.contains("deploy timeout"));
    assert!(
        store
            .read(&DocRef::Cold(who))
            .unwrap()
            .unwrap()
            .contains("**last_loaded:** 2026-11-25")
    );
}

#[derive(Debug, Clone)]
enum Op {
    Hot(Vec<(u8, u8, i64, bool)>, bool),
    Scribe(i64),
    Crash(i64, usize),
    Touch(i64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (
            prop::collection::vec((0u8..4, 0u8..6, 0i64..70, any::<bool>()), 0..5),
            any::<bool>()
        )
            .prop_map(|(e, free)| Op::Hot(e, free)),
        (-5i64..40).prop_map(Op::Scribe),
        ((-5i64..40), 0usize..5).prop_map(|(d, k)| Op::Crash(d, k)),
        (0i64..10).prop_map(Op::Touch),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Random sessions, clock jumps (also backwards), TTL refreshes and crashes at random write
    /// points: no entry is ever lost, and after a clean run none is duplicated.
    #[test]
    fn scribe_never_loses_or_duplicates(ops in prop::collection::vec(op(), 1..12)) {
        let store = InMemoryStore::new();
        let who = agent("data");
        let kinds = ["decision", "convention", "note", "action"];
        let mut clock: Timestamp = at("2026-01-01T00:00:00Z");
        let mut expected: BTreeSet<String> = BTreeSet::new();
        let mut next_id = 0;
        for op in ops {
            match op {
                Op::Hot(entries, free) => {
                    let mut text = store.read(&DocRef::Hot(who.clone())).unwrap().unwrap_or_default();
                    let mut doc = MemoryDoc::parse("hot", &text).unwrap();
                    if free {
                        text = format!("Current task: task {next_id}\nActive decisions: d{}\n", next_id % 3);
                        doc.items.retain(|i| matches!(i, squad_memory::Item::Entry(_)));
                        let free = MemoryDoc::parse("hot", &text).unwrap().items;
                        doc.items.splice(0..0, free);
                    }
                    for (k, s, age, sup) in entries {
                        next_id += 1;
                        let id = format!("e{next_id}");
                        let mut fields = format!("**id:** {id}\n");
                        if sup { fields.push_str("**superseded_by:** e0\n"); }
                        let date = clock.plus_seconds(-age * 86_400);
                        let e = MemoryDoc::parse("x", &entry(&date.to_string(), kinds[k as usize], &format!("fact {s}"), &fields)).unwrap();
                        doc.items.extend(e.items);
                        expected.insert(id);
                    }
                    store.write(&DocRef::Hot(who.clone()), &doc.to_text()).unwrap();
                }
                Op::Scribe(days) => {
                    clock = clock.plus_seconds(days * 86_400);
                    let r = Scribe::new(&store, &ExtractiveSummarizer, ScribeConfig::default()).run(&who, clock).unwrap();
                    prop_assert_eq!(r.before, r.kept + r.moved_total() + r.merged);
                    let c = census(&store);
                    prop_assert!(c.values().all(|n| *n == 1), "duplicated: {:?}", c);
                }
                Op::Crash(days, k) => {
                    clock = clock.plus_seconds(days * 86_400);
                    let crashing = CrashAfter { inner: store.clone(), budget: AtomicUsize::new(k) };
                    let _ = Scribe::new(&crashing, &ExtractiveSummarizer, ScribeConfig::default()).run(&who, clock);
                }
                Op::Touch(days) => {
                    let plan = LoadPlan::new(Situation::Resuming).task("fact 1 fact 2");
                    spawn(&store, &who, &plan, &Budget::default(), Touch::At(clock.plus_seconds(days * 86_400))).unwrap();
                }
            }
            let c = census(&store);
            for id in &expected {
                prop_assert!(c.contains_key(id), "lost {}: {:?}", id, c);
            }
        }
        Scribe::new(&store, &ExtractiveSummarizer, ScribeConfig::default()).run(&who, clock).unwrap();
        let c = census(&store);
        prop_assert!(c.values().all(|n| *n == 1), "duplicated after a clean run: {:?}", c);
        for id in &expected {
            prop_assert!(c.contains_key(id), "lost {}", id);
        }
    }
}
