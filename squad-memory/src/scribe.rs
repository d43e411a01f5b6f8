//! The Scribe: end of session (hot to cold, verbatim), the rolling cold TTL (cold to the
//! archive), promotion of structured entries (cold to the wiki), duplicate merging and the file
//! caps, without ever losing an entry or a line of text.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fmt;

use sha2::{Digest, Sha256};
use squad_model::{AgentName, Timestamp};

use crate::entry::{
    Entry, Fence, FreeLine, Item, Kind, MemoryDoc, is_group_heading, normalize, unindent,
};
use crate::error::{Error, ErrorKind, Problem, Result, or_skip};
use crate::name::{MemoryId, TopicName};
use crate::render::Budget;
use crate::spawn::read_doc;
use crate::store::{DocRef, MemoryStore, Tier};

/// Adds summary entries for a hot document at the end of a session.
///
/// Pure and synchronous; an LLM-backed implementation is possible (block on your runtime inside
/// `summarize`), but the default [`ExtractiveSummarizer`] needs none.
///
/// # Contract
///
/// - The Scribe moves every hot entry and every line of hot free text to cold verbatim, whatever
///   the summarizer returns: a summary is **added**, it never replaces the text it summarises.
/// - Give the entries ids derived from their content (as [`ExtractiveSummarizer`] does with
///   `s-` ids), so that a re-run after a crash produces the same ids and the Scribe merges them
///   instead of duplicating them.
///
/// # Behavior
///
/// - [`summarize`](Summarizer::summarize): infallible and synchronous; an empty hot document
///   gives an empty list.
///
/// # Implementing
///
/// Deterministic output for the same input keeps Scribe re-runs idempotent. A body must not
/// hold lines the file format reads as structure ([`Entry::body_problems`]); such an entry makes
/// the run fail before anything is written.
pub trait Summarizer: Send + Sync + fmt::Debug {
    /// Summary entries for `hot`, dated `now`.
    fn summarize(&self, hot: &MemoryDoc, now: Timestamp) -> Vec<Entry>;
}

/// The default summarizer: extractive, no model. From the seed's hot template lines:
///
/// - `Current task: X` gives a `note` "Task: X";
/// - `Active decisions: a; b` gives one `decision` per item (structured, so it reaches the wiki
///   when it ages);
/// - `Blockers: X` gives a `blocker` unless X is `none`, `-` or `n/a`.
///
/// Titles are cut to 120 characters (on a character boundary). Ids are derived from kind and
/// text, so a re-run yields the same ids.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExtractiveSummarizer;

fn cut_chars(s: &str, max: usize) -> String {
    let s = s.trim();
    if s.chars().count() <= max {
        return s.to_owned();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

fn content_id(prefix: &str, parts: &[&str]) -> MemoryId {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p.as_bytes());
        h.update([0]);
    }
    let hex = hex::encode(h.finalize());
    MemoryId(format!("{prefix}{}", &hex[..12]))
}

fn session_entry(now: Timestamp, kind: Kind, title: &str, body: &str) -> Entry {
    let title = cut_chars(title, 120);
    let mut e = Entry::new(now, kind, &title).with_body(body);
    e.id = content_id("s-", &[kind.as_str(), &normalize(&title), &normalize(body)]);
    e
}

fn is_none(v: &str) -> bool {
    let v = v.trim().trim_end_matches('.').to_ascii_lowercase();
    v.is_empty() || v == "none" || v == "-" || v == "n/a"
}

impl Summarizer for ExtractiveSummarizer {
    fn summarize(&self, hot: &MemoryDoc, now: Timestamp) -> Vec<Entry> {
        let mut out = Vec::new();
        for l in hot.free_lines() {
            let text = l.text.trim().trim_start_matches(['-', '*', ' ']);
            let Some((key, value)) = text.split_once(':') else {
                continue;
            };
            let value = value.trim();
            match key.trim().to_ascii_lowercase().as_str() {
                "current task" if !is_none(value) => {
                    out.push(session_entry(
                        now,
                        Kind::Note,
                        &format!("Task: {value}"),
                        "",
                    ));
                }
                "active decisions" => {
                    for d in value.split(';').filter(|d| !is_none(d)) {
                        out.push(session_entry(now, Kind::Decision, d, ""));
                    }
                }
                "blockers" if !is_none(value) => {
                    out.push(session_entry(now, Kind::Blocker, value, ""));
                }
                _ => {}
            }
        }
        out
    }
}

/// Scribe settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScribeConfig {
    /// Rolling TTL of cold entries in days (default 30), counted from when the entry entered
    /// cold (`entered`; the heading's date for an entry without one) or its `last_loaded`,
    /// whichever is later. Strict: an entry exactly at the TTL stays.
    pub ttl_days: i64,
    /// The file caps the Scribe keeps its output within (`cold_file`, `wiki_doc`).
    pub budget: Budget,
}

