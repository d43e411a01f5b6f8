//! The Scribe: end of session (hot to cold, verbatim), the rolling cold TTL (cold to the
//! archive), promotion of structured entries (cold to the wiki), duplicate merging and the file
//! caps, without ever losing an entry or a line of text.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fmt;

use sha2::{Digest, Sha256};
use squad_model::{AgentName, Timestamp};

use crate::entry::{Entry, Fence, FreeLine, Item, Kind, MemoryDoc, is_group_heading, normalize};
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
        let hot_ref = DocRef::Hot(agent.clone());
        let cold_ref = DocRef::Cold(agent.clone());
        let arch_ref = DocRef::Archive(agent.clone());
        let mut hot = self.load(&hot_ref)?;
        let mut cold = self.load(&cold_ref)?;
        let mut archive = self.load(&arch_ref)?;
        let mut report = ScribeReport::default();
        let mut wiki: BTreeMap<TopicName, Loaded> = BTreeMap::new();
        let names = or_skip(self.store.list(Tier::Wiki), &mut report.warnings)?.unwrap_or_default();
        for name in names {
            let Ok(topic) = TopicName::new(name) else {
                continue; // `validate` reports names that are not valid topics.
            };
            let wiki_ref = DocRef::Wiki(topic.clone());
            if let Some(l) = or_skip(self.load(&wiki_ref), &mut report.warnings)? {
                wiki.insert(topic, l);
            }
        }
        for l in [&hot, &cold, &archive].into_iter().chain(wiki.values()) {
            report
                .warnings
                .extend(l.doc.problems.iter().filter(|p| !p.is_error()).cloned());
        }

        // What must survive: every id and every line of text.
        let mut originals: HashSet<MemoryId> = HashSet::new();
        let mut text_before: BTreeSet<String> = BTreeSet::new();
        for l in [&hot, &cold, &archive].into_iter().chain(wiki.values()) {
            originals.extend(ids_of(&l.doc));
            text_before.extend(l.doc.content_lines().into_iter().map(normalize));
            report.before += l.doc.entries().count();
        }
        let mut used: HashSet<MemoryId> = originals.clone();

        // Exact duplicates inside each document.
        for l in [&mut hot, &mut cold, &mut archive]
            .into_iter()
            .chain(wiki.values_mut())
        {
            let n = dedupe(&mut l.doc);
            l.changed |= n > 0;
            report.merged += n;
        }

        // 1. Hot into cold, verbatim, plus summaries.
        let cold_file = cold_ref.path();
        let mut moved_from_hot: HashSet<MemoryId> = HashSet::new();
        let mut created_ids: HashSet<MemoryId> = HashSet::new();
        let summaries = self.summarizer.summarize(&hot.doc, now);
        report.summarized_lines = hot
            .doc
            .free_lines()
            .filter(|l| !l.text.trim().is_empty())
            .count();
        let (sessions, titles) = session_entries(&hot.doc, now);
        for t in titles {
            if !cold.doc.free_lines().any(|l| l.text.trim() == t.trim()) {
                let at = cold
                    .doc
                    .items
                    .iter()
                    .position(|i| matches!(i, Item::Line(l) if l.text.starts_with("## ")))
                    .unwrap_or(cold.doc.items.len());
                cold.doc
                    .items
                    .insert(at, Item::Line(FreeLine { line: 0, text: t }));
            }
        }
        let hot_entries: Vec<Entry> = hot.doc.entries().cloned().collect();
        let incoming = hot_entries
            .into_iter()
            .map(|e| (Origin::Hot, e))
            .chain(sessions.into_iter().map(|e| (Origin::Created, e)))
            .chain(summaries.into_iter().map(|e| (Origin::Created, e)));
        for (origin, mut e) in incoming {
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
                report.created += 1;
            }
            match (
                absorb(
                    &mut cold.doc,
                    &cold_file,
                    e,
                    &mut used,
                    &mut report.warnings,
                ),
                origin,
            ) {
                (Absorbed::Merged, Origin::Created) => report.merged_created += 1,
                (Absorbed::Merged, _) => report.merged += 1,
                (Absorbed::Added, Origin::Hot) => {
                    moved_from_hot.insert(id);
                }
                (Absorbed::Added, Origin::Created) => {
                    created_ids.insert(id);
                }
            }
        }
        let hot_moved = moved_from_hot.len();
        if hot_moved > 0 {
            report.moved.insert("hot->cold".into(), hot_moved);
        }

        // 2. Where each cold entry goes: an entry already in the archive or a wiki document is
        // the leftover of a move a crash interrupted (completed whatever its age); otherwise the
        // rolling TTL decides.
        let mut placed: std::collections::HashMap<MemoryId, Option<TopicName>> =
            std::collections::HashMap::new();
        for id in ids_of(&archive.doc) {
            placed.insert(id, None);
        }
        for (topic, l) in &wiki {
            for id in ids_of(&l.doc) {
                placed.insert(id, Some(topic.clone()));
            }
        }
        let ttl = self.config.ttl_days.saturating_mul(86_400);
        let mut to_archive: Vec<Entry> = Vec::new();
        let mut to_wiki: Vec<(TopicName, Entry)> = Vec::new();
        let mut items = Vec::with_capacity(cold.doc.items.len());
        for item in std::mem::take(&mut cold.doc.items) {
            let Item::Entry(mut e) = item else {
                items.push(item);
                continue;
            };
            let leftover = std::iter::once(&e.id)
                .chain(&e.merged)
                .find_map(|id| placed.get(id).cloned());
            match leftover {
                Some(Some(topic)) => to_wiki.push((topic, e)),
                Some(None) => to_archive.push(e),
                None => match e.last_touched() {
                    None => {
                        e.entered = Some(now);
                        items.push(Item::Entry(e));
                    }
                    Some(t) if now.seconds_since(&t) > ttl => {
                        if e.kind.is_structured() && !e.is_superseded() {
                            let topic = match &e.topic {
                                Some(t) => t.clone(),
                                None => TopicName::new(e.kind.default_topic())?,
                            };
                            to_wiki.push((topic, e));
                        } else {
                            to_archive.push(e);
                        }
                    }
                    Some(_) => items.push(Item::Entry(e)),
                },
            }
        }
        cold.doc.items = items;

        // 3. Promotions: into the topic's document, or its continuation when full; a topic
        // whose document could not be read keeps its entries in cold.
        let cap = self.config.budget.wiki_doc;
        let arch_file = arch_ref.path();
        let mut must: BTreeMap<DocRef, HashSet<MemoryId>> = BTreeMap::new();
        let count_move = |report: &mut ScribeReport, id: &MemoryId, to: &str, how: Absorbed| {
            let from = if moved_from_hot.contains(id) {
                Some("hot")
            } else if created_ids.contains(id) {
                None
            } else {
                Some("cold")
            };
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
        };
        let unreadable: HashSet<TopicName> = report
            .warnings
            .iter()
            .filter_map(|p| {
                p.file
                    .strip_prefix("wiki/")
                    .and_then(|f| f.strip_suffix(".md"))
                    .and_then(|t| TopicName::new(t).ok())
            })
            .collect();
        for (topic, e) in to_wiki {
            let Some(target) = wiki_target(&topic, &e, &wiki, &unreadable, cap) else {
                report.warnings.push(Problem::warning(
                    &cold_file,
                    e.line,
                    format!(
                        "entry {} is due for wiki/{topic}.md, which cannot be read; it stays in \
                         cold",
                        e.id
                    ),
                ));
                cold.doc.insert_entry(e);
                continue;
            };
            let l = wiki.entry(target.clone()).or_insert_with(|| Loaded {
                doc: MemoryDoc::default(),
                old: None,
                changed: false,
            });
            l.changed = true;
            let set = must.entry(DocRef::Wiki(target.clone())).or_default();
            set.insert(e.id.clone());
            set.extend(e.merged.iter().cloned());
            let id = e.id.clone();
            let file = format!("wiki/{target}.md");
            let how = absorb(&mut l.doc, &file, e, &mut used, &mut report.warnings);
            count_move(&mut report, &id, "wiki", how);
        }

        // 4. Cold within its cap: the oldest entries go to the archive.
        let cold_cap = self.config.budget.cold_file;
        let mut size = cold.doc.to_text().len();
        if size > cold_cap {
            let mut dated: Vec<(Option<Timestamp>, usize, MemoryId)> = cold
                .doc
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
                    .doc
                    .items
                    .iter()
                    .position(|i| matches!(i, Item::Entry(e) if e.id == id))
                else {
                    continue;
                };
                if let Item::Entry(e) = cold.doc.items.remove(pos) {
                    size = size.saturating_sub(e.prompt_len() + 40);
                    to_archive.push(e);
                }
            }
        }
        archive.changed |= !to_archive.is_empty();
        for e in to_archive {
            let set = must.entry(arch_ref.clone()).or_default();
            set.insert(e.id.clone());
            set.extend(e.merged.iter().cloned());
            let id = e.id.clone();
            let how = absorb(
                &mut archive.doc,
                &arch_file,
                e,
                &mut used,
                &mut report.warnings,
            );
            count_move(&mut report, &id, "archive", how);
        }
        let cold_text = cold.doc.to_stable_text(&cold_file);
        if cold_text.len() > cold_cap {
            report.warnings.push(Problem::warning(
                &cold_file,
                1,
                format!(
                    "the free text of cold/{agent}.md alone is {} bytes, over the {cold_cap}-byte \
                     cap; move some of it to a wiki topic",
                    cold_text.len()
                ),
            ));
        }
        must.insert(cold_ref.clone(), ids_of(&cold.doc));

        // Conservation, checked on the texts about to be written, read back as a reader will.
        let mut planned: Vec<(DocRef, String, Option<String>, bool)> = Vec::new();
        for (topic, l) in &wiki {
            let d = DocRef::Wiki(topic.clone());
            let text = l.doc.to_stable_text(&d.path());
            planned.push((d, text, l.old.clone(), l.changed));
        }
        let a = (
            archive.doc.to_stable_text(&arch_ref.path()),
            archive.old.clone(),
            archive.changed,
        );
        planned.push((arch_ref.clone(), a.0, a.1, a.2));
        planned.push((cold_ref.clone(), cold_text, cold.old.clone(), true));
        let hot_text = if hot.old.is_some() && !hot.doc.is_empty() {
            Some(String::new())
        } else {
            None
        };
        let mut after_ids: HashSet<MemoryId> = HashSet::new();
        let mut text_after: BTreeSet<String> = BTreeSet::new();
        for (d, text, _, _) in &planned {
            let doc = MemoryDoc::parse(&d.path(), text)?;
            after_ids.extend(ids_of(&doc));
            report.after += doc.entries().count();
            text_after.extend(doc.content_lines().into_iter().map(normalize));
        }
        if hot_text.is_none() {
            after_ids.extend(ids_of(&hot.doc));
            report.after += hot.doc.entries().count();
            text_after.extend(hot.doc.content_lines().into_iter().map(normalize));
        }
        report.kept = report
            .before
            .saturating_sub(report.moved_total() + report.merged);
        report.text_lines_before = text_before.len();
        report.text_lines_after = text_after.len();
        report.text_bytes_before = text_before.iter().map(String::len).sum();
        report.text_bytes_after = text_after.iter().map(String::len).sum();
        let lost_id = originals.iter().find(|id| !after_ids.contains(*id));
        let lost_line = text_before.iter().find(|l| !text_after.contains(*l));
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

        // 5. Destinations first, then sources.
        let mut written = Vec::new();
        for (d, text, old, changed) in &planned {
            if !changed {
                continue;
            }
            let must = must.remove(d).unwrap_or_default();
            self.write_verified(d, text, old.as_deref(), &must, &mut written)?;
        }
        if let Some(t) = hot_text {
            self.store.write(&hot_ref, &t)?;
            written.push(hot_ref.path());
        }
        report.written = written;
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
        Ok(report)
    }
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

/// Hot free text as session entries, one per `#`/`##` section of it (the preamble first), each
/// holding the section's lines verbatim. Returns the entries and the `#` title lines to keep
/// as free text in cold (a `##` title becomes the entries' group).
/// The group a `## ` heading line opens.
fn group_of(h: &str) -> Option<&str> {
    h.strip_prefix("## ").map(str::trim)
}

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
            Some(h) => format!("Session notes: {}", h.trim_start_matches('#').trim()),
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
            if !l.text.starts_with("##") {
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
