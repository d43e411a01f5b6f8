//! The tracing events of the Scribe, import and the file store: counts and file names, never the
//! memory text.

use std::cell::RefCell;
use std::io::Write;
use std::sync::Once;

use squad_memory::{
    DocRef, ExtractiveSummarizer, FsStore, ImportOptions, ImportSource, ImportTarget, MemoryStore,
    Scribe, ScribeConfig, import,
};

use crate::{agent, at};

thread_local! {
    /// What the current test thread's events wrote, while [`logged`] captures them.
    static CAPTURE: RefCell<Option<Vec<u8>>> = const { RefCell::new(None) };
}

/// The writer of the tests' one subscriber: into the calling thread's capture, if any.
struct ThreadCapture;

impl Write for ThreadCapture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        CAPTURE.with(|c| {
            if let Some(out) = c.borrow_mut().as_mut() {
                out.extend_from_slice(buf);
            }
        });
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Runs `f` and returns what it logged on this thread, at the most verbose level.
///
/// One global subscriber, set once, serves every test of the binary: a subscriber scoped to a
/// thread (`with_default`) lost events when another test's thread cached a callsite's interest
/// while no subscriber was interested.
fn logged(f: impl FnOnce()) -> String {
    static INIT: Once = Once::new();
    INIT.call_once(|| {
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_ansi(false)
            .with_writer(|| ThreadCapture)
            .finish();
        tracing::subscriber::set_global_default(subscriber).unwrap();
    });
    CAPTURE.with(|c| *c.borrow_mut() = Some(Vec::new()));
    f();
    let bytes = CAPTURE.with(|c| c.borrow_mut().take()).unwrap_or_default();
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
