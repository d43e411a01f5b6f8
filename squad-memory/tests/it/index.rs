//! The search index (`memory/.index/`): a spawn's output is the same with and without it,
//! whatever the documents and the task; a missing, stale, corrupt or foreign index is ignored;
//! a read-only spawn writes none; the index directory is never taken for memory documents.

use proptest::prelude::*;
use squad_memory::{
    Budget, DocReader, DocRef, FsStore, InMemoryStore, LeftOutDetail, LoadPlan, MemoryStore,
    Situation, Source, Tier, TopicName, Touch, build_index, index_matches, spawn, spawn_with,
    validate,
};

use crate::agent;
use crate::golden::{Indexed, same_but_names};

fn word() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("deploy".to_owned()),
        Just("deploys".to_owned()),
        Just("deployed".to_owned()),
        Just("staging".to_owned()),
        Just("Staging".to_owned()),
        Just("timeout".to_owned()),
        Just("time".to_owned()),
        Just("out".to_owned()),
        Just("BlobStorageClient".to_owned()),
        Just("HTTPServer".to_owned()),
        Just("blob-storage-client".to_owned()),
        Just("Contoso.Extensions.Http".to_owned()),
        Just("snake_case_name".to_owned()),
        Just("PR".to_owned()),
        Just("pull".to_owned()),
        Just("request".to_owned()),
        Just("config".to_owned()),
        Just("configuration".to_owned()),
        Just("licence".to_owned()),
        Just("license".to_owned()),
        Just("subdirectory".to_owned()),
        Just("directory".to_owned()),
        Just("Event Grid".to_owned()),
        Just("EG".to_owned()),
        Just("dying".to_owned()),
        Just("die".to_owned()),
        Just("skies".to_owned()),
        Just("using".to_owned()),
        Just("use".to_owned()),
        Just("naïve".to_owned()),
        Just("café".to_owned()),
        Just("Straße".to_owned()),
        Just("déploiement".to_owned()),
        Just("x".to_owned()),
        Just("the".to_owned()),
        Just("why".to_owned()),
        Just("k8s".to_owned()),
        Just("v2".to_owned()),
        "[a-z]{2,9}",
        "[A-Za-z0-9]{1,12}",
    ]
}

fn glue() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => Just(" ".to_owned()),
        2 => Just("\n".to_owned()),
        1 => Just("\n\n".to_owned()),
        1 => Just("\n### 2026-03-14: ".to_owned()),
        1 => Just("\n### ".to_owned()),
        1 => Just("\n## Group\n".to_owned()),
        1 => Just("\n# Notes\n".to_owned()),
        1 => Just("\n#### Detail\n".to_owned()),
        1 => Just("\n**Fix:** ".to_owned()),
        1 => Just("\n```\n".to_owned()),
        1 => Just("\n- ".to_owned()),
        1 => Just(" — ".to_owned()),
        1 => Just("→".to_owned()),
        1 => Just("’".to_owned()),
        1 => Just(", ".to_owned()),
        1 => Just(". ".to_owned()),
        1 => Just("\r\n".to_owned()),
        1 => Just("\n---\n\n".to_owned()),
        1 => Just("\n### 2026-03-15: Old\n**superseded_by:** d-9\n".to_owned()),
        1 => Just("\n### 2026-03-16: Named\n**id:** d-9\n".to_owned()),
        1 => Just("\n### Same\nSame text.\n### Same\nSame text.\n".to_owned()),
        1 => Just("\n## 2026-04-01 Dated group\n".to_owned()),
    ]
}

/// A memory document of words and Markdown, sometimes long enough to cross the scorer's
/// 64 KiB batches.
fn doc() -> impl Strategy<Value = String> {
    (
        prop::collection::vec((word(), glue()), 0..120),
        prop_oneof![4 => Just(1usize), 1 => 40usize..90],
        prop_oneof![5 => Just(1usize), 1 => 2usize..5],
    )
        .prop_map(|(parts, times, long)| {
            let long = if times > 1 { 1 } else { long };
            // Sometimes long enough for its entries to be offered in parts.
            let one: String = parts
                .into_iter()
                .map(|(w, g)| w + &g)
                .collect::<String>()
                .repeat(long);
            let mut out = String::new();
            for i in 0..times {
                out.push_str(&format!("### 2026-01-{:02}: Part {i}\n", 1 + i % 28));
                out.push_str(&one);
                out.push('\n');
            }
            out
        })
}

