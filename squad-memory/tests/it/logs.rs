//! The tracing events of the Scribe, import and the file store: counts and file names, never the
//! memory text.

use std::io::Write;
use std::sync::{Arc, Mutex};

use squad_memory::{
    DocRef, ExtractiveSummarizer, FsStore, ImportOptions, ImportSource, ImportTarget, MemoryStore,
    Scribe, ScribeConfig, import,
};

use crate::{agent, at};

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Runs `f` with a subscriber at the most verbose level and returns what it logged.
fn logged(f: impl FnOnce()) -> String {
    let out = Captured::default();
    let writer = out.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    tracing::subscriber::with_default(subscriber, || {
        // Another test's thread may have met a callsite first, with no subscriber, and cached
        // that nobody is interested: ask again now that this one is in place.
        tracing::callsite::rebuild_interest_cache();
        f();
    });
    let bytes = out.0.lock().unwrap().clone();
    String::from_utf8(bytes).unwrap()
}

const SECRET: &str = "CANARY-memory-text";

#[test]
fn scribe_and_import_log_their_counts_and_never_the_memory_text() {
    let dir = tempfile::tempdir().unwrap();
    let store = FsStore::new(dir.path());
    let who = agent("data");
    let history = format!(
        "# DATA\n\nCurrent task: {SECRET}\n\n## Learnings\n\n### 2026-05-01: {SECRET} heading\n{SECRET} body\n"
    );
    let hot =
        format!("Current task: {SECRET}\n\n### 2026-05-02: action: {SECRET}\n**id:** h1\n---\n");
    let log = logged(|| {
        let r = import(
            &store,
            &ImportTarget::Agent(who.clone()),
            &[ImportSource {
                name: "history.md".into(),
                text: history,
            }],
            &ImportOptions::new(at("2026-06-01T00:00:00Z")),
        )
        .unwrap();
        assert_eq!(r.lines_in, r.lines_stored);
        store.write(&DocRef::Hot(who.clone()), &hot).unwrap();
        Scribe::new(&store, &ExtractiveSummarizer, ScribeConfig::default())
            .run(&who, at("2026-06-01T12:00:00Z"))
            .unwrap();
    });
    assert!(!log.contains(SECRET), "memory text in the logs:\n{log}");
    for want in [
        "memory.import{agent=\"data\" sources=1 dry_run=false}",
        "memory imported",
        "lines_in=",
        "memory.scribe{agent=\"data\"}",
        "scribe run before=2 kept=1 moved=1 merged=0",
        "lines_checked=",
        "bytes_checked=",
        "memory document written file=hot/data.md bytes=",
        "file=cold/data.md",
    ] {
        assert!(log.contains(want), "{want:?} missing from\n{log}");
    }
}

#[test]
fn a_busy_lock_is_logged_at_debug() {
    let dir = tempfile::tempdir().unwrap();
    let store = FsStore::new(dir.path());
    store.write(&DocRef::Hot(agent("data")), "x\n").unwrap();
    let _held = store.lock().unwrap();
    let log = logged(|| {
        let err = Scribe::new(&store, &ExtractiveSummarizer, ScribeConfig::default())
            .run(&agent("data"), at("2026-06-01T12:00:00Z"))
            .unwrap_err();
        assert_eq!(err.kind(), squad_memory::ErrorKind::Locked);
    });
    assert!(
        log.contains("memory.scribe{agent=\"data\"}") && log.contains("held by another writer"),
        "{log}"
    );
}
