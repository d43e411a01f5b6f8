//! Memory entries and the Markdown file format (parse and write).
//!
//! The format is described in the crate README, section "File format".

use std::collections::{HashMap, HashSet};

/// A fast, fixed hash for ids read from one's own files (deterministic; no untrusted keys).
type Fast = foldhash::fast::FixedState;
use std::fmt;
use std::str::FromStr;

use sha2::{Digest, Sha256};
use squad_model::Timestamp;

use crate::date;
use crate::error::{Error, ErrorKind, Problem, Result};
use crate::name::{MemoryId, TopicName};

/// What an entry records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Kind {
    /// A decision that was taken (structured: promoted to the wiki when it ages).
    Decision,
    /// A stable convention (structured).
    Convention,
    /// An external or internal API contract (structured).
    Contract,
    /// Something the agent did.
    Action,
    /// Something blocking progress.
    Blocker,
    /// Anything else worth remembering; also the kind of a section whose heading names none.
    Note,
    /// Squad Entry Markdown's `memory` type.
    Memory,
    /// Squad Entry Markdown's `directive` type.
    Directive,
}

impl Kind {
    /// Every kind, in declaration order.
    pub const ALL: [Kind; 8] = [
        Kind::Decision,
        Kind::Convention,
        Kind::Contract,
        Kind::Action,
        Kind::Blocker,
        Kind::Note,
        Kind::Memory,
        Kind::Directive,
    ];

    /// The lowercase name used in files (`decision`, `note`, ...).
    pub fn as_str(&self) -> &'static str {
        match self {
            Kind::Decision => "decision",
            Kind::Convention => "convention",
            Kind::Contract => "contract",
            Kind::Action => "action",
            Kind::Blocker => "blocker",
            Kind::Note => "note",
            Kind::Memory => "memory",
            Kind::Directive => "directive",
        }
    }

    /// `true` for the structured kinds the Scribe promotes to the wiki: decision, convention,
    /// contract.
    pub fn is_structured(&self) -> bool {
        matches!(self, Kind::Decision | Kind::Convention | Kind::Contract)
    }

    /// The wiki topic an aged structured entry without a `topic` field goes to
    /// (`decisions`, `conventions`, `contracts`; `notes` for the others).
    pub fn default_topic(&self) -> &'static str {
        match self {
            Kind::Decision => "decisions",
            Kind::Convention => "conventions",
            Kind::Contract => "contracts",
            _ => "notes",
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Kind {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Kind::ALL
            .into_iter()
            .find(|k| k.as_str().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::InvalidInput,
                    "kind.parse",
                    format!(
                        "unknown kind {s:?} (expected one of: {})",
                        Kind::ALL.map(|k| k.as_str()).join(", ")
                    ),
                )
            })
    }
}

/// One memory entry: a `### ` section of a memory file.
///
/// The heading is kept verbatim (PR numbers, numbering, emoji and the date it holds); the date,
/// the kind and the title are read out of it. The body is kept verbatim.
///
/// Serialized (for `--json`) with every field, snake_case keys.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Entry {
    /// The stable id: the `**id:**` field, else [`Entry::derived_id`] of the heading.
    pub id: MemoryId,
    /// The heading text after `### `, verbatim.
    pub heading: String,
    /// The title: the heading without a leading `<date>:` and `<kind>:` (the whole heading when
    /// it does not start with a date).
    pub title: String,
    /// The date the heading holds, if any (in UTC).
    pub date: Option<Timestamp>,
    /// What it records: the SEM kind after a leading date (`### <date>: decision: ...`), else
    /// [`Kind::Note`].
    pub kind: Kind,
    /// The text of the `## ` heading the entry sits under, if any.
    pub group: Option<String>,
    /// The Markdown lines after the heading and its fields, verbatim, blank lines at either end
    /// removed.
    pub body: String,
    /// The entry that replaces this one. A superseded entry is never loaded into a prompt.
    pub superseded_by: Option<MemoryId>,
    /// The last time a spawn with `--touch` loaded this entry (restarts its cold TTL).
    pub last_loaded: Option<Timestamp>,
    /// When the entry entered its tier (set by import and by the Scribe; the cold TTL counts
    /// from here rather than from the date in the heading).
    pub entered: Option<Timestamp>,
    /// The wiki topic a structured entry is promoted to (default: [`Kind::default_topic`]).
    pub topic: Option<TopicName>,
    /// Ids of duplicate entries merged into this one.
    pub merged: Vec<MemoryId>,
    /// The 1-based line of the heading in the file it was read from (0 when built in code).
    pub line: usize,
    /// The heading's level: 3 (`### `) for most entries; a dated heading of another level
    /// (`## 2026-04-01 Deploy timeout`) is an entry too, and is written back at its level.
    #[serde(skip_serializing_if = "is_entry_level")]
    pub level: u8,
}

/// The level entries are written at by default (`### `).
pub(crate) const ENTRY_LEVEL: u8 = 3;

fn is_entry_level(l: &u8) -> bool {
    *l == ENTRY_LEVEL
}