fn task() -> impl Strategy<Value = String> {
    prop::collection::vec(word(), 1..6).prop_map(|w| w.join(" "))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// The output of a spawn is the same, byte for byte, with the search indexes and without.
    #[test]
    fn a_spawn_is_the_same_with_and_without_the_index(
        cold in doc(),
        archive in doc(),
        wiki in doc(),
        task in task(),
    ) {
        let store = InMemoryStore::new();
        let a = agent("data");
        store.write(&DocRef::Hot(a.clone()), "Current task: x\n").unwrap();
        store.write(&DocRef::Cold(a.clone()), &cold).unwrap();
        store.write(&DocRef::Archive(a.clone()), &archive).unwrap();
        store.write(&DocRef::Wiki(TopicName::new("decisions").unwrap()), &wiki).unwrap();
        let indexed = Indexed::new(&store);
        for situation in [Situation::Debugging, Situation::PostIncident, Situation::Onboarding] {
            let plan = LoadPlan::new(situation).task(task.clone());
            for budget in [Budget::default(), Budget { top_k: 2, ..Budget::default() }] {
                let plain = spawn(&store, &a, &plan, &budget, Touch::No);
                let with = spawn(&indexed, &a, &plan, &budget, Touch::No);
                prop_assert_eq!(format!("{plain:?}"), format!("{with:?}"));
                // Only counting what is left out changes nothing else.
                let full = plain.unwrap();
                for s in [&store as &dyn MemoryStore, &indexed] {
                    let counts =
                        spawn_with(s, &a, &plan, &budget, Touch::No, LeftOutDetail::Counts)
                            .unwrap();
                    same_but_names(&full, &counts);
                }
            }
        }
    }

    /// Whatever the bytes, an index is read without a panic, and only a true one is used.
    #[test]
    fn any_bytes_as_an_index_are_safe(
        text in doc(),
        cut in any::<prop::sample::Index>(),
        flip in any::<prop::sample::Index>(),
        bit in 0u8..8,
        junk in prop::collection::vec(any::<u8>(), 0..300),
    ) {
        let index = build_index(Tier::Cold, "cold/data.md", &text).unwrap();
        prop_assert!(index_matches(&index, &text));
        let cut = cut.index(index.len());
        prop_assert!(!index_matches(&index[..cut], &text));
        let mut flipped = index.clone();
        let at = flip.index(flipped.len());
        flipped[at] ^= 1 << bit;
        prop_assert!(!index_matches(&flipped, &text));
        prop_assert!(!index_matches(&junk, &text));
        for bad in [&index[..cut], &flipped[..], &junk[..]] {
            let src = Source::with_index("cold/data.md", &text, Some(bad.to_vec())).unwrap();
            prop_assert!(!src.has_index());
        }
    }
}

fn squad(dir: &std::path::Path) -> (FsStore, String) {
    let store = FsStore::new(dir.join(".squad"));
    let a = agent("data");
    let mut cold = String::new();
    for i in 0..200 {
        cold.push_str(&format!(
            "### 2026-02-{:02}: Deploy note {i}\nThe staging deploy timed out after {i} s; \
             BlobStorageClient retries. Café — naïve fix.\n\n",
            1 + i % 28
        ));
    }
    store
        .write(&DocRef::Hot(a.clone()), "Current task: deploy\n")
        .unwrap();
    store.write(&DocRef::Cold(a), &cold).unwrap();
    store
        .write(
            &DocRef::Wiki(TopicName::new("decisions").unwrap()),
            "### 2026-01-05: Keep RS256\nAuth keys stay RS256.\n",
        )
        .unwrap();
    (store, cold)
}

fn spawn_text(store: &dyn MemoryStore) -> String {
    let plan = LoadPlan::new(Situation::PostIncident).task("why does the staging deploy time out");
    let r = spawn(store, &agent("data"), &plan, &Budget::default(), Touch::No).unwrap();
    format!("{r:?}")
}

/// The documents of `squad` in a store that keeps no indexes: the reference a spawn's output
/// is compared with.
fn without_indexes(store: &FsStore) -> InMemoryStore {
    let plain = InMemoryStore::new();
    for d in [
        DocRef::Hot(agent("data")),
        DocRef::Cold(agent("data")),
        DocRef::Wiki(TopicName::new("decisions").unwrap()),
    ] {
        plain.write(&d, &store.read(&d).unwrap().unwrap()).unwrap();
    }
    plain
}

