//! The public conformance suite for [`MemoryStore`] implementors, and the upstream-shaped fixture
//! the tests and benches use. Behind the `conformance` feature; exempt from semver.
//!
//! Call [`run_all`] with an **empty** store; every scenario panics with a message naming the
//! broken rule of the trait's `# Contract` / `# Behavior`.
//!
//! ```
//! squad_memory::conformance::run_all(&squad_memory::InMemoryStore::new());
//! ```

mod facts;
pub mod fixture;
pub mod realistic;

use std::collections::HashSet;
use std::fmt::Debug;

use squad_model::AgentName;

use crate::entry::MemoryDoc;
use crate::error::{ErrorKind, Result};
use crate::name::{MemoryId, TopicName};
use crate::scribe::{ExtractiveSummarizer, Scribe, ScribeConfig};
use crate::store::{DocRef, MemoryStore, Tier};

#[track_caller]
fn ok<T, E: Debug>(r: std::result::Result<T, E>, what: &str) -> T {
    match r {
        Ok(v) => v,
        Err(e) => panic!("conformance: {what}: {e:?}"),
    }
}

fn agent(name: &str) -> AgentName {
    ok(AgentName::new(name), "agent name")
}

fn topic(name: &str) -> TopicName {
    ok(TopicName::new(name), "topic name")
}

/// Runs every scenario against `store`, which must start empty.
pub fn run_all<S: MemoryStore + ?Sized>(store: &S) {
    read_missing_is_none(store);
    write_then_read_round_trips(store);
    overwrite_replaces(store);
    documents_are_independent(store);
    list_is_sorted_per_tier(store);
    lock_is_exclusive_and_released_on_drop(store);
    scribe_conserves_entries(store);
    an_index_is_never_stale(store);
}

/// [`MemoryStore::read_index`] returns no index (the default) or one that matches the text the
/// document holds now, after each write: a store never hands out an index of an older text as
/// current (a reader would ignore it, but a store that keeps indexes must keep them current).
/// [`MemoryStore::open_index`] reads the same bytes, and [`MemoryStore::open`] the text.
pub fn an_index_is_never_stale<S: MemoryStore + ?Sized>(store: &S) {
    let d = DocRef::Cold(agent("conf-idx"));
    for text in [
        "### 2026-03-14: Deploy\nStaging times out.\n",
        "### 2026-03-15: Deploy again\nThe staging deploy is fine.\nFree text.\n",
    ] {
        ok(store.write(&d, text), "write");
        let index = ok(store.read_index(&d), "read_index");
        if let Some(index) = &index {
            assert!(
                crate::index::index_matches(index, text),
                "conformance: read_index must return None or the index of the current text"
            );
        }
        let opened = ok(store.open_index(&d), "open_index").map(|r| read_whole(r.as_ref()));
        assert_eq!(
            opened, index,
            "conformance: open_index must read the bytes read_index returns"
        );
        let doc = ok(store.open(&d), "open").map(|r| read_whole(r.as_ref()));
        assert_eq!(
            doc.as_deref(),
            Some(text.as_bytes()),
            "conformance: open must read the text read returns"
        );
    }
    assert!(
        ok(
            store.read_index(&DocRef::Wiki(topic("conf-idx-none"))),
            "read_index"
        )
        .is_none(),
        "conformance: read_index of a missing document must be None"
    );
}

/// Every byte of `r`, read in two parts.
fn read_whole(r: &dyn crate::DocReader) -> Vec<u8> {
    let len = usize::try_from(r.len()).unwrap_or_else(|_| panic!("conformance: a huge reader"));
    let mut buf = vec![0u8; len];
    let (a, b) = buf.split_at_mut(len / 2);
    ok(r.read_at(0, a), "read_at");
    ok(r.read_at(a.len() as u64, b), "read_at");
    buf
}

/// `read` of a document never written is `Ok(None)`.
pub fn read_missing_is_none<S: MemoryStore + ?Sized>(store: &S) {
    let r = ok(store.read(&DocRef::Hot(agent("nobody"))), "read missing");
    assert!(
        r.is_none(),
        "conformance: read of a missing document must be None"
    );
}

/// `write` then `read` returns the exact text, including non-ASCII and empty text.
pub fn write_then_read_round_trips<S: MemoryStore + ?Sized>(store: &S) {
    let d = DocRef::Cold(agent("conf-rt"));
    for text in ["", "Current task: ünïcode ✓\n", "no trailing newline"] {
        ok(store.write(&d, text), "write");
        assert_eq!(
            ok(store.read(&d), "read").as_deref(),
            Some(text),
            "conformance: read must return exactly what was written"
        );
    }
}

