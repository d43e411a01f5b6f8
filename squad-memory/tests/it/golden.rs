//! The golden harness: every corpus and fixture the crate has, run through parse, import, the
//! Scribe (twice), spawn/render (every situation, with and without tasks, at two budgets), and
//! every output dumped as text. The SHA-256 of the dump is pinned in `golden.sha256`, so a
//! change to what the crate writes, reports or renders fails this test.
//!
//! With `SQUAD_MEMORY_GOLDEN_DIR=<dir>` the dump is also written there, one file per output,
//! to `diff -r` two versions of the code. After a change meant to alter the output, run with
//! `SQUAD_MEMORY_GOLDEN_BLESS=1` to print the new digest, and update `golden.sha256`.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use sha2::{Digest, Sha256};
use squad_memory::conformance::fixture::{Fixture, cold_with_entries};
use squad_memory::conformance::realistic::{Corpus, cold_with_sections};
use squad_memory::squad_model::{AgentName, Timestamp};
use squad_memory::{
    Budget, DocRef, ExtractiveSummarizer, ImportOptions, ImportSource, ImportTarget, InMemoryStore,
    LoadPlan, MemoryDoc, MemoryStore, ParseOptions, Rendered, Scribe, ScribeConfig, Situation,
    StoreLock, Tier, TopicName, Touch, build_index, import_with_progress, spawn, spawn_with,
};

/// The outputs, by name (a relative path in the dump directory).
#[derive(Default)]
struct Dump(BTreeMap<String, String>);

impl Dump {
    fn put(&mut self, name: impl Into<String>, text: impl Into<String>) {
        let name = name.into();
        assert!(self.0.insert(name.clone(), text.into()).is_none(), "{name}");
    }

    fn store(&mut self, prefix: &str, store: &InMemoryStore) {
        for tier in [Tier::Hot, Tier::Cold, Tier::Archive, Tier::Wiki] {
            for name in store.list(tier).unwrap() {
                let d = match tier {
                    Tier::Hot => DocRef::Hot(name.parse().unwrap()),
                    Tier::Cold => DocRef::Cold(name.parse().unwrap()),
                    Tier::Archive => DocRef::Archive(name.parse().unwrap()),
                    Tier::Wiki => DocRef::Wiki(TopicName::new(&name).unwrap()),
                };
                let text = store.read(&d).unwrap().unwrap_or_default();
                self.put(format!("{prefix}/store/{}", d.path()), text);
            }
        }
    }

    fn digest(&self) -> String {
        let mut h = Sha256::new();
        for (k, v) in &self.0 {
            h.update(k.as_bytes());
            h.update([0]);
            h.update(v.len().to_le_bytes());
            h.update(v.as_bytes());
        }
        hex::encode(h.finalize())
    }

    fn write_to(&self, dir: &Path) {
        for (k, v) in &self.0 {
            let p = dir.join(k);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, v).unwrap();
        }
    }
}

/// A document's text and the index built from it.
type Built = (String, Option<Vec<u8>>);

/// A store over `store` that has the search index of every ranked document (built when first
/// asked for, as `FsStore` keeps it on disk), so a spawn scores from the indexes.
#[derive(Debug)]
pub(crate) struct Indexed<'s> {
    store: &'s InMemoryStore,
    built: Mutex<HashMap<DocRef, Built>>,
    /// How many indexes were handed out.
    given: AtomicUsize,
}

impl<'s> Indexed<'s> {
    pub(crate) fn new(store: &'s InMemoryStore) -> Self {
        Self {
            store,
            built: Mutex::default(),
            given: AtomicUsize::new(0),
        }
    }
}

impl MemoryStore for Indexed<'_> {
    fn read(&self, doc: &DocRef) -> squad_memory::Result<Option<String>> {
        self.store.read(doc)
    }
    fn write(&self, _: &DocRef, _: &str) -> squad_memory::Result<()> {
        unreachable!("a read-only spawn writes nothing")
    }
    fn list(&self, tier: Tier) -> squad_memory::Result<Vec<String>> {
        self.store.list(tier)
    }
    fn lock(&self) -> squad_memory::Result<StoreLock> {
        self.store.lock()
    }
    fn read_index(&self, doc: &DocRef) -> squad_memory::Result<Option<Vec<u8>>> {
        let Some(text) = self.store.read(doc)? else {
            return Ok(None);
        };
        let mut built = self.built.lock().unwrap();
        let fresh = built.get(doc).is_some_and(|(t, _)| *t == text);
        if !fresh {
            let index = build_index(doc.tier(), &doc.path(), &text);
            built.insert(doc.clone(), (text, index));
        }
        let index = built.get(doc).and_then(|(_, i)| i.clone());
        if index.is_some() {
            self.given.fetch_add(1, Ordering::Relaxed);
        }
        Ok(index)
    }
}