impl Default for ScribeConfig {
    fn default() -> Self {
        Self {
            ttl_days: 30,
            budget: Budget::default(),
        }
    }
}

/// What one Scribe run did. Invariants (checked before anything is written):
/// `before == kept + moved + merged`, `after == before + created - merged - merged_created`,
/// every id is still somewhere, and every line of text is still somewhere.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct ScribeReport {
    /// Entries in the documents involved (hot, cold, archive, and every wiki document read)
    /// before the run.
    pub before: usize,
    /// Entries that stayed in their tier.
    pub kept: usize,
    /// Entries that changed tier, by `from->to` (`hot->cold`, `cold->archive`, `cold->wiki`, ...).
    pub moved: BTreeMap<String, usize>,
    /// Existing entries folded into an equal one (exact duplicates: same heading and body);
    /// their ids are kept in the survivor's `merged` field.
    pub merged: usize,
    /// New entries: hot free text moved verbatim into session entries, and summaries.
    pub created: usize,
    /// Of those, how many were folded into an existing equal entry (a re-run after a crash).
    pub merged_created: usize,
    /// Hot free lines moved to cold (verbatim, in session entries).
    pub summarized_lines: usize,
    /// Entries in the same documents after the run.
    pub after: usize,
    /// Distinct lines of text (headings, bodies, free text) before the run.
    pub text_lines_before: usize,
    /// Distinct lines of text after the run: every line before is among them.
    pub text_lines_after: usize,
    /// Bytes of those distinct lines before the run.
    pub text_bytes_before: usize,
    /// Bytes of those distinct lines after the run (at least `text_bytes_before`).
    pub text_bytes_after: usize,
    /// The documents written, in write order (destinations before sources).
    pub written: Vec<String>,
    /// What the run read leniently or skipped (renamed duplicate ids, a wiki document that could
    /// not be read and was left alone).
    pub warnings: Vec<Problem>,
}

impl ScribeReport {
    /// Total entries moved between tiers.
    pub fn moved_total(&self) -> usize {
        self.moved.values().sum()
    }
}

/// The memory coordinator. One at a time: [`Scribe::run`] holds the store lock.
///
/// ```
/// use squad_memory::{DocRef, ExtractiveSummarizer, InMemoryStore, MemoryStore, Scribe, ScribeConfig};
///
/// let store = InMemoryStore::new();
/// let data: squad_model::AgentName = "data".parse()?;
/// store.write(&DocRef::Hot(data.clone()), "Current task: fix login\nActive decisions: use RS256\n")?;
/// let summarizer = ExtractiveSummarizer;
/// let scribe = Scribe::new(&store, &summarizer, ScribeConfig::default());
/// let report = scribe.run(&data, "2026-11-30T12:00:00Z".parse()?)?;
/// assert_eq!(report.before, report.kept + report.moved_total() + report.merged);
/// let cold = store.read(&DocRef::Cold(data))?.unwrap();
/// assert!(cold.contains("Current task: fix login")); // the text itself, verbatim
/// assert!(cold.contains("decision: use RS256")); // and a summary entry
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Scribe<'a> {
    store: &'a dyn MemoryStore,
    summarizer: &'a dyn Summarizer,
    config: ScribeConfig,
}

/// Where an entry came from in this run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Origin {
    Hot,
    Created,
}

/// What happened to an entry added to a document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Absorbed {
    Added,
    Merged,
}

fn fold(x: &mut Entry, e: Entry, record_id: bool) {
    if record_id && x.id != e.id && !x.merged.contains(&e.id) {
        x.merged.push(e.id.clone());
    }
    for m in e.merged {
        if m != x.id && !x.merged.contains(&m) {
            x.merged.push(m);
        }
    }
    if x.superseded_by.is_none() {
        x.superseded_by = e.superseded_by;
    }
    x.last_loaded = x.last_loaded.max(e.last_loaded);
    x.entered = match (x.entered, e.entered) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    if x.topic.is_none() {
        x.topic = e.topic;
    }
}

fn same_session(a: &Entry, b: &Entry) -> bool {
    a.id == b.id && a.id.as_str().starts_with("s-") && normalize(&a.body) == normalize(&b.body)
}

/// Adds `e` to `doc`, or folds it into an equal entry there (same id and content, or same
/// content). An entry whose id is taken by a different entry is renamed (reported).
fn absorb(
    doc: &mut MemoryDoc,
    file: &str,
    mut e: Entry,
    used: &mut HashSet<MemoryId>,
    warnings: &mut Vec<Problem>,
) -> Absorbed {
    let key = e.content_key();
    if let Some(x) = doc
        .entries_mut()
        .find(|x| x.id == e.id && (x.content_key() == key || same_session(x, &e)))
    {
        fold(x, e, false);
        return Absorbed::Merged;
    }
    if let Some(x) = doc
        .entries_mut()
        .find(|x| x.content_key() == key && x.superseded_by == e.superseded_by)
    {
        fold(x, e, true);
        return Absorbed::Merged;
    }
    if doc.entries().any(|x| x.id == e.id) {
        let new = e.id.fresh(used);
        warnings.push(Problem::warning(
            file,
            0,
            format!(
                "entry id {} is taken by a different entry; the entry moved here is renamed {new}",
                e.id
            ),
        ));
        e.id = new;
    }
    used.insert(e.id.clone());
    doc.insert_entry(e);
    Absorbed::Added
}