/// A second `write` replaces the first completely.
pub fn overwrite_replaces<S: MemoryStore + ?Sized>(store: &S) {
    let d = DocRef::Wiki(topic("conf-ow"));
    ok(store.write(&d, "first version, long text\n"), "write");
    ok(store.write(&d, "second\n"), "overwrite");
    assert_eq!(
        ok(store.read(&d), "read").as_deref(),
        Some("second\n"),
        "conformance: write must replace, not append"
    );
}

/// The same name in different tiers names different documents.
pub fn documents_are_independent<S: MemoryStore + ?Sized>(store: &S) {
    let a = agent("conf-ind");
    let docs = [
        DocRef::Hot(a.clone()),
        DocRef::Cold(a.clone()),
        DocRef::Archive(a),
        DocRef::Wiki(topic("conf-ind")),
    ];
    for d in &docs {
        ok(store.write(d, &d.path()), "write");
    }
    for d in &docs {
        assert_eq!(
            ok(store.read(d), "read"),
            Some(d.path()),
            "conformance: writing one document must not change another"
        );
    }
}

/// `list` returns the names written in a tier, sorted, and only those.
pub fn list_is_sorted_per_tier<S: MemoryStore + ?Sized>(store: &S) {
    for n in ["zz-list", "aa-list", "mm-list"] {
        ok(store.write(&DocRef::Archive(agent(n)), "x\n"), "write");
    }
    let names = ok(store.list(Tier::Archive), "list");
    let mine: Vec<&String> = names.iter().filter(|n| n.ends_with("-list")).collect();
    assert_eq!(
        mine,
        ["aa-list", "mm-list", "zz-list"].iter().collect::<Vec<_>>(),
        "conformance: list must return the tier's names, sorted"
    );
    let hot = ok(store.list(Tier::Hot), "list hot");
    assert!(
        !hot.iter().any(|n| n.ends_with("-list")),
        "conformance: list must not return names of another tier"
    );
}

/// `lock` is exclusive (a second taker gets `Locked` at once) and released on drop.
pub fn lock_is_exclusive_and_released_on_drop<S: MemoryStore + ?Sized>(store: &S) {
    let first = ok(store.lock(), "first lock");
    match store.lock() {
        Err(e) => assert_eq!(
            e.kind(),
            ErrorKind::Locked,
            "conformance: a held lock must give ErrorKind::Locked"
        ),
        Ok(_) => panic!("conformance: lock must be exclusive"),
    }
    drop(first);
    let again = ok(store.lock(), "lock after release");
    drop(again);
}

fn all_ids<S: MemoryStore + ?Sized>(store: &S, docs: &[DocRef]) -> Result<Vec<MemoryId>> {
    let mut ids = Vec::new();
    for d in docs {
        if let Some(t) = store.read(d)? {
            let doc = MemoryDoc::parse(&d.path(), &t)?;
            for e in doc.entries() {
                ids.push(e.id.clone());
                ids.extend(e.merged.iter().cloned());
            }
        }
    }
    Ok(ids)
}

/// A Scribe run over the store loses no entry and duplicates none.
pub fn scribe_conserves_entries<S: MemoryStore + ?Sized>(store: &S) {
    let a = agent("conf-scribe");
    let hot = "Current task: check conformance\n\n### 2026-11-29T10:00:00Z: action: ran the suite\n**id:** c-hot-1\n---\n";
    let cold = "### 2026-09-01T10:00:00Z: decision: an old decision\n**id:** c-old-dec\n---\n\n### 2026-09-02T10:00:00Z: note: an old note\n**id:** c-old-note\n---\n\n### 2026-11-20T10:00:00Z: note: a recent note\n**id:** c-new-note\n---\n";
    ok(store.write(&DocRef::Hot(a.clone()), hot), "write hot");
    ok(store.write(&DocRef::Cold(a.clone()), cold), "write cold");
    let summarizer = ExtractiveSummarizer;
    let scribe = Scribe::new(&store, &summarizer, ScribeConfig::default());
    let now = ok("2026-11-30T12:00:00Z".parse(), "time");
    let report = ok(scribe.run(&a, now), "scribe run");
    assert_eq!(
        report.before,
        report.kept + report.moved_total() + report.merged,
        "conformance: scribe conservation"
    );
    let docs = [
        DocRef::Hot(a.clone()),
        DocRef::Cold(a.clone()),
        DocRef::Archive(a),
        DocRef::Wiki(topic("decisions")),
    ];
    let ids = ok(all_ids(store, &docs), "read back");
    let unique: HashSet<&MemoryId> = ids.iter().collect();
    assert_eq!(
        unique.len(),
        ids.len(),
        "conformance: scribe duplicated an entry"
    );
    for want in ["c-hot-1", "c-old-dec", "c-old-note", "c-new-note"] {
        assert!(
            ids.iter().any(|i| i.as_str() == want),
            "conformance: scribe lost entry {want}"
        );
    }
}