/// `spawn`, run on `store` and on it with search indexes: the two outputs must be the same,
/// byte for byte.
fn spawn_both(
    store: &InMemoryStore,
    indexed: &Indexed<'_>,
    agent: &AgentName,
    plan: &LoadPlan,
    budget: &Budget,
) -> squad_memory::Result<Rendered> {
    let plain = spawn(store, agent, plan, budget, Touch::No);
    let with_index = spawn(indexed, agent, plan, budget, Touch::No);
    assert_eq!(
        format!("{plain:?}"),
        format!("{with_index:?}"),
        "{agent} {plan:?}: the search index changed the output"
    );
    if let Ok(full) = &plain {
        let counts = spawn_with(
            indexed,
            agent,
            plan,
            budget,
            Touch::No,
            squad_memory::LeftOutDetail::Counts,
        )?;
        same_but_names(full, &counts);
    }
    plain
}

/// `counts` is `full` with the names of what is left out (file, item, title) empty.
#[track_caller]
pub(crate) fn same_but_names(full: &Rendered, counts: &Rendered) {
    assert_eq!(counts.prompt, full.prompt);
    let strip = |m: &squad_memory::Manifest| {
        let mut m = m.clone();
        for l in &mut m.left_out {
            l.file.clear();
            l.item.clear();
            l.title.clear();
        }
        m
    };
    assert_eq!(counts.manifest, strip(&full.manifest));
}

fn at(s: &str) -> Timestamp {
    s.parse().unwrap()
}

/// A squad's files: agents' histories, decisions, and task texts to spawn with.
struct Squad {
    name: String,
    agents: Vec<(AgentName, String)>,
    decisions: String,
    tasks: Vec<String>,
}

impl Squad {
    fn from_corpus(name: &str, c: Corpus, max_tasks: usize) -> Self {
        Self {
            name: name.into(),
            agents: c.agents,
            decisions: c.decisions,
            tasks: c
                .questions
                .into_iter()
                .map(|q| q.question)
                .take(max_tasks)
                .collect(),
        }
    }
}

fn squads() -> Vec<Squad> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../benches/memory");
    let mut out = Vec::new();
    for name in ["harbor", "lantern", "quarry"] {
        let c = Corpus::from_dir(&root.join(name)).unwrap();
        out.push(Squad::from_corpus(name, c, 6));
    }
    out.push(Squad::from_corpus(
        "generated",
        Corpus::generated().unwrap(),
        8,
    ));
    out.push(Squad::from_corpus(
        "held-out",
        Corpus::generated_held_out().unwrap(),
        4,
    ));
    out.push(Squad {
        name: "sections".into(),
        agents: vec![
            ("bench".parse().unwrap(), cold_with_sections(120)),
            ("ent".parse().unwrap(), cold_with_entries(150).unwrap()),
            ("edge".parse().unwrap(), EDGE.into()),
        ],
        decisions: EDGE.into(),
        tasks: vec![
            "flaky staging deploy timeout".into(),
            "resolver cache TTL".into(),
        ],
    });
    out
}