/// Collapses runs of whitespace, for comparing texts that differ only in spacing.
pub(crate) fn normalize(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The parts of a heading: date, kind and title.
#[derive(Debug)]
struct HeadingParts {
    date: Option<Timestamp>,
    kind: Kind,
    title: String,
    warning: Option<String>,
}

fn heading_parts(heading: &str) -> HeadingParts {
    let h = heading.trim();
    match date::leading(h) {
        Some(Ok(f)) => {
            let rest = &h[f.end..];
            let rest = rest.trim_start_matches([':', ' ', '\t', '—', '–', '-']);
            let (kind, title) = match rest.split_once(':') {
                Some((k, t)) => match k.parse::<Kind>() {
                    Ok(kind) if !k.trim().is_empty() && !t.trim().is_empty() => (kind, t.trim()),
                    _ => (Kind::Note, rest.trim()),
                },
                None => (Kind::Note, rest.trim()),
            };
            let title = if title.is_empty() { h } else { title };
            HeadingParts {
                date: Some(f.at),
                kind,
                title: title.to_owned(),
                warning: None,
            }
        }
        Some(Err(())) => HeadingParts {
            date: date::inside(h).map(|f| f.at),
            kind: Kind::Note,
            title: h.to_owned(),
            warning: Some(format!(
                "heading {h:?} starts with something shaped like a date that is not one; read \
                 as a title"
            )),
        },
        None => HeadingParts {
            date: date::inside(h).map(|f| f.at),
            kind: Kind::Note,
            title: h.to_owned(),
            warning: None,
        },
    }
}

impl Entry {
    /// A new entry dated `date`, with the SEM heading `<date>: <kind>: <title>` and the id
    /// derived from it.
    pub fn new(date: Timestamp, kind: Kind, title: impl Into<String>) -> Self {
        let title = normalize(&title.into());
        let heading = format!("{date}: {kind}: {title}");
        Self::from_heading(heading).with_kind(kind)
    }

    /// A new entry from a heading's text (after `### `): date, kind and title are read out of
    /// it, and the id is derived from it.
    ///
    /// ```
    /// use squad_memory::{Entry, Kind};
    ///
    /// let e = Entry::from_heading("Tag the release (#977) (2026-05-01)");
    /// assert_eq!(e.date.unwrap().to_string(), "2026-05-01T00:00:00Z");
    /// assert_eq!(e.title, "Tag the release (#977) (2026-05-01)");
    /// let e = Entry::from_heading("2026-03-14: decision: keep RS256");
    /// assert_eq!((e.kind, e.title.as_str()), (Kind::Decision, "keep RS256"));
    /// ```
    pub fn from_heading(heading: impl Into<String>) -> Self {
        let mut e = Self::read_heading(heading.into()).0;
        e.id = Self::derived_id(&e.heading);
        e
    }

    /// The entry a heading opens, without its id (derived when the entry closes without an
    /// `**id:**` field), and the warning the heading deserves, if any.
    fn read_heading(heading: String) -> (Self, Option<String>) {
        let heading = if heading.contains(['\n', '\r']) || heading.trim().len() != heading.len() {
            normalize_heading(&heading)
        } else {
            heading
        };
        let parts = heading_parts(&heading);
        let entry = Self {
            id: MemoryId(String::new()),
            title: parts.title,
            date: parts.date,
            kind: parts.kind,
            heading,
            group: None,
            body: String::new(),
            superseded_by: None,
            last_loaded: None,
            entered: None,
            topic: None,
            merged: Vec::new(),
            line: 0,
            level: ENTRY_LEVEL,
        };
        (entry, parts.warning)
    }

    fn with_kind(mut self, kind: Kind) -> Self {
        self.kind = kind;
        self
    }

    /// The id an entry without an explicit id gets: `h-` and the first 12 hex digits of the
    /// SHA-256 of its heading (whitespace collapsed). Stable across runs and machines, and the
    /// same for two identical sections (which are then merged).
    pub fn derived_id(heading: &str) -> MemoryId {
        let hex = hex::encode(Sha256::digest(normalize(heading).as_bytes()));
        MemoryId(format!("h-{}", &hex[..12]))
    }

    /// Sets the body (builder style).
    pub fn with_body(mut self, body: impl Into<String>) -> Self {
        self.body = trim_blank_lines(&body.into().replace("\r\n", "\n")).to_owned();
        self
    }

    /// Sets an explicit id (builder style).
    pub fn with_id(mut self, id: MemoryId) -> Self {
        self.id = id;
        self
    }

    /// `true` when another entry replaces this one.
    pub fn is_superseded(&self) -> bool {
        self.superseded_by.is_some()
    }

    /// When the entry's cold TTL starts: the later of `entered` (else the heading's date) and
    /// `last_loaded`. `None` for an undated entry that never entered a tier through the Scribe
    /// or an import (the Scribe stamps `entered` on it, so it is kept).
    pub fn last_touched(&self) -> Option<Timestamp> {
        let start = self.entered.or(self.date)?;
        Some(match self.last_loaded {
            Some(l) if l > start => l,
            _ => start,
        })
    }

    /// What makes two entries duplicates: the same heading (at the same level) and body,
    /// whitespace-normalised.
    pub fn content_key(&self) -> (String, String) {
        let heading = if self.level == ENTRY_LEVEL {
            normalize(&self.heading)
        } else {
            normalize(&self.heading_line())
        };
        (heading, normalize(&self.body))
    }

    /// The text searched for this entry: heading and body.
    pub fn search_text(&self) -> String {
        let mut s = String::with_capacity(self.heading.len() + self.body.len() + 1);
        s.push_str(&self.heading);
        s.push('\n');
        s.push_str(&self.body);
        s
    }

    /// The entry as it appears in a prompt: `#### <heading>` and the body, verbatim.
    pub fn prompt_text(&self) -> String {
        let mut s = String::with_capacity(self.prompt_len());
        self.write_prompt(&mut s);
        s
    }

    /// Appends [`Entry::prompt_text`] to `out`.
    pub(crate) fn write_prompt(&self, out: &mut String) {
        out.push_str("#### ");
        out.push_str(&self.heading);
        out.push('\n');
        if !self.body.is_empty() {
            out.push_str(&self.body);
            out.push('\n');
        }
    }

    /// The length of [`Entry::prompt_text`], without writing it.
    pub(crate) fn prompt_len(&self) -> usize {
        let body = if self.body.is_empty() {
            0
        } else {
            self.body.len() + 1
        };
        "#### ".len() + self.heading.len() + 1 + body
    }

    /// The body lines that would not survive a write as written: a line the parser reads as
    /// structure (`---`, a `#`, `##` or `###` heading outside a code fence), or an unclosed
    /// fence. Empty when the body is safe. `add` refuses such a body.
    pub fn body_problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.body.contains('\0') || self.heading.contains('\0') {
            out.push("the text holds a NUL byte".to_owned());
        }
        let mut fence: Option<Fence> = None;
        for (i, line) in self.body.lines().enumerate() {
            if let Some(f) = fence {
                if f.closes(line) {
                    fence = None;
                }
                continue;
            }
            if let Some(f) = Fence::opens(line) {
                fence = Some(f);
                continue;
            }
            if line.trim() == "---" || is_entry_heading(line).is_some() || is_group_heading(line) {
                out.push(format!(
                    "body line {} ({line:?}) would end the entry; indent it or put it in a code \
                     fence",
                    i + 1
                ));
            }
        }
        if fence.is_some() {
            out.push("the body opens a code fence it does not close".into());
        }
        out
    }

    /// The heading line as written: `### <heading>` (or the entry's own level).
    pub fn heading_line(&self) -> String {
        let mut s = String::with_capacity(self.heading.len() + 8);
        self.push_heading_line(&mut s);
        s
    }

    fn push_heading_line(&self, out: &mut String) {
        let level = usize::from(self.level.clamp(1, 6));
        out.extend(std::iter::repeat_n('#', level));
        out.push(' ');
        out.push_str(&self.heading);
    }

    fn write_to(&self, out: &mut String) {
        self.push_heading_line(out);
        out.push('\n');
        let mut field = |k: &str, v: &dyn fmt::Display| {
            out.push_str(&format!("**{k}:** {v}\n"));
        };
        field("id", &self.id);
        if let Some(s) = &self.superseded_by {
            field("superseded_by", s);
        }
        if let Some(t) = &self.topic {
            field("topic", t);
        }
        if let Some(t) = &self.entered {
            field("entered", t);
        }
        if let Some(l) = &self.last_loaded {
            field("last_loaded", l);
        }
        if !self.merged.is_empty() {
            let ids: Vec<&str> = self.merged.iter().map(MemoryId::as_str).collect();
            field("merged", &ids.join(", "));
        }
        let body = trim_blank_lines(&self.body);
        if !body.is_empty() {
            // A body that starts with a line shaped like a field is kept apart from the fields.
            if body.lines().next().and_then(field_line).is_some() {
                out.push('\n');
            }
            out.push_str(body);
            out.push('\n');
            // An unclosed fence would swallow the rest of the file: close it.
            if let Some(f) = body.lines().fold(None, Fence::step) {
                out.push_str(&f.marker());
                out.push('\n');
            }
        }
        out.push_str("---\n");
    }
}

