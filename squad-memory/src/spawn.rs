//! Store-level operations: [`spawn`] (read and render; writes nothing unless asked to record
//! a TTL refresh) and [`validate`].

use std::collections::HashSet;
use std::sync::Arc;

use squad_model::{AgentName, Timestamp};

use crate::entry::MemoryDoc;
#[cfg(doc)]
use crate::error::ErrorKind;
use crate::error::{Error, Problem, Result, or_skip};
use crate::index::{LaidText, SearchIndex, head, read_front, scan, text_hash};
use crate::matrix::LoadPlan;
use crate::name::{MemoryId, TopicName};
use crate::render::{Budget, LeftOutDetail, Rendered, Source, SpawnInputs, render_with};
use crate::store::{DocReader, DocRef, MemoryStore, Tier};

/// Whether [`spawn`] records the TTL refresh of what it loads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Touch {
    /// Read-only (the default): nothing is written and no lock is taken.
    #[default]
    No,
    /// Record `last_loaded = at` on every cold entry loaded, which restarts its rolling TTL
    /// (`squad memory spawn --touch`). Needs the store lock, and waits for it as the store is
    /// configured; when another writer still holds it after that, [`spawn`] fails with
    /// [`ErrorKind::Locked`] (nothing written).
    At(Timestamp),
}

/// Reads a document for a reader that skips what it cannot read: `Ok(None)` when it is
/// missing, or when it cannot be read as a memory file (malformed, a symlink, too large), in
/// which case the problems are added to `skipped`. Storage failures are errors.
pub(crate) fn read_source(
    store: &dyn MemoryStore,
    doc: &DocRef,
    skipped: &mut Vec<Problem>,
) -> Result<Option<Source>> {
    read_ranked(store, doc, false, skipped)
}

/// [`read_source`], with the document's search index when `ranked` (its sections are scored)
/// and the store has one; an index that cannot be read is no index. When the index lays out
/// the document's sections, the document is not read whole nor parsed ([`laid_out`]).
fn read_ranked(
    store: &dyn MemoryStore,
    doc: &DocRef,
    ranked: bool,
    skipped: &mut Vec<Problem>,
) -> Result<Option<Source>> {
    let (mut decoded, mut raw) = (None, None);
    if ranked && let Some(ix) = store.open_index(doc).ok().flatten() {
        match laid_out(store, doc, ix.into()) {
            Laid::Source(src) => return Ok(Some(src)),
            Laid::Matched(idx) => decoded = Some(idx),
            Laid::Stale => {}
            Laid::Unread(ix) => raw = Some(ix),
        }
    }
    let Some(text) = or_skip(store.read(doc), skipped)?.flatten() else {
        return Ok(None);
    };
    let index = match decoded {
        // The text read now is the one the index was checked against (unless it was just
        // replaced).
        Some(idx) => Some(*idx).filter(|i| i.names(&text)),
        None => raw.and_then(|ix| SearchIndex::read(ix, text.len(), text_hash(text.as_bytes()))),
    };
    // A parse error always lists its problems (the lines holding a NUL byte).
    or_skip(Source::with_decoded(doc.path(), &text, index), skipped)
}

/// What [`laid_out`] made of a document and its index.
enum Laid {
    /// The index lays out the document: its source.
    Source(Source),
    /// The index matches the document but does not lay it out.
    Matched(Box<SearchIndex>),
    /// The index does not match the document (or cannot be decoded).
    Stale,
    /// The document could not be read in parts (missing, refused, not readable, NUL bytes):
    /// the index, open, for the reader that reads the document whole.
    Unread(Arc<dyn DocReader>),
}

/// The source of `doc` from its index `ix` when it lays out its sections: the index's front
/// is read, the document opened ([`MemoryStore::open`]) and, unless it carries the stamp the
/// index names, read through once in chunks to check that the index matches it (length and
/// hash); only the sections and occurrence lists a spawn needs are read later.
fn laid_out(store: &dyn MemoryStore, doc: &DocRef, ix: Arc<dyn DocReader>) -> Laid {
    let Some(reader) = store.open(doc).ok().flatten() else {
        return Laid::Unread(ix);
    };
    let Some(front) = read_front(ix.as_ref()) else {
        return Laid::Stale;
    };
    // The document is the one the index was built from when it carries the stamp the index
    // names (see `DocStamp`); otherwise read it through to check its length and hash.
    let known = head(&front)
        .filter(|h| h.stamp.is_some() && h.stamp == reader.stamp())
        .filter(|h| h.text_len as u64 == reader.len())
        .map(|h| (h.text_len, h.text_hash));
    let Some((len, hash)) = known.or_else(|| scan(reader.as_ref())) else {
        return Laid::Unread(ix);
    };
    let base = front.len() as u64;
    let Some(index) = SearchIndex::decode_front(front, (ix, base), len, hash) else {
        return Laid::Stale;
    };
    match Source::laid_out(
        doc.path(),
        len,
        LaidText::Reader(reader.into()),
        Box::new(index),
    ) {
        Ok(src) => Laid::Source(src),
        Err(index) => Laid::Matched(index),
    }
}

