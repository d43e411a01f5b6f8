//! The operations a harness needs between spawns: [`add`] an entry to hot, [`supersede`] one
//! entry by another, [`search`] every tier, [`show`] one entry.

use squad_model::AgentName;

use crate::bm25::{Scorer, rank_scores};
use crate::entry::{Entry, Item, MemoryDoc};
use crate::error::{Error, ErrorKind, Result, or_skip};
use crate::name::MemoryId;
use crate::render::{Budget, LeftList, LeftOutDetail, Source, ranked_units};
use crate::spawn::{read_doc, read_source};
use crate::store::{DocRef, MemoryStore, Tier};

/// Adds `entry` at the end of `agent`'s hot file, under the store lock.
///
/// Adding an entry identical to one already in hot (same heading and body) changes nothing and
/// returns the one there. The entry returned carries its line in the hot file
/// ([`Entry::line`]).
///
/// ```
/// use squad_memory::{Budget, DocRef, Entry, InMemoryStore, Kind, MemoryStore, add};
///
/// let store = InMemoryStore::new();
/// let data: squad_model::AgentName = "data".parse()?;
/// let e = Entry::new("2026-11-30T10:00:00Z".parse()?, Kind::Decision, "keep RS256")
///     .with_body("Keys rotate monthly.");
/// let added = add(&store, &data, e, &Budget::default())?;
/// assert!(store.read(&DocRef::Hot(data))?.unwrap().contains(&format!("**id:** {}", added.id)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
///
/// [`ErrorKind::InvalidInput`] when the body holds lines the file format reads as structure
/// ([`Entry::body_problems`]), when hot cannot be read as a memory file, or when the entry would
/// take hot over its cap (the message says to run the Scribe); [`ErrorKind::Locked`] when
/// another writer still holds the store lock after the store's wait; [`ErrorKind::Backend`] on
/// storage failure.
pub fn add(
    store: &dyn MemoryStore,
    agent: &AgentName,
    entry: Entry,
    budget: &Budget,
) -> Result<Entry> {
    if let Some(p) = entry.body_problems().into_iter().next() {
        return Err(Error::new(ErrorKind::InvalidInput, "memory.add", p));
    }
    if entry.heading.trim().is_empty() {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            "memory.add",
            "the title must not be empty",
        ));
    }
    let _lock = store.lock()?;
    let doc_ref = DocRef::Hot(agent.clone());
    let (_, mut doc) = read_doc(store, &doc_ref)?;
    let key = entry.content_key();
    if let Some(e) = doc.entries().find(|e| e.content_key() == key) {
        return Ok(e.clone());
    }
    let mut entry = entry;
    if doc.entries().any(|e| e.id == entry.id) {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            "memory.add",
            format!(
                "entry id {} is already used in {} by a different entry",
                entry.id,
                doc_ref.path()
            ),
        ));
    }
    entry.line = 0;
    doc.items.push(Item::Entry(entry.clone()));
    let text = doc.to_text();
    if text.len() > budget.hot {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            "memory.add",
            format!(
                "adding this entry would make {} {} bytes, over the {}-byte hot cap; run `squad \
                 memory scribe --agent {agent}` to move the session to cold, then add it again",
                doc_ref.path(),
                text.len(),
                budget.hot
            ),
        ));
    }
    store.write(&doc_ref, &text)?;
    // Where the entry now is: its heading's line in the file as written.
    if let Ok(written) = MemoryDoc::parse(&doc_ref.path(), &text)
        && let Some(e) = written.entries().find(|e| e.id == entry.id)
    {
        entry.line = e.line;
    }
    Ok(entry)
}

/// Where an entry was found.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Found {
    /// Its tier.
    pub tier: Tier,
    /// The file (`cold/data.md`).
    pub path: String,
    /// The entry.
    pub entry: Entry,
}