/// Folds exact duplicates inside one document (git's `merge=union` leaves them); returns how
/// many were folded.
fn dedupe(doc: &mut MemoryDoc) -> usize {
    let mut merged = 0;
    let mut i = 0;
    while i < doc.items.len() {
        let Item::Entry(e) = &doc.items[i] else {
            i += 1;
            continue;
        };
        let key = e.content_key();
        let (id, sup) = (e.id.clone(), e.superseded_by.clone());
        let earlier = doc.items[..i].iter().position(|it| {
            matches!(it, Item::Entry(x) if (x.id == id || x.superseded_by == sup) && x.content_key() == key)
        });
        match earlier {
            Some(j) => {
                let Item::Entry(e) = doc.items.remove(i) else {
                    continue;
                };
                if let Item::Entry(x) = &mut doc.items[j] {
                    fold(x, e, true);
                }
                merged += 1;
            }
            None => i += 1,
        }
    }
    merged
}

fn ids_of(doc: &MemoryDoc) -> HashSet<MemoryId> {
    doc.entries()
        .flat_map(|e| std::iter::once(e.id.clone()).chain(e.merged.iter().cloned()))
        .collect()
}

/// A document loaded for the run, with the text it had (to skip unchanged writes).
#[derive(Debug)]
struct Loaded {
    doc: MemoryDoc,
    old: Option<String>,
    changed: bool,
}

impl<'a> Scribe<'a> {
    /// A Scribe over `store` using `summarizer`.
    pub fn new(
        store: &'a dyn MemoryStore,
        summarizer: &'a dyn Summarizer,
        config: ScribeConfig,
    ) -> Self {
        Self {
            store,
            summarizer,
            config,
        }
    }

    /// Reads and parses a document; `Err` with its problems when it cannot be read as one.
    fn load(&self, doc: &DocRef) -> Result<Loaded> {
        let (old, doc) = read_doc(self.store, doc)?;
        Ok(Loaded {
            doc,
            old,
            changed: false,
        })
    }

    /// Writes `doc`, reads it back and checks that every id in `must` is there.
    fn write_verified(
        &self,
        doc_ref: &DocRef,
        text: &str,
        old: Option<&str>,
        must: &HashSet<MemoryId>,
        written: &mut Vec<String>,
    ) -> Result<()> {
        if old == Some(text) || (old.is_none() && text.trim().is_empty()) {
            return Ok(());
        }
        self.store.write(doc_ref, text)?;
        let back = self.store.read(doc_ref)?.unwrap_or_default();
        let back = MemoryDoc::parse(&doc_ref.path(), &back)?;
        let have = ids_of(&back);
        if let Some(missing) = must.iter().find(|id| !have.contains(*id)) {
            return Err(Error::new(
                ErrorKind::Backend,
                "scribe.verify",
                format!(
                    "{} was written but entry {missing} is not in it on read-back; the source was \
                     not trimmed",
                    doc_ref.path()
                ),
            ));
        }
        written.push(doc_ref.path());
        Ok(())
    }