fn normalize_heading(h: &str) -> String {
    h.replace(['\n', '\r'], " ").trim().to_owned()
}

/// `s` without its blank lines at either end, and without the line end of its last line.
fn trim_blank_lines(s: &str) -> &str {
    let (start, end) = blank_trim(s);
    &s[start..end]
}

/// The range [`trim_blank_lines`] keeps.
fn blank_trim(s: &str) -> (usize, usize) {
    let mut start = 0;
    for line in s.split_inclusive('\n') {
        if !line.trim().is_empty() {
            break;
        }
        start += line.len();
    }
    // From the end: drop whole lines that are blank, then the last line end(s).
    let mut end = s.len();
    while end > start {
        let line_start = s[start..end]
            .trim_end_matches('\n')
            .rfind('\n')
            .map_or(start, |i| start + i + 1);
        if s[line_start..end].trim().is_empty() {
            end = line_start;
        } else {
            break;
        }
    }
    let end = start + s[start..end].trim_end_matches('\n').len();
    (start, end)
}

/// A line of a memory file outside any entry: hand-written text such as `Current task: ...`,
/// a preamble, a `#` or `##` heading and the text under it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FreeLine {
    /// The 1-based line number in the file it was read from (0 when built in code).
    pub line: usize,
    /// The text, without the line ending.
    pub text: String,
}

/// One item of a memory file, in file order.
#[derive(Debug, Clone, PartialEq, Eq)]
#[expect(
    clippy::large_enum_variant,
    reason = "most items of a memory file are entries: boxing them would add an allocation each"
)]
pub enum Item {
    /// A line outside any entry.
    Line(FreeLine),
    /// A `### ` section.
    Entry(Entry),
}

/// A parsed memory file: free lines and entries, in file order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemoryDoc {
    /// The items, in file order. Blank lines at either end of the file and directly after an
    /// entry are not kept.
    pub items: Vec<Item>,
    /// What was read leniently (renamed duplicate ids, field lines that are not valid, dates
    /// that are not dates), as error- or warning-level problems. Never fatal for readers;
    /// `validate` fails on the error-level ones.
    pub problems: Vec<Problem>,
}

/// How [`MemoryDoc::parse_with`] reads a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParseOptions {
    /// Read `**id:**`, `**superseded_by:**`, ... lines right after a heading as fields (memory
    /// files). Off for files brought in by import, whose bodies are kept verbatim.
    pub fields: bool,
}

