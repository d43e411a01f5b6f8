//! Import: bring the Markdown memory a squad already has (an agent's `history.md`, the team's
//! `decisions.md`, any heading style) into the tiers, losing no line.

use std::collections::HashSet;

use squad_model::{AgentName, Timestamp};

use crate::entry::{FreeLine, Item, MemoryDoc, ParseOptions, is_group_heading, normalize};
use crate::error::{Error, ErrorKind, Problem, Result};
use crate::name::{MemoryId, TopicName};
use crate::render::{Budget, starts_with_label};
use crate::spawn::read_doc;
use crate::store::{DocRef, MemoryStore};

/// Where an import goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImportTarget {
    /// An agent's memory: the hot template lines (`Current task:` ...) to `hot/<agent>.md`,
    /// everything else to `cold/<agent>.md` (the oldest entries to `archive/<agent>.md` when
    /// cold would go over its cap).
    Agent(AgentName),
    /// A wiki topic: `wiki/<topic>.md`, continued in `<topic>-2`, `<topic>-3`, ... when it would
    /// go over the wiki cap (`decisions.md` is imported as the topic `decisions`).
    Wiki(TopicName),
}

/// One file to import: a name for messages and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportSource {
    /// The name problems and warnings use (the path the user gave).
    pub name: String,
    /// The file's text.
    pub text: String,
}

/// One document an import writes (or would write, in a dry run).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PlannedDoc {
    /// The document (`cold/data.md`).
    pub path: String,
    /// Its size before the import (0 when new).
    pub bytes_before: usize,
    /// Its size after.
    pub bytes_after: usize,
    /// Entries the import adds to it.
    pub entries_added: usize,
    /// Lines of free text the import adds to it.
    pub lines_added: usize,
}

/// What an import did (or would do).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct ImportReport {
    /// Non-blank lines in the files imported.
    pub lines_in: usize,
    /// Of those, how many are in the memory files afterwards (each checked, whitespace
    /// collapsed; exact duplicates merged count as stored). Always equal to `lines_in`: an
    /// import that would lose a line fails before writing.
    pub lines_stored: usize,
    /// Sections (`### ` entries) read from the files.
    pub entries: usize,
    /// Entries added to the memory files.
    pub added: usize,
    /// Entries already there (an exact duplicate in the files, or imported before).
    pub merged: usize,
    /// Hot template lines moved to the hot tier.
    pub hot_lines: usize,
    /// What was read leniently (renamed duplicate ids, headings with dates that are not dates,
    /// entries moved to the archive to keep cold within its cap).
    pub warnings: Vec<Problem>,
    /// The documents written (or, in a dry run, that would be), destinations first.
    pub plan: Vec<PlannedDoc>,
    /// `true` when nothing was written.
    pub dry_run: bool,
}

/// Import settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImportOptions {
    /// The time recorded as `entered` on each entry imported (the cold TTL counts from here,
    /// not from the dates in the headings, so a fresh import is not archived on the first
    /// Scribe run).
    pub now: Timestamp,
    /// Plan only: read, check, report; write nothing.
    pub dry_run: bool,
    /// The caps to stay within (`hot`, `cold_file`, `wiki_doc`).
    pub budget: Budget,
}

impl ImportOptions {
    /// Options for an import at `now` that writes, with the default caps.
    pub fn new(now: Timestamp) -> Self {
        Self {
            now,
            dry_run: false,
            budget: Budget::default(),
        }
    }
}

/// The stage an import is at, for [`import_with_progress`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ImportStage {
    /// Reading the source files (`done` of `total` files parsed).
    Read,
    /// The memory documents the import writes into have been read (reported once, when done).
    Load,
    /// Placing the sections read (`done` of `total` sections and free-text chunks).
    Place,
    /// Checking that every line read is in what is about to be written (`done` of `total`
    /// documents).
    Check,
    /// Writing the documents, destinations first (`done` of `total`; none in a dry run).
    Write,
}