    /// Runs the end-of-session pass for `agent` at time `now`:
    ///
    /// 1. hot moves to cold verbatim: its entries as they are, its free text as session entries
    ///    (`### <now>: note: Session notes`, one per `#`/`##` section of it), both with
    ///    `entered: now`; the [`Summarizer`]'s summaries are added next to them;
    /// 2. exact duplicates are merged (in every document read), ids taken by different entries
    ///    are renamed;
    /// 3. cold entries whose rolling TTL has passed move out: structured, not superseded ones
    ///    (decision, convention, contract) to `wiki/<topic>.md` (the entry's `topic`, else
    ///    [`Kind::default_topic`]), all others to `archive/<agent>.md`; an undated entry that
    ///    never entered cold through the Scribe or an import gets `entered: now` and stays;
    /// 4. cold is kept within its cap by moving its oldest entries to the archive, and a wiki
    ///    document within its cap by continuing in `<topic>-2`, `<topic>-3`, ...;
    /// 5. writes go destinations first: each wiki document and the archive are written, synced
    ///    and read back before cold is rewritten, and cold before hot is emptied. A crash at any
    ///    point loses nothing, and the next run merges the copies instead of duplicating.
    ///
    /// Nothing is deleted. Before the first write, the run checks that every entry id and every
    /// line of text it read is in what it is about to write.
    ///
    /// A wiki document that cannot be read (malformed, a symlink) is left alone and reported in
    /// [`ScribeReport::warnings`]; entries due for it stay in cold.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Locked`] when another Scribe runs; [`ErrorKind::InvalidInput`] with
    /// `file:line` problems when the agent's hot, cold or archive file cannot be read as a
    /// memory file (nothing written); [`ErrorKind::Backend`] on storage failure, a failed
    /// read-back, or a failed conservation check (nothing written).
    pub fn run(&self, agent: &AgentName, now: Timestamp) -> Result<ScribeReport> {
        // Files hold times to the millisecond; stamping more would make a re-read differ.
        let now = Timestamp::from_unix_millis(now.unix_millis())?;
        let _span = tracing::info_span!("memory.scribe", agent = agent.as_str()).entered();
        let _lock = self.store.lock()?;
        let refs = Refs::of(agent);
        let mut book = Book::default();
        let mut tiers = self.load_tiers(&refs, &mut book.report.warnings)?;
        let conservation = Conservation::before(&tiers, &mut book.report);
        book.used = conservation.ids.clone();
        tiers.dedupe(&mut book.report);
        self.hot_to_cold(&mut tiers, &refs, now, &mut book)?;
        let due = Departures::due(&mut tiers, now, self.config.ttl_days)?;
        self.to_wiki(&mut tiers, due.to_wiki, &refs, &mut book);
        let mut to_archive = due.to_archive;
        to_archive.extend(cap_cold(&mut tiers.cold.doc, self.config.budget.cold_file));
        archive_entries(&mut tiers.archive, to_archive, &refs, &mut book);
        let cold_text = self.cold_text(&tiers.cold.doc, &refs, &mut book);
        let plan = WritePlan::new(&tiers, &refs, cold_text);
        conservation.check(&plan, &tiers.hot.doc, &mut book.report)?;
        self.write(&plan, &refs, &mut book)?;
        log_report(&book.report);
        Ok(book.report)
    }

    /// Stage: the agent's hot, cold and archive, and every wiki document that can be read (the
    /// others are named in `warnings`, with the lenient readings of all of them).
    fn load_tiers(&self, refs: &Refs, warnings: &mut Vec<Problem>) -> Result<Tiers> {
        let hot = self.load(&refs.hot)?;
        let cold = self.load(&refs.cold)?;
        let archive = self.load(&refs.archive)?;
        let mut wiki = BTreeMap::new();
        let names = or_skip(self.store.list(Tier::Wiki), warnings)?.unwrap_or_default();
        for name in names {
            let Ok(topic) = TopicName::new(name) else {
                continue; // `validate` reports names that are not valid topics.
            };
            let wiki_ref = DocRef::Wiki(topic.clone());
            if let Some(l) = or_skip(self.load(&wiki_ref), warnings)? {
                wiki.insert(topic, l);
            }
        }
        let tiers = Tiers {
            hot,
            cold,
            archive,
            wiki,
        };
        for l in tiers.all() {
            warnings.extend(l.doc.problems.iter().filter(|p| !p.is_error()).cloned());
        }
        Ok(tiers)
    }

    /// Stage 1: hot into cold, verbatim (its entries as they are, its free text as session
    /// entries, its `#` titles as cold free text), plus the summarizer's entries.
    fn hot_to_cold(
        &self,
        tiers: &mut Tiers,
        refs: &Refs,
        now: Timestamp,
        book: &mut Book,
    ) -> Result<()> {
        let hot = &tiers.hot.doc;
        let summaries = self.summarizer.summarize(hot, now);
        book.report.summarized_lines = hot
            .free_lines()
            .filter(|l| !l.text.trim().is_empty())
            .count();
        let (sessions, titles) = session_entries(hot, now);
        let hot_entries: Vec<Entry> = hot.entries().cloned().collect();
        keep_titles(&mut tiers.cold.doc, titles);
        let incoming = hot_entries
            .into_iter()
            .map(|e| (Origin::Hot, e))
            .chain(sessions.into_iter().map(|e| (Origin::Created, e)))
            .chain(summaries.into_iter().map(|e| (Origin::Created, e)));
        let cold_file = refs.cold.path();
        for (origin, e) in incoming {
            book.arrive(&mut tiers.cold.doc, &cold_file, origin, e, now)?;
        }
        let hot_moved = book.arrivals.from_hot.len();
        if hot_moved > 0 {
            book.report.moved.insert("hot->cold".into(), hot_moved);
        }
        Ok(())
    }

    /// Stage 3: promotions into the topic's document, or its continuation when full; a topic
    /// whose document could not be read keeps its entries in cold.
    fn to_wiki(
        &self,
        tiers: &mut Tiers,
        due: Vec<(TopicName, Entry)>,
        refs: &Refs,
        book: &mut Book,
    ) {
        let cap = self.config.budget.wiki_doc;
        let unreadable = unreadable_topics(&book.report.warnings);
        for (topic, e) in due {
            let Some(target) = wiki_target(&topic, &e, &tiers.wiki, &unreadable, cap) else {
                book.report.warnings.push(Problem::warning(
                    refs.cold.path(),
                    e.line,
                    format!(
                        "entry {} is due for wiki/{topic}.md, which cannot be read; it stays in \
                         cold",
                        e.id
                    ),
                ));
                tiers.cold.doc.insert_entry(e);
                continue;
            };
            let l = tiers.wiki.entry(target.clone()).or_insert_with(|| Loaded {
                doc: MemoryDoc::default(),
                old: None,
                changed: false,
            });
            l.changed = true;
            let file = format!("wiki/{target}.md");
            book.place(&mut l.doc, DocRef::Wiki(target), &file, e, "wiki");
        }
    }

