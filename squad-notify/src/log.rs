//! `notifications.md`: the append-only, hash-chained audit log.
//!
//! The file starts with the seed's front matter, the `# Squad Notifications` title, the entry
//! pattern and the marker line; entries follow the marker, oldest first:
//!
//! ```text
//! ### 2026-11-30T10:00:00Z impactful-action
//!
//! * Mode: autopilot
//! * Channel: in-chat
//! * Approval Ref: in-chat
//! * Gate: g-0123456789ab (run r-0123456789ab, digest sha256:...)
//! * Topic: Deploy the staging database migration
//! * Awaiting: approve the migration
//! * Resolved: pending
//! * Prev-Hash: sha256:<hex of the previous entry's bytes>
//! ```
//!
//! A decision never edits an entry: it appends a resolution entry with the same gate and
//! `Resolved: <decision> (by <who>, <when>)`. Every entry carries `Prev-Hash`, the SHA-256 of the
//! bytes of the entry before it (the header for the first), so an edit, an insertion or a
//! deletion anywhere but at the end breaks the chain; `state.json` keeps the hash of the last
//! entry (`approval.logHead`) so that changing or cutting the end shows too. [`verify_log`]
//! checks both.
//!
//! # Acknowledged tampering
//!
//! Once tampering was detected, a human acknowledges it (`squad approval acknowledge-tamper`),
//! which appends a `tamper-acknowledged` entry ([`ACK_TITLE`]) saying who and when. Besides
//! `Prev-Hash`, that entry carries `Covers: sha256:<hex of every byte of the file before it>`:
//! the exact text the human accepted. Verification starts again at the last acknowledgement whose
//! `Covers` still matches, so the acknowledged damage is not reported again, while any later
//! change to the text before it breaks `Covers` and shows. When the damage removed the marker
//! line, the acknowledgement appends a new marker line first.

use sha2::{Digest, Sha256};
use squad_model::Timestamp;

use crate::error::{Error, Result};

/// The marker after which entries are appended.
pub const LOG_MARKER: &str = "<!-- Append new notification entries below this line. -->";

/// The header written to a new `notifications.md`.
pub const LOG_HEADER: &str = "---
description: \"Append-only log of squad notifications (pings) and their delivery channel\"
---

# Squad Notifications

Each entry records a notification the squad fired: when, to whom, the trigger, the channel it resolved to, and the decision awaited. Entries are appended in chronological order and never edited; a decision appends a resolution entry. Each entry carries the SHA-256 of the entry before it (`Prev-Hash`), so tampering shows.

<!--
Notification entry pattern:

### <timestamp> <trigger>

* Mode: <autopilot | interactive | autonomous>
* Channel: <github-issue | webhook | in-chat>
* Approval Ref: <issue #number and repo, or \"in-chat\", or \"webhook (outbound only)\">
* Gate: <gate id> (run <run id>, digest sha256:<hex>)
* Topic: <one-line>
* Awaiting: <the decision the human must make>
* Resolved: <pending | approved | approve-all | changes-requested | stopped | expired | ignored> (<by whom, when>)
* Prev-Hash: sha256:<hex of the previous entry's bytes>
-->

<!-- Append new notification entries below this line. -->
";

/// The title of the entry that acknowledges a detected tampering.
pub const ACK_TITLE: &str = "tamper-acknowledged";

/// Most bytes of `notifications.md` read (a larger file is refused as corrupt).
pub const MAX_LOG_BYTES: u64 = 256 * 1024 * 1024;

/// One entry: a heading (`<timestamp> <trigger>`) and `* Key: value` lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogEntry {
    /// The time in the heading.
    pub at: Timestamp,
    /// The second word of the heading: the trigger, or `ignored-signal`.
    pub title: String,
    /// The fields, in order (`Prev-Hash` is added when the entry is written).
    pub fields: Vec<(String, String)>,
}

impl LogEntry {
    /// An entry with no fields yet.
    pub fn new(at: Timestamp, title: &str) -> Self {
        Self {
            at,
            title: one_line(title),
            fields: Vec::new(),
        }
    }

    /// Adds a field; the value is reduced to one line without control characters.
    pub fn field(mut self, key: &str, value: &str) -> Self {
        self.fields.push((key.to_owned(), one_line(value)));
        self
    }

    /// The entry's text with `Prev-Hash: <prev_hash>`.
    pub fn render(&self, prev_hash: &str) -> String {
        let mut s = format!("### {} {}\n\n", self.at, self.title);
        for (k, v) in &self.fields {
            s.push_str(&format!("* {k}: {v}\n"));
        }
        s.push_str(&format!("* Prev-Hash: {prev_hash}\n\n"));
        s
    }
}