impl Default for ParseOptions {
    fn default() -> Self {
        Self { fields: true }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fence {
    ch: u8,
    len: usize,
}

impl Fence {
    pub(crate) fn opens(line: &str) -> Option<Fence> {
        if !matches!(line.as_bytes().first(), Some(b' ' | b'`' | b'~')) {
            return None;
        }
        let t = line.trim_start_matches(' ');
        if line.len() - t.len() > 3 {
            return None;
        }
        let ch = *t.as_bytes().first()?;
        if ch != b'`' && ch != b'~' {
            return None;
        }
        let len = t.bytes().take_while(|b| *b == ch).count();
        if len < 3 || (ch == b'`' && t[len..].contains('`')) {
            return None;
        }
        Some(Fence { ch, len })
    }

    /// The fence open after `line`, given the one open before it (`None` outside fences).
    pub(crate) fn step(open: Option<Fence>, line: &str) -> Option<Fence> {
        match open {
            Some(f) if f.closes(line) => None,
            Some(f) => Some(f),
            None => Fence::opens(line),
        }
    }

    pub(crate) fn closes(self, line: &str) -> bool {
        let t = line.trim_start_matches(' ');
        if line.len() - t.len() > 3 {
            return false;
        }
        let len = t.bytes().take_while(|b| *b == self.ch).count();
        len >= self.len && t[len..].trim().is_empty()
    }

    fn marker(self) -> String {
        String::from(char::from(self.ch)).repeat(self.len)
    }
}

/// A heading line without the up to three spaces CommonMark allows before its `#`s (the line
/// as it is otherwise).
pub(crate) fn unindent(line: &str) -> &str {
    let t = line.trim_start_matches(' ');
    if line.len() - t.len() <= 3 && t.starts_with('#') {
        t
    } else {
        line
    }
}

/// The level and text of an ATX heading line (`#` to `######`, then a space or tab, text not
/// empty; up to three spaces before it).
fn atx_heading(line: &str) -> Option<(u8, &str)> {
    let line = unindent(line);
    let level = line.bytes().take_while(|b| *b == b'#').count();
    if !(1..=6).contains(&level) {
        return None;
    }
    let rest = &line[level..];
    if !(rest.starts_with(' ') || rest.starts_with('\t')) {
        return None;
    }
    let t = rest.trim();
    // `level` is at most 6.
    (!t.is_empty()).then_some((level as u8, t))
}

/// `true` when a heading's text holds a date (at its start, or anywhere in it).
fn is_dated(text: &str) -> bool {
    matches!(date::leading(text), Some(Ok(_))) || date::inside(text).is_some()
}

/// The level and text when `line` opens an entry: every `### <text>` heading, and a dated
/// heading of another level (inside an entry, a dated heading below `###` is body text).
fn entry_heading(line: &str, in_entry: bool) -> Option<(u8, &str)> {
    if !unindent(line).starts_with('#') {
        return None;
    }
    let (level, text) = atx_heading(line)?;
    let opens = level == ENTRY_LEVEL || (!(in_entry && level > ENTRY_LEVEL) && is_dated(text));
    opens.then_some((level, text))
}

/// The heading text when `line` opens an entry (`### <text>`, text not empty).
fn is_entry_heading(line: &str) -> Option<&str> {
    entry_heading(line, true).map(|(_, t)| t)
}

/// `true` for a `#` or `##` heading line (which ends an entry and opens a group; up to three
/// spaces before it).
pub(crate) fn is_group_heading(line: &str) -> bool {
    let line = unindent(line);
    for p in ["# ", "## ", "#\t", "##\t"] {
        if line.starts_with(p) {
            return true;
        }
    }
    matches!(line.trim_end(), "#" | "##")
}

/// The field names read after a heading.
pub(crate) const FIELDS: [&str; 6] = [
    "id",
    "superseded_by",
    "last_loaded",
    "entered",
    "topic",
    "merged",
];

/// `(key, value)` when the line is `**<key>:** <value>` with a known key.
fn field_line(line: &str) -> Option<(&'static str, &str)> {
    let rest = line.strip_prefix("**")?;
    let (key, value) = rest.split_once(":**")?;
    let key = FIELDS.into_iter().find(|k| *k == key)?;
    Some((key, value.trim()))
}

struct Open {
    entry: Entry,
    has_id: bool,
    in_fields: bool,
    seen: u8,
    body: String,
}

/// `true` when a line (or the text from its start) starts with a character that lets it be
/// nothing but text inside an
/// entry's body (outside fields and fences): empty, a `- ` list item, or any other start than
/// `#`, `-`, a fence character or whitespace.
fn plain_start(line: &[u8]) -> bool {
    match line {
        // An empty line, a list item.
        [] | [b'\n', ..] | [b'-', b' ', ..] => true,
        [b, ..] => b.is_ascii_graphic() && !matches!(b, b'#' | b'-' | b'`' | b'~'),
    }
}

/// Splits text into lines: `\n` ends a line, and the `\r`s right before it are dropped (a
/// bare `\r` inside a line stays). Dropping the whole run, not one `\r`, keeps a rewrite
/// stable: a line that kept a trailing `\r` would be written as `\r\n` and lose it on the
/// next read.
pub(crate) fn lines(text: &str) -> impl Iterator<Item = &str> {
    let mut start = 0;
    let mut ends = memchr::memchr_iter(b'\n', text.as_bytes());
    std::iter::from_fn(move || {
        let end = match ends.next() {
            Some(e) => e,
            None if start < text.len() => text.len(),
            None => return None,
        };
        // `start` and `end` sit next to a line end or at the ends: character boundaries.
        let l = &text[start..end];
        start = end + 1;
        Some(l.trim_end_matches('\r'))
    })
}

impl MemoryDoc {
    /// Parses a memory file. `file` names it in problems (`hot/data.md`).
    ///
    /// Every line is kept somewhere: in an entry or as a free line. What is read leniently is
    /// listed in [`MemoryDoc::problems`].
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidInput`] with one [`Problem`] per line holding a NUL byte.
    pub fn parse(file: &str, text: &str) -> Result<Self> {
        Self::parse_with(file, text, ParseOptions::default())
    }

    /// [`MemoryDoc::parse`] with options.
    ///
    /// # Errors
    ///
    /// As [`MemoryDoc::parse`].
    pub fn parse_with(file: &str, text: &str, options: ParseOptions) -> Result<Self> {
        if memchr::memchr(0, text.as_bytes()).is_some() {
            let nul: Vec<Problem> = lines(text)
                .enumerate()
                .filter(|(_, l)| l.contains('\0'))
                .map(|(i, _)| Problem::error(file, i + 1, "line contains a NUL byte"))
                .collect();
            return Err(Error::malformed("memory.parse", nul));
        }
        Ok(parse_inner(file, text, options))
    }

    /// The entries, in file order.
    pub fn entries(&self) -> impl Iterator<Item = &Entry> {
        self.items.iter().filter_map(|i| match i {
            Item::Entry(e) => Some(e),
            Item::Line(_) => None,
        })
    }

    /// The entries, mutable, in file order.
    pub fn entries_mut(&mut self) -> impl Iterator<Item = &mut Entry> {
        self.items.iter_mut().filter_map(|i| match i {
            Item::Entry(e) => Some(e),
            Item::Line(_) => None,
        })
    }

    /// The free lines, in file order.
    pub fn free_lines(&self) -> impl Iterator<Item = &FreeLine> {
        self.items.iter().filter_map(|i| match i {
            Item::Line(l) => Some(l),
            Item::Entry(_) => None,
        })
    }

    /// The entry with this id (or one merged into it).
    pub fn find(&self, id: &MemoryId) -> Option<&Entry> {
        self.entries()
            .find(|e| &e.id == id)
            .or_else(|| self.entries().find(|e| e.merged.contains(id)))
    }

    /// Writes the document: items in order, each entry as its heading, its fields, its body and
    /// `---`.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let mut prev: Option<&Item> = None;
        for item in &self.items {
            match item {
                Item::Line(l) => {
                    if matches!(prev, Some(Item::Entry(_))) && !l.text.trim().is_empty() {
                        out.push('\n');
                    }
                    out.push_str(&l.text);
                    out.push('\n');
                }
                Item::Entry(e) => {
                    match prev {
                        Some(Item::Entry(_)) => out.push('\n'),
                        Some(Item::Line(l)) if !l.text.trim().is_empty() => out.push('\n'),
                        _ => {}
                    }
                    e.write_to(&mut out);
                }
            }
            prev = Some(item);
        }
        out
    }

    /// The text [`MemoryDoc::to_text`] settles on: written, read back and written again, so
    /// that writing what was read back changes nothing (blank lines between items settle on
    /// the first rewrite).
    pub fn to_stable_text(&self, file: &str) -> String {
        let once = self.to_text();
        match MemoryDoc::parse(file, &once) {
            Ok(doc) => doc.to_text(),
            Err(_) => once,
        }
    }

    /// `true` when the document holds no text and no entries.
    pub fn is_empty(&self) -> bool {
        self.items.iter().all(|i| match i {
            Item::Line(l) => l.text.trim().is_empty(),
            Item::Entry(_) => false,
        })
    }

    /// Adds an entry under its group: after the last item of its `## <group>` section (the
    /// heading is added at the end when the document has none), or, for an entry without a
    /// group, before the first `## ` heading.
    pub fn insert_entry(&mut self, mut entry: Entry) {
        entry.line = 0;
        let is_heading = |i: &Item| matches!(i, Item::Line(l) if is_group_heading(&l.text));
        match entry.group.clone() {
            None => {
                let at = self
                    .items
                    .iter()
                    .position(is_heading)
                    .unwrap_or(self.items.len());
                self.items.insert(at, Item::Entry(entry));
            }
            Some(g) => {
                let start = self.items.iter().rposition(|i| {
                    matches!(i, Item::Line(l) if l.text.strip_prefix("## ").is_some_and(|t| t.trim() == g))
                });
                match start {
                    Some(s) => {
                        let end = self.items[s + 1..]
                            .iter()
                            .position(is_heading)
                            .map_or(self.items.len(), |p| s + 1 + p);
                        self.items.insert(end, Item::Entry(entry));
                    }
                    None => {
                        if !self.items.is_empty() {
                            self.items.push(Item::Line(FreeLine {
                                line: 0,
                                text: String::new(),
                            }));
                        }
                        self.items.push(Item::Line(FreeLine {
                            line: 0,
                            text: format!("## {g}"),
                        }));
                        self.items.push(Item::Entry(entry));
                    }
                }
            }
        }
    }

    /// The lines of text the document holds, for conservation checks: every non-blank line of
    /// free text, every heading and every body line, trimmed; field lines and `---` are markup
    /// and not counted.
    pub fn content_lines(&self) -> Vec<&str> {
        let mut out = Vec::new();
        for item in &self.items {
            match item {
                Item::Line(l) => out.push(l.text.trim()),
                Item::Entry(e) => {
                    out.push(e.heading.trim());
                    out.extend(e.body.lines().map(str::trim));
                }
            }
        }
        out.retain(|l| !l.is_empty() && *l != "---");
        out
    }
}

fn parse_inner(file: &str, text: &str, options: ParseOptions) -> MemoryDoc {
    let mut parser = Parser::new(file, text, options);
    let mut lines = Lines::new(text);
    while let Some((start, line)) = lines.next_line() {
        // Most lines are body text: nothing in them can open or close anything.
        if parser.in_plain_body(line) {
            if lines.bulk {
                parser.body_run(lines.plain_run(start));
            } else {
                parser.body_line(line);
            }
        } else {
            parser.line(line, lines.n);
        }
    }
    parser.finish()
}

/// The lines of a text in order, with their 1-based numbers.
struct Lines<'t> {
    text: &'t str,
    /// The line ends in order: each line takes the next one (the last may have none).
    ends: memchr::Memchr<'t>,
    /// Where the next line starts.
    pos: usize,
    /// The number of the last line read.
    n: usize,
    /// Without carriage returns there is nothing to strip: runs of body lines are copied at
    /// once.
    bulk: bool,
}

impl<'t> Lines<'t> {
    fn new(text: &'t str) -> Self {
        Self {
            text,
            ends: memchr::memchr_iter(b'\n', text.as_bytes()),
            pos: 0,
            n: 0,
            bulk: memchr::memchr(b'\r', text.as_bytes()).is_none(),
        }
    }