/// What an index file is replaced with, by name.
fn bad_indexes(good: &[u8], other: &[u8]) -> Vec<(&'static str, Vec<u8>)> {
    let mut flipped = good.to_vec();
    let mid = flipped.len() / 2;
    flipped[mid] ^= 0x55;
    let mut foreign = good.to_vec();
    // The format version byte follows the six bytes of the magic.
    foreign[6] = 99;
    vec![
        ("empty", Vec::new()),
        ("truncated to 10 bytes", good[..10].to_vec()),
        ("truncated by one byte", good[..good.len() - 1].to_vec()),
        ("one byte flipped", flipped),
        ("another format version", foreign),
        ("the index of another text", other.to_vec()),
        (
            "random bytes",
            (0..5000u32).map(|i| (i * 7919 % 251) as u8).collect(),
        ),
        ("not UTF-8 at all", vec![0xff; 64]),
    ]
}

#[test]
fn writes_keep_an_index_and_a_bad_one_is_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let (store, cold) = squad(dir.path());
    let idx = dir.path().join(".squad/memory/.index/cold/data.idx");
    let good = std::fs::read(&idx).unwrap();
    assert!(index_matches(&good, &cold));
    assert!(
        dir.path()
            .join(".squad/memory/.index/wiki/decisions.idx")
            .is_file()
    );
    assert!(!dir.path().join(".squad/memory/.index/hot").exists());
    let with_index = spawn_text(&store);
    // The reference: the same documents in a store without indexes.
    let plain = without_indexes(&store);
    assert_eq!(with_index, spawn_text(&plain));
    let other = build_index(Tier::Cold, "cold/data.md", "### 2026-01-01: Other\nText.\n").unwrap();
    for (what, bytes) in bad_indexes(&good, &other) {
        std::fs::write(&idx, &bytes).unwrap();
        assert!(!index_matches(&bytes, &cold), "{what}");
        assert_eq!(spawn_text(&store), with_index, "{what}");
    }
    // A directory, and a symlink to a good index (never followed), in its place.
    std::fs::remove_file(&idx).unwrap();
    std::fs::create_dir(&idx).unwrap();
    assert_eq!(spawn_text(&store), with_index, "a directory");
    std::fs::remove_dir(&idx).unwrap();
    #[cfg(unix)]
    {
        let elsewhere = dir.path().join("good.idx");
        std::fs::write(&elsewhere, &good).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &idx).unwrap();
        assert_eq!(spawn_text(&store), with_index, "a symlink");
        std::fs::remove_file(&idx).unwrap();
    }
    // Missing: a read-only spawn does not write it back.
    assert_eq!(spawn_text(&store), with_index, "missing");
    assert!(!idx.exists(), "a read-only spawn wrote an index");
    // `reindex` (`squad memory index`) writes it again.
    let lock = store.lock().unwrap();
    assert_eq!(store.reindex().unwrap().indexed, 2);
    drop(lock);
    assert_eq!(std::fs::read(&idx).unwrap(), good);
}

#[test]
fn a_hand_edited_document_makes_its_index_stale_not_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let (store, cold) = squad(dir.path());
    assert!(store.stale_indexes().unwrap().is_empty());
    let edited = cold.replace("BlobStorageClient", "QueueClient");
    std::fs::write(dir.path().join(".squad/memory/cold/data.md"), &edited).unwrap();
    assert_eq!(
        store.stale_indexes().unwrap(),
        [DocRef::Cold(agent("data"))]
    );
    let plain = without_indexes(&store);
    assert_eq!(spawn_text(&store), spawn_text(&plain));
    // The index directory is not memory: nothing listed, nothing to validate.
    assert_eq!(store.list(Tier::Cold).unwrap(), ["data"]);
    assert!(validate(&store, &Budget::default()).unwrap().is_empty());
}