/// How far an import is, passed to the callback of [`import_with_progress`]: `done` only grows
/// within a stage, and stages come in the order of [`ImportStage`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct ImportProgress {
    /// The stage.
    pub stage: ImportStage,
    /// Steps of the stage done.
    pub done: usize,
    /// Steps of the stage in all.
    pub total: usize,
}

/// The hot template lines (case-insensitive, after list markers): they go to hot.
const HOT_PREFIXES: [&str; 5] = [
    "current task:",
    "active decisions:",
    "last actions:",
    "blockers:",
    "talking to:",
];

/// Non-blank lines as compared for conservation: whitespace collapsed.
fn keys(text: &str) -> impl Iterator<Item = String> + '_ {
    crate::entry::lines(text)
        .map(normalize)
        .filter(|l| !l.is_empty())
}

/// Runs of free lines, cut before each `#`/`##` heading, as index ranges into `items`.
fn chunk_ranges(items: &[Item]) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    for (i, item) in items.iter().enumerate() {
        match item {
            Item::Line(l) => {
                if let Some(s) = start
                    && is_group_heading(&l.text)
                {
                    out.push(s..i);
                    start = Some(i);
                }
                start.get_or_insert(i);
            }
            Item::Entry(_) => {
                if let Some(s) = start.take() {
                    out.push(s..i);
                }
            }
        }
    }
    if let Some(s) = start {
        out.push(s..items.len());
    }
    out
}

struct Target {
    doc: DocRef,
    parsed: MemoryDoc,
    old: Option<String>,
    entries_added: usize,
    lines_added: usize,
}

impl Target {
    fn load(store: &dyn MemoryStore, doc: DocRef) -> Result<Self> {
        let (old, parsed) = read_doc(store, &doc)?;
        Ok(Self {
            doc,
            parsed,
            old,
            entries_added: 0,
            lines_added: 0,
        })
    }
}

/// Imports `sources` into `target`.
///
/// Every heading shape real squads write is accepted: each `### ` section becomes one entry
/// (its heading kept verbatim, the date it holds read out of it, its body verbatim), `#`/`##`
/// headings and the text under them are kept as free text (and `##` groups stay the entries'
/// groups), and the hot template lines go to hot. Nothing is refused for its shape; what is
/// read leniently is reported in [`ImportReport::warnings`].
///
/// Importing the same files again changes nothing: an entry already in the agent's hot, cold
/// or archive (or the topic's documents) with the same heading and body is not added again, nor
/// is free text already there. An entry whose id is taken by a different entry (the file was
/// edited since) is added under a new id, with a warning.
///
/// Before writing, the import checks that every non-blank line of the sources is in the
/// documents it is about to write (`lines_in == lines_stored`); then it writes the archive (or
/// the wiki continuations) before cold, and cold before hot, each read back.
///
/// ```
/// use squad_memory::{DocRef, ImportOptions, ImportSource, ImportTarget, InMemoryStore, MemoryStore, import};
///
/// let store = InMemoryStore::new();
/// let history = "# DATA\n\n## Learnings\n\n### 2026-03-14: Token refresh\nRefresh 5 minutes early.\n";
/// let src = ImportSource { name: "history.md".into(), text: history.into() };
/// let target = ImportTarget::Agent("data".parse()?);
/// let report = import(&store, &target, &[src.clone()], &ImportOptions::new("2026-11-30T00:00:00Z".parse()?))?;
/// assert_eq!((report.lines_in, report.lines_stored, report.entries), (4, 4, 1));
/// let again = import(&store, &target, &[src], &ImportOptions::new("2026-12-01T00:00:00Z".parse()?))?;
/// assert_eq!((again.added, again.merged), (0, 1)); // importing twice changes nothing
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
///
/// [`ErrorKind::InvalidInput`] naming `file:line` when a source holds a NUL byte, or when a
/// memory file it would write into cannot be read as one; [`ErrorKind::Locked`] while a Scribe
/// runs; [`ErrorKind::Backend`] on storage failure (nothing half-written: each document is
/// replaced atomically, destinations first).
pub fn import(
    store: &dyn MemoryStore,
    target: &ImportTarget,
    sources: &[ImportSource],
    options: &ImportOptions,
) -> Result<ImportReport> {
    import_with_progress(store, target, sources, options, &mut |_| {})
}