/// Every document of the store, read and parsed; documents that cannot be read as memory
/// files are skipped, silently.
fn all_docs(store: &dyn MemoryStore) -> Result<Vec<(DocRef, MemoryDoc)>> {
    let mut out = Vec::new();
    let mut unreported = Vec::new();
    for tier in Tier::ALL {
        let Some(names) = or_skip(store.list(tier), &mut unreported)? else {
            continue;
        };
        for name in names {
            let Ok(d) = DocRef::new(tier, &name) else {
                continue;
            };
            if let Some(src) = read_source(store, &d, &mut unreported)? {
                out.push((d, src.doc));
            }
        }
    }
    Ok(out)
}

/// The entry with `id` (its own id, or one merged into it), whatever its tier: the first found
/// in tier order (hot, cold, wiki, archive).
///
/// # Errors
///
/// [`ErrorKind::NotFound`] when no document holds it; [`ErrorKind::Backend`] on storage
/// failure.
pub fn show(store: &dyn MemoryStore, id: &MemoryId) -> Result<Found> {
    let docs = all_docs(store)?;
    for pass in [false, true] {
        for (d, doc) in &docs {
            let hit = doc.entries().find(|e| {
                if pass {
                    e.merged.contains(id)
                } else {
                    &e.id == id
                }
            });
            if let Some(e) = hit {
                return Ok(Found {
                    tier: d.tier(),
                    path: d.path(),
                    entry: e.clone(),
                });
            }
        }
    }
    Err(Error::new(
        ErrorKind::NotFound,
        "memory.show",
        format!("no memory entry has the id {id}"),
    ))
}

/// Marks the entry `old` as superseded by the entry `by` (both must exist), under the store
/// lock. A superseded entry is never loaded into a prompt again; it stays in its file.
/// Superseding it again by the same entry changes nothing.
///
/// # Errors
///
/// [`ErrorKind::NotFound`] when either id is unknown; [`ErrorKind::InvalidInput`] when `old`
/// and `by` are the same, when `old` is already superseded by another entry, or when several
/// documents hold `old`; [`ErrorKind::Locked`] when another writer still holds the store lock
/// after the store's wait.
pub fn supersede(store: &dyn MemoryStore, old: &MemoryId, by: &MemoryId) -> Result<Found> {
    let op = "memory.supersede";
    if old == by {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            op,
            format!("an entry cannot supersede itself ({old})"),
        ));
    }
    let _lock = store.lock()?;
    let docs = all_docs(store)?;
    if !docs
        .iter()
        .any(|(_, d)| d.entries().any(|e| &e.id == by || e.merged.contains(by)))
    {
        return Err(Error::new(
            ErrorKind::NotFound,
            op,
            format!("no memory entry has the id {by}"),
        ));
    }
    let holders: Vec<&(DocRef, MemoryDoc)> = docs
        .iter()
        .filter(|(_, d)| d.entries().any(|e| &e.id == old))
        .collect();
    let (doc_ref, doc) = match holders.as_slice() {
        [] => {
            return Err(Error::new(
                ErrorKind::NotFound,
                op,
                format!("no memory entry has the id {old}"),
            ));
        }
        [one] => (&one.0, &one.1),
        many => {
            let files: Vec<String> = many.iter().map(|(d, _)| d.path()).collect();
            return Err(Error::new(
                ErrorKind::InvalidInput,
                op,
                format!("entry id {old} is in several files ({})", files.join(", ")),
            ));
        }
    };
    let mut doc = doc.clone();
    let mut found = None;
    for e in doc.entries_mut().filter(|e| &e.id == old) {
        match &e.superseded_by {
            Some(s) if s == by => {}
            Some(s) => {
                return Err(Error::new(
                    ErrorKind::InvalidInput,
                    op,
                    format!("entry {old} is already superseded by {s}"),
                ));
            }
            None => e.superseded_by = Some(by.clone()),
        }
        found = Some(e.clone());
    }
    let entry = found.ok_or_else(|| Error::new(ErrorKind::NotFound, op, old.to_string()))?;
    store.write(doc_ref, &doc.to_text())?;
    Ok(Found {
        tier: doc_ref.tier(),
        path: doc_ref.path(),
        entry,
    })
}