    /// Stage 5: the cold text about to be written (its ids are what its read-back must hold);
    /// a warning when its free text alone is over the cap.
    fn cold_text(&self, cold: &MemoryDoc, refs: &Refs, book: &mut Book) -> String {
        let cold_file = refs.cold.path();
        let cold_cap = self.config.budget.cold_file;
        let cold_text = cold.to_stable_text(&cold_file);
        if cold_text.len() > cold_cap {
            book.report.warnings.push(Problem::warning(
                &cold_file,
                1,
                format!(
                    "the free text of {cold_file} alone is {} bytes, over the {cold_cap}-byte \
                     cap; move some of it to a wiki topic",
                    cold_text.len()
                ),
            ));
        }
        book.must.insert(refs.cold.clone(), ids_of(cold));
        cold_text
    }

    /// Stage 7: destinations first (each written and read back), then cold, then hot emptied.
    fn write(&self, plan: &WritePlan, refs: &Refs, book: &mut Book) -> Result<()> {
        let mut written = Vec::new();
        for w in &plan.docs {
            if !w.changed {
                continue;
            }
            let must = book.must.remove(&w.doc).unwrap_or_default();
            self.write_verified(&w.doc, &w.text, w.old.as_deref(), &must, &mut written)?;
        }
        if plan.empty_hot {
            self.store.write(&refs.hot, "")?;
            written.push(refs.hot.path());
        }
        book.report.written = written;
        Ok(())
    }
}

/// The documents of one agent's run.
#[derive(Debug)]
struct Refs {
    hot: DocRef,
    cold: DocRef,
    archive: DocRef,
}

impl Refs {
    fn of(agent: &AgentName) -> Self {
        Self {
            hot: DocRef::Hot(agent.clone()),
            cold: DocRef::Cold(agent.clone()),
            archive: DocRef::Archive(agent.clone()),
        }
    }
}

/// The documents a run reads and rewrites: the agent's three tiers and every wiki document
/// that could be read.
#[derive(Debug)]
struct Tiers {
    hot: Loaded,
    cold: Loaded,
    archive: Loaded,
    wiki: BTreeMap<TopicName, Loaded>,
}

impl Tiers {
    fn all(&self) -> impl Iterator<Item = &Loaded> {
        [&self.hot, &self.cold, &self.archive]
            .into_iter()
            .chain(self.wiki.values())
    }

    /// Stage: exact duplicates folded inside each document.
    fn dedupe(&mut self, report: &mut ScribeReport) {
        let all = [&mut self.hot, &mut self.cold, &mut self.archive]
            .into_iter()
            .chain(self.wiki.values_mut());
        for l in all {
            let n = dedupe(&mut l.doc);
            l.changed |= n > 0;
            report.merged += n;
        }
    }
}

/// Where the entries added to cold this run came from: hot, or created (session entries and
/// summaries). Entries of neither set were in cold before.
#[derive(Debug, Default)]
struct Arrivals {
    from_hot: HashSet<MemoryId>,
    created: HashSet<MemoryId>,
}

/// The run's bookkeeping, which every stage adds to.
#[derive(Debug, Default)]
struct Book {
    report: ScribeReport,
    /// Every id in use (a renamed entry takes a fresh one).
    used: HashSet<MemoryId>,
    arrivals: Arrivals,
    /// The ids each destination must hold when read back after its write.
    must: BTreeMap<DocRef, HashSet<MemoryId>>,
}

