//! The Scribe: end-of-session compaction (hot to cold), the rolling cold TTL (cold to archive),
//! promotion of structured entries (cold to wiki) and duplicate merging, without ever losing an
//! entry.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;

use sha2::{Digest, Sha256};
use squad_model::{AgentName, Timestamp};

use crate::entry::{Entry, FreeLine, Kind, MemoryDoc};
use crate::error::{Error, ErrorKind, Problem, Result};
use crate::name::{MemoryId, TopicName};
use crate::store::{DocRef, MemoryStore, Tier};

/// Compresses a hot document into the entries that go to cold.
///
/// Pure and synchronous; an LLM-backed implementation is possible (block on your runtime inside
/// `summarize`), but the default [`ExtractiveSummarizer`] needs none.
///
/// # Contract
///
/// - Every entry of `hot` should appear in the output with the same id (its body may be
///   shortened). The Scribe enforces this: a hot entry missing from the output is carried over
///   unchanged, so a summarizer cannot lose an entry.
/// - Free lines (hand-written session text) may be compressed into new entries. Give them ids
///   derived from their content ([`Entry::derived_id`]-style), so that re-running after a crash
///   produces the same ids and the Scribe merges them instead of duplicating them.
///
/// # Behavior
///
/// - [`summarize`](Summarizer::summarize): infallible and synchronous; an empty hot document
///   gives an empty list.
///
/// # Implementing
///
/// Deterministic output for the same input keeps Scribe re-runs idempotent.
pub trait Summarizer: Send + Sync + fmt::Debug {
    /// The cold entries for `hot`, dated `now` when they are new.
    fn summarize(&self, hot: &MemoryDoc, now: Timestamp) -> Vec<Entry>;
}

/// The default summarizer: extractive, no model.
///
/// - Hot entries pass through unchanged.
/// - `Current task: X` becomes a `note` "Task: X".
/// - `Active decisions: a; b` becomes one `decision` per item.
/// - `Last actions: ...` becomes one `action`.
/// - `Blockers: X` becomes a `blocker` unless X is `none`, `-` or `n/a`.
/// - `Talking to: ...` is transient and dropped.
/// - Other lines: the `max_other_lines` most informative ones (most distinct non-trivial words)
///   are kept as the body of one `note` "Session notes", in their original order.
///
/// Summaries are cut to 120 characters. Ids are derived from kind and text only, so a re-run
/// yields the same ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExtractiveSummarizer {
    /// How many other lines to keep (default 3).
    pub max_other_lines: usize,
}

impl Default for ExtractiveSummarizer {
    fn default() -> Self {
        Self { max_other_lines: 3 }
    }
}

