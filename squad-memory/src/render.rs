//! Spawn rendering: the `## Memory Context` block, relevance selection, budgets enforced at
//! render time, and the load manifest.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use sha2::{Digest, Sha256};
use squad_model::{AgentName, Timestamp};

use crate::bm25::Scorer;
use crate::entry::{Entry, Fence, Item, MemoryDoc, unindent};
use crate::error::{Error, ErrorKind, Problem, Result};
use crate::index::{LaidEntry, LaidText, LaidUnit, Layout, SearchIndex};
use crate::matrix::{LoadPlan, Situation};
use crate::name::{MemoryId, TopicName};
use crate::store::Tier;

/// Byte budgets and selection limits, enforced when a prompt is rendered. Bytes are the
/// contract; tokens are only estimated (bytes / 4).
///
/// The budgets only cap: what loads from cold, the archive and the wiki is decided by relevance
/// to the task text (a cut-off relative to the best match, then the `top_k` best), or, without
/// a task text, by recency.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Budget {
    /// The hot section's bytes (default 4 KiB).
    pub hot: usize,
    /// Hot plus cold sections' bytes (default 16 KiB); cold (with the archive's matches) gets
    /// what hot leaves.
    pub hot_plus_cold: usize,
    /// Each wiki document loaded by name, and the wiki sections chosen by relevance together
    /// (default 20 KiB); also the size `validate` allows a wiki file.
    pub wiki_doc: usize,
    /// How many sections (entries, parts of long entries, or free-text chunks) of cold, the
    /// archive and the wiki load, together, chosen by relevance or recency (default 10); with a
    /// task text, sections scoring within 3 % of the last one in (near-ties) load too, up to
    /// twice this.
    pub top_k: usize,
    /// The relevance cut-off, in percent of the best match's score: a section scoring less is
    /// not loaded (default 20).
    pub cutoff_percent: u8,
    /// The size a cold file may reach before `validate` reports it (default 64 KiB); the Scribe
    /// and import move the oldest entries to the archive rather than write more.
    pub cold_file: usize,
}

impl Default for Budget {
    fn default() -> Self {
        Self {
            hot: 4 * 1024,
            hot_plus_cold: 16 * 1024,
            wiki_doc: 20 * 1024,
            top_k: 10,
            cutoff_percent: 20,
            cold_file: 64 * 1024,
        }
    }
}

impl Budget {
    /// The file-size cap `validate` applies to a tier's files (none for the archive).
    pub fn file_cap(&self, tier: Tier) -> Option<usize> {
        match tier {
            Tier::Hot => Some(self.hot),
            Tier::Cold => Some(self.cold_file),
            Tier::Wiki => Some(self.wiki_doc),
            Tier::Archive => None,
        }
    }
}

/// A memory file read for a spawn: where it came from and its parsed content.
#[derive(Debug, Clone)]
pub struct Source {
    /// The file as the store names it (`hot/data.md`).
    pub path: String,
    /// The file's size in bytes.
    pub bytes: usize,
    /// The parsed content.
    pub doc: MemoryDoc,
    /// Its search index, when the store had one matching the text ([`Source::with_index`]).
    index: Option<Arc<SearchIndex>>,
    /// `doc` was not parsed: the ranked sections come from the index's layout (which holds
    /// the text), and an entry is parsed from its own range when it is needed
    /// ([`Source::laid_out`]). Only a spawn makes such a source, for a ranked document.
    laid_out: bool,
}

impl Source {
    /// Parses a file's text.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidInput`] with `file:line` problems when the text holds NUL bytes.
    pub fn parse(path: impl Into<String>, text: &str) -> Result<Self> {
        let path = path.into();
        let doc = MemoryDoc::parse(&path, text)?;
        Ok(Self {
            bytes: text.len(),
            path,
            doc,
            index: None,
            laid_out: false,
        })
    }

    /// The source of a ranked document of `bytes` bytes, from its `index`, which was decoded
    /// against the document's text and lays out its sections, and `text`, where they are read
    /// from: nothing is parsed now and `doc` stays empty (only [`render`]'s ranked tiers read
    /// such a source, through the layout); an entry is parsed from its own range of the text
    /// when it is needed. `Err` gives the index back when it has no layout.
    pub(crate) fn laid_out(
        path: String,
        bytes: usize,
        text: LaidText,
        mut index: Box<SearchIndex>,
    ) -> std::result::Result<Self, Box<SearchIndex>> {
        let Some(layout) = index.layout.as_mut() else {
            return Err(index);
        };
        layout.text = text;
        Ok(Self {
            path,
            bytes,
            doc: MemoryDoc::default(),
            index: Some(Arc::from(index)),
            laid_out: true,
        })
    }

    /// [`Source::parse`] with an index already decoded against `text`.
    pub(crate) fn with_decoded(
        path: impl Into<String>,
        text: &str,
        index: Option<SearchIndex>,
    ) -> Result<Self> {
        let mut src = Self::parse(path, text)?;
        src.index = index.map(Arc::new);
        Ok(src)
    }

    /// The layout of a source made by [`Source::laid_out`].
    pub(crate) fn layout(&self) -> Option<&Layout> {
        if !self.laid_out {
            return None;
        }
        self.index.as_ref().and_then(|i| i.layout.as_ref())
    }

    /// Parses a file's text with its search index (what
    /// [`MemoryStore::read_index`](crate::MemoryStore::read_index) returned for it): the index
    /// is used to score the file's sections when it matches `text` and is sound throughout
    /// (see [`crate::index_matches`]), and ignored otherwise. The rendering is the same either
    /// way.
    ///
    /// # Errors
    ///
    /// As [`Source::parse`].
    pub fn with_index(path: impl Into<String>, text: &str, index: Option<Vec<u8>>) -> Result<Self> {
        let mut src = Self::parse(path, text)?;
        src.index = index
            .and_then(|b| SearchIndex::decode(b, text))
            .filter(SearchIndex::sound)
            .map(Arc::new);
        Ok(src)
    }

    /// Whether a matching search index was given ([`Source::with_index`]).
    pub fn has_index(&self) -> bool {
        self.index.is_some()
    }
}

/// Everything a spawn may load, already read and parsed.
#[derive(Debug, Clone)]
pub struct SpawnInputs {
    /// The agent being spawned.
    pub agent: AgentName,
    /// Its hot file, if it exists.
    pub hot: Option<Source>,
    /// Its cold file, if it exists and is wanted.
    pub cold: Option<Source>,
    /// Its archive, if it exists and cold is wanted (searched with cold).
    pub archive: Option<Source>,
    /// Wiki documents available to choose from (the named topics, or all of them for ranking).
    pub wiki: Vec<(TopicName, Source)>,
    /// Documents that could not be read (malformed, a symlink), reported in the manifest.
    pub skipped: Vec<Problem>,
}

/// Why something was left out of a prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Reason {
    /// It did not fit the tier's byte budget.
    Budget,
    /// It is superseded by another entry; superseded entries are never loaded.
    Superseded,
    /// The text was cut at the budget because the lines that are always kept exceed it.
    Truncated,
    /// The situation loads the wiki but no topic was named and no task was given.
    NoTopic,
    /// It scored below the relevance cut-off for the task (or not at all).
    NotRelevant,
    /// It was relevant but ranked below the `top_k` loaded (or, without a task, older).
    Rank,
    /// An exact duplicate of an item loaded (same id, or the same heading and body).
    Duplicate,
}

/// Why something was loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum LoadReason {
    /// Hot text: always loaded.
    Hot,
    /// A line stating the current situation, kept whatever the budget.
    Pinned,
    /// Among the best matches for the task.
    Relevant,
    /// Among the newest (no task text to rank by).
    Newest,
    /// Part of a wiki topic named by the plan.
    Topic,
}

/// One item loaded into a prompt, and why.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Loaded {
    /// The tier it comes from.
    pub tier: Tier,
    /// The file it is in.
    pub file: String,
    /// The entry id, or `line <n>` for free text.
    pub item: String,
    /// Its heading or first line.
    pub title: String,
    /// The bytes it takes in the prompt.
    pub bytes: usize,
    /// Its relevance score for the task, when ranked.
    pub score: Option<f64>,
    /// Why it loaded.
    pub reason: LoadReason,
}

/// One thing left out of a prompt, and why.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct LeftOut {
    /// The tier it belongs to.
    pub tier: Tier,
    /// The file it is in (empty when none).
    pub file: String,
    /// The entry id, `line <n>`, or empty.
    pub item: String,
    /// Its heading or first line (empty when none).
    pub title: String,
    /// The bytes it would have taken.
    pub bytes: usize,
    /// Its relevance score for the task, when ranked.
    pub score: Option<f64>,
    /// Why.
    pub reason: Reason,
}

/// How much of each [`LeftOut`] a render fills in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum LeftOutDetail {
    /// Everything: the file, the item and the title of each thing left out.
    #[default]
    Full,
    /// Only what the prompt's notices count: each thing's tier, bytes, score and reason, with
    /// its `file`, `item` and `title` empty. For a caller that prints only the prompt, which is
    /// the same byte for byte; a ranked spawn leaves out thousands of sections, and naming each
    /// one costs about a tenth of it.
    Counts,
}