/// [`import`], calling `progress` as it goes (to show progress on a terminal: the CLI does,
/// on stderr, only when it is one).
///
/// ```
/// use squad_memory::{ImportOptions, ImportSource, ImportStage, ImportTarget, InMemoryStore, import_with_progress};
///
/// let store = InMemoryStore::new();
/// let src = ImportSource { name: "history.md".into(), text: "### 2026-03-14: Token refresh\nRefresh early.\n".into() };
/// let mut seen = Vec::new();
/// import_with_progress(&store, &ImportTarget::Agent("data".parse()?), &[src],
///     &ImportOptions::new("2026-11-30T00:00:00Z".parse()?), &mut |p| seen.push((p.stage, p.done, p.total)))?;
/// assert_eq!(seen.first(), Some(&(ImportStage::Read, 0, 1)));
/// assert_eq!(seen.last(), Some(&(ImportStage::Write, 1, 1)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
///
/// As [`import`].
pub fn import_with_progress(
    store: &dyn MemoryStore,
    target: &ImportTarget,
    sources: &[ImportSource],
    options: &ImportOptions,
    progress: &mut dyn FnMut(ImportProgress),
) -> Result<ImportReport> {
    let mut step = |stage: ImportStage, done: usize, total: usize| {
        progress(ImportProgress { stage, done, total });
    };
    let (agent, topic) = match target {
        ImportTarget::Agent(a) => (Some(a.as_str()), None),
        ImportTarget::Wiki(t) => (None, Some(t.as_str())),
    };
    let _span = tracing::info_span!(
        "memory.import",
        agent,
        topic,
        sources = sources.len(),
        dry_run = options.dry_run
    )
    .entered();
    let _lock = if options.dry_run {
        None
    } else {
        Some(store.lock()?)
    };
    // Files hold times to the millisecond; stamping more would make a re-read differ.
    let options = &ImportOptions {
        now: Timestamp::from_unix_millis(options.now.unix_millis())?,
        ..*options
    };
    let mut report = ImportReport {
        dry_run: options.dry_run,
        ..ImportReport::default()
    };
    let mut inputs = Vec::new();
    let mut wanted: Vec<String> = Vec::new();
    for (i, src) in sources.iter().enumerate() {
        step(ImportStage::Read, i, sources.len());
        let doc = MemoryDoc::parse_with(&src.name, &src.text, ParseOptions { fields: false })?;
        report.warnings.extend(doc.problems.iter().cloned());
        report.entries += doc.entries().count();
        wanted.extend(keys(&src.text));
        inputs.push(doc);
    }
    report.lines_in = wanted.len();
    step(ImportStage::Read, sources.len(), sources.len());

    // The documents involved, and every id already used in them.
    let mut hot: Option<Target> = None;
    let mut others: Vec<Target> = Vec::new();
    match target {
        ImportTarget::Agent(a) => {
            hot = Some(Target::load(store, DocRef::Hot(a.clone()))?);
            others.push(Target::load(store, DocRef::Cold(a.clone()))?);
            others.push(Target::load(store, DocRef::Archive(a.clone()))?);
        }
        ImportTarget::Wiki(t) => {
            others.push(Target::load(store, DocRef::Wiki(t.clone()))?);
            for n in 2..1000 {
                let Some(name) = t.continuation(n) else {
                    break;
                };
                let d = Target::load(store, DocRef::Wiki(name))?;
                if d.old.is_none() {
                    break;
                }
                others.push(d);
            }
        }
    }
    let loaded = usize::from(hot.is_some()) + others.len();
    step(ImportStage::Load, loaded, loaded);
    let mut used: HashSet<MemoryId> = HashSet::new();
    let mut present: HashSet<(String, String)> = HashSet::new();
    let mut free_present: HashSet<String> = HashSet::new();
    for t in hot.iter().chain(&others) {
        for e in t.parsed.entries() {
            used.insert(e.id.clone());
            used.extend(e.merged.iter().cloned());
            present.insert(e.content_key());
        }
        for l in t.parsed.free_lines() {
            free_present.insert(normalize(&l.text));
        }
    }

    // What is new: entries, free-text chunks and hot lines, in file order.
    let mut new_items: Vec<Item> = Vec::new();
    let mut hot_lines: Vec<String> = Vec::new();
    let sections: usize = inputs.iter().map(|d| d.items.len()).sum();
    let mut placed = 0;
    for (doc, src) in inputs.iter().zip(sources) {
        step(ImportStage::Place, placed, sections);
        placed += doc.items.len();
        let chunks = chunk_ranges(&doc.items);
        let mut next_chunk = chunks.iter().peekable();
        for (i, item) in doc.items.iter().enumerate() {
            match item {
                Item::Entry(e) => {
                    let key = e.content_key();
                    if !present.insert(key) {
                        report.merged += 1;
                        continue;
                    }
                    let mut e = e.clone();
                    if used.contains(&e.id) {
                        let new = e.id.fresh(&used);
                        report.warnings.push(Problem::warning(
                            &src.name,
                            e.line,
                            format!(
                                "entry id {} is already used by a different entry in memory; \
                                 imported as {new}",
                                e.id
                            ),
                        ));
                        e.id = new;
                    }
                    used.insert(e.id.clone());
                    e.entered = Some(options.now);
                    e.line = 0;
                    report.added += 1;
                    new_items.push(Item::Entry(e));
                }
                Item::Line(_) => {
                    let Some(range) = next_chunk.next_if(|r| r.start == i) else {
                        continue;
                    };
                    let chunk: Vec<&FreeLine> = doc.items[range.clone()]
                        .iter()
                        .filter_map(|it| match it {
                            Item::Line(l) => Some(l),
                            Item::Entry(_) => None,
                        })
                        .collect();
                    let (to_hot, rest): (Vec<&FreeLine>, Vec<&FreeLine>) =
                        chunk.into_iter().partition(|l| {
                            matches!(target, ImportTarget::Agent(_))
                                && starts_with_label(&l.text, &HOT_PREFIXES)
                        });
                    for l in to_hot {
                        if free_present.insert(normalize(&l.text)) {
                            hot_lines.push(l.text.clone());
                        }
                    }
                    let all_there = rest
                        .iter()
                        .map(|l| normalize(&l.text))
                        .filter(|k| !k.is_empty())
                        .all(|k| free_present.contains(&k));
                    if all_there {
                        continue;
                    }
                    for l in rest {
                        free_present.insert(normalize(&l.text));
                        new_items.push(Item::Line(FreeLine {
                            line: 0,
                            text: l.text.clone(),
                        }));
                    }
                }
            }
        }
    }

    step(ImportStage::Place, sections, sections);

    // Hot lines go to hot while it stays within its cap; the rest stay with the free text.
    if let Some(h) = hot.as_mut() {
        for line in hot_lines {
            let size = h.parsed.to_text().len() + line.len() + 1;
            if size <= options.budget.hot {
                h.parsed.items.push(Item::Line(FreeLine {
                    line: 0,
                    text: line,
                }));
                h.lines_added += 1;
                report.hot_lines += 1;
            } else {
                report.warnings.push(Problem::warning(
                    h.doc.path(),
                    1,
                    format!(
                        "{line:?} would take hot over its {}-byte cap; kept in cold instead",
                        options.budget.hot
                    ),
                ));
                new_items.insert(
                    0,
                    Item::Line(FreeLine {
                        line: 0,
                        text: line,
                    }),
                );
            }
        }
    }

    // Into the main document, in file order when it is new, else appended under the groups.
    let (main, rest) = others.split_at_mut(1);
    let main = &mut main[0];
    let fresh = main.parsed.items.is_empty();
    for item in new_items {
        match item {
            Item::Entry(e) => {
                main.entries_added += 1;
                if fresh {
                    main.parsed.items.push(Item::Entry(e));
                } else {
                    main.parsed.insert_entry(e);
                }
            }
            Item::Line(l) => {
                main.lines_added += usize::from(!l.text.trim().is_empty());
                main.parsed.items.push(Item::Line(l));
            }
        }
    }

    // Caps.
    match target {
        ImportTarget::Agent(_) => {
            let cap = options.budget.cold_file;
            if let Some(archive) = rest.first_mut() {
                overflow_to_archive(main, archive, cap, &mut report.warnings);
            }
        }
        ImportTarget::Wiki(t) => {
            let cap = options.budget.wiki_doc;
            let mut extra = split_wiki(t, main, rest, cap)?;
            others.append(&mut extra);
        }
    }

    // Conservation: every line of the sources is in what is about to be written.
    let mut planned: Vec<(&Target, String)> = Vec::new();
    for t in others.iter().rev().chain(hot.iter()) {
        planned.push((t, t.parsed.to_stable_text(&t.doc.path())));
    }
    let mut stored: HashSet<String> = HashSet::new();
    for (i, (t, text)) in planned.iter().enumerate() {
        step(ImportStage::Check, i, planned.len());
        let back = MemoryDoc::parse(&t.doc.path(), text)?;
        for l in back.free_lines() {
            stored.insert(normalize(&l.text));
        }
        for e in back.entries() {
            stored.insert(normalize(&e.heading_line()));
            stored.extend(crate::entry::lines(&e.body).map(normalize));
            // Each entry is written ending with `---`.
            stored.insert("---".into());
        }
    }
    step(ImportStage::Check, planned.len(), planned.len());
    report.lines_stored = wanted.iter().filter(|k| stored.contains(*k)).count();
    if let Some(missing) = wanted.iter().find(|k| !stored.contains(*k)) {
        return Err(Error::new(
            ErrorKind::Backend,
            "memory.import",
            format!(
                "import would not store the line {missing:?} ({} of {} lines); nothing was written",
                report.lines_stored, report.lines_in
            ),
        ));
    }

    // Write: destinations first (archive or continuations), then the main document, then hot.
    let changed = |t: &Target, text: &str| {
        !(t.old.as_deref() == Some(text) || (t.old.is_none() && text.trim().is_empty()))
    };
    let writes = if options.dry_run {
        0
    } else {
        planned.iter().filter(|(t, text)| changed(t, text)).count()
    };
    step(ImportStage::Write, 0, writes);
    for (t, text) in &planned {
        if !changed(t, text) {
            continue;
        }
        report.plan.push(PlannedDoc {
            path: t.doc.path(),
            bytes_before: t.old.as_ref().map_or(0, String::len),
            bytes_after: text.len(),
            entries_added: t.entries_added,
            lines_added: t.lines_added,
        });
        if options.dry_run {
            continue;
        }
        store.write(&t.doc, text)?;
        let back = store.read(&t.doc)?.unwrap_or_default();
        if back != *text {
            return Err(Error::new(
                ErrorKind::Backend,
                "memory.import",
                format!("{} does not read back as written", t.doc.path()),
            ));
        }
        step(ImportStage::Write, report.plan.len(), writes);
    }
    tracing::info!(
        lines_in = report.lines_in,
        lines_stored = report.lines_stored,
        entries = report.entries,
        added = report.added,
        merged = report.merged,
        hot_lines = report.hot_lines,
        documents = report.plan.len(),
        warnings = report.warnings.len(),
        "memory imported"
    );
    Ok(report)
}