/// A symlink in place of an index (here to a file outside the state directory) is never
/// written through nor replaced: `reindex` names it as not written, counts only the indexes it
/// wrote, and leaves the link and its target as they were.
#[cfg(unix)]
#[test]
fn reindex_never_writes_through_a_symlinked_index_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = squad(dir.path());
    let idx = dir.path().join(".squad/memory/.index/cold/data.idx");
    let outside = dir.path().join("outside.txt");
    std::fs::write(&outside, "not squad's\n").unwrap();
    std::fs::remove_file(&idx).unwrap();
    std::os::unix::fs::symlink(&outside, &idx).unwrap();
    let lock = store.lock().unwrap();
    let done = store.reindex().unwrap();
    drop(lock);
    assert_eq!(done.indexed, 1, "{done:?}");
    assert_eq!(done.failed.len(), 1, "{done:?}");
    assert_eq!(done.failed[0].file, ".index/cold/data.idx");
    assert_eq!(
        FsStore::index_path(&DocRef::Cold(agent("data"))),
        done.failed[0].file
    );
    assert!(done.failed[0].is_error());
    assert!(
        done.failed[0].message.contains("symbolic link"),
        "{}",
        done.failed[0].message
    );
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "not squad's\n");
    assert!(idx.symlink_metadata().unwrap().file_type().is_symlink());
    assert_eq!(std::fs::read_link(&idx).unwrap(), outside);
    // The wiki's index was written all the same; the cold one is reported stale.
    assert!(
        dir.path()
            .join(".squad/memory/.index/wiki/decisions.idx")
            .is_file()
    );
    assert_eq!(
        store.stale_indexes().unwrap(),
        [DocRef::Cold(agent("data"))]
    );
}

