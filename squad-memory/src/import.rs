//! Import: bring the Markdown memory a squad already has (an agent's `history.md`, the team's
//! `decisions.md`, any heading style) into the tiers, losing no line.

use std::collections::HashSet;

use squad_model::{AgentName, Timestamp};

use crate::entry::{Entry, FreeLine, Item, MemoryDoc, ParseOptions, is_group_heading, normalize};
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

/// A document an import writes into, with what it adds to it.
struct Target {
    doc: DocRef,
    parsed: MemoryDoc,
    old: Option<String>,
    entries_added: usize,
    lines_added: usize,
}

impl Target {
    /// A new, empty document.
    fn new(doc: DocRef) -> Self {
        Self {
            doc,
            parsed: MemoryDoc::default(),
            old: None,
            entries_added: 0,
            lines_added: 0,
        }
    }

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
    let mut progress = Progress(progress);
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
    let read = read_sources(sources, &mut progress, &mut report)?;
    let mut targets = Targets::load(store, target)?;
    let loaded = targets.all().count();
    progress.step(ImportStage::Load, loaded, loaded);
    let mut known = Known::of(&targets);
    let to_agent = matches!(target, ImportTarget::Agent(_));
    let placing = Placing::new(&read.docs, sources, to_agent, options.now);
    let new = placing.run(&mut known, &mut progress, &mut report);
    let items = targets.hot_lines(new, options.budget.hot, &mut report);
    targets.add_to_main(items);
    targets.cap(target, &options.budget, &mut report.warnings)?;
    let pending = targets.pending();
    read.wanted.check(&pending, &mut progress, &mut report)?;
    write_pending(store, &pending, options.dry_run, &mut progress, &mut report)?;
    log_report(&report);
    Ok(report)
}

/// The progress callback, one call per step.
struct Progress<'p>(&'p mut dyn FnMut(ImportProgress));

impl Progress<'_> {
    fn step(&mut self, stage: ImportStage, done: usize, total: usize) {
        (self.0)(ImportProgress { stage, done, total });
    }
}

/// Every non-blank line of the sources, whitespace collapsed: what the import must store.
#[derive(Debug)]
struct Wanted(Vec<String>);

/// The sources as read: their documents, and the lines the import must store.
#[derive(Debug)]
struct ReadSources {
    docs: Vec<MemoryDoc>,
    wanted: Wanted,
}

/// Stage: parse the sources (leniently: every shape is read, what is odd is a warning).
fn read_sources(
    sources: &[ImportSource],
    progress: &mut Progress<'_>,
    report: &mut ImportReport,
) -> Result<ReadSources> {
    let mut docs = Vec::new();
    let mut wanted: Vec<String> = Vec::new();
    for (i, src) in sources.iter().enumerate() {
        progress.step(ImportStage::Read, i, sources.len());
        let doc = MemoryDoc::parse_with(&src.name, &src.text, ParseOptions { fields: false })?;
        report.warnings.extend(doc.problems.iter().cloned());
        report.entries += doc.entries().count();
        wanted.extend(keys(&src.text));
        docs.push(doc);
    }
    report.lines_in = wanted.len();
    progress.step(ImportStage::Read, sources.len(), sources.len());
    Ok(ReadSources {
        docs,
        wanted: Wanted(wanted),
    })
}

/// The documents an import writes into: hot (for an agent), the main document (cold, or the
/// topic's wiki document) and the rest (the archive, or the topic's continuations).
struct Targets {
    hot: Option<Target>,
    main: Target,
    rest: Vec<Target>,
}

impl Targets {
    /// Stage: read the documents involved (reported as one step when done).
    fn load(store: &dyn MemoryStore, target: &ImportTarget) -> Result<Self> {
        let targets = match target {
            ImportTarget::Agent(a) => Self {
                hot: Some(Target::load(store, DocRef::Hot(a.clone()))?),
                main: Target::load(store, DocRef::Cold(a.clone()))?,
                rest: vec![Target::load(store, DocRef::Archive(a.clone()))?],
            },
            ImportTarget::Wiki(t) => {
                let main = Target::load(store, DocRef::Wiki(t.clone()))?;
                let mut rest = Vec::new();
                for n in 2..1000 {
                    let Some(name) = t.continuation(n) else {
                        break;
                    };
                    let d = Target::load(store, DocRef::Wiki(name))?;
                    if d.old.is_none() {
                        break;
                    }
                    rest.push(d);
                }
                Self {
                    hot: None,
                    main,
                    rest,
                }
            }
        };
        Ok(targets)
    }