/// Reads a document for a writer: the text it has (`None` when it is missing) and the text
/// parsed (empty when it is missing).
///
/// # Errors
///
/// [`ErrorKind::InvalidInput`] with its problems when it cannot be read as a memory file;
/// [`ErrorKind::Backend`] on storage failure.
pub(crate) fn read_doc(
    store: &dyn MemoryStore,
    doc: &DocRef,
) -> Result<(Option<String>, MemoryDoc)> {
    let old = store.read(doc)?;
    let parsed = match &old {
        Some(t) => MemoryDoc::parse(&doc.path(), t)?,
        None => MemoryDoc::default(),
    };
    Ok((old, parsed))
}

/// Reads what `plan` needs for `agent` from `store` and renders it within `budget` (see
/// [`render`](fn@crate::render)).
///
/// A spawn only reads: it writes nothing and takes no lock, so it works on a read-only
/// `.squad`. With [`Touch::At`] it records the TTL refresh of the cold entries it loaded (the
/// one write, under the store lock).
///
/// A document that cannot be read as a memory file (NUL bytes, a symlink, too large) is
/// skipped and listed in [`crate::Manifest::skipped`]; the others still load.
///
/// ```
/// use squad_memory::{Budget, DocRef, InMemoryStore, LoadPlan, MemoryStore, Situation, Touch, spawn};
///
/// let store = InMemoryStore::new();
/// let data: squad_model::AgentName = "data".parse()?;
/// store.write(&DocRef::Hot(data.clone()), "Current task: fix login\nBlockers: none\n")?;
/// let out = spawn(&store, &data, &LoadPlan::new(Situation::NewTask), &Budget::default(), Touch::No)?;
/// assert!(out.prompt.starts_with("## Memory Context\n### Hot (current session)\nCurrent task: fix login"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
///
/// [`ErrorKind::NotFound`] for a named wiki topic with no document;
/// [`ErrorKind::InvalidInput`] when a named wiki topic cannot be read as a memory file;
/// [`ErrorKind::Locked`] with [`Touch::At`] when the store lock stays held by another writer;
/// [`ErrorKind::Backend`] on storage failure.
pub fn spawn(
    store: &dyn MemoryStore,
    agent: &AgentName,
    plan: &LoadPlan,
    budget: &Budget,
    touch: Touch,
) -> Result<Rendered> {
    spawn_with(store, agent, plan, budget, touch, LeftOutDetail::Full)
}

/// [`spawn`], with the manifest's left-out list filled in as `detail` asks: the same prompt,
/// loaded list, tier reports and skipped documents whatever it asks. A caller that prints only
/// the prompt asks for [`LeftOutDetail::Counts`] and saves naming the thousands of sections a
/// ranked spawn leaves out.
///
/// ```
/// use squad_memory::{Budget, DocRef, InMemoryStore, LeftOutDetail, LoadPlan, MemoryStore};
/// use squad_memory::{Situation, Touch, spawn, spawn_with};
///
/// let store = InMemoryStore::new();
/// let data: squad_model::AgentName = "data".parse()?;
/// store.write(&DocRef::Hot(data.clone()), "Current task: fix login\n")?;
/// let cold = "### 2026-01-02: Login uses OAuth\nThe login flow goes through OAuth.\n\n\
///             ### 2026-01-03: Deploys run at noon\nThe pipeline deploys at noon.\n";
/// store.write(&DocRef::Cold(data.clone()), cold)?;
/// let mut plan = LoadPlan::new(Situation::PostIncident);
/// plan.task = Some("why did the login fail".to_owned());
/// let (budget, touch) = (Budget::default(), Touch::No);
/// let full = spawn(&store, &data, &plan, &budget, touch)?;
/// let counts = spawn_with(&store, &data, &plan, &budget, touch, LeftOutDetail::Counts)?;
/// assert_eq!(counts.prompt, full.prompt);
/// assert_eq!(counts.manifest.left_out.len(), full.manifest.left_out.len());
/// assert!(!full.manifest.left_out.is_empty());
/// assert!(counts.manifest.left_out.iter().all(|l| l.file.is_empty() && l.title.is_empty()));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
///
/// As [`spawn`].
pub fn spawn_with(
    store: &dyn MemoryStore,
    agent: &AgentName,
    plan: &LoadPlan,
    budget: &Budget,
    touch: Touch,
    detail: LeftOutDetail,
) -> Result<Rendered> {
    let tiers = plan.tiers();
    let mut skipped = Vec::new();
    let hot = read_source(store, &DocRef::Hot(agent.clone()), &mut skipped)?;
    let ranked = plan.task.is_some();
    let (cold, archive) = if tiers.cold {
        (
            read_ranked(store, &DocRef::Cold(agent.clone()), ranked, &mut skipped)?,
            read_ranked(store, &DocRef::Archive(agent.clone()), ranked, &mut skipped)?,
        )
    } else {
        (None, None)
    };
    let mut wiki = Vec::new();
    if tiers.wiki {
        if plan.wiki_topics.is_empty() {
            if plan.task.is_some() {
                let names = or_skip(store.list(Tier::Wiki), &mut skipped)?.unwrap_or_default();
                for t in names.into_iter().filter_map(|n| TopicName::new(n).ok()) {
                    let doc = DocRef::Wiki(t.clone());
                    if let Some(src) = read_ranked(store, &doc, true, &mut skipped)? {
                        wiki.push((t, src));
                    }
                }
            }
        } else {
            for t in &plan.wiki_topics {
                let mut problems = Vec::new();
                if let Some(src) = read_source(store, &DocRef::Wiki(t.clone()), &mut problems)? {
                    wiki.push((t.clone(), src));
                }
                if !problems.is_empty() {
                    return Err(Error::malformed("memory.spawn", problems));
                }
            }
        }
    }
    let inputs = SpawnInputs {
        agent: agent.clone(),
        hot,
        cold,
        archive,
        wiki,
        skipped,
    };
    let mut rendered = render_with(plan, &inputs, budget, detail)?;
    if let Touch::At(now) = touch {
        let loaded: HashSet<MemoryId> = rendered
            .manifest
            .tiers
            .get(&Tier::Cold)
            .map(|r| r.entries.iter().cloned().collect())
            .unwrap_or_default();
        rendered.manifest.touched = loaded.is_empty() || refresh(store, agent, &loaded, now)?;
    }
    Ok(rendered)
}