/// A [`DocReader`] that counts the bytes read through it, and shows the inner reader's stamp
/// or none.
#[derive(Debug)]
struct CountingReader {
    inner: Box<dyn DocReader>,
    stamped: bool,
    read: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl DocReader for CountingReader {
    fn len(&self) -> u64 {
        self.inner.len()
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> squad_memory::Result<()> {
        self.read
            .fetch_add(buf.len() as u64, std::sync::atomic::Ordering::Relaxed);
        self.inner.read_at(offset, buf)
    }
    fn stamp(&self) -> Option<squad_memory::DocStamp> {
        if self.stamped {
            self.inner.stamp()
        } else {
            None
        }
    }
}

/// A store that counts how its documents are read: whole ([`MemoryStore::read`]) or in parts
/// ([`MemoryStore::open`], through a [`CountingReader`] that counts the bytes, and shows the
/// documents' stamps when `stamped`).
#[derive(Debug)]
struct Counting<'s> {
    store: &'s FsStore,
    stamped: bool,
    whole: std::sync::atomic::AtomicUsize,
    parts: std::sync::atomic::AtomicUsize,
    read: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl<'s> Counting<'s> {
    fn new(store: &'s FsStore, stamped: bool) -> Self {
        Self {
            store,
            stamped,
            whole: 0.into(),
            parts: 0.into(),
            read: Default::default(),
        }
    }
}

impl MemoryStore for Counting<'_> {
    fn read(&self, doc: &DocRef) -> squad_memory::Result<Option<String>> {
        self.whole
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.store.read(doc)
    }
    fn write(&self, doc: &DocRef, text: &str) -> squad_memory::Result<()> {
        self.store.write(doc, text)
    }
    fn list(&self, tier: Tier) -> squad_memory::Result<Vec<String>> {
        self.store.list(tier)
    }
    fn lock(&self) -> squad_memory::Result<squad_memory::StoreLock> {
        self.store.lock()
    }
    fn read_index(&self, doc: &DocRef) -> squad_memory::Result<Option<Vec<u8>>> {
        self.store.read_index(doc)
    }
    fn open(&self, doc: &DocRef) -> squad_memory::Result<Option<Box<dyn DocReader>>> {
        self.parts
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(self.store.open(doc)?.map(|inner| {
            Box::new(CountingReader {
                inner,
                stamped: self.stamped,
                read: self.read.clone(),
            }) as Box<dyn DocReader>
        }))
    }
}

/// With indexes that lay out the documents, a spawn reads cold and the wiki in parts (hot
/// whole), with the same output; with a stale index it reads the document whole.
#[test]
fn a_laid_out_document_is_read_in_parts_with_the_same_output() {
    use std::sync::atomic::Ordering::Relaxed;
    let dir = tempfile::tempdir().unwrap();
    let (store, cold) = squad(dir.path());
    let plain = without_indexes(&store);
    let counting = Counting::new(&store, true);
    assert_eq!(spawn_text(&counting), spawn_text(&plain));
    // Hot, and the archive (missing: it has no index), are read whole.
    assert_eq!(
        (counting.whole.load(Relaxed), counting.parts.load(Relaxed)),
        (2, 2)
    );
    // Edited by hand without changing its length: the index is stale, the document is read
    // whole, the output is the new text's.
    let edited = cold.replacen("BlobStorageClient", "QueueStoreClient!", 1);
    assert_eq!(edited.len(), cold.len());
    std::fs::write(dir.path().join(".squad/memory/cold/data.md"), &edited).unwrap();
    counting.whole.store(0, Relaxed);
    let plain = without_indexes(&store);
    assert_eq!(spawn_text(&counting), spawn_text(&plain));
    assert_eq!(counting.whole.load(Relaxed), 3);
    assert_eq!(
        store.stale_indexes().unwrap(),
        [DocRef::Cold(agent("data"))]
    );
}

/// On Linux an index names its document's stamp, and a spawn that finds it on the document
/// reads only the sections it loads; a reader without stamps reads the document through once
/// to check its hash. The output is the same either way.
#[cfg(target_os = "linux")]
#[test]
fn a_stamped_index_spares_reading_the_whole_document() {
    use std::sync::atomic::Ordering::Relaxed;
    let dir = tempfile::tempdir().unwrap();
    let (store, cold) = squad(dir.path());
    let reference = spawn_text(&without_indexes(&store));
    let doc = DocRef::Cold(agent("data"));
    assert!(store.open(&doc).unwrap().unwrap().stamp().is_some());
    let mut read = Vec::new();
    for stamped in [true, false] {
        let counting = Counting::new(&store, stamped);
        assert_eq!(spawn_text(&counting), reference, "stamped: {stamped}");
        read.push(counting.read.load(Relaxed));
    }
    let total = (cold.len() + "### 2026-01-05: Keep RS256\nAuth keys stay RS256.\n".len()) as u64;
    assert!(read[0] < total / 4, "{read:?} of {total}");
    assert!(read[1] >= total, "{read:?} of {total}");
}

/// A document changed in place right after it was written, at the same length (so in the
/// same tick of the file system's clock, most of the time), is never taken for the one its
/// index was built from: the writer records a stamp only once the clock has moved on, so the
/// change gives the document another stamp. Tried 25 times, each on another entry.
#[cfg(unix)]
#[test]
fn a_change_in_the_same_clock_tick_is_not_missed() {
    use std::os::unix::fs::FileExt;
    let dir = tempfile::tempdir().unwrap();
    let (store, cold) = squad(dir.path());
    let path = dir.path().join(".squad/memory/cold/data.md");
    let doc = DocRef::Cold(agent("data"));
    for round in 0..25usize {
        store.write(&doc, &cold).unwrap();
        // One entry's "BlobStorageClient" becomes "QueueStoreClient!", in place: a name the
        // index has never seen, which the task asks for.
        let at = cold
            .match_indices("BlobStorageClient")
            .nth(round * 7)
            .map(|(i, _)| i)
            .unwrap();
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.write_all_at(b"QueueStoreClient!", at as u64).unwrap();
        drop(f);
        let plan = LoadPlan::new(Situation::PostIncident).task("QueueStoreClient");
        let fresh = spawn(&store, &agent("data"), &plan, &Budget::default(), Touch::No).unwrap();
        let plain = without_indexes(&store);
        let expected = spawn(&plain, &agent("data"), &plan, &Budget::default(), Touch::No).unwrap();
        assert_eq!(fresh.prompt, expected.prompt, "round {round}");
        assert!(fresh.prompt.contains("QueueStoreClient!"), "round {round}");
    }
}

/// A symlinked document is refused, never read through, with a layout index or without: the
/// spawn skips it and names it, as it does without indexes.
#[cfg(unix)]
#[test]
fn a_symlinked_document_with_an_index_is_still_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (store, cold) = squad(dir.path());
    let path = dir.path().join(".squad/memory/cold/data.md");
    let outside = dir.path().join("outside.md");
    std::fs::write(&outside, &cold).unwrap();
    std::fs::remove_file(&path).unwrap();
    std::os::unix::fs::symlink(&outside, &path).unwrap();
    let plan = LoadPlan::new(Situation::PostIncident).task("why does the staging deploy time out");
    let r = spawn(&store, &agent("data"), &plan, &Budget::default(), Touch::No).unwrap();
    assert!(!r.prompt.contains("Deploy note"), "{}", r.prompt);
    assert!(
        r.manifest.skipped.iter().any(|p| p.file == "cold/data.md"),
        "{:?}",
        r.manifest.skipped
    );
}