/// The manifest's left-out list as a render builds it, filled in as its [`LeftOutDetail`]
/// asks.
#[derive(Debug, Default)]
pub(crate) struct LeftList {
    items: Vec<LeftOut>,
    detail: LeftOutDetail,
}

impl LeftList {
    pub(crate) fn new(detail: LeftOutDetail) -> Self {
        Self {
            items: Vec::new(),
            detail,
        }
    }

    /// Adds `u`, left out with `score` for `reason`.
    fn unit(&mut self, u: &Unit<'_>, score: Option<f64>, reason: Reason) {
        let l = match self.detail {
            LeftOutDetail::Full => u.left(score, reason),
            LeftOutDetail::Counts => LeftOut {
                tier: u.tier,
                file: String::new(),
                item: String::new(),
                title: String::new(),
                bytes: u.bytes,
                score,
                reason,
            },
        };
        self.items.push(l);
    }

    /// Adds what `layout` records as dropped from `file` of `tier`.
    fn dropped(&mut self, tier: Tier, file: &str, layout: &Layout) {
        let full = self.detail == LeftOutDetail::Full;
        self.items.extend(layout.dropped.iter().map(|d| LeftOut {
            tier,
            file: if full { file.to_owned() } else { String::new() },
            item: if full {
                layout.name(d.item).to_owned()
            } else {
                String::new()
            },
            title: if full {
                layout.name(d.title).to_owned()
            } else {
                String::new()
            },
            bytes: d.bytes,
            score: None,
            reason: d.reason,
        }));
    }

    pub(crate) fn into_vec(self) -> Vec<LeftOut> {
        self.items
    }
}

impl std::ops::Deref for LeftList {
    type Target = Vec<LeftOut>;

    fn deref(&self) -> &Vec<LeftOut> {
        &self.items
    }
}

impl std::ops::DerefMut for LeftList {
    fn deref_mut(&mut self) -> &mut Vec<LeftOut> {
        &mut self.items
    }
}

/// A file the prompt loaded text from.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FileReport {
    /// The file as the store names it.
    pub path: String,
    /// SHA-256 of the text the prompt took from the file (its items as they appear in the
    /// prompt, in prompt order), lowercase hex: what this spawn saw of the file. Text that was
    /// read but not loaded is not hashed.
    pub sha256: String,
}

/// What one tier put into a prompt.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct TierReport {
    /// Bytes of the tier's content in the prompt.
    pub bytes: usize,
    /// `bytes / 4`, rounded up: an estimate, never enforced.
    pub estimated_tokens: usize,
    /// The files the tier's content in the prompt came from (a file read that gave nothing is
    /// not listed; its sections are in [`Manifest::left_out`]).
    pub files: Vec<FileReport>,
    /// The entries loaded.
    pub entries: Vec<MemoryId>,
}

/// The machine-readable account of a rendered prompt.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Manifest {
    /// The situation rendered for.
    pub situation: Situation,
    /// Per tier read: bytes, estimated tokens, files and entries.
    pub tiers: BTreeMap<Tier, TierReport>,
    /// Everything loaded, in prompt order, with its score and why.
    pub loaded: Vec<Loaded>,
    /// Everything left out, with its score and why.
    pub left_out: Vec<LeftOut>,
    /// Documents skipped because they could not be read (malformed, a symlink).
    pub skipped: Vec<Problem>,
    /// Bytes of the whole prompt block.
    pub total_bytes: usize,
    /// `total_bytes / 4`, rounded up.
    pub estimated_tokens: usize,
    /// `true` when the loaded entries' `last_loaded` was recorded (`--touch`).
    pub touched: bool,
}

/// A rendered memory block and its manifest.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Rendered {
    /// The `## Memory Context` block.
    pub prompt: String,
    /// What went in and what was left out.
    pub manifest: Manifest,
}

/// Lines of the hot tier that state the current situation; they are kept when hot overflows.
pub const PINNED_PREFIXES: [&str; 4] = [
    "current task:",
    "active decisions:",
    "blockers:",
    "talking to:",
];

/// `true` when `line` is one of the [`PINNED_PREFIXES`] lines (case-insensitive, after list
/// markers). Never slices inside a character.
pub fn is_pinned(line: &str) -> bool {
    starts_with_label(line, &PINNED_PREFIXES)
}

/// `true` when `line` starts with one of `labels` (lowercase ASCII), case-insensitive, after
/// list markers. Never slices inside a character.
pub(crate) fn starts_with_label(line: &str, labels: &[&str]) -> bool {
    let l = line.trim_start().trim_start_matches(['-', '*', ' ']);
    labels.iter().any(|p| {
        l.get(..p.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(p))
    })
}

fn estimate(bytes: usize) -> usize {
    bytes.div_ceil(4)
}

/// The longest prefix of `s` of at most `max` bytes that ends on a character boundary,
/// preferably at the end of a line.
pub(crate) fn cut(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    let head = &s[..end];
    match head.rfind('\n') {
        Some(nl) if nl > 0 => &head[..=nl],
        _ => head,
    }
}

/// The entry a unit comes from: parsed with its document, or laid out by the document's
/// search index and parsed from its own range when first needed ([`Source::laid_out`]).
#[derive(Debug, Clone, Copy)]
pub(crate) enum EntryRef<'a> {
    /// An entry of a parsed document.
    Parsed(&'a Entry),
    /// An entry of a laid-out document.
    Laid(&'a Layout, &'a LaidEntry),
}

impl<'a> EntryRef<'a> {
    /// The entry (parsed now if it was not yet).
    pub(crate) fn get(self) -> &'a Entry {
        match self {
            EntryRef::Parsed(e) => e,
            EntryRef::Laid(l, e) => l.entry(e),
        }
    }

    /// Its id (without parsing it).
    pub(crate) fn id(self) -> &'a str {
        match self {
            EntryRef::Parsed(e) => e.id.as_str(),
            EntryRef::Laid(l, e) => l.name(e.id),
        }
    }

    /// Whether `self` and `other` are the same entry of the same document.
    fn same(self, other: Self) -> bool {
        match (self, other) {
            (EntryRef::Parsed(a), EntryRef::Parsed(b)) => std::ptr::eq(a, b),
            (EntryRef::Laid(_, a), EntryRef::Laid(_, b)) => std::ptr::eq(a, b),
            _ => false,
        }
    }
}

/// The text a unit puts into a prompt; an entry's is written only if it loads.
#[derive(Debug)]
pub(crate) enum Text<'a> {
    /// Already built.
    Owned(String),
    /// Already built, kept elsewhere (a laid-out chunk's text).
    Str(&'a str),
    /// A laid-out entry, whole or part `i` of `n` (its parts cut when it is written), and the
    /// bytes it takes.
    Laid {
        entry: EntryRef<'a>,
        piece: Option<(usize, usize)>,
        bytes: usize,
    },
    /// An entry whole: `#### <heading>` and its body.
    Entry(&'a Entry),
    /// A part of a long entry: `#### <heading> (part i of n)` and the part's lines.
    Part {
        entry: &'a Entry,
        i: usize,
        n: usize,
        piece: Piece<'a>,
    },
}

impl Text<'_> {
    /// The bytes the text takes in a prompt.
    fn len(&self) -> usize {
        match self {
            Text::Owned(s) => s.len(),
            Text::Str(s) => s.len(),
            Text::Laid { bytes, .. } => *bytes,
            Text::Entry(e) => e.prompt_len(),
            Text::Part { entry, i, n, piece } => {
                5 + entry.heading.len() + part_label_len(*i, *n) + 1 + piece.bytes
            }
        }
    }

    /// Appends the text to `out`.
    fn write(&self, out: &mut String) {
        match self {
            Text::Owned(s) => out.push_str(s),
            Text::Str(s) => out.push_str(s),
            Text::Laid { entry, piece, .. } => {
                let e = entry.get();
                match piece {
                    None => e.write_prompt(out),
                    Some((i, n)) => {
                        // A crafted index may name a part that is not there: nothing is written.
                        if let Some(p) = i
                            .checked_sub(1)
                            .and_then(|k| pieces(&e.body).get(k).copied())
                        {
                            Text::Part {
                                entry: e,
                                i: *i,
                                n: *n,
                                piece: p,
                            }
                            .write(out);
                        }
                    }
                }
            }
            Text::Entry(e) => e.write_prompt(out),
            Text::Part { entry, i, n, piece } => {
                out.push_str("#### ");
                out.push_str(&entry.heading);
                push_part_label(out, *i, *n);
                out.push('\n');
                piece.write(out);
                out.push('\n');
            }
        }
    }

    #[cfg(test)]
    fn rendered(&self) -> String {
        let mut s = String::with_capacity(self.len());
        self.write(&mut s);
        s
    }
}

/// The item naming parts `first..=last` of the `n` of the entry `id`: its id when they are all of
/// them, else `<id> (parts <first>-<last> of <n>)`.
fn parts_item(id: &str, first: usize, last: usize, n: usize) -> String {
    let mut s = id.to_owned();
    if first > 1 || last < n {
        s.push_str(" (parts ");
        push_number(&mut s, first);
        s.push('-');
        push_number(&mut s, last);
        s.push_str(" of ");
        push_number(&mut s, n);
        s.push(')');
    }
    s
}