/// Hand-written shapes: a long, chunked `###` section followed by a `##` section, fences,
/// CRLF, undated headings, fields, duplicates.
const EDGE: &str = "# EDGE\r\n\r\nCurrent task: check the edges\nBlockers: none\n\n## Learnings\n\n\
### 2026-01-02: A long section\n**id:** edge-long\n\
Line one of a long section about the retry budget and the circuit breaker.\n\
#### Inner heading\n\
More text about the retry budget, the circuit breaker and the backoff jitter.\n\
```\n## not a heading\n### nor this\n```\n\
Lots of words about the deploy pipeline and the canary analysis and the rollback.\n\
Lots of words about the deploy pipeline and the canary analysis and the rollback again.\n\
Lots of words about the deploy pipeline and the canary analysis and the rollback thrice.\n\n\
Paragraph two on the retry budget, with a table:\n| a | b |\n|---|---|\n| 1 | 2 |\n---\n\n\
## Second group after a chunked section\n\nFree text under the second group about retries.\n\n\
### Undated entry in the second group\nBody of the undated entry.\n\n\
### Undated entry in the second group\nBody of the undated entry.\n\n\
### 2026-02 decision: use the canary\nsupersedes: edge-long\n\n\
## 2026-03-04 dated group heading\nText.\n\r\n# Trailing title\rbare CR line\n";

