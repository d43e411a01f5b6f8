//! Memory entries and the Markdown file format (parse and write).
//!
//! The format is described in the crate README, section "File format".

use std::collections::HashSet;
use std::fmt;
use std::str::FromStr;

use sha2::{Digest, Sha256};
use squad_model::Timestamp;

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
    /// Anything else worth remembering.
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
            .find(|k| k.as_str().eq_ignore_ascii_case(s))
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

/// One memory entry: a stable id, a date, a kind, a one-line summary and a free body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The stable id. Entries written without one get [`Entry::derived_id`].
    pub id: MemoryId,
    /// When the entry was made.
    pub date: Timestamp,
    /// What it records.
    pub kind: Kind,
    /// One line.
    pub summary: String,
    /// Free Markdown lines after the heading and fields (may be empty).
    pub body: String,
    /// The entry that replaces this one. A superseded entry is never loaded into a prompt.
    pub superseded_by: Option<MemoryId>,
    /// The last time a spawn loaded this entry (refreshes the cold TTL).
    pub last_loaded: Option<Timestamp>,
    /// The wiki topic a structured entry is promoted to (default: [`Kind::default_topic`]).
    pub topic: Option<TopicName>,
    /// Ids of duplicate entries merged into this one by the Scribe.
    pub merged: Vec<MemoryId>,
}

impl Entry {
    /// A new entry with the id derived from date, kind and summary.
    pub fn new(date: Timestamp, kind: Kind, summary: impl Into<String>) -> Self {
        let summary = summary.into().trim().replace('\n', " ");
        Self {
            id: Self::derived_id(&date, kind, &summary),
            date,
            kind,
            summary,
            body: String::new(),
            superseded_by: None,
            last_loaded: None,
            topic: None,
            merged: Vec::new(),
        }
    }

    /// The id an entry without an explicit id gets: `h-` and the first 12 hex digits of the
    /// SHA-256 of `date`, `kind` and `summary`. Stable across runs and machines.
    pub fn derived_id(date: &Timestamp, kind: Kind, summary: &str) -> MemoryId {
        let mut h = Sha256::new();
        h.update(date.to_string().as_bytes());
        h.update([0]);
        h.update(kind.as_str().as_bytes());
        h.update([0]);
        h.update(summary.trim().as_bytes());
        let hex = hex::encode(h.finalize());
        MemoryId(format!("h-{}", &hex[..12]))
    }

    /// Sets the body (builder style).
    pub fn with_body(mut self, body: impl Into<String>) -> Self {
        self.body = body.into();
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

    /// The later of `date` and `last_loaded`: the start of the rolling TTL.
    pub fn last_touched(&self) -> Timestamp {
        match self.last_loaded {
            Some(l) if l > self.date => l,
            _ => self.date,
        }
    }

    /// What makes two entries duplicates: same kind, summary and body, whitespace-normalised.
    pub fn content_key(&self) -> (Kind, String, String) {
        let norm = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        (self.kind, norm(&self.summary), norm(&self.body))
    }

    /// The entry in the compact form used inside a prompt: `- <date> <kind>: <summary>` and the
    /// body indented below it.
    pub fn prompt_text(&self) -> String {
        let date = self.date.to_string();
        let day = date.get(..10).unwrap_or(&date);
        let mut s = format!("- {day} {}: {}\n", self.kind, self.summary);
        for line in self.body.lines().filter(|l| !l.trim().is_empty()) {
            s.push_str("  ");
            s.push_str(line.trim_end());
            s.push('\n');
        }
        s
    }

    fn write_to(&self, out: &mut String) {
        out.push_str(&format!(
            "### {}: {}: {}\n**id:** {}\n",
            self.date, self.kind, self.summary, self.id
        ));
        if let Some(s) = &self.superseded_by {
            out.push_str(&format!("**superseded_by:** {s}\n"));
        }
        if let Some(t) = &self.topic {
            out.push_str(&format!("**topic:** {t}\n"));
        }
        if let Some(l) = &self.last_loaded {
            out.push_str(&format!("**last_loaded:** {l}\n"));
        }
        if !self.merged.is_empty() {
            let ids: Vec<&str> = self.merged.iter().map(MemoryId::as_str).collect();
            out.push_str(&format!("**merged:** {}\n", ids.join(", ")));
        }
        let body = self.body.trim_matches('\n');
        if !body.is_empty() {
            out.push_str(body);
            out.push('\n');
        }
        out.push_str("\n---\n");
    }
}

/// A line of a memory file outside any entry (hand-written text such as `Current task: ...`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FreeLine {
    /// The 1-based line number in the file it was read from (0 when built in code).
    pub line: usize,
    /// The text, without the line ending.
    pub text: String,
}

/// A parsed memory file: free lines (in file order) and entries (in file order).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemoryDoc {
    /// Lines outside any entry, blank lines at either end removed.
    pub free: Vec<FreeLine>,
    /// The entries.
    pub entries: Vec<Entry>,
}