impl Book {
    /// Adds an entry coming from hot (or created for it) to cold.
    fn arrive(
        &mut self,
        cold: &mut MemoryDoc,
        cold_file: &str,
        origin: Origin,
        mut e: Entry,
        now: Timestamp,
    ) -> Result<()> {
        if let Some(p) = e.body_problems().first() {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                "scribe.run",
                format!("entry {:?} cannot be written: {p}", e.heading),
            ));
        }
        e.entered = Some(now);
        let id = e.id.clone();
        if origin == Origin::Created {
            self.report.created += 1;
        }
        let how = absorb(
            cold,
            cold_file,
            e,
            &mut self.used,
            &mut self.report.warnings,
        );
        match (how, origin) {
            (Absorbed::Merged, Origin::Created) => self.report.merged_created += 1,
            (Absorbed::Merged, _) => self.report.merged += 1,
            (Absorbed::Added, Origin::Hot) => {
                self.arrivals.from_hot.insert(id);
            }
            (Absorbed::Added, Origin::Created) => {
                self.arrivals.created.insert(id);
            }
        }
        Ok(())
    }

    /// Moves a cold entry into `doc` (the destination `dest`, named `file`), recording the
    /// ids its read-back must hold and counting the move as `<from>-><to>`.
    fn place(&mut self, doc: &mut MemoryDoc, dest: DocRef, file: &str, e: Entry, to: &str) {
        let set = self.must.entry(dest).or_default();
        set.insert(e.id.clone());
        set.extend(e.merged.iter().cloned());
        let id = e.id.clone();
        let how = absorb(doc, file, e, &mut self.used, &mut self.report.warnings);
        let from = if self.arrivals.from_hot.contains(&id) {
            Some("hot")
        } else if self.arrivals.created.contains(&id) {
            None
        } else {
            Some("cold")
        };
        let report = &mut self.report;
        match (how, from) {
            (Absorbed::Merged, None) => report.merged_created += 1,
            (Absorbed::Merged, Some(f)) => {
                report.merged += 1;
                if f == "hot" {
                    dec(&mut report.moved, "hot->cold");
                }
            }
            (Absorbed::Added, None) => {}
            (Absorbed::Added, Some(f)) => {
                if f == "hot" {
                    dec(&mut report.moved, "hot->cold");
                }
                *report.moved.entry(format!("{f}->{to}")).or_insert(0) += 1;
            }
        }
    }
}

/// Keeps hot's `#` title lines as free text in cold (before its first `##` group), unless
/// cold already has them.
fn keep_titles(cold: &mut MemoryDoc, titles: Vec<String>) {
    for t in titles {
        if !cold.free_lines().any(|l| l.text.trim() == t.trim()) {
            let at = cold
                .items
                .iter()
                .position(|i| matches!(i, Item::Line(l) if unindent(&l.text).starts_with("## ")))
                .unwrap_or(cold.items.len());
            cold.items
                .insert(at, Item::Line(FreeLine { line: 0, text: t }));
        }
    }
}

/// Cold entries leaving cold this run, by destination.
#[derive(Debug, Default)]
struct Departures {
    to_archive: Vec<Entry>,
    /// With the topic each is promoted to.
    to_wiki: Vec<(TopicName, Entry)>,
}

impl Departures {
    /// Stage 2: where each cold entry goes. An entry already in the archive or a wiki document
    /// is the leftover of a move a crash interrupted (completed whatever its age); otherwise
    /// the rolling TTL decides. An undated entry gets `entered: now` and stays.
    fn due(tiers: &mut Tiers, now: Timestamp, ttl_days: i64) -> Result<Self> {
        let placed = leftovers(tiers);
        let ttl = ttl_days.saturating_mul(86_400);
        let mut out = Self::default();
        let mut items = Vec::with_capacity(tiers.cold.doc.items.len());
        for item in std::mem::take(&mut tiers.cold.doc.items) {
            let Item::Entry(mut e) = item else {
                items.push(item);
                continue;
            };
            let leftover = std::iter::once(&e.id)
                .chain(&e.merged)
                .find_map(|id| placed.get(id).cloned());
            match leftover {
                Some(Some(topic)) => out.to_wiki.push((topic, e)),
                Some(None) => out.to_archive.push(e),
                None => match e.last_touched() {
                    None => {
                        e.entered = Some(now);
                        items.push(Item::Entry(e));
                    }
                    Some(t) if now.seconds_since(&t) > ttl => out.expire(e)?,
                    Some(_) => items.push(Item::Entry(e)),
                },
            }
        }
        tiers.cold.doc.items = items;
        Ok(out)
    }

    /// An entry past its TTL: structured, not superseded ones to the wiki (its topic, else
    /// its kind's), all others to the archive.
    fn expire(&mut self, e: Entry) -> Result<()> {
        if e.kind.is_structured() && !e.is_superseded() {
            let topic = match &e.topic {
                Some(t) => t.clone(),
                None => TopicName::new(e.kind.default_topic())?,
            };
            self.to_wiki.push((topic, e));
        } else {
            self.to_archive.push(e);
        }
        Ok(())
    }
}

/// The ids already in the archive (`None`) or a wiki document (its topic).
fn leftovers(tiers: &Tiers) -> HashMap<MemoryId, Option<TopicName>> {
    let mut placed = HashMap::new();
    for id in ids_of(&tiers.archive.doc) {
        placed.insert(id, None);
    }
    for (topic, l) in &tiers.wiki {
        for id in ids_of(&l.doc) {
            placed.insert(id, Some(topic.clone()));
        }
    }
    placed
}

/// The wiki topics whose documents could not be read (named in the run's warnings).
fn unreadable_topics(warnings: &[Problem]) -> HashSet<TopicName> {
    warnings
        .iter()
        .filter_map(|p| {
            p.file
                .strip_prefix("wiki/")
                .and_then(|f| f.strip_suffix(".md"))
                .and_then(|t| TopicName::new(t).ok())
        })
        .collect()
}