/// ` (part i of n)`, appended to `out`.
fn push_part_label(out: &mut String, i: usize, n: usize) {
    out.push_str(" (part ");
    push_number(out, i);
    out.push_str(" of ");
    push_number(out, n);
    out.push(')');
}

/// The length of ` (part i of n)`.
fn part_label_len(i: usize, n: usize) -> usize {
    let digits = |mut x: usize| {
        let mut d = 1;
        while x >= 10 {
            x /= 10;
            d += 1;
        }
        d
    };
    " (part ".len() + digits(i) + " of ".len() + digits(n) + 1
}

/// Appends `n` in decimal (without the formatting machinery: it runs for every part).
fn push_number(out: &mut String, n: usize) {
    let mut digits = [0u8; 20];
    let mut k = digits.len();
    let mut x = n;
    loop {
        k -= 1;
        // `x % 10` is a single digit.
        digits[k] = b'0' + (x % 10) as u8;
        x /= 10;
        if x == 0 {
            break;
        }
    }
    out.extend(digits[k..].iter().map(|&d| char::from(d)));
}

fn part_label(i: usize, n: usize) -> String {
    let mut s = String::new();
    push_part_label(&mut s, i, n);
    s
}

/// What a unit is scored on: an entry's heading (twice: it names the topic) and its body or
/// the part of it the unit holds; or a free-text chunk's title and text.
#[derive(Debug)]
pub(crate) enum Search<'a> {
    /// Heading and body (or part).
    Entry { heading: &'a str, body: &'a str },
    /// Title and text.
    Chunk,
    /// A laid-out entry's heading and body (or part), read when the unit is scored from its
    /// text rather than from the index.
    Laid,
    /// Not ranked.
    None,
}

/// One loadable piece of a memory file: an entry, a free line (hot), or a chunk of free text
/// under one heading (cold, archive, wiki).
#[derive(Debug)]
pub(crate) struct Unit<'a> {
    pub(crate) tier: Tier,
    pub(crate) file: &'a str,
    /// The 1-based line of `file` the unit starts on: an entry's heading (for each of its
    /// parts), the free line, the first line of the chunk (for each of its parts); 0 for an
    /// entry built in code.
    pub(crate) line: usize,
    pub(crate) item: Cow<'a, str>,
    pub(crate) title: Cow<'a, str>,
    pub(crate) text: Text<'a>,
    /// `text.len()`.
    pub(crate) bytes: usize,
    pub(crate) date: Option<Timestamp>,
    /// `date` in Unix milliseconds (`i64::MIN` for none) when it is known without `date`
    /// (a laid-out unit has only this).
    pub(crate) date_ms: Option<i64>,
    pub(crate) entry: Option<EntryRef<'a>>,
    pub(crate) pinned: bool,
    /// Which part of a long section this is (`(i, n)`, 1-based), if it is one.
    pub(crate) piece: Option<(usize, usize)>,
    pub(crate) search: Search<'a>,
}

impl<'a> Unit<'a> {
    fn new(
        tier: Tier,
        file: &'a str,
        line: usize,
        item: Cow<'a, str>,
        title: Cow<'a, str>,
        text: Text<'a>,
    ) -> Self {
        Self {
            tier,
            file,
            line,
            item,
            title,
            bytes: text.len(),
            text,
            date: None,
            date_ms: None,
            entry: None,
            pinned: false,
            piece: None,
            search: Search::None,
        }
    }

    /// The texts the unit is scored on, each with how many times its words count (the first
    /// `n` of the array).
    pub(crate) fn search_texts(&self) -> ([(&str, u32); 2], usize) {
        match &self.search {
            Search::Entry { heading, body } => ([(heading, 2), (body, 1)], 2),
            Search::Chunk => match &self.text {
                Text::Owned(t) => ([(&self.title, 1), (t, 1)], 2),
                Text::Str(t) => ([(&self.title, 1), (t, 1)], 2),
                _ => ([(&self.title, 1), ("", 0)], 1),
            },
            Search::Laid => match (self.entry, self.piece) {
                (Some(e), None) => {
                    let e = e.get();
                    ([(&e.heading, 2), (&e.body, 1)], 2)
                }
                (Some(e), Some((i, _))) => {
                    let e = e.get();
                    let body = i
                        .checked_sub(1)
                        .and_then(|k| pieces(&e.body).get(k).map(|p| p.body))
                        .unwrap_or_default();
                    ([(&e.heading, 2), (body, 1)], 2)
                }
                (None, _) => ([("", 0), ("", 0)], 0),
            },
            Search::None => ([("", 0), ("", 0)], 0),
        }
    }

    /// Adds the unit's text to the document `scorer` has started.
    pub(crate) fn feed(&self, scorer: &mut Scorer) {
        let (texts, n) = self.search_texts();
        for &(t, times) in &texts[..n] {
            scorer.feed(t, times);
        }
    }

    fn left(&self, score: Option<f64>, reason: Reason) -> LeftOut {
        LeftOut {
            tier: self.tier,
            file: self.file.to_owned(),
            item: self.item_name(),
            title: self.title.clone().into_owned(),
            bytes: self.bytes,
            score,
            reason,
        }
    }

    /// The item as the manifest names it: an entry's part is `<id> (part i of n)`.
    pub(crate) fn item_name(&self) -> String {
        match (self.entry, self.piece) {
            (Some(e), Some((i, n))) => {
                let id = e.id();
                let mut s = String::with_capacity(id.len() + 16);
                s.push_str(id);
                push_part_label(&mut s, i, n);
                s
            }
            _ => self.item.clone().into_owned(),
        }
    }

    fn loaded(&self, score: Option<f64>, reason: LoadReason) -> Loaded {
        Loaded {
            tier: self.tier,
            file: self.file.to_owned(),
            item: self.item_name(),
            title: self.title.clone().into_owned(),
            bytes: self.bytes,
            score,
            reason,
        }
    }
}

fn first_line(s: &str) -> String {
    let l = s.lines().next().unwrap_or("").trim();
    crate::render::cut(l, 120).to_owned()
}

fn entry_unit<'a>(tier: Tier, src: &'a Source, e: &'a Entry) -> Unit<'a> {
    let mut u = Unit::new(
        tier,
        &src.path,
        e.line,
        Cow::Borrowed(e.id.as_str()),
        Cow::Borrowed(&e.heading),
        Text::Entry(e),
    );
    u.date = e.date;
    u.entry = Some(EntryRef::Parsed(e));
    u.search = Search::Entry {
        heading: &e.heading,
        body: &e.body,
    };
    u
}

/// A section longer than this many bytes is offered in parts.
const PIECE_OVER: usize = 1_000;
/// The size parts of a long section are packed to.
const PIECE_TARGET: usize = 700;

/// The blocks of a section's lines: paragraphs, cut at blank lines, before `####` headings and
/// before a line opening with a bold label (`**Fix:**`); never inside a code fence.
fn blocks<'t>(lines: &[&'t str]) -> Vec<Vec<&'t str>> {
    let mut out: Vec<Vec<&'t str>> = Vec::new();
    let mut cur: Vec<&'t str> = Vec::new();
    let mut fence: Option<Fence> = None;
    for &l in lines {
        if let Some(f) = fence {
            if f.closes(l) {
                fence = None;
            }
            cur.push(l);
            continue;
        }
        let opens = Fence::opens(l);
        let starts = l.trim().is_empty() || l.starts_with("####") || l.starts_with("**");
        if starts && cur.iter().any(|c| !c.trim().is_empty()) {
            out.push(std::mem::take(&mut cur));
        }
        if !l.trim().is_empty() {
            cur.push(l);
        }
        fence = opens;
    }
    if cur.iter().any(|c| !c.trim().is_empty()) {
        out.push(cur);
    }
    out
}

/// Packs blocks into parts of about [`PIECE_TARGET`] bytes, in order; a block much larger
/// than that is cut at line ends (outside a code fence it would break, only at its end).
fn pack<'t>(blocks: Vec<Vec<&'t str>>) -> Vec<Vec<&'t str>> {
    let size = |ls: &[&str]| ls.iter().map(|l| l.len() + 1).sum::<usize>();
    let mut split: Vec<Vec<&'t str>> = Vec::new();
    for b in blocks {
        let fenced = b.first().is_some_and(|l| Fence::opens(l).is_some());
        if size(&b) > 2 * PIECE_TARGET && !fenced {
            let mut cur = Vec::new();
            for l in b {
                if size(&cur) + l.len() > PIECE_TARGET && !cur.is_empty() {
                    split.push(std::mem::take(&mut cur));
                }
                cur.push(l);
            }
            if !cur.is_empty() {
                split.push(cur);
            }
        } else {
            split.push(b);
        }
    }
    let mut out: Vec<Vec<&'t str>> = Vec::new();
    for b in split {
        match out.last_mut() {
            Some(last)
                if size(last) + size(&b) <= PIECE_TARGET
                    && !b.first().is_some_and(|l| opens_part(l)) =>
            {
                last.extend(b)
            }
            _ => out.push(b),
        }
    }
    out
}

/// `true` for a line that starts a part of its own: a heading (`####` and below; a heading of
/// a higher level already starts its own section).
fn opens_part(line: &str) -> bool {
    line.starts_with("####")
}