/// Moves cold's oldest entries (then its free-text chunks, from the top) to the archive until
/// cold fits `cap`.
fn overflow_to_archive(
    cold: &mut Target,
    archive: &mut Target,
    cap: usize,
    warnings: &mut Vec<Problem>,
) {
    let mut size = cold.parsed.to_text().len();
    if size <= cap {
        return;
    }
    let mut order: Vec<(Option<Timestamp>, usize)> = cold
        .parsed
        .items
        .iter()
        .enumerate()
        .filter_map(|(i, it)| match it {
            Item::Entry(e) => Some((e.date, i)),
            Item::Line(_) => None,
        })
        .collect();
    // Undated first (their age is unknown), then oldest first.
    order.sort();
    let mut take: HashSet<usize> = HashSet::new();
    for (_, i) in order {
        if size <= cap {
            break;
        }
        if let Item::Entry(e) = &cold.parsed.items[i] {
            size = size.saturating_sub(e.prompt_len() + 60);
            take.insert(i);
        }
    }
    let mut moved = 0;
    let items = std::mem::take(&mut cold.parsed.items);
    for (i, it) in items.into_iter().enumerate() {
        if take.contains(&i)
            && let Item::Entry(e) = it
        {
            cold.entries_added = cold.entries_added.saturating_sub(1);
            archive.entries_added += 1;
            archive.parsed.insert_entry(e);
            moved += 1;
        } else {
            cold.parsed.items.push(it);
        }
    }
    if moved > 0 {
        warnings.push(Problem::warning(
            cold.doc.path(),
            1,
            format!(
                "{moved} {} moved to {} to keep cold within its {cap}-byte cap (searchable, \
                 and loaded when relevant)",
                if moved == 1 { "entry" } else { "entries" },
                archive.doc.path()
            ),
        ));
    }
    // Free text alone over the cap: move chunks after the first from the top.
    while cold.parsed.to_text().len() > cap {
        let chunks = chunk_ranges(&cold.parsed.items);
        let Some(range) = chunks.get(1).cloned() else {
            break;
        };
        let moved: Vec<Item> = cold.parsed.items.drain(range).collect();
        archive.lines_added += moved.len();
        archive.parsed.items.extend(moved);
    }
}