    fn line_end(&mut self) -> usize {
        self.ends.next().unwrap_or(self.text.len())
    }

    /// The next line (without its line ending) and where it starts.
    fn next_line(&mut self) -> Option<(usize, &'t str)> {
        if self.pos >= self.text.len() {
            return None;
        }
        let start = self.pos;
        let end = self.line_end();
        // `start` and `end` sit next to line ends or at the ends: character boundaries.
        let raw = &self.text[start..end];
        self.n += 1;
        self.pos = end + 1;
        // Like [`lines`], the whole run of `\r` before the line end is part of it.
        Some((start, raw.trim_end_matches('\r')))
    }

    /// The line read last (from `start`) and the lines after it that start as plain body
    /// text, line ends included, as one slice; they count as read.
    fn plain_run(&mut self, start: usize) -> &'t str {
        let bytes = self.text.as_bytes();
        let mut p = self.pos;
        while p < bytes.len() && plain_start(&bytes[p..]) {
            self.n += 1;
            p = self.line_end() + 1;
        }
        self.pos = p;
        &self.text[start..p.min(bytes.len())]
    }
}

/// The ids read so far: the index (in `doc.items`) of the first entry with each, and, once an
/// id repeats, every id taken (the file's explicit ids gathered only then).
#[derive(Default)]
struct Ids {
    seen: HashMap<MemoryId, usize, Fast>,
    used: Option<HashSet<MemoryId, Fast>>,
}