/// `true` for a line holding only whitespace (most lines are told by their first byte).
fn blank(l: &str) -> bool {
    match l.as_bytes().first() {
        None => true,
        Some(b) if b.is_ascii_graphic() => false,
        Some(_) => l.trim().is_empty(),
    }
}

/// The lines of `s` as `str::lines` gives them, each with the byte offsets where it starts and
/// where the next line starts.
fn lines_at(s: &str) -> impl Iterator<Item = (usize, &str, usize)> {
    let mut at = 0;
    let mut ends = memchr::memchr_iter(b'\n', s.as_bytes());
    std::iter::from_fn(move || {
        let (content, next) = match ends.next() {
            // `at` and `e` sit next to a line end or at the ends: character boundaries.
            Some(e) => {
                let l = &s[at..e];
                (l.strip_suffix('\r').unwrap_or(l), e + 1)
            }
            None if at < s.len() => (&s[at..], s.len()),
            None => return None,
        };
        let line = (at, content, next);
        at = next;
        Some(line)
    })
}

/// A part of a long entry's body, as [`pack`] of [`blocks`] makes it from the body's lines,
/// without copying: whole lines of the body with their line ends (blank lines outside code
/// fences are not part of it when written), the fence open where it starts, and the bytes it
/// takes written (each line with one line end).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Piece<'a> {
    body: &'a str,
    fence: Option<Fence>,
    bytes: usize,
}

impl Piece<'_> {
    /// Writes the part's lines, joined by line ends (none after the last).
    fn write(&self, out: &mut String) {
        let mut fence = self.fence;
        let mut first = true;
        for (_, l, _) in lines_at(self.body) {
            let keep = match fence {
                Some(f) => {
                    if f.closes(l) {
                        fence = None;
                    }
                    true
                }
                None => {
                    fence = Fence::opens(l);
                    !blank(l)
                }
            };
            if keep {
                if !first {
                    out.push('\n');
                }
                out.push_str(l);
                first = false;
            }
        }
    }
}

/// A span of a body under construction: byte range, fence open at its start, bytes written.
#[derive(Debug, Clone, Copy)]
struct Span {
    start: usize,
    end: usize,
    fence: Option<Fence>,
    bytes: usize,
    fenced: bool,
    /// It starts with a heading: never merged into the part before it.
    heading: bool,
}

impl Span {
    /// Adds the line `line`, which starts at `at` and is followed by the next at `next`.
    fn grow(
        cur: &mut Option<Span>,
        (at, line, next): (usize, &str, usize),
        fence: Option<Fence>,
        fenced: bool,
    ) {
        let s = cur.get_or_insert(Span {
            start: at,
            end: at,
            fence,
            bytes: 0,
            fenced,
            heading: opens_part(line),
        });
        s.end = next;
        s.bytes += line.len() + 1;
    }
}

/// The parts of a long entry's body: the same parts as `pack(blocks(lines))`, as slices.
fn pieces(body: &str) -> Vec<Piece<'_>> {
    // Blocks are cut, split when large and merged as they come: one pass, one list.
    let mut out: Vec<Span> = Vec::new();
    let merge = |out: &mut Vec<Span>, p: Span| match out.last_mut() {
        Some(last) if last.bytes + p.bytes <= PIECE_TARGET && !p.heading => {
            last.end = p.end;
            last.bytes += p.bytes;
        }
        _ => out.push(p),
    };
    let block = |out: &mut Vec<Span>, b: Span| {
        if b.bytes > 2 * PIECE_TARGET && !b.fenced {
            let mut cur: Option<Span> = None;
            let mut fence: Option<Fence> = None;
            for (at, l, next) in lines_at(&body[b.start..b.end]) {
                if let Some(c) = cur
                    && c.bytes + l.len() > PIECE_TARGET
                {
                    merge(out, c);
                    cur = None;
                }
                Span::grow(&mut cur, (b.start + at, l, b.start + next), fence, false);
                fence = Fence::step(fence, l);
            }
            if let Some(c) = cur {
                merge(out, c);
            }
        } else {
            merge(out, b);
        }
    };
    let mut cur: Option<Span> = None;
    let mut fence: Option<Fence> = None;
    for (at, l, next) in lines_at(body) {
        if let Some(f) = fence {
            if f.closes(l) {
                fence = None;
            }
            Span::grow(&mut cur, (at, l, next), None, false);
            continue;
        }
        let opens = Fence::opens(l);
        let blank = blank(l);
        if (blank || l.starts_with("####") || l.starts_with("**"))
            && let Some(b) = cur.take()
        {
            block(&mut out, b);
        }
        if !blank {
            Span::grow(&mut cur, (at, l, next), None, opens.is_some());
        }
        fence = opens;
    }
    if let Some(b) = cur {
        block(&mut out, b);
    }
    out.into_iter()
        .map(|p| Piece {
            body: &body[p.start..p.end],
            fence: p.fence,
            bytes: p.bytes,
        })
        .collect()
}

/// The units of one entry: itself, or its parts when it is long.
fn entry_units<'a>(tier: Tier, src: &'a Source, e: &'a Entry, out: &mut Vec<Unit<'a>>) {
    let whole = entry_unit(tier, src, e);
    if whole.bytes <= PIECE_OVER {
        out.push(whole);
        return;
    }
    let parts = pieces(&e.body);
    let n = parts.len();
    if n < 2 {
        out.push(whole);
        return;
    }
    out.extend(parts.into_iter().enumerate().map(|(i, piece)| {
        let mut u = Unit::new(
            tier,
            &src.path,
            e.line,
            // `<id> (part i of n)`, written when the part is reported.
            Cow::Borrowed(e.id.as_str()),
            Cow::Borrowed(&e.heading),
            Text::Part {
                entry: e,
                i: i + 1,
                n,
                piece,
            },
        );
        u.date = e.date;
        u.entry = Some(EntryRef::Parsed(e));
        u.piece = Some((i + 1, n));
        u.search = Search::Entry {
            heading: &e.heading,
            body: piece.body,
        };
        u
    }));
}

/// A unit for a free line of hot or a named wiki document.
fn line_unit<'a>(tier: Tier, src: &'a Source, line: usize, text: &'a str) -> Unit<'a> {
    let mut u = Unit::new(
        tier,
        &src.path,
        line,
        Cow::Owned(format!("line {line}")),
        Cow::Owned(first_line(text)),
        Text::Owned(format!("{}\n", text.trim_end())),
    );
    u.pinned = tier == Tier::Hot && is_pinned(text);
    u
}

/// Units of a document loaded in file order (hot, a named wiki topic): each free line alone
/// (so hot's pinned ones can be kept) and each entry, superseded and repeated ids left out.
fn whole_units<'a>(tier: Tier, src: &'a Source, left: &mut LeftList) -> Vec<Unit<'a>> {
    let mut out = Vec::new();
    let mut ids = HashSet::new();
    for item in &src.doc.items {
        match item {
            Item::Line(l) if !l.text.trim().is_empty() => {
                out.push(line_unit(tier, src, l.line, &l.text));
            }
            Item::Line(_) => {}
            Item::Entry(e) => {
                let u = entry_unit(tier, src, e);
                if e.is_superseded() {
                    left.unit(&u, None, Reason::Superseded);
                } else if !ids.insert(&e.id) {
                    left.unit(&u, None, Reason::Duplicate);
                } else {
                    out.push(u);
                }
            }
        }
    }
    out
}

/// The units of one chunk of free text (its lines with their numbers): none when it holds
/// only headings, rules and blank lines; its parts when it is long.
fn chunk_units<'a>(
    tier: Tier,
    src: &'a Source,
    chunk: &[(usize, &'a str)],
    out: &mut Vec<Unit<'a>>,
) {
    let has_text = chunk
        .iter()
        .any(|(_, t)| !t.trim().is_empty() && !unindent(t).starts_with('#') && t.trim() != "---");
    if !has_text {
        return;
    }
    let first = chunk
        .iter()
        .find(|(_, t)| !t.trim().is_empty())
        .map_or((0, ""), |x| *x);
    let title = first_line(unindent(first.1).trim_start_matches('#'));
    let date = crate::date::inside(first.1).map(|f| f.at);
    let lines: Vec<&str> = chunk
        .iter()
        .map(|(_, t)| t.trim_end())
        .filter(|t| !t.trim().is_empty())
        .collect();
    let whole: usize = lines.iter().map(|l| l.len() + 1).sum();
    let parts = if whole > PIECE_OVER {
        pack(blocks(&lines))
    } else {
        vec![lines]
    };
    let n = parts.len();
    for (i, p) in parts.into_iter().enumerate() {
        let mut text = String::new();
        if n > 1 && i > 0 && unindent(first.1).starts_with('#') {
            text.push_str(first.1.trim_end());
            text.push_str(&part_label(i + 1, n));
            text.push('\n');
        }
        for l in &p {
            text.push_str(l);
            text.push('\n');
        }
        let item = if n > 1 {
            format!("line {}{}", first.0, part_label(i + 1, n))
        } else {
            format!("line {}", first.0)
        };
        let mut u = Unit::new(
            tier,
            &src.path,
            first.0,
            Cow::Owned(item),
            Cow::Owned(title.clone()),
            Text::Owned(text),
        );
        u.date = date;
        u.piece = (n > 1).then_some((i + 1, n));
        u.search = Search::Chunk;
        out.push(u);
    }
}

/// Units of a ranked tier: each entry, and the free text cut into chunks at its headings
/// (a chunk holding only a heading carries nothing and is not offered).
pub(crate) fn ranked_units<'a>(tier: Tier, src: &'a Source, left: &mut LeftList) -> Vec<Unit<'a>> {
    let mut out = Vec::new();
    push_ranked_units(tier, src, left, &mut out);
    out
}