fn budgets() -> [(&'static str, Budget); 2] {
    let small = Budget {
        hot: 600,
        hot_plus_cold: 3000,
        wiki_doc: 2500,
        top_k: 4,
        cutoff_percent: 30,
        cold_file: 4000,
    };
    [("default", Budget::default()), ("small", small)]
}

fn parse_all(dump: &mut Dump, squad: &Squad) {
    let files = squad
        .agents
        .iter()
        .map(|(a, t)| (format!("{}.md", a.as_str()), t))
        .chain([("decisions.md".to_owned(), &squad.decisions)]);
    for (name, text) in files {
        let strict = MemoryDoc::parse(&name, text);
        let lenient = MemoryDoc::parse_with(&name, text, ParseOptions { fields: false });
        dump.put(
            format!("{}/parse/{name}.fields.txt", squad.name),
            format!("{strict:#?}"),
        );
        dump.put(
            format!("{}/parse/{name}.plain.txt", squad.name),
            format!("{lenient:#?}"),
        );
        if let Ok(doc) = strict {
            dump.put(
                format!("{}/parse/{name}.stable.md", squad.name),
                doc.to_stable_text(&name),
            );
        }
    }
}

fn import_all(
    dump: &mut Dump,
    squad: &Squad,
    store: &InMemoryStore,
    prefix: &str,
    budget: Budget,
    dry_run: bool,
) {
    let mut opts = ImportOptions::new(at("2026-11-30T12:00:00.123456Z"));
    opts.budget = budget;
    opts.dry_run = dry_run;
    let mut out = String::new();
    let targets = squad
        .agents
        .iter()
        .map(|(a, t)| (ImportTarget::Agent(a.clone()), "history.md", t))
        .chain([(
            ImportTarget::Wiki(TopicName::new("decisions").unwrap()),
            "decisions.md",
            &squad.decisions,
        )]);
    for (target, name, text) in targets {
        let src = ImportSource {
            name: name.into(),
            text: text.clone(),
        };
        let mut steps = Vec::new();
        let r = import_with_progress(store, &target, &[src], &opts, &mut |p| steps.push(p));
        writeln!(out, "{target:?}\n{r:#?}\n{steps:?}\n").unwrap();
    }
    dump.put(format!("{prefix}/import.txt"), out);
}

fn scribe_all(dump: &mut Dump, squad: &Squad, store: &InMemoryStore, prefix: &str, budget: Budget) {
    let config = ScribeConfig {
        ttl_days: 30,
        budget,
    };
    let summarizer = ExtractiveSummarizer;
    let scribe = Scribe::new(store, &summarizer, config);
    let mut out = String::new();
    for (when, now) in [
        ("first", "2026-12-01T08:00:00.5Z"),
        ("second", "2027-02-15T08:00:00Z"),
    ] {
        for (a, _) in &squad.agents {
            let r = scribe.run(a, at(now));
            writeln!(out, "{when} {a}\n{r:#?}\n").unwrap();
        }
    }
    dump.put(format!("{prefix}/scribe.txt"), out);
}

fn spawn_all(dump: &mut Dump, squad: &Squad, store: &InMemoryStore, prefix: &str) {
    let indexed = Indexed::new(store);
    for (bname, budget) in budgets() {
        for (a, _) in &squad.agents {
            let mut out = String::new();
            let tasks = std::iter::once(None).chain(squad.tasks.iter().map(Some));
            for task in tasks {
                for situation in Situation::ALL {
                    let mut plan = LoadPlan::new(situation);
                    if let Some(t) = task {
                        plan = plan.task(t.clone());
                    }
                    let r = spawn_both(store, &indexed, a, &plan, &budget);
                    writeln!(out, "== {situation:?} {task:?}\n{r:#?}\n").unwrap();
                }
            }
            let topic = LoadPlan::new(Situation::Onboarding)
                .include_cold()
                .include_wiki(TopicName::new("decisions").unwrap());
            let r = spawn_both(store, &indexed, a, &topic, &budget);
            writeln!(out, "== topic decisions\n{r:#?}\n").unwrap();
            dump.put(format!("{prefix}/spawn/{bname}/{a}.txt"), out);
        }
    }
    assert!(
        indexed.given.load(Ordering::Relaxed) > 0,
        "{prefix}: no spawn read an index"
    );
}

fn run_squad(dump: &mut Dump, squad: &Squad) {
    parse_all(dump, squad);
    for (bname, budget) in budgets() {
        let prefix = format!("{}/{bname}", squad.name);
        let store = InMemoryStore::new();
        import_all(dump, squad, &store, &format!("{prefix}/dry"), budget, true);
        import_all(
            dump,
            squad,
            &store,
            &format!("{prefix}/first"),
            budget,
            false,
        );
        import_all(
            dump,
            squad,
            &store,
            &format!("{prefix}/again"),
            budget,
            false,
        );
        dump.store(&format!("{prefix}/imported"), &store);
        spawn_all(dump, squad, &store, &format!("{prefix}/imported"));
        scribe_all(dump, squad, &store, &prefix, budget);
        dump.store(&format!("{prefix}/scribed"), &store);
        spawn_all(dump, squad, &store, &format!("{prefix}/scribed"));
    }
}

fn run_fixture(dump: &mut Dump) {
    let f = Fixture::upstream_like().unwrap();
    for (bname, budget) in budgets() {
        let prefix = format!("fixture/{bname}");
        let store = InMemoryStore::new();
        f.install(&store).unwrap();
        for (d, text) in &f.files {
            let doc = MemoryDoc::parse(&d.path(), text);
            dump.put(
                format!("{prefix}/parse/{}.txt", d.path()),
                format!("{doc:#?}"),
            );
        }
        let mut out = String::new();
        let indexed = Indexed::new(&store);
        for case in &f.cases {
            let r = spawn_both(&store, &indexed, &f.agent, &case.plan, &budget);
            writeln!(out, "== {:?}\n{r:#?}\n", case.plan).unwrap();
        }
        dump.put(format!("{prefix}/cases.txt"), out);
        let summarizer = ExtractiveSummarizer;
        let config = ScribeConfig {
            ttl_days: 30,
            budget,
        };
        let scribe = Scribe::new(&store, &summarizer, config);
        let mut out = String::new();
        for now in [f.now, f.now.plus_seconds(90 * 86_400)] {
            writeln!(out, "{:#?}", scribe.run(&f.agent, now)).unwrap();
        }
        dump.put(format!("{prefix}/scribe.txt"), out);
        dump.store(&prefix, &store);
        let mut out = String::new();
        let indexed = Indexed::new(&store);
        for case in &f.cases {
            let r = spawn_both(&store, &indexed, &f.agent, &case.plan, &budget);
            writeln!(out, "== {:?}\n{r:#?}\n", case.plan).unwrap();
        }
        dump.put(format!("{prefix}/cases-after.txt"), out);
    }
}

#[test]
fn every_output_matches_the_pinned_digest() {
    let mut dump = Dump::default();
    for squad in squads() {
        run_squad(&mut dump, &squad);
    }
    run_fixture(&mut dump);
    if let Some(dir) = std::env::var_os("SQUAD_MEMORY_GOLDEN_DIR") {
        dump.write_to(Path::new(&dir));
    }
    let digest = dump.digest();
    let pinned = include_str!("golden.sha256").trim();
    if std::env::var_os("SQUAD_MEMORY_GOLDEN_BLESS").is_some() {
        eprintln!("golden digest over {} outputs: {digest}", dump.0.len());
        return;
    }
    assert_eq!(
        digest,
        pinned,
        "the outputs of {} runs changed; set SQUAD_MEMORY_GOLDEN_DIR to dump them and diff",
        dump.0.len()
    );
}