/// The explicit ids (`**id:**` lines) of a file read with fields.
fn explicit_ids(text: &str, options: ParseOptions) -> HashSet<MemoryId, Fast> {
    let mut set: HashSet<MemoryId, Fast> = HashSet::default();
    if options.fields {
        for l in lines(text) {
            if let Some(("id", v)) = field_line(l)
                && let Ok(id) = MemoryId::new(v)
            {
                set.insert(id);
            }
        }
    }
    set
}

/// The parser's state between lines.
struct Parser<'t> {
    file: &'t str,
    text: &'t str,
    options: ParseOptions,
    doc: MemoryDoc,
    /// The entry being read.
    open: Option<Open>,
    /// The `##` group the entries read now belong to.
    group: Option<String>,
    /// The code fence the last lines are inside.
    fence: Option<Fence>,
    /// The last line closed an entry with `---` (blank lines after it are not kept).
    after_entry: bool,
    ids: Ids,
}

impl<'t> Parser<'t> {
    fn new(file: &'t str, text: &'t str, options: ParseOptions) -> Self {
        // Room for every heading (an entry, or a free line) and then some, so that the item
        // list of a large file is not copied as it grows (each copy touches fresh memory).
        let headings = memchr::memmem::find_iter(text.as_bytes(), b"\n#").count();
        let mut doc = MemoryDoc::default();
        doc.items.reserve(headings + headings / 4 + 8);
        Self {
            file,
            text,
            options,
            doc,
            open: None,
            group: None,
            fence: None,
            after_entry: false,
            ids: Ids::default(),
        }
    }

    /// Whether `line` can be nothing but body text of the open entry.
    fn in_plain_body(&self, line: &str) -> bool {
        self.fence.is_none()
            && self
                .open
                .as_ref()
                .is_some_and(|o| !o.in_fields && plain_start(line.as_bytes()))
    }

    /// Plain body lines, copied at once (line ends included; the last one given one).
    fn body_run(&mut self, run: &str) {
        if let Some(o) = self.open.as_mut() {
            o.body.push_str(run);
            if !o.body.ends_with('\n') {
                o.body.push('\n');
            }
        }
    }

    /// One line of body text of the open entry.
    fn body_line(&mut self, line: &str) {
        if let Some(o) = self.open.as_mut() {
            o.body.push_str(line);
            o.body.push('\n');
        }
    }

    /// Any other line: what it is decides where it goes.
    fn line(&mut self, line: &str, n: usize) {
        if let Some(f) = self.fence {
            if f.closes(line) {
                self.fence = None;
            }
            match self.open {
                Some(_) => self.body_line(line),
                None => self.doc.items.push(free_line(n, line)),
            }
        } else if let Some((level, h)) = entry_heading(line, self.open.is_some()) {
            self.heading(level, h, n);
        } else if is_group_heading(line) {
            self.close();
            self.group = unindent(line)
                .strip_prefix("##")
                .filter(|r| !r.starts_with('#'))
                .map(|r| r.trim().to_owned())
                .filter(|g| !g.is_empty());
            self.doc.items.push(free_line(n, line));
            self.after_entry = false;
        } else if self.open.is_some() {
            self.entry_line(line, n);
        } else {
            if line.trim().is_empty() && (self.after_entry || self.doc.items.is_empty()) {
                return;
            }
            self.after_entry = false;
            self.doc.items.push(free_line(n, line));
            self.fence = Fence::opens(line);
        }
    }

    /// An entry heading: closes the open entry and opens one.
    fn heading(&mut self, level: u8, h: &str, n: usize) {
        self.close();
        let (mut entry, warning) = Entry::read_heading(h.to_owned());
        if level < ENTRY_LEVEL {
            // A dated `#`/`##` heading ends the group above it.
            self.group = None;
        }
        entry.group = self.group.clone();
        entry.line = n;
        entry.level = level;
        if let Some(w) = warning {
            self.doc.problems.push(Problem::warning(self.file, n, w));
        }
        self.open = Some(Open {
            entry,
            has_id: false,
            in_fields: self.options.fields,
            seen: 0,
            body: String::new(),
        });
        self.after_entry = false;
    }

    /// A line inside the open entry (outside a fence, not a heading): `---` closes it, a field
    /// line right after its heading sets a field, anything else is body text.
    fn entry_line(&mut self, line: &str, n: usize) {
        if line.trim() == "---" {
            self.close();
            self.after_entry = true;
            return;
        }
        let Some(o) = self.open.as_mut() else {
            return;
        };
        if o.in_fields {
            if let Some((key, value)) = field_line(line) {
                self.field(key, value, line, n);
                return;
            }
            o.in_fields = false;
        }
        o.body.push_str(line);
        o.body.push('\n');
        self.fence = Fence::opens(line);
    }