/// One search result.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Hit {
    /// The entry id (`None` for a chunk of free text).
    pub id: Option<String>,
    /// The tier.
    pub tier: Tier,
    /// The BM25 score for the query (stemmed heading and body).
    pub score: f64,
    /// The heading, or the first line of the free text.
    pub title: String,
    /// The file (`archive/data.md`).
    pub path: String,
    /// The line the entry or chunk starts on.
    pub line: usize,
    /// `true` when the entry is superseded (found, but never loaded into a prompt).
    pub superseded: bool,
}

/// Ranked search over `agent`'s hot, cold and archive and every wiki document (restricted to
/// `tiers` when not empty): every entry and every chunk of free text with a positive score,
/// best first, at most `limit`. Superseded entries are found too, and marked.
///
/// # Errors
///
/// [`ErrorKind::Backend`] on storage failure. Documents that cannot be read as memory files
/// are skipped.
pub fn search(
    store: &dyn MemoryStore,
    agent: &AgentName,
    query: &str,
    tiers: &[Tier],
    limit: usize,
) -> Result<Vec<Hit>> {
    let want = |t: Tier| tiers.is_empty() || tiers.contains(&t);
    let mut docs: Vec<DocRef> = Vec::new();
    for t in [Tier::Hot, Tier::Cold, Tier::Archive] {
        if want(t) {
            docs.push(match t {
                Tier::Hot => DocRef::Hot(agent.clone()),
                Tier::Cold => DocRef::Cold(agent.clone()),
                _ => DocRef::Archive(agent.clone()),
            });
        }
    }
    // Documents that cannot be read as memory files are skipped, silently.
    let mut unreported = Vec::new();
    if want(Tier::Wiki) {
        let names = or_skip(store.list(Tier::Wiki), &mut unreported)?.unwrap_or_default();
        docs.extend(names.iter().filter_map(|n| DocRef::new(Tier::Wiki, n).ok()));
    }
    let mut sources = Vec::new();
    for d in docs {
        if let Some(src) = read_source(store, &d, &mut unreported)? {
            sources.push((d.tier(), src));
        }
    }
    let mut ignored = LeftList::new(LeftOutDetail::Counts);
    let mut units = Vec::new();
    for (tier, src) in &sources {
        units.extend(ranked_units(*tier, src, &mut ignored));
    }
    // Superseded entries are searchable too.
    let superseded: Vec<(Tier, &Source, &Entry)> = sources
        .iter()
        .flat_map(|(t, s)| {
            s.doc
                .entries()
                .filter(|e| e.is_superseded())
                .map(move |e| (*t, s, e))
        })
        .collect();
    let mut scorer = Scorer::new(query);
    for u in &units {
        scorer.start();
        u.feed(&mut scorer);
    }
    for (_, _, e) in &superseded {
        scorer.start();
        scorer.feed(&e.heading, 2);
        scorer.feed(&e.body, 1);
    }
    let mut hits: Vec<Hit> = Vec::new();
    for (i, score) in rank_scores(scorer.scores()) {
        if hits.len() >= limit {
            break;
        }
        let hit = match units.get(i) {
            Some(u) => Hit {
                id: u.entry.map(|e| e.id().to_string()),
                tier: u.tier,
                score,
                title: u.title.clone().into_owned(),
                path: u.file.to_owned(),
                line: u.line,
                superseded: false,
            },
            None => {
                let Some((tier, src, e)) = superseded.get(i - units.len()) else {
                    continue;
                };
                Hit {
                    id: Some(e.id.to_string()),
                    tier: *tier,
                    score,
                    title: e.heading.clone(),
                    path: src.path.clone(),
                    line: e.line,
                    superseded: true,
                }
            }
        };
        // The parts of one long section count once, at the best part's score.
        if hits
            .iter()
            .any(|h| h.path == hit.path && h.id == hit.id && h.line == hit.line)
        {
            continue;
        }
        hits.push(hit);
    }
    Ok(hits)
}