/// About how many units [`ranked_units`] makes of `src` (exactly, for a laid-out source), and
/// how many sections it leaves out at most: what to reserve room for.
fn ranked_room(src: &Source) -> (usize, usize) {
    match src.layout() {
        Some(l) => (l.units.len(), l.dropped.len() + l.units.len()),
        None => (src.doc.items.len(), src.doc.items.len()),
    }
}

/// [`ranked_units`], appended to `out` (a unit is large: a pool built in place is not copied
/// as it grows).
fn push_ranked_units<'a>(
    tier: Tier,
    src: &'a Source,
    left: &mut LeftList,
    out: &mut Vec<Unit<'a>>,
) {
    if let Some(layout) = src.layout() {
        laid_units(tier, src, layout, left, out);
        return;
    }
    // At least one unit per entry (a unit is large to move when the list grows).
    out.reserve(src.doc.items.len());
    let mut chunk: Vec<(usize, &'a str)> = Vec::new();
    let flush = |chunk: &mut Vec<(usize, &'a str)>, out: &mut Vec<Unit<'a>>| {
        chunk_units(tier, src, chunk, out);
        chunk.clear();
    };
    let mut ids: HashSet<&MemoryId, foldhash::fast::FixedState> = HashSet::default();
    for item in &src.doc.items {
        match item {
            Item::Line(l) => {
                if unindent(&l.text).starts_with('#') && !chunk.is_empty() {
                    flush(&mut chunk, out);
                }
                chunk.push((l.line, l.text.as_str()));
            }
            Item::Entry(e) => {
                flush(&mut chunk, out);
                if e.is_superseded() {
                    left.unit(&entry_unit(tier, src, e), None, Reason::Superseded);
                } else if !ids.insert(&e.id) {
                    left.unit(&entry_unit(tier, src, e), None, Reason::Duplicate);
                } else {
                    entry_units(tier, src, e, out);
                }
            }
        }
    }
    flush(&mut chunk, out);
}

/// [`ranked_units`] of a laid-out source: the units its index records, nothing parsed.
fn laid_units<'a>(
    tier: Tier,
    src: &'a Source,
    layout: &'a Layout,
    left: &mut LeftList,
    out: &mut Vec<Unit<'a>>,
) {
    left.dropped(tier, &src.path, layout);
    out.reserve(layout.units.len());
    for lu in &layout.units {
        let u = match lu {
            LaidUnit::Entry {
                entry,
                piece,
                bytes,
            } => {
                // The decoder checked that the entry is there.
                let Some(e) = layout.entries.get(*entry) else {
                    continue;
                };
                let entry = EntryRef::Laid(layout, e);
                let mut u = Unit::new(
                    tier,
                    &src.path,
                    e.line,
                    Cow::Borrowed(layout.name(e.id)),
                    Cow::Borrowed(layout.name(e.heading)),
                    Text::Laid {
                        entry,
                        piece: *piece,
                        bytes: *bytes,
                    },
                );
                u.date_ms = Some(e.date);
                u.entry = Some(entry);
                u.piece = *piece;
                u.search = Search::Laid;
                u
            }
            LaidUnit::Chunk(c) => {
                let mut u = Unit::new(
                    tier,
                    &src.path,
                    c.line,
                    Cow::Borrowed(layout.name(c.item)),
                    Cow::Borrowed(layout.name(c.title)),
                    Text::Str(layout.name(c.text)),
                );
                u.date_ms = Some(c.date);
                u.piece = c.piece;
                u.search = Search::Chunk;
                u
            }
        };
        out.push(u);
    }
}

/// Renders the memory block for `plan` from `inputs` within `budget`.
///
/// Pure and deterministic: no I/O, no clock.
///
/// - **Hot** is loaded as written (entries as `#### <heading>` and their body). Over its
///   budget, the lines stating the current situation ([`PINNED_PREFIXES`]) are kept, and the
///   oldest material goes first: dated entries oldest first, then undated text from the older
///   end of the file (the end its dates say is older; the top when it holds none). If the
///   pinned lines alone exceed the budget, the text is cut at a character boundary.
/// - **Cold, the archive and the wiki** (those the plan includes; wiki topics named by the plan
///   load whole) are offered section by section: entries, and free text chunked at its
///   headings. With a task text every section is scored (BM25 over stemmed heading and body);
///   those under `cutoff_percent` of the best score are left out as `not_relevant`, then the
///   `top_k` best load, best first. Without a task text the `top_k` newest load. The budgets
///   only cap what is chosen: cold and the archive share `hot_plus_cold` minus hot, the wiki
///   has `wiki_doc`.
/// - Superseded entries and exact duplicates never load. Everything loaded and left out is in
///   the manifest with its score and reason; a `> Memory notice:` line per tier says what was
///   left out and why.
///
/// # Errors
///
/// [`ErrorKind::NotFound`] when a named wiki topic is not among `inputs.wiki`.
pub fn render(plan: &LoadPlan, inputs: &SpawnInputs, budget: &Budget) -> Result<Rendered> {
    render_with(plan, inputs, budget, LeftOutDetail::Full)
}

/// [`render`], with the manifest's left-out list filled in as `detail` asks (the prompt is the
/// same whatever it asks).
///
/// # Errors
///
/// As [`render`].
pub fn render_with(
    plan: &LoadPlan,
    inputs: &SpawnInputs,
    budget: &Budget,
    detail: LeftOutDetail,
) -> Result<Rendered> {
    let tiers = plan.tiers();
    let mut draft = Draft::new(detail);
    let hot_bytes = draft.hot(inputs.hot.as_ref(), budget);
    let offered = Offered::collect(plan, inputs, &mut draft)?;
    let before = draft.left.len();
    let task = plan.task.as_deref();
    let selection = Selection::choose(&offered, task, budget, hot_bytes, &mut draft.left);
    let why = if task.is_some() {
        LoadReason::Relevant
    } else {
        LoadReason::Newest
    };
    if tiers.cold {
        draft.cold(&offered.pool, &selection.chosen, why, inputs);
    }
    if tiers.wiki {
        let mut report = TierReport::default();
        for (topic, src) in &offered.named {
            draft.wiki_topic(topic, src, budget, &mut report);
        }
        if offered.rank_wiki {
            for (topic, src) in &inputs.wiki {
                let sections = (&offered.pool[..], &selection.chosen[..]);
                draft.wiki_sections(topic, src, sections, why, &mut report);
            }
        }
        draft.reports.insert(Tier::Wiki, report);
    }
    let used = Budget {
        top_k: selection.top_k,
        ..*budget
    };
    let left = &draft.left[before..];
    selection_notice(&mut draft.notices, left, &used, selection.cold_budget);
    Ok(draft.finish(plan, inputs))
}

/// A render as it is built: the prompt so far, the manifest's lists, the per-tier reports,
/// and the notices to close the prompt with.
#[derive(Debug)]
struct Draft {
    prompt: String,
    left: LeftList,
    loaded: Vec<Loaded>,
    reports: BTreeMap<Tier, TierReport>,
    notices: Vec<String>,
}

fn pinned_or_hot(u: &Unit<'_>) -> LoadReason {
    if u.pinned {
        LoadReason::Pinned
    } else {
        LoadReason::Hot
    }
}

/// Records a loaded unit's entry in its tier's report (once).
fn note_entry(report: &mut TierReport, u: &Unit<'_>) {
    if let Some(e) = u.entry
        && !report.entries.iter().any(|x| x.as_str() == e.id())
    {
        report.entries.push(e.get().id.clone());
    }
}

impl Draft {
    fn new(detail: LeftOutDetail) -> Self {
        Self {
            prompt: String::from("## Memory Context\n### Hot (current session)\n"),
            left: LeftList::new(detail),
            loaded: Vec::new(),
            reports: BTreeMap::new(),
            notices: Vec::new(),
        }
    }

    /// Stage: the hot section, whole within its budget; returns the bytes it took.
    fn hot(&mut self, src: Option<&Source>, budget: &Budget) -> usize {
        let mut report = TierReport::default();
        if let Some(src) = src {
            let before = self.left.len();
            let text = render_whole(
                Tier::Hot,
                src,
                budget.hot,
                pinned_or_hot,
                &mut self.left,
                &mut self.loaded,
                &mut report,
            );
            hot_notice(&mut self.notices, &self.left[before..], budget.hot);
            self.prompt.push_str(&text);
            report.bytes = text.len();
            if !text.is_empty() {
                report.files.push(file_report(&src.path, &text));
            }
        } else {
            self.prompt.push_str("(no hot memory)\n");
        }
        report.estimated_tokens = estimate(report.bytes);
        let bytes = report.bytes;
        self.reports.insert(Tier::Hot, report);
        bytes
    }

    /// The wiki is loaded by ranking, but there is no task to rank by.
    fn no_topic(&mut self) {
        self.left.push(LeftOut {
            tier: Tier::Wiki,
            file: String::new(),
            item: String::new(),
            title: String::new(),
            bytes: 0,
            score: None,
            reason: Reason::NoTopic,
        });
        self.notices.push(
            "> Memory notice: this situation loads the wiki, but no topic was named and no \
             task was given to rank by; no wiki document loaded."
                .to_owned(),
        );
    }

    /// Stage: the cold section, the chosen sections of cold and the archive, in order.
    fn cold(
        &mut self,
        pool: &[Unit<'_>],
        chosen: &[(usize, Option<f64>)],
        why: LoadReason,
        inputs: &SpawnInputs,
    ) {
        self.prompt.push_str("### Cold (summarized history)\n");
        let mut any = false;
        let mut hashes: Vec<(Tier, &str, Sha256)> = Vec::new();
        for &(i, score) in chosen {
            let u = &pool[i];
            if u.tier == Tier::Wiki {
                continue;
            }
            any = true;
            let at = self.prompt.len();
            u.text.write(&mut self.prompt);
            let k = match hashes.iter().position(|(_, f, _)| *f == u.file) {
                Some(k) => k,
                None => {
                    hashes.push((u.tier, u.file, Sha256::new()));
                    hashes.len() - 1
                }
            };
            hashes[k].2.update(&self.prompt.as_bytes()[at..]);
            self.loaded.push(u.loaded(score, why));
            let r = self.reports.entry(u.tier).or_default();
            r.bytes += u.bytes;
            note_entry(r, u);
        }
        for (tier, file, h) in hashes {
            self.reports
                .entry(tier)
                .or_default()
                .files
                .push(FileReport {
                    path: file.to_owned(),
                    sha256: hex::encode(h.finalize()),
                });
        }
        if !any {
            self.prompt
                .push_str(if inputs.cold.is_some() || inputs.archive.is_some() {
                    "(nothing relevant in cold memory)\n"
                } else {
                    "(no cold memory)\n"
                });
        }
    }

    /// Stage: a wiki topic named by the plan, whole within the budget.
    fn wiki_topic(
        &mut self,
        topic: &TopicName,
        src: &Source,
        budget: &Budget,
        report: &mut TierReport,
    ) {
        let text = render_whole(
            Tier::Wiki,
            src,
            budget.wiki_doc,
            |_| LoadReason::Topic,
            &mut self.left,
            &mut self.loaded,
            report,
        );
        self.prompt
            .push_str(&format!("### Wiki (durable reference: {topic})\n"));
        self.prompt.push_str(&text);
        report.bytes += text.len();
        if !text.is_empty() {
            report.files.push(file_report(&src.path, &text));
        }
    }

    /// Stage: the chosen sections of one wiki document (`sections`: the pool and the chosen
    /// units), under its heading; nothing when none was chosen.
    fn wiki_sections(
        &mut self,
        topic: &TopicName,
        src: &Source,
        (pool, chosen): (&[Unit<'_>], &[(usize, Option<f64>)]),
        why: LoadReason,
        report: &mut TierReport,
    ) {
        let mine: Vec<&(usize, Option<f64>)> = chosen
            .iter()
            .filter(|(i, _)| pool[*i].tier == Tier::Wiki && pool[*i].file == src.path)
            .collect();
        if mine.is_empty() {
            return;
        }
        self.prompt
            .push_str(&format!("### Wiki (durable reference: {topic})\n"));
        let mut h = Sha256::new();
        for &&(i, score) in &mine {
            let u = &pool[i];
            let at = self.prompt.len();
            u.text.write(&mut self.prompt);
            h.update(&self.prompt.as_bytes()[at..]);
            report.bytes += u.bytes;
            self.loaded.push(u.loaded(score, why));
            note_entry(report, u);
        }
        report.files.push(FileReport {
            path: src.path.clone(),
            sha256: hex::encode(h.finalize()),
        });
    }

    /// Stage: the notices closing the prompt, the token estimates, the manifest.
    fn finish(mut self, plan: &LoadPlan, inputs: &SpawnInputs) -> Rendered {
        for r in self.reports.values_mut() {
            r.estimated_tokens = estimate(r.bytes);
        }
        for n in &self.notices {
            self.prompt.push_str(n);
            self.prompt.push('\n');
        }
        let total = self.prompt.len();
        Rendered {
            prompt: self.prompt,
            manifest: Manifest {
                situation: plan.situation,
                tiers: self.reports,
                loaded: self.loaded,
                left_out: self.left.into_vec(),
                skipped: inputs.skipped.clone(),
                total_bytes: total,
                estimated_tokens: estimate(total),
                touched: false,
            },
        }
    }
}

/// The sections offered to selection (cold and the archive, and the wiki unless topics are
/// named), and the wiki topics the plan names.
#[derive(Debug)]
struct Offered<'a> {
    pool: Vec<Unit<'a>>,
    /// Each ranked document's search index (if it has one) and where its units are in `pool`.
    indexes: Vec<(Option<&'a SearchIndex>, std::ops::Range<usize>)>,
    named: Vec<&'a (TopicName, Source)>,
    /// Whether the wiki is loaded by ranking its sections (it is loaded, and no topic named).
    rank_wiki: bool,
}

impl<'a> Offered<'a> {
    /// Stage: cut the ranked tiers into sections; resolve the named topics.
    fn collect(plan: &LoadPlan, inputs: &'a SpawnInputs, draft: &mut Draft) -> Result<Self> {
        let tiers = plan.tiers();
        // Room for every unit and every section left out, reserved once: the lists are large
        // (a unit is some 250 bytes) and growing them copies them into fresh memory.
        let rank_wiki = tiers.wiki && plan.wiki_topics.is_empty() && plan.task.is_some();
        let ranked = [&inputs.cold, &inputs.archive]
            .into_iter()
            .filter(|_| tiers.cold)
            .flatten()
            .chain(inputs.wiki.iter().map(|(_, s)| s).filter(|_| rank_wiki));
        let (units, left) = ranked
            .map(ranked_room)
            .fold((0, 0), |(u, l), (a, b)| (u + a, l + b));
        let mut pool: Vec<Unit<'a>> = Vec::with_capacity(units);
        draft.left.reserve(left);
        let mut indexes = Vec::new();
        if tiers.cold {
            for (tier, src) in [(Tier::Cold, &inputs.cold), (Tier::Archive, &inputs.archive)] {
                if let Some(src) = src {
                    let start = pool.len();
                    push_ranked_units(tier, src, &mut draft.left, &mut pool);
                    indexes.push((src.index.as_deref(), start..pool.len()));
                    draft.reports.entry(tier).or_default();
                }
            }
            draft.reports.entry(Tier::Cold).or_default();
        }
        let named: Vec<&(TopicName, Source)> = plan
            .wiki_topics
            .iter()
            .map(|t| {
                inputs.wiki.iter().find(|(n, _)| n == t).ok_or_else(|| {
                    Error::new(
                        ErrorKind::NotFound,
                        "memory.render",
                        format!("wiki topic {t:?} not found (wiki/{t}.md)"),
                    )
                })
            })
            .collect::<Result<_>>()?;
        let rank_wiki = tiers.wiki && named.is_empty();
        if rank_wiki {
            if plan.task.is_some() {
                for (_, src) in &inputs.wiki {
                    let start = pool.len();
                    push_ranked_units(Tier::Wiki, src, &mut draft.left, &mut pool);
                    indexes.push((src.index.as_deref(), start..pool.len()));
                }
            } else {
                draft.no_topic();
            }
        }
        Ok(Self {
            pool,
            indexes,
            named,
            rank_wiki,
        })
    }
}

/// The bytes left to fill, per budget.
#[derive(Debug)]
struct Rooms {
    cold: usize,
    wiki: usize,
}

/// What selection chose: pool indexes with their scores, in load order, and the limits it
/// used.
#[derive(Debug)]
struct Selection {
    chosen: Vec<(usize, Option<f64>)>,
    /// The `top_k` used (grown over near-ties).
    top_k: usize,
    /// The bytes cold and the archive had (what hot left of `hot_plus_cold`).
    cold_budget: usize,
}

impl Selection {
    /// Stage: relevance (or recency), then top-k, then the budgets. Everything not chosen is
    /// added to `left` with its reason.
    fn choose(
        offered: &Offered<'_>,
        task: Option<&str>,
        budget: &Budget,
        hot_bytes: usize,
        left: &mut LeftList,
    ) -> Self {
        let pool = &offered.pool[..];
        let cold_budget = budget.hot_plus_cold.saturating_sub(hot_bytes);
        let mut sel = Self {
            chosen: Vec::new(),
            top_k: budget.top_k,
            cold_budget,
        };
        if pool.is_empty() {
            return sel;
        }
        let (order, scores) = select_order(pool, &offered.indexes, task);
        let limits = match &scores {
            Some(s) => Limits::adapt(&order, s, budget),
            None => Limits {
                cutoff: 0.0,
                top_k: budget.top_k,
            },
        };
        sel.top_k = limits.top_k;
        let mut rooms = Rooms {
            cold: cold_budget,
            wiki: budget.wiki_doc,
        };
        let mut seen: HashSet<((String, String), usize)> = HashSet::new();
        let mut run = PartRun::default();
        for i in order {
            let u = &pool[i];
            let score = scores.as_ref().map(|s| s[i]);
            if let Some(s) = score
                && (s <= 0.0 || s < limits.cutoff)
            {
                match (s <= 0.0, u.entry, u.piece) {
                    (true, Some(e), Some((k, n))) => run.add(e, (k, n), u, score, left),
                    _ => left.unit(u, score, Reason::NotRelevant),
                }
                continue;
            }
            match sel.refusal(u, limits.top_k, &mut seen, &mut rooms) {
                Some(reason) => left.unit(u, score, reason),
                None => sel.chosen.push((i, score)),
            }
        }
        run.finish(left);
        sel
    }

    /// Why a relevant unit is not loaded (rank, a duplicate, the budget), if it is not; else
    /// takes its room.
    fn refusal(
        &self,
        u: &Unit<'_>,
        top_k: usize,
        seen: &mut HashSet<((String, String), usize)>,
        rooms: &mut Rooms,
    ) -> Option<Reason> {
        if self.chosen.len() >= top_k {
            return Some(Reason::Rank);
        }
        if let Some(e) = u.entry
            && !seen.insert((e.get().content_key(), u.piece.map_or(0, |p| p.0)))
        {
            return Some(Reason::Duplicate);
        }
        let room = if u.tier == Tier::Wiki {
            &mut rooms.wiki
        } else {
            &mut rooms.cold
        };
        if u.bytes > *room {
            // The budget caps: once a section does not fit, none ranked after it loads in its
            // place (the room left is not filled with lesser ones).
            *room = 0;
            return Some(Reason::Budget);
        }
        *room -= u.bytes;
        None
    }
}

/// Parts of one section that match nothing come one after the other (same score, same date,
/// file order) and are listed as one item: the entry, its parts so far `(first, last, n)`,
/// and its index in the left-out list.
#[derive(Debug, Default)]
struct PartRun<'a> {
    cur: Option<(EntryRef<'a>, (usize, usize, usize), usize)>,
}

impl<'a> PartRun<'a> {
    /// Part `k` of `n` of `e` (the unit `u`) matches nothing.
    fn add(
        &mut self,
        e: EntryRef<'a>,
        (k, n): (usize, usize),
        u: &Unit<'_>,
        score: Option<f64>,
        left: &mut LeftList,
    ) {
        match &mut self.cur {
            Some((r, (_, last, _), at)) if r.same(e) && *last + 1 == k && *at + 1 == left.len() => {
                *last = k;
                left[*at].bytes += u.bytes;
            }
            _ => {
                self.finish(left);
                self.cur = Some((e, (k, k, n), left.len()));
                left.unit(u, score, Reason::NotRelevant);
            }
        }
    }

    /// Names the run's item as [`parts_item`] does when it holds more than one part.
    fn finish(&mut self, left: &mut LeftList) {
        if let Some((e, (first, last, n), at)) = self.cur.take()
            && last > first
            && left.detail == LeftOutDetail::Full
            && let Some(l) = left.get_mut(at)
        {
            l.item = parts_item(e.id(), first, last, n);
        }
    }
}

/// The relevance cut-off and the number of sections to load, adapted to the scores.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Limits {
    cutoff: f64,
    top_k: usize,
}

impl Limits {
    /// From the scores, best first in `order`: the cut-off is `cutoff_percent` of the best
    /// score, and `top_k` grows past the budget's while the next sections score within 3 % of
    /// the last one in (near-ties: their order is noise, so none of them is cut by rank alone),
    /// up to twice the budget's. The byte budgets still cap what loads.
    fn adapt(order: &[usize], scores: &[f64], budget: &Budget) -> Self {
        let matched: Vec<f64> = order
            .iter()
            .map(|&i| scores[i])
            .take_while(|s| *s > 0.0)
            .collect();
        let best = matched.first().copied().unwrap_or(0.0);
        let cutoff = best * f64::from(budget.cutoff_percent) / 100.0;
        let mut top_k = budget.top_k;
        if let Some(&edge) = top_k.checked_sub(1).and_then(|k| matched.get(k)) {
            while top_k < 2 * budget.top_k
                && matched
                    .get(top_k)
                    .is_some_and(|&s| s >= NEAR_TIE * edge && s >= cutoff)
            {
                top_k += 1;
            }
        }
        Self { cutoff, top_k }
    }
}

/// Scores at least this share of the last section loaded are near-ties ([`Limits::adapt`]).
const NEAR_TIE: f64 = 0.97;

/// The report of a file the prompt took `text` from.
fn file_report(path: &str, text: &str) -> FileReport {
    FileReport {
        path: path.to_owned(),
        sha256: hex::encode(Sha256::digest(text.as_bytes())),
    }
}

/// The pool's indexes best first, and the scores when there is a task. With a task: score,
/// then newest (sections matching nothing after, in file order). Without: newest first,
/// undated after dated, later in the file first.
fn select_order(
    pool: &[Unit<'_>],
    indexes: &[(Option<&SearchIndex>, std::ops::Range<usize>)],
    task: Option<&str>,
) -> (Vec<usize>, Option<Vec<f64>>) {
    // Undated sorts before every date (as `None < Some(_)`).
    let dates: Vec<i64> = pool
        .iter()
        .map(|u| {
            u.date_ms
                .unwrap_or_else(|| u.date.map_or(i64::MIN, |d| d.unix_millis()))
        })
        .collect();
    let mut order: Vec<usize> = (0..pool.len()).collect();
    match task {
        Some(task) => {
            let mut scorer = Scorer::new(task);
            let from_index = scorer.takes_index()
                && indexed(pool, indexes).is_some_and(|docs| scorer.feed_index(&docs));
            if !from_index {
                scorer = Scorer::new(task);
                for u in pool {
                    scorer.start();
                    u.feed(&mut scorer);
                }
            }
            let scores = scorer.scores();
            // Best score first, then newest, then file order; sections that match nothing
            // follow in file order (they are all left out). Sorted on the keys themselves (a
            // pool holds thousands of sections).
            let mut keyed: Vec<(u128, usize)> = Vec::with_capacity(pool.len());
            let mut unmatched = Vec::new();
            for (i, (&s, &d)) in scores.iter().zip(&dates).enumerate() {
                if s > 0.0 {
                    keyed.push((best_first(s, d), i));
                } else {
                    unmatched.push(i);
                }
            }
            // Stable: equal keys stay in file order.
            keyed.sort_by_key(|k| k.0);
            order.clear();
            order.extend(keyed.iter().map(|k| k.1));
            order.extend(unmatched);
            (order, Some(scores))
        }
        None => {
            order.sort_unstable_by(|&a, &b| dates[b].cmp(&dates[a]).then(b.cmp(&a)));
            (order, None)
        }
    }
}

/// The key that sorts sections best score first (in `f64::total_cmp` order), then newest
/// (Unix milliseconds), as one integer.
fn best_first(score: f64, date_ms: i64) -> u128 {
    // The bits of an `f64` (and of an `i64`, sign flipped) in the order `total_cmp` (and
    // `cmp`) puts them, as unsigned integers; inverted, for the largest first.
    let bits = score.to_bits();
    let score = bits ^ ((((bits >> 63) as i64).wrapping_neg() as u64) >> 1) ^ (1 << 63);
    let date = date_ms.cast_unsigned() ^ (1 << 63);
    (u128::from(!score) << 64) | u128::from(!date)
}

/// The search indexes of the ranked documents, in pool order, when every one has an index that
/// describes its units as `pool` holds them (their number, and each one's texts by length and
/// weight); `None` otherwise (the scorer then reads the texts).
fn indexed<'i>(
    pool: &[Unit<'_>],
    indexes: &[(Option<&'i SearchIndex>, std::ops::Range<usize>)],
) -> Option<Vec<&'i SearchIndex>> {
    let mut out = Vec::with_capacity(indexes.len());
    for (index, range) in indexes {
        let index = (*index)?;
        let units = pool.get(range.clone())?;
        if index.units() != units.len() {
            return None;
        }
        for (k, u) in units.iter().enumerate() {
            if matches!(u.search, Search::Laid) {
                // Laid out by this very index: its texts are the ones it records.
                continue;
            }
            let (texts, n) = u.search_texts();
            let (recs, _) = index.unit_texts(k);
            if recs.len() != n
                || recs
                    .iter()
                    .zip(&texts[..n])
                    .any(|(r, (t, times))| r.len != t.len() as u64 || r.times != *times)
            {
                return None;
            }
        }
        out.push(index);
    }
    Some(out)
}

/// The order in which hot (or a named wiki document) gives units up: dated entries oldest
/// first, then undated units from the older end of the file (pinned lines never).
fn drop_order(units: &[Unit<'_>]) -> Vec<usize> {
    let dated: Vec<(usize, Timestamp)> = units
        .iter()
        .enumerate()
        .filter_map(|(i, u)| u.date.map(|d| (i, d)))
        .collect();
    // Newest at the top when the dates mostly decrease down the file.
    let (mut up, mut down) = (0, 0);
    for w in dated.windows(2) {
        match w[0].1.cmp(&w[1].1) {
            std::cmp::Ordering::Greater => down += 1,
            std::cmp::Ordering::Less => up += 1,
            std::cmp::Ordering::Equal => {}
        }
    }
    let newest_on_top = down > up;
    let mut by_date: Vec<(usize, Timestamp)> = dated;
    by_date.sort_by_key(|&(i, d)| (d, i));
    let mut order: Vec<usize> = by_date
        .into_iter()
        .map(|(i, _)| i)
        .filter(|&i| !units[i].pinned)
        .collect();
    let mut undated: Vec<usize> = (0..units.len())
        .filter(|&i| units[i].date.is_none() && !units[i].pinned)
        .collect();
    if newest_on_top {
        undated.reverse();
    }
    order.extend(undated);
    order
}

/// Keeps units in file order within `budget`, giving them up in [`drop_order`]; cuts the text
/// when what is left still exceeds the budget.
fn fit_in_order(units: &[Unit<'_>], budget: usize, left: &mut LeftList) -> (String, Vec<bool>) {
    let mut keep = vec![true; units.len()];
    let mut total: usize = units.iter().map(|u| u.bytes).sum();
    for i in drop_order(units) {
        if total <= budget {
            break;
        }
        keep[i] = false;
        total -= units[i].bytes;
        left.unit(&units[i], None, Reason::Budget);
    }
    let mut text = String::new();
    for (u, k) in units.iter().zip(&keep) {
        if *k {
            u.text.write(&mut text);
        }
    }
    if text.len() > budget {
        let kept = cut(&text, budget).len();
        left.push(LeftOut {
            tier: units.first().map_or(Tier::Hot, |u| u.tier),
            file: units.first().map_or(String::new(), |u| u.file.to_owned()),
            item: String::new(),
            title: String::new(),
            bytes: text.len() - kept,
            score: None,
            reason: Reason::Truncated,
        });
        text.truncate(kept);
    }
    (text, keep)
}

/// Renders a document loaded whole, in file order (hot, a named wiki topic), within `budget`
/// ([`fit_in_order`]); records what loaded, and `why`, in `loaded` and the tier's `report`.
fn render_whole(
    tier: Tier,
    src: &Source,
    budget: usize,
    why: fn(&Unit<'_>) -> LoadReason,
    left: &mut LeftList,
    loaded: &mut Vec<Loaded>,
    report: &mut TierReport,
) -> String {
    let units = whole_units(tier, src, left);
    let (text, keep) = fit_in_order(&units, budget, left);
    for (u, k) in units.iter().zip(keep) {
        if k {
            loaded.push(u.loaded(None, why(u)));
            if let Some(e) = u.entry {
                report.entries.push(e.get().id.clone());
            }
        }
    }
    text
}

fn hot_notice(notices: &mut Vec<String>, dropped: &[LeftOut], budget: usize) {
    let cut: Vec<&LeftOut> = dropped
        .iter()
        .filter(|l| matches!(l.reason, Reason::Budget | Reason::Truncated))
        .collect();
    if cut.is_empty() {
        return;
    }
    let bytes: usize = cut.iter().map(|l| l.bytes).sum();
    notices.push(format!(
        "> Memory notice: hot: {} item(s) ({bytes} bytes) left out to fit the {budget}-byte hot \
         budget (the current-situation lines kept, the oldest material dropped first); see the \
         manifest.",
        cut.len()
    ));
}

fn selection_notice(
    notices: &mut Vec<String>,
    dropped: &[LeftOut],
    budget: &Budget,
    cold_budget: usize,
) {
    let count = |r: Reason| dropped.iter().filter(|l| l.reason == r).count();
    let (irrelevant, rank, over) = (
        count(Reason::NotRelevant),
        count(Reason::Rank),
        count(Reason::Budget),
    );
    if irrelevant + rank + over == 0 {
        return;
    }
    let mut parts = Vec::new();
    if irrelevant > 0 {
        parts.push(format!(
            "{irrelevant} scored below the relevance cut-off ({}% of the best match)",
            budget.cutoff_percent
        ));
    }
    if rank > 0 {
        parts.push(format!(
            "{rank} ranked below the {} loaded (top {})",
            budget.top_k, budget.top_k
        ));
    }
    if over > 0 {
        parts.push(format!(
            "{over} did not fit the byte budget ({cold_budget} bytes for cold, {} for the wiki)",
            budget.wiki_doc
        ));
    }
    notices.push(format!(
        "> Memory notice: {} section(s) left out: {}; `squad memory search` finds them, the \
         manifest lists them.",
        irrelevant + rank + over,
        parts.join(", ")
    ));
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn any_score() -> impl Strategy<Value = f64> {
        prop_oneof![
            any::<f64>(),
            Just(0.0),
            Just(-0.0),
            Just(f64::INFINITY),
            Just(f64::NEG_INFINITY),
            Just(f64::NAN),
            Just(-f64::NAN),
            Just(f64::MIN_POSITIVE),
            (1u32..40).prop_map(|n| f64::from(n) / 7.0),
        ]
    }

    fn any_date() -> impl Strategy<Value = i64> {
        prop_oneof![
            any::<i64>(),
            Just(i64::MIN),
            Just(i64::MAX),
            Just(0),
            (1_700_000_000_000i64..1_800_000_000_000),
        ]
    }

    proptest! {
        /// Sorting by `best_first` and then file order gives the order of the comparison it
        /// stands for: score (`total_cmp`) descending, then date descending, then file order.
        #[test]
        fn best_first_sorts_as_the_comparison(
            keys in prop::collection::vec((any_score(), any_date()), 0..60),
            dup in prop::collection::vec((any::<prop::sample::Index>(), any::<prop::sample::Index>()), 0..10),
        ) {
            let mut keys = keys;
            // Some equal keys, to see the ties kept in file order.
            for (from, to) in dup {
                if !keys.is_empty() {
                    let k = keys[from.index(keys.len())];
                    let at = to.index(keys.len());
                    keys[at] = k;
                }
            }
            let mut by_key: Vec<(u128, usize)> =
                keys.iter().enumerate().map(|(i, &(s, d))| (best_first(s, d), i)).collect();
            by_key.sort_by_key(|k| k.0);
            let mut by_cmp: Vec<(f64, i64, usize)> =
                keys.iter().enumerate().map(|(i, &(s, d))| (s, d, i)).collect();
            by_cmp.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)).then(a.2.cmp(&b.2)));
            let a: Vec<usize> = by_key.iter().map(|k| k.1).collect();
            let b: Vec<usize> = by_cmp.iter().map(|k| k.2).collect();
            prop_assert_eq!(a, b);
        }
    }

    /// The parts as slices write the same text as the parts as joined lines.
    fn same_parts(body: &str) {
        let lines: Vec<&str> = body.lines().collect();
        let want: Vec<String> = pack(blocks(&lines)).iter().map(|p| p.join("\n")).collect();
        let got: Vec<String> = pieces(body)
            .iter()
            .map(|p| {
                let mut s = String::new();
                p.write(&mut s);
                assert_eq!(s.len() + 1, p.bytes, "{s:?}");
                s
            })
            .collect();
        assert_eq!(got, want, "{body:?}");
    }

    #[test]
    fn parts_as_slices_match_parts_as_lines() {
        let long = "word ".repeat(60);
        same_parts("");
        same_parts("one line");
        same_parts(&format!(
            "**Context:** {long}\n\n- {long}\n- {long}\n\n```sh\nx\n\n\ny\n```\n#### Next\n{long}\n**Fix:** done"
        ));
        let big: String = (0..60).map(|i| format!("- line {i} {long}\n")).collect();
        same_parts(&big);
        same_parts(&format!("intro\n```\n{big}\n\n{big}```\nafter\n\n{big}"));
        same_parts(&format!("a\r\n\r\n{big}\r\nb\r\r\n~~~\n\n~~~\n"));
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

        #[test]
        fn parts_as_slices_match_parts_as_lines_on_any_body(
            lines in proptest::collection::vec(
                prop_oneof![
                    Just(String::new()),
                    Just("```".to_owned()),
                    Just("~~~~".to_owned()),
                    Just("  ```rust".to_owned()),
                    Just("#### Heading".to_owned()),
                    Just("**Fix:** x".to_owned()),
                    Just("   ".to_owned()),
                    Just("x\r".to_owned()),
                    "[a-z é]{0,12}",
                    "[a-z ]{200,400}",
                ],
                0..40,
            ),
            crlf in any::<bool>(),
        ) {
            let body = lines.join(if crlf { "\r\n" } else { "\n" });
            same_parts(&body);
        }
    }

    #[test]
    fn part_labels() {
        for (i, n) in [(1, 2), (9, 10), (10, 10), (123, 4567), (0, usize::MAX)] {
            assert_eq!(part_label(i, n), format!(" (part {i} of {n})"));
            assert_eq!(part_label_len(i, n), part_label(i, n).len());
        }
    }

    #[test]
    fn an_entry_text_is_its_heading_and_body() {
        let e = Entry::from_heading("2026-01-01: note: x").with_body("a\n\nb");
        let t = Text::Entry(&e);
        assert_eq!(t.rendered(), e.prompt_text());
        assert_eq!(t.len(), e.prompt_text().len());
    }
}