    /// A field line of the open entry; one given twice or not valid is an error-level
    /// problem (an invalid one is kept as body text, and ends the fields).
    fn field(&mut self, key: &'static str, value: &str, line: &str, n: usize) {
        let Some(o) = self.open.as_mut() else {
            return;
        };
        let bit = 1u8 << FIELDS.iter().position(|k| *k == key).unwrap_or(7);
        if o.seen & bit != 0 {
            self.doc.problems.push(Problem::error(
                self.file,
                n,
                format!("field {key} given twice; the first is used"),
            ));
            return;
        }
        o.seen |= bit;
        if let Err(msg) = apply_field(o, key, value) {
            self.doc.problems.push(Problem::error(
                self.file,
                n,
                format!("{msg}; the line is read as body text"),
            ));
            o.body.push_str(line);
            o.body.push('\n');
            o.in_fields = false;
        }
    }

    /// Closes the open entry, if any: its body trimmed of blank lines at both ends, its id
    /// derived when not given, then checked against the ids read so far.
    fn close(&mut self) {
        let Some(o) = self.open.take() else {
            return;
        };
        let mut e = o.entry;
        let mut body = o.body;
        let (start, end) = blank_trim(&body);
        body.truncate(end);
        body.drain(..start);
        e.body = body;
        if !o.has_id {
            e.id = Entry::derived_id(&e.heading);
        }
        if e.superseded_by.as_ref() == Some(&e.id) {
            self.doc.problems.push(Problem::error(
                self.file,
                e.line,
                format!("entry {} is superseded by itself", e.id),
            ));
            e.superseded_by = None;
        }
        self.check_id(&mut e);
        if let Some(u) = self.ids.used.as_mut() {
            u.insert(e.id.clone());
        }
        self.doc.items.push(Item::Entry(e));
    }

    /// An id read before: an exact duplicate is reported (the Scribe merges it); a different
    /// entry is renamed to a fresh id (reported).
    fn check_id(&mut self, e: &mut Entry) {
        let first = self
            .ids
            .seen
            .get(&e.id)
            .and_then(|&i| match &self.doc.items[i] {
                Item::Entry(x) => Some(x),
                Item::Line(_) => None,
            });
        let Some(x) = first else {
            self.ids.seen.insert(e.id.clone(), self.doc.items.len());
            return;
        };
        let line = x.line;
        if x.content_key() == e.content_key() {
            self.doc.problems.push(Problem::warning(
                self.file,
                e.line,
                format!(
                    "entry {} repeats the entry at line {line} (an exact duplicate, merged by the \
                     Scribe)",
                    e.id
                ),
            ));
            return;
        }
        let (text, options, seen) = (self.text, self.options, &self.ids.seen);
        let taken = self.ids.used.get_or_insert_with(|| {
            let mut set = explicit_ids(text, options);
            set.extend(seen.keys().cloned());
            set
        });
        let new = e.id.fresh(taken);
        self.doc.problems.push(Problem::warning(
            self.file,
            e.line,
            format!(
                "entry id {} is already used at line {line} by a different entry; this one is \
                 read as {new}",
                e.id
            ),
        ));
        e.id = new;
        self.ids.seen.insert(e.id.clone(), self.doc.items.len());
    }

    /// The end of the file: the open entry closed (a fence left open runs to the end of the
    /// file; the writer closes it, so the body read here already holds the closing line, and
    /// a re-read gives the same entry), trailing blank lines dropped.
    fn finish(mut self) -> MemoryDoc {
        if let (Some(o), Some(f)) = (self.open.as_mut(), self.fence) {
            o.body.push_str(&f.marker());
            o.body.push('\n');
        }
        self.close();
        while matches!(self.doc.items.last(), Some(Item::Line(l)) if l.text.trim().is_empty()) {
            self.doc.items.pop();
        }
        self.doc
    }
}

fn free_line(line: usize, text: &str) -> Item {
    Item::Line(FreeLine {
        line,
        text: text.to_owned(),
    })
}