/// Stage 4: cold within its cap; returns its oldest entries, taken out until it fits.
fn cap_cold(cold: &mut MemoryDoc, cold_cap: usize) -> Vec<Entry> {
    let mut out = Vec::new();
    let mut size = cold.to_text().len();
    if size <= cold_cap {
        return out;
    }
    let mut dated: Vec<(Option<Timestamp>, usize, MemoryId)> = cold
        .entries()
        .enumerate()
        .map(|(i, e)| (e.last_touched(), i, e.id.clone()))
        .collect();
    dated.sort();
    for (_, _, id) in dated {
        if size <= cold_cap {
            break;
        }
        let Some(pos) = cold
            .items
            .iter()
            .position(|i| matches!(i, Item::Entry(e) if e.id == id))
        else {
            continue;
        };
        if let Item::Entry(e) = cold.items.remove(pos) {
            size = size.saturating_sub(e.prompt_len() + 40);
            out.push(e);
        }
    }
    out
}

/// Stage 4 (continued): the entries leaving cold for the archive, moved into it.
fn archive_entries(archive: &mut Loaded, entries: Vec<Entry>, refs: &Refs, book: &mut Book) {
    archive.changed |= !entries.is_empty();
    let file = refs.archive.path();
    for e in entries {
        book.place(&mut archive.doc, refs.archive.clone(), &file, e, "archive");
    }
}

/// One document as it is about to be written.
#[derive(Debug)]
struct PlannedWrite {
    doc: DocRef,
    text: String,
    /// Its text before the run (an unchanged text is not rewritten).
    old: Option<String>,
    changed: bool,
}

/// Everything a run writes, in write order (the wiki documents, the archive, cold), and
/// whether hot is emptied after them.
#[derive(Debug)]
struct WritePlan {
    docs: Vec<PlannedWrite>,
    empty_hot: bool,
}

impl WritePlan {
    /// Stage 5 (continued): the texts to write, from the documents as the stages left them.
    fn new(tiers: &Tiers, refs: &Refs, cold_text: String) -> Self {
        let mut docs = Vec::new();
        for (topic, l) in &tiers.wiki {
            let doc = DocRef::Wiki(topic.clone());
            let text = l.doc.to_stable_text(&doc.path());
            docs.push(PlannedWrite {
                doc,
                text,
                old: l.old.clone(),
                changed: l.changed,
            });
        }
        docs.push(PlannedWrite {
            doc: refs.archive.clone(),
            text: tiers.archive.doc.to_stable_text(&refs.archive.path()),
            old: tiers.archive.old.clone(),
            changed: tiers.archive.changed,
        });
        docs.push(PlannedWrite {
            doc: refs.cold.clone(),
            text: cold_text,
            old: tiers.cold.old.clone(),
            changed: true,
        });
        let empty_hot = tiers.hot.old.is_some() && !tiers.hot.doc.is_empty();
        Self { docs, empty_hot }
    }
}

/// What must survive a run: every entry id and every distinct line of text (whitespace
/// collapsed) of the documents read. Checked once, on the texts about to be written, before
/// the first write.
#[derive(Debug)]
struct Conservation {
    ids: HashSet<MemoryId>,
    lines: BTreeSet<String>,
}

/// What the planned texts hold, read back as a reader will.
#[derive(Debug, Default)]
struct Held {
    ids: HashSet<MemoryId>,
    lines: BTreeSet<String>,
    entries: usize,
}

impl Held {
    fn add(&mut self, doc: &MemoryDoc) {
        self.ids.extend(ids_of(doc));
        self.entries += doc.entries().count();
        self.lines
            .extend(doc.content_lines().into_iter().map(normalize));
    }
}

impl Conservation {
    /// What the documents hold before the run; counts their entries in `report.before`.
    fn before(tiers: &Tiers, report: &mut ScribeReport) -> Self {
        let mut held = Held::default();
        for l in tiers.all() {
            held.add(&l.doc);
        }
        report.before += held.entries;
        Self {
            ids: held.ids,
            lines: held.lines,
        }
    }