impl MemoryDoc {
    /// Parses a memory file. `file` names it in problems (`hot/data.md`).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidInput`] with one [`Problem`] per malformed line; nothing is skipped
    /// silently.
    pub fn parse(file: &str, text: &str) -> Result<Self> {
        let mut problems = Vec::new();
        let doc = parse_inner(file, text, &mut problems);
        if problems.is_empty() {
            Ok(doc)
        } else {
            Err(Error::malformed("memory.parse", problems))
        }
    }

    /// Writes the document back: free lines first, then the entries, each ending with `---`.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for l in &self.free {
            out.push_str(&l.text);
            out.push('\n');
        }
        for e in &self.entries {
            if !out.is_empty() {
                out.push('\n');
            }
            e.write_to(&mut out);
        }
        out
    }

    /// `true` when the document holds no free text and no entries.
    pub fn is_empty(&self) -> bool {
        self.free.is_empty() && self.entries.is_empty()
    }
}

/// Parses a date: `YYYY-MM-DD`, RFC 3339 with any offset, or the SEM form with a `±hhmm`
/// offset without a colon. The result is in UTC.
pub fn parse_date(s: &str) -> Option<Timestamp> {
    use time::OffsetDateTime;
    use time::format_description::well_known::Rfc3339;
    let s = s.trim();
    let full;
    let s = if s.len() == 10 {
        full = format!("{s}T00:00:00Z");
        full.as_str()
    } else {
        let b = s.as_bytes();
        let n = b.len();
        if n > 5
            && (b[n - 5] == b'+' || b[n - 5] == b'-')
            && b[n - 4..].iter().all(u8::is_ascii_digit)
        {
            full = format!("{}:{}", &s[..n - 2], &s[n - 2..]);
            full.as_str()
        } else {
            s
        }
    };
    let t = OffsetDateTime::parse(s, &Rfc3339).ok()?;
    let millis = i64::try_from(t.unix_timestamp_nanos() / 1_000_000).ok()?;
    Timestamp::from_unix_millis(millis).ok()
}

struct Open {
    entry: Entry,
    line: usize,
    has_id: bool,
    seen: u8,
    body: String,
}

fn parse_inner(file: &str, text: &str, problems: &mut Vec<Problem>) -> MemoryDoc {
    let mut doc = MemoryDoc::default();
    let mut open: Option<Open> = None;
    let mut ids: HashSet<MemoryId> = HashSet::new();
    let mut problem = |line: usize, message: String| {
        problems.push(Problem {
            file: file.to_owned(),
            line,
            message,
        });
    };
    let mut close = |o: Open, doc: &mut MemoryDoc, problem: &mut dyn FnMut(usize, String)| {
        let mut e = o.entry;
        if !o.has_id {
            e.id = Entry::derived_id(&e.date, e.kind, &e.summary);
        }
        e.body = o.body.trim_matches('\n').to_owned();
        if e.superseded_by.as_ref() == Some(&e.id) {
            problem(o.line, format!("entry {} is superseded by itself", e.id));
        }
        if !ids.insert(e.id.clone()) {
            problem(o.line, format!("duplicate entry id {}", e.id));
        }
        doc.entries.push(e);
    };
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        if line.contains('\0') {
            problem(n, "line contains a NUL byte".into());
            continue;
        }
        if let Some(rest) = line.strip_prefix("### ") {
            let rest = rest.trim();
            let first = rest.split_whitespace().next().unwrap_or("");
            // An entry heading starts with its date; a heading that starts with a digit and
            // has a ':' is taken as one (and reported if the date is bad), never skipped.
            let looks_dated =
                first.as_bytes().first().is_some_and(u8::is_ascii_digit) && rest.contains(':');
            if looks_dated {
                if let Some(o) = open.take() {
                    close(o, &mut doc, &mut problem);
                }
                match parse_heading(rest) {
                    Ok(entry) => {
                        open = Some(Open {
                            entry,
                            line: n,
                            has_id: false,
                            seen: 0,
                            body: String::new(),
                        });
                    }
                    Err(msg) => problem(n, msg),
                }
                continue;
            }
        }
        match open.as_mut() {
            Some(o) => {
                if line.trim() == "---" {
                    if let Some(o) = open.take() {
                        close(o, &mut doc, &mut problem);
                    }
                    continue;
                }
                if let Some((key, value)) = field(line)
                    && let Some(key) = known_field(key)
                {
                    let bit = 1u8 << FIELDS.iter().position(|k| *k == key).unwrap_or(7);
                    if o.seen & bit != 0 {
                        problem(n, format!("field {key} given twice"));
                    } else {
                        o.seen |= bit;
                        if let Err(msg) = apply_field(o, key, value.trim()) {
                            problem(n, msg);
                        }
                    }
                    continue;
                }
                o.body.push_str(line);
                o.body.push('\n');
            }
            None => {
                if line.trim() == "---" && doc.free.is_empty() && doc.entries.is_empty() {
                    // A leading thematic break carries nothing.
                    continue;
                }
                if line.trim().is_empty() && (!doc.entries.is_empty() || doc.free.is_empty()) {
                    // Blank lines between entries (and before any text) separate, nothing more;
                    // blank lines inside the free text before the first entry are kept.
                    continue;
                }
                doc.free.push(FreeLine {
                    line: n,
                    text: line.to_owned(),
                });
            }
        }
    }
    if let Some(o) = open.take() {
        close(o, &mut doc, &mut problem);
    }
    while doc.free.last().is_some_and(|l| l.text.trim().is_empty()) {
        doc.free.pop();
    }
    while doc.free.first().is_some_and(|l| l.text.trim().is_empty()) {
        doc.free.remove(0);
    }
    doc
}