fn apply_field(o: &mut Open, key: &'static str, value: &str) -> std::result::Result<(), String> {
    if value.is_empty() {
        return Err(format!("field {key} has no value"));
    }
    let e = &mut o.entry;
    match key {
        "id" => {
            e.id = MemoryId::new(value).map_err(|x| x.message().to_owned())?;
            o.has_id = true;
        }
        "superseded_by" => {
            e.superseded_by = Some(MemoryId::new(value).map_err(|x| x.message().to_owned())?);
        }
        "last_loaded" => {
            e.last_loaded = Some(
                date::parse_date(value)
                    .ok_or_else(|| format!("bad date {value:?} in last_loaded"))?,
            );
        }
        "entered" => {
            e.entered = Some(
                date::parse_date(value).ok_or_else(|| format!("bad date {value:?} in entered"))?,
            );
        }
        "topic" => {
            e.topic = Some(TopicName::new(value).map_err(|x| x.message().to_owned())?);
        }
        _ => {
            let mut ids = Vec::new();
            for id in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                ids.push(MemoryId::new(id).map_err(|x| x.message().to_owned())?);
            }
            e.merged = ids;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> MemoryDoc {
        MemoryDoc::parse("f.md", text).unwrap()
    }

    #[test]
    fn hand_written_hot_file_is_free_text() {
        let doc = parse("Current task: ship auth\nActive decisions: RS256\n\nBlockers: none\n");
        assert_eq!(doc.free_lines().count(), 4);
        assert_eq!(doc.entries().count(), 0);
    }

    #[test]
    fn entries_round_trip() {
        let text = "Intro line\n\n### 2026-11-02T10:00:00Z: decision: Use RS256\n**id:** d-1\n**superseded_by:** d-2\n**topic:** auth\nBecause keys rotate.\n\n---\n\n### 2026-11-03: note: Later\nbody\n";
        let doc = parse(text);
        let entries: Vec<&Entry> = doc.entries().collect();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0].id.as_str(), "d-1");
        assert_eq!(entries[0].kind, Kind::Decision);
        assert_eq!(entries[0].title, "Use RS256");
        assert_eq!(entries[0].body, "Because keys rotate.");
        assert!(entries[0].is_superseded());
        let again = parse(&doc.to_text());
        assert_eq!(again.to_text(), doc.to_text());
        assert_eq!(again.entries().count(), 2);
    }

    #[test]
    fn real_heading_shapes_are_entries() {
        let text = "# DATA\n\n## Learnings\n\n### 2026-03-14: Title with: colon\nbody a\n\n### 2025-07: Month only\n\n### 2026-03-01T00:34Z: Short time\n\n### 1. Numbered: thing\n\n### CLI Entry Point Architecture\n\n### Fix `x` → y (#977) (2026-05-01)\n";
        let doc = parse(text);
        assert!(doc.problems.is_empty(), "{:?}", doc.problems);
        let e: Vec<&Entry> = doc.entries().collect();
        assert_eq!(e.len(), 6);
        assert_eq!(e[0].title, "Title with: colon");
        assert_eq!(e[0].group.as_deref(), Some("Learnings"));
        assert_eq!(e[1].date.unwrap().to_string(), "2025-07-01T00:00:00Z");
        assert_eq!(e[2].date.unwrap().to_string(), "2026-03-01T00:34:00Z");
        assert!(e[3].date.is_none());
        assert_eq!(e[3].heading, "1. Numbered: thing");
        assert!(e[4].date.is_none());
        assert_eq!(e[5].date.unwrap().to_string(), "2026-05-01T00:00:00Z");
    }

    #[test]
    fn bad_fields_are_reported_and_kept_as_text() {
        let text = "### 2026-11-02: note: fine\n**id:** a/b\nbody\n";
        let doc = parse(text);
        assert_eq!(doc.problems.len(), 1);
        assert!(doc.problems[0].is_error());
        assert_eq!(doc.problems[0].line, 2);
        assert!(doc.entries().next().unwrap().body.contains("**id:** a/b"));
    }

    #[test]
    fn duplicate_ids_are_merged_or_renamed_never_fatal() {
        let text = "### A\nsame\n### A\nsame\n### A\ndifferent\n";
        let doc = parse(text);
        let ids: Vec<&str> = doc.entries().map(|e| e.id.as_str()).collect();
        assert_eq!(ids[0], ids[1]);
        assert_eq!(ids[2], format!("{}-2", ids[0]));
        assert_eq!(doc.problems.len(), 2);
        assert!(doc.problems.iter().all(|p| !p.is_error()));
    }

    #[test]
    fn fences_hide_headings_and_rules() {
        let text = "### A\n```md\n### not a heading\n---\n```\nafter\n";
        let doc = parse(text);
        assert_eq!(doc.entries().count(), 1);
        assert!(doc.entries().next().unwrap().body.ends_with("after"));
    }

    #[test]
    fn crlf_and_bare_cr() {
        let doc = parse("### A\r\nline one\r\nx\ry\n");
        let e = doc.entries().next().unwrap();
        assert_eq!(e.heading, "A");
        assert_eq!(e.body, "line one\nx\ry");
    }

    #[test]
    fn a_run_of_cr_before_a_line_end_is_part_of_it_and_a_rewrite_settles_at_once() {
        // Free text, a heading-like line, a group heading, a fence and a body line, each
        // ending in `\r\r\r\n`: the first write is already the stable one.
        for t in [
            "### \r\r\r\n",
            "x\r\r\r\n",
            "## g\r\r\r\n",
            "```\r\r\r\n",
            "### a\nb\r\r\r\nc\n",
        ] {
            let once = parse(t).to_text();
            assert!(!once.contains('\r'), "{t:?} wrote {once:?}");
            assert_eq!(parse(&once).to_text(), once, "{t:?}");
        }
        assert_eq!(
            parse("### A\nx\r\r\ny\rz\n").entries().next().unwrap().body,
            "x\ny\rz"
        );
    }

    #[test]
    fn nul_is_an_error_naming_the_line() {
        let e = MemoryDoc::parse("f.md", "ok\nbad\0\n").unwrap_err();
        assert_eq!(e.problems()[0].line, 2);
    }

    #[test]
    fn insert_entry_goes_under_its_group() {
        let mut doc = parse("# T\npreamble\n## Learnings\n### a\nx\n## Other\n### b\ny\n");
        let mut e = Entry::from_heading("c");
        e.group = Some("Learnings".into());
        doc.insert_entry(e);
        doc.insert_entry(Entry::from_heading("top"));
        let again = parse(&doc.to_text());
        let heads: Vec<(&str, Option<&str>)> = again
            .entries()
            .map(|e| (e.heading.as_str(), e.group.as_deref()))
            .collect();
        assert_eq!(
            heads,
            [
                ("top", None),
                ("a", Some("Learnings")),
                ("c", Some("Learnings")),
                ("b", Some("Other"))
            ]
        );
    }

    #[test]
    fn blank_lines_are_trimmed_at_both_ends_only() {
        fn old(s: &str) -> &str {
            let mut start = 0;
            for line in s.split_inclusive('\n') {
                if !line.trim().is_empty() {
                    break;
                }
                start += line.len();
            }
            let s = &s[start..];
            let (mut end, mut pos) = (0, 0);
            for line in s.split_inclusive('\n') {
                pos += line.len();
                if !line.trim().is_empty() {
                    end = pos;
                }
            }
            s[..end].trim_end_matches('\n')
        }
        let parts = [
            "", "\n", "a", " ", "\r", "\r\n", "b\n", "\n\n", "  \n", "é", "\t",
        ];
        for a in parts {
            for b in parts {
                for c in parts {
                    for d in parts {
                        let s = format!("{a}{b}{c}{d}");
                        assert_eq!(trim_blank_lines(&s), old(&s), "{s:?}");
                    }
                }
            }
        }
    }
}