    fn all(&self) -> impl Iterator<Item = &Target> {
        self.hot
            .iter()
            .chain(std::iter::once(&self.main))
            .chain(&self.rest)
    }

    /// Stage: hot lines go to hot while it stays within its cap; the rest stay with the free
    /// text (first). Returns the items for the main document.
    fn hot_lines(&mut self, new: NewText, cap: usize, report: &mut ImportReport) -> Vec<Item> {
        let mut items = new.items;
        let Some(h) = self.hot.as_mut() else {
            return items;
        };
        for line in new.hot_lines {
            let size = h.parsed.to_text().len() + line.len() + 1;
            if size <= cap {
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
                        "{line:?} would take hot over its {cap}-byte cap; kept in cold instead"
                    ),
                ));
                items.insert(
                    0,
                    Item::Line(FreeLine {
                        line: 0,
                        text: line,
                    }),
                );
            }
        }
        items
    }

    /// Stage: the new items into the main document, in file order when it is new, else
    /// appended under the groups.
    fn add_to_main(&mut self, items: Vec<Item>) {
        let main = &mut self.main;
        let fresh = main.parsed.items.is_empty();
        for item in items {
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
    }

    /// Stage: the caps (cold's oldest entries to the archive; a wiki topic continued).
    fn cap(
        &mut self,
        target: &ImportTarget,
        budget: &Budget,
        warnings: &mut Vec<Problem>,
    ) -> Result<()> {
        match target {
            ImportTarget::Agent(_) => {
                if let Some(archive) = self.rest.first_mut() {
                    overflow_to_archive(&mut self.main, archive, budget.cold_file, warnings);
                }
            }
            ImportTarget::Wiki(t) => {
                let mut extra = split_wiki(t, &mut self.main, &mut self.rest, budget.wiki_doc)?;
                self.rest.append(&mut extra);
            }
        }
        Ok(())
    }

    /// Stage: the texts about to be written, in write order (destinations first: the rest,
    /// last first; then the main document; then hot).
    fn pending(&self) -> Vec<Pending<'_>> {
        self.rest
            .iter()
            .rev()
            .chain(std::iter::once(&self.main))
            .chain(self.hot.iter())
            .map(|t| Pending {
                target: t,
                text: t.parsed.to_stable_text(&t.doc.path()),
            })
            .collect()
    }
}

/// What the documents already hold: the ids in use, the entries (by content) and the free
/// lines (whitespace collapsed).
#[derive(Debug, Default)]
struct Known {
    used: HashSet<MemoryId>,
    entries: HashSet<(String, String)>,
    free: HashSet<String>,
}

impl Known {
    fn of(targets: &Targets) -> Self {
        let mut known = Self::default();
        for t in targets.all() {
            for e in t.parsed.entries() {
                known.used.insert(e.id.clone());
                known.used.extend(e.merged.iter().cloned());
                known.entries.insert(e.content_key());
            }
            for l in t.parsed.free_lines() {
                known.free.insert(normalize(&l.text));
            }
        }
        known
    }
}

/// What an import adds: entries and free lines for the main document (file order), and the
/// hot template lines.
#[derive(Debug, Default)]
struct NewText {
    items: Vec<Item>,
    hot_lines: Vec<String>,
}

/// The placing stage's inputs: the parsed sources and where their text may go.
struct Placing<'a> {
    docs: &'a [MemoryDoc],
    sources: &'a [ImportSource],
    to_agent: bool,
    now: Timestamp,
}

impl<'a> Placing<'a> {
    fn new(
        docs: &'a [MemoryDoc],
        sources: &'a [ImportSource],
        to_agent: bool,
        now: Timestamp,
    ) -> Self {
        Self {
            docs,
            sources,
            to_agent,
            now,
        }
    }