fn cut(s: &str, max: usize) -> String {
    let s = s.trim();
    if s.chars().count() <= max {
        return s.to_owned();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

fn session_entry(now: Timestamp, kind: Kind, summary: &str, body: &str) -> Entry {
    let summary = cut(summary, 120);
    let mut h = Sha256::new();
    h.update(b"session\0");
    h.update(kind.as_str().as_bytes());
    h.update([0]);
    h.update(summary.as_bytes());
    h.update([0]);
    h.update(body.as_bytes());
    let hex = hex::encode(h.finalize());
    let mut e = Entry::new(now, kind, summary).with_body(body);
    if let Ok(id) = MemoryId::new(format!("s-{}", &hex[..12])) {
        e.id = id;
    }
    e
}

fn is_none(v: &str) -> bool {
    let v = v.trim().trim_end_matches('.').to_ascii_lowercase();
    v.is_empty() || v == "none" || v == "-" || v == "n/a"
}

impl Summarizer for ExtractiveSummarizer {
    fn summarize(&self, hot: &MemoryDoc, now: Timestamp) -> Vec<Entry> {
        let mut out: Vec<Entry> = hot.entries.clone();
        let mut other: Vec<&FreeLine> = Vec::new();
        for l in hot.free.iter().filter(|l| !l.text.trim().is_empty()) {
            let text = l.text.trim().trim_start_matches(['-', '*', ' ']);
            let (key, value) = match text.split_once(':') {
                Some((k, v)) => (k.trim().to_ascii_lowercase(), v.trim()),
                None => (String::new(), text),
            };
            match key.as_str() {
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
                "last actions" if !is_none(value) => {
                    out.push(session_entry(now, Kind::Action, value, ""));
                }
                "blockers" if !is_none(value) => {
                    out.push(session_entry(now, Kind::Blocker, value, ""));
                }
                "current task" | "last actions" | "blockers" | "talking to" => {}
                _ => other.push(l),
            }
        }
        if !other.is_empty() && self.max_other_lines > 0 {
            let score = |l: &FreeLine| {
                let mut w: Vec<String> = crate::bm25::tokenize(&l.text);
                w.sort();
                w.dedup();
                w.len()
            };
            let mut idx: Vec<usize> = (0..other.len()).collect();
            idx.sort_by(|&a, &b| score(other[b]).cmp(&score(other[a])).then(a.cmp(&b)));
            idx.truncate(self.max_other_lines);
            idx.sort_unstable();
            let body: Vec<&str> = idx.iter().map(|&i| other[i].text.trim()).collect();
            out.push(session_entry(
                now,
                Kind::Note,
                "Session notes",
                &body.join("\n"),
            ));
        }
        out
    }
}

/// Scribe settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScribeConfig {
    /// Rolling TTL of cold entries in days (default 30), counted from the later of the entry's
    /// date and its `last_loaded`. Strict: an entry exactly at the TTL stays.
    pub ttl_days: i64,
}

impl Default for ScribeConfig {
    fn default() -> Self {
        Self { ttl_days: 30 }
    }
}

/// What one Scribe run did. Invariant (checked before anything is written):
/// `before == kept + moved + merged`, and `after == before + created - merged - merged_created`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct ScribeReport {
    /// Entries in the documents involved (hot, cold, archive, and the wiki topics written)
    /// before the run.
    pub before: usize,
    /// Entries that stayed in their tier.
    pub kept: usize,
    /// Entries that changed tier, by `from->to` (`hot->cold`, `cold->archive`, `cold->wiki`, ...).
    pub moved: BTreeMap<String, usize>,
    /// Existing entries folded into an equal one (same id, or same kind, summary and body);
    /// their ids are kept in the survivor's `merged` field.
    pub merged: usize,
    /// New entries the summarizer made from hot free lines.
    pub created: usize,
    /// Of those, how many were folded into an existing equal entry.
    pub merged_created: usize,
    /// Hot free lines compressed (the hot tier is emptied at the end of the session).
    pub summarized_lines: usize,
    /// Entries in the same documents after the run.
    pub after: usize,
    /// The documents written, in write order (destinations before sources).
    pub written: Vec<String>,
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
/// let summarizer = ExtractiveSummarizer::default();
/// let scribe = Scribe::new(&store, &summarizer, ScribeConfig::default());
/// let report = scribe.run(&data, "2026-11-30T12:00:00Z".parse()?)?;
/// assert_eq!(report.created, 2);
/// assert_eq!(report.before, report.kept + report.moved_total() + report.merged);
/// assert!(store.read(&DocRef::Cold(data))?.unwrap().contains("decision: use RS256"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Scribe<'a> {
    store: &'a dyn MemoryStore,
    summarizer: &'a dyn Summarizer,
    config: ScribeConfig,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Origin {
    Hot,
    Cold,
    Created,
}

impl Origin {
    fn tier(self) -> &'static str {
        match self {
            Origin::Hot => "hot",
            Origin::Cold | Origin::Created => "cold",
        }
    }
}

/// Adds `e` to `list`, or folds it into an equal entry. Returns `true` when folded.
fn absorb<T: Copy>(list: &mut Vec<(T, Entry)>, tag: T, e: Entry) -> bool {
    if let Some((_, x)) = list.iter_mut().find(|(_, x)| x.id == e.id) {
        fold(x, e, false);
        return true;
    }
    let key = e.content_key();
    if let Some((_, x)) = list
        .iter_mut()
        .find(|(_, x)| x.content_key() == key && x.superseded_by == e.superseded_by)
    {
        fold(x, e, true);
        return true;
    }
    list.push((tag, e));
    false
}