/// Replaces newlines and other control characters with spaces and trims.
fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect::<String>()
        .trim()
        .to_owned()
}

fn sha(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// Where the entries of a log text are: the end of the header (through the last marker line),
/// the byte range of each entry (from its `### ` line to the next), and which entries are
/// acknowledgements of tampering.
struct Layout {
    header_end: usize,
    entries: Vec<std::ops::Range<usize>>,
    acks: Vec<usize>,
}

/// Whether the line starting at `at` is exactly the marker line.
fn marker_line_at(text: &str, at: usize) -> bool {
    let rest = &text[at..];
    rest.strip_prefix(LOG_MARKER)
        .is_some_and(|r| r.is_empty() || r.starts_with('\n'))
        && (at == 0 || text.as_bytes()[at - 1] == b'\n')
}

/// Splits the log into the header (through the last marker line) and the entries, in one pass.
fn layout(text: &str) -> Result<Layout> {
    let no_marker = || Error::corrupt("log.verify", "notifications.md has no entry marker line");
    let mut from = 0;
    let marker = loop {
        let at = from + text[from..].find(LOG_MARKER).ok_or_else(no_marker)?;
        if marker_line_at(text, at) {
            break at;
        }
        from = at + 1;
    };
    let mut header_end = marker + LOG_MARKER.len();
    if text[header_end..].starts_with('\n') {
        header_end += 1;
    }
    let mut starts: Vec<usize> = Vec::new();
    let mut acks = Vec::new();
    let mut offset = header_end;
    for line in text[header_end..].split_inclusive('\n') {
        if line.starts_with("### ") {
            if line.trim_end().ends_with(ACK_TITLE) && title(line) == ACK_TITLE {
                acks.push(starts.len());
            }
            starts.push(offset);
        } else if line.trim_end_matches('\n') == LOG_MARKER {
            // A later marker line (an acknowledgement appends one when the header was damaged)
            // starts the entries anew.
            header_end = offset + line.len();
            starts.clear();
            acks.clear();
        }
        offset += line.len();
    }
    let body = &text[header_end..];
    if starts.first().is_some_and(|s| *s != header_end)
        || (starts.is_empty() && !body.trim().is_empty())
    {
        return Err(Error::corrupt(
            "log.verify",
            "notifications.md has text between the marker and the first entry",
        ));
    }
    let entries = starts
        .iter()
        .enumerate()
        .map(|(i, s)| *s..starts.get(i + 1).copied().unwrap_or(text.len()))
        .collect();
    Ok(Layout {
        header_end,
        entries,
        acks,
    })
}

fn field<'a>(entry: &'a str, key: &str) -> Option<&'a str> {
    entry.lines().find_map(|l| {
        l.strip_prefix("* ")
            .and_then(|l| l.strip_prefix(key))
            .and_then(|l| l.strip_prefix(": "))
            .map(str::trim)
    })
}

/// The `Prev-Hash` of an entry: its last field, as [`LogEntry::render`] writes it.
fn prev_hash(entry: &str) -> Option<&str> {
    const KEY: &str = "\n* Prev-Hash: ";
    let at = entry.rfind(KEY)? + KEY.len();
    let rest = &entry[at..];
    Some(rest[..rest.find('\n').unwrap_or(rest.len())].trim())
}

fn title(entry: &str) -> &str {
    entry
        .lines()
        .next()
        .and_then(|h| h.strip_prefix("### "))
        .and_then(|h| h.split_whitespace().nth(1))
        .unwrap_or_default()
}

/// The result of [`verify_log`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogReport {
    /// How many entries the file holds.
    pub entries: usize,
    /// The hash of the last entry (of the header when there is none): the chain's head.
    pub head: String,
    /// How many entries come before the last acknowledged tampering ([`ACK_TITLE`]): the chain
    /// is verified from that acknowledgement on (0 when there is none).
    pub acknowledged: usize,
}

