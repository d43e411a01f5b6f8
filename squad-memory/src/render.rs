//! Spawn rendering: the `## Memory Context` block, relevance selection, budgets enforced at
//! render time, and the load manifest.

use std::collections::{BTreeMap, HashSet};

use sha2::{Digest, Sha256};
use squad_model::{AgentName, Timestamp};

use crate::bm25::Bm25;
use crate::entry::{Entry, Item, MemoryDoc};
use crate::error::{Error, ErrorKind, Problem, Result};
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
    /// How many sections (entries or free-text chunks) of cold, the archive and the wiki load
    /// at most, together, chosen by relevance or recency (default 4).
    pub top_k: usize,
    /// The relevance cut-off, in percent of the best match's score: a section scoring less is
    /// not loaded (default 35).
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
            top_k: 5,
            cutoff_percent: 15,
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

/// A memory file read for a spawn: where it came from, its hash and its parsed content.
#[derive(Debug, Clone)]
pub struct Source {
    /// The file as the store names it (`hot/data.md`).
    pub path: String,
    /// SHA-256 of the file's bytes, lowercase hex.
    pub sha256: String,
    /// The file's size in bytes.
    pub bytes: usize,
    /// The parsed content.
    pub doc: MemoryDoc,
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
            sha256: hex::encode(Sha256::digest(text.as_bytes())),
            bytes: text.len(),
            path,
            doc,
        })
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

/// A file loaded into a prompt.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FileReport {
    /// The file as the store names it.
    pub path: String,
    /// SHA-256 of the file as read, lowercase hex.
    pub sha256: String,
}

/// What one tier put into a prompt.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct TierReport {
    /// Bytes of the tier's content in the prompt.
    pub bytes: usize,
    /// `bytes / 4`, rounded up: an estimate, never enforced.
    pub estimated_tokens: usize,
    /// The files read.
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
    let l = line.trim_start().trim_start_matches(['-', '*', ' ']);
    PINNED_PREFIXES.iter().any(|p| {
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

/// One loadable piece of a memory file: an entry, a free line (hot), or a chunk of free text
/// under one heading (cold, archive, wiki).
#[derive(Debug)]
pub(crate) struct Unit<'a> {
    pub(crate) tier: Tier,
    pub(crate) file: &'a str,
    pub(crate) item: String,
    pub(crate) title: String,
    pub(crate) text: String,
    pub(crate) date: Option<Timestamp>,
    pub(crate) entry: Option<&'a Entry>,
    pub(crate) pinned: bool,
    /// Which part of a long section this is (`(i, n)`, 1-based), if it is one.
    pub(crate) piece: Option<(usize, usize)>,
    /// The text scored for relevance (the heading counts twice: it names the topic).
    pub(crate) search: String,
}

impl Unit<'_> {
    pub(crate) fn search_text(&self) -> &str {
        &self.search
    }

    fn left(&self, score: Option<f64>, reason: Reason) -> LeftOut {
        LeftOut {
            tier: self.tier,
            file: self.file.to_owned(),
            item: self.item.clone(),
            title: self.title.clone(),
            bytes: self.text.len(),
            score,
            reason,
        }
    }

    fn loaded(&self, score: Option<f64>, reason: LoadReason) -> Loaded {
        Loaded {
            tier: self.tier,
            file: self.file.to_owned(),
            item: self.item.clone(),
            title: self.title.clone(),
            bytes: self.text.len(),
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
    Unit {
        tier,
        file: &src.path,
        item: e.id.to_string(),
        title: e.heading.clone(),
        text: e.prompt_text(),
        date: e.date,
        entry: Some(e),
        pinned: false,
        piece: None,
        search: format!("{}\n{}\n{}", e.heading, e.heading, e.body),
    }
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
    let mut fence: Option<crate::entry::Fence> = None;
    for &l in lines {
        if let Some(f) = fence {
            if f.closes(l) {
                fence = None;
            }
            cur.push(l);
            continue;
        }
        let opens = crate::entry::Fence::opens(l);
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
        let fenced = b
            .first()
            .is_some_and(|l| crate::entry::Fence::opens(l).is_some());
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
            Some(last) if size(last) + size(&b) <= PIECE_TARGET => last.extend(b),
            _ => out.push(b),
        }
    }
    out
}

/// The units of one entry: itself, or its parts when it is long.
fn entry_units<'a>(tier: Tier, src: &'a Source, e: &'a Entry) -> Vec<Unit<'a>> {
    let whole = entry_unit(tier, src, e);
    if whole.text.len() <= PIECE_OVER {
        return vec![whole];
    }
    let lines: Vec<&str> = e.body.lines().collect();
    let parts = pack(blocks(&lines));
    let n = parts.len();
    if n < 2 {
        return vec![whole];
    }
    parts
        .into_iter()
        .enumerate()
        .map(|(i, p)| {
            let body = p.join("\n");
            Unit {
                tier,
                file: &src.path,
                item: format!("{} (part {} of {n})", e.id, i + 1),
                title: e.heading.clone(),
                text: format!("#### {} (part {} of {n})\n{body}\n", e.heading, i + 1),
                date: e.date,
                entry: Some(e),
                pinned: false,
                piece: Some((i + 1, n)),
                search: format!("{}\n{}\n{body}", e.heading, e.heading),
            }
        })
        .collect()
}

/// Hot units: each free line alone (so the pinned ones can be kept) and each entry.
fn hot_units<'a>(src: &'a Source, left: &mut Vec<LeftOut>) -> Vec<Unit<'a>> {
    let mut out = Vec::new();
    let mut ids = HashSet::new();
    for item in &src.doc.items {
        match item {
            Item::Line(l) if !l.text.trim().is_empty() => out.push(Unit {
                tier: Tier::Hot,
                file: &src.path,
                item: format!("line {}", l.line),
                title: first_line(&l.text),
                text: format!("{}\n", l.text.trim_end()),
                date: None,
                entry: None,
                pinned: is_pinned(&l.text),
                piece: None,
                search: l.text.clone(),
            }),
            Item::Line(_) => {}
            Item::Entry(e) => {
                let u = entry_unit(Tier::Hot, src, e);
                if e.is_superseded() {
                    left.push(u.left(None, Reason::Superseded));
                } else if !ids.insert(e.id.clone()) {
                    left.push(u.left(None, Reason::Duplicate));
                } else {
                    out.push(u);
                }
            }
        }
    }
    out
}