/// Splits the main wiki document (and appends to its last continuation) so that each stays
/// within `cap`; returns the new continuation documents.
fn split_wiki(
    topic: &TopicName,
    main: &mut Target,
    rest: &mut [Target],
    cap: usize,
) -> Result<Vec<Target>> {
    let mut extra: Vec<Target> = Vec::new();
    if main.parsed.to_text().len() <= cap {
        return Ok(extra);
    }
    // Keep in main the longest prefix of items that fits; the rest flows into continuations.
    let items = std::mem::take(&mut main.parsed.items);
    let mut overflow: Vec<Item> = Vec::new();
    for it in items {
        let keep = overflow.is_empty()
            && (main.parsed.items.is_empty() || {
                let mut trial = MemoryDoc {
                    items: main.parsed.items.clone(),
                    problems: Vec::new(),
                };
                trial.items.push(it.clone());
                trial.to_text().len() <= cap
            });
        if keep {
            main.parsed.items.push(it);
        } else {
            overflow.push(it);
        }
    }
    let mut n = rest.len() + 2;
    let mut cur: Option<Target> = None;
    for it in overflow {
        let fits = cur.as_ref().is_some_and(|c| {
            let mut trial = c.parsed.clone();
            trial.items.push(it.clone());
            trial.to_text().len() <= cap
        });
        if !fits {
            if let Some(c) = cur.take() {
                extra.push(c);
            }
            let name = topic.continuation(n).ok_or_else(|| {
                Error::new(
                    ErrorKind::InvalidInput,
                    "memory.import",
                    format!("too many continuation documents for wiki topic {topic}"),
                )
            })?;
            n += 1;
            cur = Some(Target {
                doc: DocRef::Wiki(name),
                parsed: MemoryDoc::default(),
                old: None,
                entries_added: 0,
                lines_added: 0,
            });
        }
        if let Some(c) = cur.as_mut() {
            match &it {
                Item::Entry(_) => {
                    c.entries_added += 1;
                    main.entries_added = main.entries_added.saturating_sub(1);
                }
                Item::Line(l) => c.lines_added += usize::from(!l.text.trim().is_empty()),
            }
            c.parsed.items.push(it);
        }
    }
    if let Some(c) = cur.take() {
        extra.push(c);
    }
    Ok(extra)
}