    /// Stage 6: fills in the report's after-counts and checks `before == kept + moved +
    /// merged`, `after + merged + merged_created == before + created`, and that no id and no
    /// line is lost. `Err` (nothing written) when any fails.
    fn check(&self, plan: &WritePlan, hot: &MemoryDoc, report: &mut ScribeReport) -> Result<()> {
        let mut after = Held::default();
        for w in &plan.docs {
            after.add(&MemoryDoc::parse(&w.doc.path(), &w.text)?);
        }
        if !plan.empty_hot {
            after.add(hot);
        }
        report.after += after.entries;
        report.kept = report
            .before
            .saturating_sub(report.moved_total() + report.merged);
        report.text_lines_before = self.lines.len();
        report.text_lines_after = after.lines.len();
        report.text_bytes_before = self.lines.iter().map(String::len).sum();
        report.text_bytes_after = after.lines.iter().map(String::len).sum();
        let lost_id = self.ids.iter().find(|id| !after.ids.contains(*id));
        let lost_line = self.lines.iter().find(|l| !after.lines.contains(*l));
        if report.before != report.kept + report.moved_total() + report.merged
            || report.after + report.merged + report.merged_created
                != report.before + report.created
            || lost_id.is_some()
            || lost_line.is_some()
        {
            return Err(Error::new(
                ErrorKind::Backend,
                "scribe.run",
                format!(
                    "conservation check failed (before {}, kept {}, moved {}, merged {}, created \
                     {}, after {}, lost entry {:?}, lost line {:?}); nothing was written",
                    report.before,
                    report.kept,
                    report.moved_total(),
                    report.merged,
                    report.created,
                    report.after,
                    lost_id,
                    lost_line
                ),
            ));
        }
        Ok(())
    }
}

fn log_report(report: &ScribeReport) {
    tracing::info!(
        before = report.before,
        kept = report.kept,
        moved = report.moved_total(),
        merged = report.merged,
        created = report.created,
        after = report.after,
        lines_checked = report.text_lines_before,
        bytes_checked = report.text_bytes_before,
        written = report.written.len(),
        warnings = report.warnings.len(),
        "scribe run"
    );
}

fn dec(map: &mut BTreeMap<String, usize>, key: &str) {
    if let Some(v) = map.get_mut(key) {
        *v = v.saturating_sub(1);
        if *v == 0 {
            map.remove(key);
        }
    }
}

/// The wiki document an entry promoted to `topic` goes to: the topic, or the first of
/// `<topic>-2`, `<topic>-3`, ... with room under `cap` (or already holding the entry). `None`
/// when that document could not be read.
fn wiki_target(
    topic: &TopicName,
    e: &Entry,
    wiki: &BTreeMap<TopicName, Loaded>,
    unreadable: &HashSet<TopicName>,
    cap: usize,
) -> Option<TopicName> {
    let size = e.prompt_len() + 80;
    for n in 1..1000 {
        let name = if n == 1 {
            topic.clone()
        } else {
            topic.continuation(n)?
        };
        if unreadable.contains(&name) {
            return None;
        }
        match wiki.get(&name) {
            None => return Some(name),
            Some(l) => {
                let holds = l
                    .doc
                    .entries()
                    .any(|x| x.id == e.id || x.merged.contains(&e.id));
                if holds || l.doc.to_text().len() + size <= cap {
                    return Some(name);
                }
            }
        }
    }
    None
}

/// The group a `## ` heading line opens.
fn group_of(h: &str) -> Option<&str> {
    unindent(h).strip_prefix("## ").map(str::trim)
}

/// Hot free text as session entries, one per `#`/`##` section of it (the preamble first), each
/// holding the section's lines verbatim. Returns the entries and the `#` title lines to keep
/// as free text in cold (a `##` title becomes the entries' group).
fn session_entries(hot: &MemoryDoc, now: Timestamp) -> (Vec<Entry>, Vec<String>) {
    let mut out = Vec::new();
    let mut titles = Vec::new();
    let mut chunk: Vec<&str> = Vec::new();
    let mut heading: Option<&str> = None;
    let flush = |heading: Option<&str>,
                 chunk: &mut Vec<&str>,
                 out: &mut Vec<Entry>,
                 titles: &mut Vec<String>| {
        let body: Vec<&str> = chunk
            .iter()
            .copied()
            .filter(|l| l.trim() != "---")
            .collect();
        chunk.clear();
        let body = body.join("\n");
        if body.trim().is_empty() {
            // A heading with nothing under it: kept as a title line of its own, unless an
            // entry of hot sits under it (its group then brings the heading to cold).
            if let Some(h) = heading
                && !hot.entries().any(|e| e.group.as_deref() == group_of(h))
            {
                titles.push(h.to_owned());
            }
            return;
        }
        let title = match heading {
            Some(h) => format!(
                "Session notes: {}",
                unindent(h).trim_start_matches('#').trim()
            ),
            None => "Session notes".to_owned(),
        };
        let mut e = session_entry(now, Kind::Note, &title, &body);
        e.group = heading.and_then(group_of).map(str::to_owned);
        out.push(e);
    };
    let mut fence: Option<Fence> = None;
    for item in &hot.items {
        let Item::Line(l) = item else { continue };
        if let Some(f) = fence {
            if f.closes(&l.text) {
                fence = None;
            }
            chunk.push(l.text.as_str());
            continue;
        }
        if is_group_heading(&l.text) {
            flush(heading, &mut chunk, &mut out, &mut titles);
            heading = Some(l.text.as_str());
            if !unindent(&l.text).starts_with("##") {
                titles.push(l.text.clone());
            }
            continue;
        }
        fence = Fence::opens(&l.text);
        chunk.push(l.text.as_str());
    }
    flush(heading, &mut chunk, &mut out, &mut titles);
    (out, titles)
}