/// Units of a ranked tier: each entry, and the free text cut into chunks at its headings
/// (a chunk holding only a heading carries nothing and is not offered).
pub(crate) fn ranked_units<'a>(
    tier: Tier,
    src: &'a Source,
    left: &mut Vec<LeftOut>,
) -> Vec<Unit<'a>> {
    let mut out = Vec::new();
    let mut chunk: Vec<(usize, &'a str)> = Vec::new();
    let flush = |chunk: &mut Vec<(usize, &'a str)>, out: &mut Vec<Unit<'a>>| {
        let has_text = chunk
            .iter()
            .any(|(_, t)| !t.trim().is_empty() && !t.starts_with('#') && t.trim() != "---");
        if has_text {
            let first = chunk
                .iter()
                .find(|(_, t)| !t.trim().is_empty())
                .map_or((0, ""), |x| *x);
            let title = first_line(first.1.trim_start_matches('#'));
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
                if n > 1 && i > 0 && first.1.starts_with('#') {
                    text.push_str(first.1.trim_end());
                    text.push_str(&format!(" (part {} of {n})\n", i + 1));
                }
                for l in &p {
                    text.push_str(l);
                    text.push('\n');
                }
                out.push(Unit {
                    tier,
                    file: &src.path,
                    item: if n > 1 {
                        format!("line {} (part {} of {n})", first.0, i + 1)
                    } else {
                        format!("line {}", first.0)
                    },
                    date,
                    title: title.clone(),
                    search: format!("{title}\n{text}"),
                    text,
                    entry: None,
                    pinned: false,
                    piece: (n > 1).then_some((i + 1, n)),
                });
            }
        }
        chunk.clear();
    };
    let mut ids = HashSet::new();
    for item in &src.doc.items {
        match item {
            Item::Line(l) => {
                if l.text.starts_with('#') && !chunk.is_empty() {
                    flush(&mut chunk, &mut out);
                }
                chunk.push((l.line, l.text.as_str()));
            }
            Item::Entry(e) => {
                flush(&mut chunk, &mut out);
                if e.is_superseded() {
                    left.push(entry_unit(tier, src, e).left(None, Reason::Superseded));
                } else if !ids.insert(e.id.clone()) {
                    left.push(entry_unit(tier, src, e).left(None, Reason::Duplicate));
                } else {
                    out.extend(entry_units(tier, src, e));
                }
            }
        }
    }
    flush(&mut chunk, &mut out);
    out
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
    let tiers = plan.tiers();
    let mut left: Vec<LeftOut> = Vec::new();
    let mut loaded: Vec<Loaded> = Vec::new();
    let mut reports: BTreeMap<Tier, TierReport> = BTreeMap::new();
    let mut notices: Vec<String> = Vec::new();
    let mut prompt = String::from("## Memory Context\n### Hot (current session)\n");

    // Hot.
    let mut hot_report = TierReport::default();
    if let Some(src) = &inputs.hot {
        let before = left.len();
        let text = render_hot(src, budget.hot, &mut left, &mut loaded, &mut hot_report);
        hot_notice(&mut notices, &left[before..], budget.hot);
        prompt.push_str(&text);
        hot_report.bytes = text.len();
        hot_report.files.push(file_report(src));
    } else {
        prompt.push_str("(no hot memory)\n");
    }
    hot_report.estimated_tokens = estimate(hot_report.bytes);
    let hot_bytes = hot_report.bytes;
    reports.insert(Tier::Hot, hot_report);

    // The sections offered to selection: cold and the archive, and the wiki unless topics are
    // named.
    let mut pool: Vec<Unit<'_>> = Vec::new();
    if tiers.cold {
        for (tier, src) in [(Tier::Cold, &inputs.cold), (Tier::Archive, &inputs.archive)] {
            if let Some(src) = src {
                pool.extend(ranked_units(tier, src, &mut left));
                reports
                    .entry(tier)
                    .or_default()
                    .files
                    .push(file_report(src));
            }
        }
        reports.entry(Tier::Cold).or_default();
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
                pool.extend(ranked_units(Tier::Wiki, src, &mut left));
            }
        } else {
            left.push(LeftOut {
                tier: Tier::Wiki,
                file: String::new(),
                item: String::new(),
                title: String::new(),
                bytes: 0,
                score: None,
                reason: Reason::NoTopic,
            });
            notices.push(
                "> Memory notice: this situation loads the wiki, but no topic was named and no \
                 task was given to rank by; no wiki document loaded."
                    .to_owned(),
            );
        }
    }

    // Selection: relevance (or recency), then top-k, then the budgets.
    let cold_budget = budget.hot_plus_cold.saturating_sub(hot_bytes);
    let mut wiki_left = budget.wiki_doc;
    let mut cold_left = cold_budget;
    let mut chosen: Vec<(usize, Option<f64>)> = Vec::new();
    let before = left.len();
    if !pool.is_empty() {
        let (order, scores) = select_order(&pool, plan.task.as_deref());
        let best = order
            .first()
            .and_then(|&i| scores.as_ref().map(|s| s[i]))
            .unwrap_or(0.0);
        let cutoff = best * f64::from(budget.cutoff_percent) / 100.0;
        let mut seen_content: HashSet<((String, String), usize)> = HashSet::new();
        for i in order {
            let u = &pool[i];
            let score = scores.as_ref().map(|s| s[i]);
            if let Some(s) = score
                && (s <= 0.0 || s < cutoff)
            {
                left.push(u.left(score, Reason::NotRelevant));
                continue;
            }
            if chosen.len() >= budget.top_k {
                left.push(u.left(score, Reason::Rank));
                continue;
            }
            if let Some(e) = u.entry
                && !seen_content.insert((e.content_key(), u.piece.map_or(0, |p| p.0)))
            {
                left.push(u.left(score, Reason::Duplicate));
                continue;
            }
            let room = if u.tier == Tier::Wiki {
                &mut wiki_left
            } else {
                &mut cold_left
            };
            if u.text.len() > *room {
                left.push(u.left(score, Reason::Budget));
                continue;
            }
            *room -= u.text.len();
            chosen.push((i, score));
        }
    }
    let why = if plan.task.is_some() {
        LoadReason::Relevant
    } else {
        LoadReason::Newest
    };

    // Cold (with the archive's matches).
    if tiers.cold {
        prompt.push_str("### Cold (summarized history)\n");
        let mut any = false;
        for &(i, score) in &chosen {
            let u = &pool[i];
            if u.tier == Tier::Wiki {
                continue;
            }
            any = true;
            prompt.push_str(&u.text);
            loaded.push(u.loaded(score, why));
            let r = reports.entry(u.tier).or_default();
            r.bytes += u.text.len();
            if let Some(e) = u.entry
                && !r.entries.contains(&e.id)
            {
                r.entries.push(e.id.clone());
            }
        }
        if !any {
            prompt.push_str(if inputs.cold.is_some() || inputs.archive.is_some() {
                "(nothing relevant in cold memory)\n"
            } else {
                "(no cold memory)\n"
            });
        }
    }

    // Wiki: named topics whole (within the budget), else the chosen sections per document.
    if tiers.wiki {
        let mut report = TierReport::default();
        for (topic, src) in &named {
            let text = render_named(src, budget.wiki_doc, &mut left, &mut loaded, &mut report);
            prompt.push_str(&format!("### Wiki (durable reference: {topic})\n"));
            prompt.push_str(&text);
            report.bytes += text.len();
            report.files.push(file_report(src));
        }
        if rank_wiki {
            for (topic, src) in &inputs.wiki {
                let mine: Vec<&(usize, Option<f64>)> = chosen
                    .iter()
                    .filter(|(i, _)| pool[*i].tier == Tier::Wiki && pool[*i].file == src.path)
                    .collect();
                if mine.is_empty() {
                    continue;
                }
                prompt.push_str(&format!("### Wiki (durable reference: {topic})\n"));
                report.files.push(file_report(src));
                for &&(i, score) in &mine {
                    let u = &pool[i];
                    prompt.push_str(&u.text);
                    report.bytes += u.text.len();
                    loaded.push(u.loaded(score, why));
                    if let Some(e) = u.entry
                        && !report.entries.contains(&e.id)
                    {
                        report.entries.push(e.id.clone());
                    }
                }
            }
        }
        reports.insert(Tier::Wiki, report);
    }
    selection_notice(&mut notices, &left[before..], budget, cold_budget);

    for r in reports.values_mut() {
        r.estimated_tokens = estimate(r.bytes);
    }
    for n in &notices {
        prompt.push_str(n);
        prompt.push('\n');
    }
    let total = prompt.len();
    Ok(Rendered {
        prompt,
        manifest: Manifest {
            situation: plan.situation,
            tiers: reports,
            loaded,
            left_out: left,
            skipped: inputs.skipped.clone(),
            total_bytes: total,
            estimated_tokens: estimate(total),
            touched: false,
        },
    })
}