/// Checks the hash chain of a `notifications.md` text, and its head against `expected_head`
/// (`approval.logHead` of `state.json`) when given. The chain is checked from the last valid
/// acknowledgement of tampering on (see the module docs).
///
/// # Errors
///
/// [`ErrorKind::Corrupt`](crate::ErrorKind::Corrupt) naming the first entry whose `Prev-Hash` does not match, a missing
/// marker, or a head that differs from `expected_head`.
///
/// ```
/// use squad_notify::{verify_log, LogEntry, LOG_HEADER};
///
/// let e = LogEntry::new("2026-11-30T10:00:00Z".parse()?, "risk-gate").field("Topic", "x");
/// let text = format!("{LOG_HEADER}{}", e.render(&squad_notify::log_head(LOG_HEADER)?));
/// assert_eq!(verify_log(&text, None)?.entries, 1);
/// assert!(verify_log(&text.replace("Topic: x", "Topic: y"), Some(&verify_log(&text, None)?.head)).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn verify_log(text: &str, expected_head: Option<&str>) -> Result<LogReport> {
    let layout = layout(text)?;
    // The last acknowledgement whose `Covers` matches the text before it restarts the chain.
    let restart = layout.acks.iter().rev().copied().find(|i| {
        let r = &layout.entries[*i];
        field(&text[r.clone()], "Covers") == Some(sha(&text.as_bytes()[..r.start]).as_str())
    });
    let (first, mut prev) = match restart {
        Some(i) => (i + 1, sha(&text.as_bytes()[layout.entries[i].clone()])),
        None => (0, sha(&text.as_bytes()[..layout.header_end])),
    };
    for (i, range) in layout.entries.iter().enumerate().skip(first) {
        let entry = &text[range.clone()];
        if prev_hash(entry) != Some(prev.as_str()) {
            let heading = entry.lines().next().unwrap_or_default();
            return Err(Error::corrupt(
                "log.verify",
                format!(
                    "notifications.md entry {} ({heading}) does not chain to the entry before it: the log was edited",
                    i + 1
                ),
            ));
        }
        prev = sha(entry.as_bytes());
    }
    if let Some(expected) = expected_head
        && expected != prev
    {
        return Err(Error::corrupt(
            "log.verify",
            "the last notifications.md entry does not match the head recorded in state.json: the log was edited or cut",
        ));
    }
    Ok(LogReport {
        entries: layout.entries.len(),
        head: prev,
        acknowledged: restart.map_or(0, |i| i + 1),
    })
}

/// The chain head of a log text: the hash of its last entry (or of the header).
///
/// # Errors
///
/// [`ErrorKind::Corrupt`](crate::ErrorKind::Corrupt) when the text has no marker line.
pub fn log_head(text: &str) -> Result<String> {
    let layout = layout(text)?;
    let last = layout
        .entries
        .last()
        .cloned()
        .unwrap_or(0..layout.header_end);
    Ok(sha(&text.as_bytes()[last]))
}

/// The text to append to a log whose current text is `existing` so that it ends with `entries`,
/// each chained to the one before: with [`LOG_HEADER`] first when the log is empty. Returns the
/// text and the new head.
///
/// # Errors
///
/// [`ErrorKind::Corrupt`](crate::ErrorKind::Corrupt) when `existing` has no marker line (nothing may be appended then).
pub(crate) fn render_append(existing: &str, entries: &[LogEntry]) -> Result<(String, String)> {
    let mut out = String::new();
    let mut prev = if existing.is_empty() {
        out.push_str(LOG_HEADER);
        sha(LOG_HEADER.as_bytes())
    } else {
        log_head(existing)?
    };
    for e in entries {
        let rendered = e.render(&prev);
        prev = sha(rendered.as_bytes());
        out.push_str(&rendered);
    }
    Ok((out, prev))
}

/// The text to append that acknowledges a tampering of `existing`: a [`ACK_TITLE`] entry with
/// `fields`, `Covers` (the hash of everything before it) and `Prev-Hash`, after a new marker line
/// when `existing` has none usable (or a new header when it is empty). Returns the text and the
/// new head.
pub(crate) fn render_acknowledgement(
    existing: &str,
    at: Timestamp,
    fields: &[(&str, String)],
) -> (String, String) {
    let mut out = String::new();
    let prev = match log_head(existing).ok() {
        Some(head) => head,
        None if existing.is_empty() => {
            out.push_str(LOG_HEADER);
            sha(LOG_HEADER.as_bytes())
        }
        None => {
            if !existing.ends_with('\n') {
                out.push('\n');
            }
            out.push('\n');
            out.push_str(LOG_MARKER);
            out.push('\n');
            sha(format!("{existing}{out}").as_bytes())
        }
    };
    let covers = sha(format!("{existing}{out}").as_bytes());
    let mut entry = LogEntry::new(at, ACK_TITLE);
    for (k, v) in fields {
        entry = entry.field(k, v);
    }
    let rendered = entry.field("Covers", &covers).render(&prev);
    let head = sha(rendered.as_bytes());
    out.push_str(&rendered);
    (out, head)
}