fn fold(x: &mut Entry, e: Entry, record_id: bool) {
    if record_id && !x.merged.contains(&e.id) {
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
    x.last_loaded = match (x.last_loaded, e.last_loaded) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    };
    if x.topic.is_none() {
        x.topic = e.topic;
    }
}

fn ids_of(doc: &MemoryDoc) -> HashSet<MemoryId> {
    doc.entries
        .iter()
        .flat_map(|e| std::iter::once(e.id.clone()).chain(e.merged.iter().cloned()))
        .collect()
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

    fn load(
        &self,
        doc: &DocRef,
        problems: &mut Vec<Problem>,
    ) -> Result<(MemoryDoc, Option<String>)> {
        match self.store.read(doc) {
            Ok(None) => Ok((MemoryDoc::default(), None)),
            Ok(Some(text)) => match MemoryDoc::parse(&doc.path(), &text) {
                Ok(d) => Ok((d, Some(text))),
                Err(e) => {
                    problems.extend(e.problems().iter().cloned());
                    Ok((MemoryDoc::default(), None))
                }
            },
            Err(e) if !e.problems().is_empty() => {
                problems.extend(e.problems().iter().cloned());
                Ok((MemoryDoc::default(), None))
            }
            Err(e) => Err(e),
        }
    }

    /// Writes `doc`, reads it back and checks that every id in `must` is there.
    fn write_verified(
        &self,
        doc_ref: &DocRef,
        doc: &MemoryDoc,
        old: &Option<String>,
        must: &HashSet<MemoryId>,
        written: &mut Vec<String>,
    ) -> Result<()> {
        let text = doc.to_text();
        if old.as_deref() == Some(text.as_str()) || (old.is_none() && doc.is_empty()) {
            return Ok(());
        }
        self.store.write(doc_ref, &text)?;
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
    /// 1. hot is summarised ([`Summarizer`]) into cold, duplicates merged (by id, then by
    ///    content);
    /// 2. cold entries whose rolling TTL has passed move out: structured, not superseded ones
    ///    (decision, convention, contract) to `wiki/<topic>.md` (the entry's `topic`, else
    ///    [`Kind::default_topic`]), all others to `archive/<agent>.md`;
    /// 3. writes go destinations first: each wiki document and the archive are written, synced
    ///    and read back before cold is rewritten, and cold before hot is emptied. A crash at any
    ///    point loses nothing, and the next run merges the copies by id instead of duplicating.
    ///
    /// Nothing is deleted. The conservation invariant is checked before the first write.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Locked`] when another Scribe runs; [`ErrorKind::InvalidInput`] with
    /// `file:line` problems when a file involved is malformed (nothing written);
    /// [`ErrorKind::Backend`] on storage failure or a failed read-back.
    pub fn run(&self, agent: &AgentName, now: Timestamp) -> Result<ScribeReport> {
        let _lock = self.store.lock()?;
        let mut problems = Vec::new();
        let hot_ref = DocRef::Hot(agent.clone());
        let cold_ref = DocRef::Cold(agent.clone());
        let arch_ref = DocRef::Archive(agent.clone());
        let (hot, hot_text) = self.load(&hot_ref, &mut problems)?;
        let (cold, cold_text) = self.load(&cold_ref, &mut problems)?;
        let (mut archive, arch_text) = self.load(&arch_ref, &mut problems)?;
        if !problems.is_empty() {
            return Err(Error::malformed("scribe.run", problems));
        }
        let mut report = ScribeReport {
            summarized_lines: hot
                .free
                .iter()
                .filter(|l| !l.text.trim().is_empty())
                .count(),
            ..ScribeReport::default()
        };
        let mut originals: HashSet<MemoryId> = HashSet::new();
        for d in [&hot, &cold, &archive] {
            originals.extend(ids_of(d));
        }

        // 1. Hot into cold.
        let hot_ids: HashSet<MemoryId> = hot.entries.iter().map(|e| e.id.clone()).collect();
        let mut summary: Vec<Entry> = Vec::new();
        for e in self.summarizer.summarize(&hot, now) {
            if !summary.iter().any(|s| s.id == e.id) {
                summary.push(e);
            }
        }
        for e in &hot.entries {
            if !summary.iter().any(|s| s.id == e.id) {
                summary.push(e.clone());
            }
        }
        let mut work: Vec<(Origin, Entry)> = Vec::new();
        for e in cold.entries.iter().cloned() {
            if absorb(&mut work, Origin::Cold, e) {
                report.merged += 1;
            }
        }
        for e in summary {
            let origin = if hot_ids.contains(&e.id) {
                Origin::Hot
            } else {
                report.created += 1;
                Origin::Created
            };
            if absorb(&mut work, origin, e) {
                if origin == Origin::Created {
                    report.merged_created += 1;
                } else {
                    report.merged += 1;
                }
            }
        }

        // Every wiki document is read (and must parse) before anything is written: an entry
        // already present in the archive or a wiki document is the leftover of a move that a
        // crash interrupted, and the move is completed whatever the entry's age.
        let mut wiki_docs: BTreeMap<TopicName, (MemoryDoc, Option<String>)> = BTreeMap::new();
        for name in self.store.list(Tier::Wiki)? {
            let Ok(topic) = TopicName::new(name) else {
                continue; // `validate` reports names that are not valid topics.
            };
            let loaded = self.load(&DocRef::Wiki(topic.clone()), &mut problems)?;
            originals.extend(ids_of(&loaded.0));
            wiki_docs.insert(topic, loaded);
        }
        if !problems.is_empty() {
            return Err(Error::malformed("scribe.run", problems));
        }
        let mut placed: HashMap<MemoryId, Option<TopicName>> = HashMap::new();
        for id in ids_of(&archive) {
            placed.insert(id, None);
        }
        for (topic, (doc, _)) in &wiki_docs {
            for id in ids_of(doc) {
                placed.insert(id, Some(topic.clone()));
            }
        }

        // 2. Rolling TTL.
        let ttl = self.config.ttl_days.saturating_mul(86_400);
        let mut keep: Vec<(Origin, Entry)> = Vec::new();
        let mut to_archive: Vec<(Origin, Entry)> = Vec::new();
        let mut to_wiki: BTreeMap<TopicName, Vec<(Origin, Entry)>> = BTreeMap::new();
        for (o, e) in work {
            let leftover = std::iter::once(&e.id)
                .chain(&e.merged)
                .find_map(|id| placed.get(id).cloned());
            match leftover {
                Some(Some(topic)) => to_wiki.entry(topic).or_default().push((o, e)),
                Some(None) => to_archive.push((o, e)),
                None if now.seconds_since(&e.last_touched()) > ttl => {
                    if e.kind.is_structured() && !e.is_superseded() {
                        let topic = match &e.topic {
                            Some(t) => t.clone(),
                            None => TopicName::new(e.kind.default_topic())?,
                        };
                        to_wiki.entry(topic).or_default().push((o, e));
                    } else {
                        to_archive.push((o, e));
                    }
                }
                None => keep.push((o, e)),
            }
        }
        for topic in to_wiki.keys() {
            if !wiki_docs.contains_key(topic) {
                wiki_docs.insert(topic.clone(), (MemoryDoc::default(), None));
            }
        }
        report.before = hot.entries.len()
            + cold.entries.len()
            + archive.entries.len()
            + wiki_docs
                .values()
                .map(|(d, _)| d.entries.len())
                .sum::<usize>();
        report.kept = archive.entries.len()
            + wiki_docs
                .values()
                .map(|(d, _)| d.entries.len())
                .sum::<usize>();

        let moved = |report: &mut ScribeReport, from: Origin, to: &str| {
            if from == Origin::Created {
                return;
            }
            if from.tier() == to {
                report.kept += 1;
            } else {
                *report
                    .moved
                    .entry(format!("{}->{to}", from.tier()))
                    .or_insert(0) += 1;
            }
        };
        let mut must_wiki: HashMap<TopicName, HashSet<MemoryId>> = HashMap::new();
        for (topic, list) in to_wiki {
            let (doc, _) = wiki_docs.get_mut(&topic).ok_or_else(|| {
                Error::new(ErrorKind::Backend, "scribe.run", "wiki doc not loaded")
            })?;
            let mut tagged: Vec<(Origin, Entry)> =
                doc.entries.drain(..).map(|e| (Origin::Cold, e)).collect();
            let must = must_wiki.entry(topic.clone()).or_default();
            for (o, e) in list {
                must.insert(e.id.clone());
                must.extend(e.merged.iter().cloned());
                if absorb(&mut tagged, o, e) {
                    if o == Origin::Created {
                        report.merged_created += 1;
                    } else {
                        report.merged += 1;
                    }
                } else {
                    moved(&mut report, o, "wiki");
                }
            }
            doc.entries = tagged.into_iter().map(|(_, e)| e).collect();
        }
        let mut must_archive: HashSet<MemoryId> = HashSet::new();
        let mut tagged: Vec<(Origin, Entry)> = archive
            .entries
            .drain(..)
            .map(|e| (Origin::Cold, e))
            .collect();
        for (o, e) in to_archive {
            must_archive.insert(e.id.clone());
            must_archive.extend(e.merged.iter().cloned());
            if absorb(&mut tagged, o, e) {
                if o == Origin::Created {
                    report.merged_created += 1;
                } else {
                    report.merged += 1;
                }
            } else {
                moved(&mut report, o, "archive");
            }
        }
        archive.entries = tagged.into_iter().map(|(_, e)| e).collect();
        let mut must_cold: HashSet<MemoryId> = HashSet::new();
        for (o, e) in &keep {
            must_cold.insert(e.id.clone());
            must_cold.extend(e.merged.iter().cloned());
            moved(&mut report, *o, "cold");
        }
        let new_cold = MemoryDoc {
            free: cold.free.clone(),
            entries: keep.into_iter().map(|(_, e)| e).collect(),
        };
        let new_hot = MemoryDoc::default();

        // Conservation, checked before the first write.
        let mut after_ids: HashSet<MemoryId> = ids_of(&new_cold);
        after_ids.extend(ids_of(&archive));
        for (d, _) in wiki_docs.values() {
            after_ids.extend(ids_of(d));
        }
        report.after = new_cold.entries.len()
            + archive.entries.len()
            + wiki_docs
                .values()
                .map(|(d, _)| d.entries.len())
                .sum::<usize>();
        let lost = originals.iter().find(|id| !after_ids.contains(*id));
        if report.before != report.kept + report.moved_total() + report.merged
            || report.after + report.merged + report.merged_created
                != report.before + report.created
            || lost.is_some()
        {
            return Err(Error::new(
                ErrorKind::Backend,
                "scribe.run",
                format!(
                    "conservation check failed (before {}, kept {}, moved {}, merged {}, lost {:?}); \
                     nothing was written",
                    report.before,
                    report.kept,
                    report.moved_total(),
                    report.merged,
                    lost
                ),
            ));
        }

        // 3. Destinations first, then sources.
        let mut written = Vec::new();
        for (topic, (doc, old)) in &wiki_docs {
            let must = must_wiki.remove(topic).unwrap_or_default();
            self.write_verified(&DocRef::Wiki(topic.clone()), doc, old, &must, &mut written)?;
        }
        self.write_verified(&arch_ref, &archive, &arch_text, &must_archive, &mut written)?;
        self.write_verified(&cold_ref, &new_cold, &cold_text, &must_cold, &mut written)?;
        if hot_text.is_some() && !hot.is_empty() {
            self.store.write(&hot_ref, &new_hot.to_text())?;
            written.push(hot_ref.path());
        }
        report.written = written;
        Ok(report)
    }
}