fn file_report(src: &Source) -> FileReport {
    FileReport {
        path: src.path.clone(),
        sha256: src.sha256.clone(),
    }
}

/// The pool's indexes best first, and the scores when there is a task. With a task: score,
/// then newest. Without: newest first, undated after dated, later in the file first.
fn select_order(pool: &[Unit<'_>], task: Option<&str>) -> (Vec<usize>, Option<Vec<f64>>) {
    let mut order: Vec<usize> = (0..pool.len()).collect();
    match task {
        Some(task) => {
            let scores = Bm25::new(pool.iter().map(Unit::search_text)).scores(task);
            order.sort_by(|&a, &b| {
                scores[b]
                    .total_cmp(&scores[a])
                    .then(pool[b].date.cmp(&pool[a].date))
                    .then(a.cmp(&b))
            });
            (order, Some(scores))
        }
        None => {
            order.sort_by(|&a, &b| pool[b].date.cmp(&pool[a].date).then(b.cmp(&a)));
            (order, None)
        }
    }
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
fn fit_in_order(units: &[Unit<'_>], budget: usize, left: &mut Vec<LeftOut>) -> (String, Vec<bool>) {
    let mut keep = vec![true; units.len()];
    let mut total: usize = units.iter().map(|u| u.text.len()).sum();
    for i in drop_order(units) {
        if total <= budget {
            break;
        }
        keep[i] = false;
        total -= units[i].text.len();
        left.push(units[i].left(None, Reason::Budget));
    }
    let mut text = String::new();
    for (u, k) in units.iter().zip(&keep) {
        if *k {
            text.push_str(&u.text);
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

fn render_hot(
    src: &Source,
    budget: usize,
    left: &mut Vec<LeftOut>,
    loaded: &mut Vec<Loaded>,
    report: &mut TierReport,
) -> String {
    let units = hot_units(src, left);
    let (text, keep) = fit_in_order(&units, budget, left);
    for (u, k) in units.iter().zip(keep) {
        if k {
            let why = if u.pinned {
                LoadReason::Pinned
            } else {
                LoadReason::Hot
            };
            loaded.push(u.loaded(None, why));
            if let Some(e) = u.entry {
                report.entries.push(e.id.clone());
            }
        }
    }
    text
}

fn render_named(
    src: &Source,
    budget: usize,
    left: &mut Vec<LeftOut>,
    loaded: &mut Vec<Loaded>,
    report: &mut TierReport,
) -> String {
    let mut units = Vec::new();
    let mut ids = HashSet::new();
    for item in &src.doc.items {
        match item {
            Item::Line(l) if !l.text.trim().is_empty() => units.push(Unit {
                tier: Tier::Wiki,
                file: &src.path,
                item: format!("line {}", l.line),
                title: first_line(&l.text),
                text: format!("{}\n", l.text.trim_end()),
                date: None,
                entry: None,
                pinned: false,
                piece: None,
                search: l.text.clone(),
            }),
            Item::Line(_) => {}
            Item::Entry(e) => {
                let u = entry_unit(Tier::Wiki, src, e);
                if e.is_superseded() {
                    left.push(u.left(None, Reason::Superseded));
                } else if !ids.insert(e.id.clone()) {
                    left.push(u.left(None, Reason::Duplicate));
                } else {
                    units.push(u);
                }
            }
        }
    }
    let (text, keep) = fit_in_order(&units, budget, left);
    for (u, k) in units.iter().zip(keep) {
        if k {
            loaded.push(u.loaded(None, LoadReason::Topic));
            if let Some(e) = u.entry {
                report.entries.push(e.id.clone());
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