fn parse_heading(rest: &str) -> std::result::Result<Entry, String> {
    let (date_tok, after) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let date_str = date_tok.strip_suffix(':').unwrap_or(date_tok);
    let date = parse_date(date_str).ok_or_else(|| {
        format!("bad date {date_str:?} in entry heading (expected YYYY-MM-DD or RFC 3339)")
    })?;
    let (kind_str, summary) = after
        .split_once(':')
        .ok_or_else(|| "entry heading needs '<date>: <kind>: <summary>'".to_owned())?;
    let kind: Kind = kind_str
        .trim()
        .parse()
        .map_err(|e: Error| e.message().to_owned())?;
    let summary = summary.trim();
    if summary.is_empty() {
        return Err("entry heading has an empty summary".into());
    }
    // The id is derived when the entry closes without an `**id:**` field.
    Ok(Entry {
        id: MemoryId(String::new()),
        date,
        kind,
        summary: summary.to_owned(),
        body: String::new(),
        superseded_by: None,
        last_loaded: None,
        topic: None,
        merged: Vec::new(),
    })
}

fn field(line: &str) -> Option<(&str, &str)> {
    let rest = line.strip_prefix("**")?;
    let (key, value) = rest.split_once(":**")?;
    Some((key.trim(), value))
}

const FIELDS: [&str; 5] = ["id", "superseded_by", "last_loaded", "topic", "merged"];

fn known_field(key: &str) -> Option<&'static str> {
    FIELDS.into_iter().find(|k| k.eq_ignore_ascii_case(key))
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
                parse_date(value).ok_or_else(|| format!("bad date {value:?} in last_loaded"))?,
            );
        }
        "topic" => {
            e.topic = Some(TopicName::new(value).map_err(|x| x.message().to_owned())?);
        }
        _ => {
            for id in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                e.merged
                    .push(MemoryId::new(id).map_err(|x| x.message().to_owned())?);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_written_hot_file_is_free_text() {
        let doc = MemoryDoc::parse(
            "hot/data.md",
            "Current task: ship auth\nActive decisions: RS256\n\nBlockers: none\n",
        )
        .unwrap();
        assert_eq!(doc.free.len(), 4);
        assert!(doc.entries.is_empty());
    }

    #[test]
    fn entries_round_trip() {
        let text = "Intro line\n\n### 2026-11-02T10:00:00Z: decision: Use RS256\n**id:** d-1\n**superseded_by:** d-2\n**topic:** auth\nBecause keys rotate.\n\n---\n\n### 2026-11-03: note: Later\nbody\n";
        let doc = MemoryDoc::parse("cold/x.md", text).unwrap();
        assert_eq!(doc.entries.len(), 2);
        assert_eq!(doc.entries[0].id.as_str(), "d-1");
        assert_eq!(doc.entries[0].body, "Because keys rotate.");
        assert!(doc.entries[0].is_superseded());
        let again = MemoryDoc::parse("cold/x.md", &doc.to_text()).unwrap();
        assert_eq!(again, doc);
    }

    #[test]
    fn sem_offset_without_colon_parses() {
        let t = parse_date("2026-11-02T12:00:00+0200").unwrap();
        assert_eq!(t.to_string(), "2026-11-02T10:00:00Z");
    }

    #[test]
    fn malformed_markup_reports_file_and_line() {
        let text = "ok\n### 2026-13-45: decision: x\n### 2026-11-02: wish: y\n### 2026-11-02: note:\n### 2026-11-02: note: fine\n**id:** a/b\n**topic:** ../x\n";
        let e = MemoryDoc::parse("cold/x.md", text).unwrap_err();
        let lines: Vec<usize> = e.problems().iter().map(|p| p.line).collect();
        assert_eq!(lines, vec![2, 3, 4, 6, 7], "{e}");
        assert!(e.to_string().starts_with("cold/x.md:2: bad date"), "{e}");
    }

    #[test]
    fn duplicate_ids_are_reported() {
        let text =
            "### 2026-11-02: note: a\n**id:** x\n---\n### 2026-11-03: note: b\n**id:** x\n---\n";
        let e = MemoryDoc::parse("f", text).unwrap_err();
        assert_eq!(e.problems()[0].line, 4);
    }
}