    /// Stage: what is new, in file order: entries, free-text chunks and hot lines.
    fn run(
        &self,
        known: &mut Known,
        progress: &mut Progress<'_>,
        report: &mut ImportReport,
    ) -> NewText {
        let mut new = NewText::default();
        let sections: usize = self.docs.iter().map(|d| d.items.len()).sum();
        let mut placed = 0;
        for (doc, src) in self.docs.iter().zip(self.sources) {
            progress.step(ImportStage::Place, placed, sections);
            placed += doc.items.len();
            let chunks = chunk_ranges(&doc.items);
            let mut next_chunk = chunks.iter().peekable();
            for (i, item) in doc.items.iter().enumerate() {
                match item {
                    Item::Entry(e) => self.entry(e, &src.name, known, &mut new, report),
                    Item::Line(_) => {
                        if let Some(range) = next_chunk.next_if(|r| r.start == i) {
                            self.chunk(&doc.items[range.clone()], known, &mut new);
                        }
                    }
                }
            }
        }
        progress.step(ImportStage::Place, sections, sections);
        new
    }

    /// An entry read: merged when already there, else added (renamed when its id is taken).
    fn entry(
        &self,
        e: &Entry,
        file: &str,
        known: &mut Known,
        new: &mut NewText,
        report: &mut ImportReport,
    ) {
        if !known.entries.insert(e.content_key()) {
            report.merged += 1;
            return;
        }
        let mut e = e.clone();
        if known.used.contains(&e.id) {
            let fresh = e.id.fresh(&known.used);
            report.warnings.push(Problem::warning(
                file,
                e.line,
                format!(
                    "entry id {} is already used by a different entry in memory; imported as \
                     {fresh}",
                    e.id
                ),
            ));
            e.id = fresh;
        }
        known.used.insert(e.id.clone());
        e.entered = Some(self.now);
        e.line = 0;
        report.added += 1;
        new.items.push(Item::Entry(e));
    }

    /// A chunk of free lines: its hot template lines (for an agent) to hot, the rest kept
    /// unless every line of it is already there.
    fn chunk(&self, items: &[Item], known: &mut Known, new: &mut NewText) {
        let chunk = items.iter().filter_map(|it| match it {
            Item::Line(l) => Some(l),
            Item::Entry(_) => None,
        });
        let (to_hot, rest): (Vec<&FreeLine>, Vec<&FreeLine>) =
            chunk.partition(|l| self.to_agent && starts_with_label(&l.text, &HOT_PREFIXES));
        for l in to_hot {
            if known.free.insert(normalize(&l.text)) {
                new.hot_lines.push(l.text.clone());
            }
        }
        let all_there = rest
            .iter()
            .map(|l| normalize(&l.text))
            .filter(|k| !k.is_empty())
            .all(|k| known.free.contains(&k));
        if all_there {
            return;
        }
        for l in rest {
            known.free.insert(normalize(&l.text));
            new.items.push(Item::Line(FreeLine {
                line: 0,
                text: l.text.clone(),
            }));
        }
    }
}

/// A document and the text the import is about to write to it.
struct Pending<'t> {
    target: &'t Target,
    text: String,
}

impl Pending<'_> {
    /// Whether writing changes the document.
    fn changed(&self) -> bool {
        let old = self.target.old.as_deref();
        !(old == Some(self.text.as_str()) || (old.is_none() && self.text.trim().is_empty()))
    }
}