/// Sets `last_loaded = now` on the `loaded` cold entries, under the lock (waiting for it as the
/// store is configured; [`ErrorKind::Locked`] when the wait runs out). `Ok(false)` when there is
/// no cold document.
fn refresh(
    store: &dyn MemoryStore,
    agent: &AgentName,
    loaded: &HashSet<MemoryId>,
    now: Timestamp,
) -> Result<bool> {
    let _lock = store.lock()?;
    let doc_ref = DocRef::Cold(agent.clone());
    let Some(text) = store.read(&doc_ref)? else {
        return Ok(false);
    };
    let mut doc = MemoryDoc::parse(&doc_ref.path(), &text)?;
    let mut changed = false;
    for e in doc.entries_mut().filter(|e| loaded.contains(&e.id)) {
        if e.last_loaded.is_none_or(|l| l < now) {
            e.last_loaded = Some(now);
            changed = true;
        }
    }
    if changed {
        store.write(&doc_ref, &doc.to_text())?;
    }
    Ok(true)
}

/// Checks every memory document in `store`: symlinks and special files (from
/// [`MemoryStore::audit`]), names valid for their tier, UTF-8, NUL bytes, field lines, and size
/// within [`Budget::file_cap`]. Returns every problem found, errors and warnings (renamed
/// duplicate ids, dates that are not dates), in tier and name order; empty when all is well.
///
/// # Errors
///
/// [`ErrorKind::Backend`] when the store cannot be listed or read.
pub fn validate(store: &dyn MemoryStore, budget: &Budget) -> Result<Vec<Problem>> {
    let mut problems = store.audit()?;
    for tier in Tier::ALL {
        let Some(names) = or_skip(store.list(tier), &mut problems)? else {
            continue;
        };
        for name in names {
            let path = format!("{tier}/{name}.md");
            let doc = match DocRef::new(tier, &name) {
                Ok(d) => d,
                Err(e) => {
                    problems.push(Problem::error(path, 1, e.message()));
                    continue;
                }
            };
            let Some(text) = or_skip(store.read(&doc), &mut problems)?.flatten() else {
                continue;
            };
            if let Some(cap) = budget.file_cap(tier)
                && text.len() > cap
            {
                let next = match tier {
                    Tier::Hot => "run `squad memory scribe --agent <name>` to move it to cold",
                    Tier::Cold => {
                        "run `squad memory scribe --agent <name>`: it moves the oldest entries to the archive"
                    }
                    _ => "split it into several topics",
                };
                problems.push(Problem::error(
                    path.clone(),
                    1,
                    format!(
                        "{} bytes, over the {tier} cap of {cap} bytes; {next}",
                        text.len()
                    ),
                ));
            }
            match MemoryDoc::parse(&path, &text) {
                Ok(d) => problems.extend(d.problems),
                Err(e) => problems.extend(e.problems().iter().cloned()),
            }
        }
    }
    let mut seen = HashSet::new();
    problems.retain(|p| seen.insert((p.file.clone(), p.line, p.message.clone())));
    Ok(problems)
}