impl Wanted {
    /// Stage: conservation. Every line of the sources is in what is about to be written
    /// (`lines_stored` counted); `Err` naming a missing line, before anything is written.
    fn check(
        &self,
        pending: &[Pending<'_>],
        progress: &mut Progress<'_>,
        report: &mut ImportReport,
    ) -> Result<()> {
        let mut stored: HashSet<String> = HashSet::new();
        for (i, p) in pending.iter().enumerate() {
            progress.step(ImportStage::Check, i, pending.len());
            let back = MemoryDoc::parse(&p.target.doc.path(), &p.text)?;
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
        progress.step(ImportStage::Check, pending.len(), pending.len());
        report.lines_stored = self.0.iter().filter(|k| stored.contains(*k)).count();
        if let Some(missing) = self.0.iter().find(|k| !stored.contains(*k)) {
            return Err(Error::new(
                ErrorKind::Backend,
                "memory.import",
                format!(
                    "import would not store the line {missing:?} ({} of {} lines); nothing was \
                     written",
                    report.lines_stored, report.lines_in
                ),
            ));
        }
        Ok(())
    }
}

/// Stage: write the changed documents in order, each read back (in a dry run, only plan).
fn write_pending(
    store: &dyn MemoryStore,
    pending: &[Pending<'_>],
    dry_run: bool,
    progress: &mut Progress<'_>,
    report: &mut ImportReport,
) -> Result<()> {
    let writes = if dry_run {
        0
    } else {
        pending.iter().filter(|p| p.changed()).count()
    };
    progress.step(ImportStage::Write, 0, writes);
    for p in pending.iter().filter(|p| p.changed()) {
        let (t, text) = (p.target, &p.text);
        report.plan.push(PlannedDoc {
            path: t.doc.path(),
            bytes_before: t.old.as_ref().map_or(0, String::len),
            bytes_after: text.len(),
            entries_added: t.entries_added,
            lines_added: t.lines_added,
        });
        if dry_run {
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
        progress.step(ImportStage::Write, report.plan.len(), writes);
    }
    Ok(())
}

fn log_report(report: &ImportReport) {
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
}

/// Moves cold's oldest entries (then its free-text chunks, from the top) to the archive until
/// cold fits `cap`.
fn overflow_to_archive(
    cold: &mut Target,
    archive: &mut Target,
    cap: usize,
    warnings: &mut Vec<Problem>,
) {
    let size = cold.parsed.to_text().len();
    if size <= cap {
        return;
    }
    let take = oldest_over(&cold.parsed, size, cap);
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
    free_text_to_archive(cold, archive, cap);
}

/// The positions of the entries to take out of `doc` (of `size` bytes) to bring it within
/// `cap`: undated first (their age is unknown), then oldest first.
fn oldest_over(doc: &MemoryDoc, mut size: usize, cap: usize) -> HashSet<usize> {
    let mut order: Vec<(Option<Timestamp>, usize)> = doc
        .items
        .iter()
        .enumerate()
        .filter_map(|(i, it)| match it {
            Item::Entry(e) => Some((e.date, i)),
            Item::Line(_) => None,
        })
        .collect();
    order.sort();
    let mut take: HashSet<usize> = HashSet::new();
    for (_, i) in order {
        if size <= cap {
            break;
        }
        if let Item::Entry(e) = &doc.items[i] {
            size = size.saturating_sub(e.prompt_len() + 60);
            take.insert(i);
        }
    }
    take
}

/// Free text alone over the cap: moves chunks after the first, from the top, to the archive.
fn free_text_to_archive(cold: &mut Target, archive: &mut Target, cap: usize) {
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

/// Splits the main wiki document so that it stays within `cap`, its overflow going to new
/// continuation documents (numbered after the `rest` that exist); returns them.
fn split_wiki(
    topic: &TopicName,
    main: &mut Target,
    rest: &mut [Target],
    cap: usize,
) -> Result<Vec<Target>> {
    if main.parsed.to_text().len() <= cap {
        return Ok(Vec::new());
    }
    let overflow = keep_prefix(&mut main.parsed, cap);
    continuations(topic, rest.len() + 2, overflow, main, cap)
}

/// Keeps in `doc` the longest prefix of its items that fits `cap` (at least one); returns the
/// rest.
fn keep_prefix(doc: &mut MemoryDoc, cap: usize) -> Vec<Item> {
    let items = std::mem::take(&mut doc.items);
    let mut overflow: Vec<Item> = Vec::new();
    for it in items {
        let keep = overflow.is_empty()
            && (doc.items.is_empty() || {
                let mut trial = MemoryDoc {
                    items: doc.items.clone(),
                    problems: Vec::new(),
                };
                trial.items.push(it.clone());
                trial.to_text().len() <= cap
            });
        if keep {
            doc.items.push(it);
        } else {
            overflow.push(it);
        }
    }
    overflow
}

/// The `overflow` of `main` packed into new continuation documents within `cap`, the first
/// numbered `n`.
fn continuations(
    topic: &TopicName,
    mut n: usize,
    overflow: Vec<Item>,
    main: &mut Target,
    cap: usize,
) -> Result<Vec<Target>> {
    let mut extra: Vec<Target> = Vec::new();
    let mut cur: Option<Target> = None;
    for it in overflow {
        let fits = cur.as_ref().is_some_and(|c| {
            let mut trial = c.parsed.clone();
            trial.items.push(it.clone());
            trial.to_text().len() <= cap
        });
        if !fits {
            extra.extend(cur.take());
            let name = topic.continuation(n).ok_or_else(|| {
                Error::new(
                    ErrorKind::InvalidInput,
                    "memory.import",
                    format!("too many continuation documents for wiki topic {topic}"),
                )
            })?;
            n += 1;
            cur = Some(Target::new(DocRef::Wiki(name)));
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
    extra.extend(cur);
    Ok(extra)
}
