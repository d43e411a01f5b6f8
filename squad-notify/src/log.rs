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

use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;

use sha2::{Digest, Sha256};
use squad_model::Timestamp;

use crate::error::{Error, ErrorKind, Result};

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

/// Splits the log into the header (through the marker line) and the entries (each from its
/// `### ` line to the next).
fn split(text: &str) -> Result<(&str, Vec<&str>)> {
    let marker = text.find(LOG_MARKER).ok_or_else(|| {
        Error::new(
            ErrorKind::Corrupt,
            "log.verify",
            "notifications.md has no entry marker line",
        )
    })?;
    let mut header_end = marker + LOG_MARKER.len();
    if text[header_end..].starts_with('\n') {
        header_end += 1;
    }
    let (header, body) = text.split_at(header_end);
    let mut starts: Vec<usize> = Vec::new();
    let mut offset = 0;
    for line in body.split_inclusive('\n') {
        if line.starts_with("### ") {
            starts.push(offset);
        }
        offset += line.len();
    }
    if starts.first().is_some_and(|s| *s != 0) || (starts.is_empty() && !body.trim().is_empty()) {
        return Err(Error::new(
            ErrorKind::Corrupt,
            "log.verify",
            "notifications.md has text between the marker and the first entry",
        ));
    }
    let entries = starts
        .iter()
        .enumerate()
        .map(|(i, s)| &body[*s..starts.get(i + 1).copied().unwrap_or(body.len())])
        .collect();
    Ok((header, entries))
}

/// The result of [`verify_log`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogReport {
    /// How many entries the chain holds.
    pub entries: usize,
    /// The hash of the last entry (of the header when there is none): the chain's head.
    pub head: String,
}

/// Checks the hash chain of a `notifications.md` text, and its head against `expected_head`
/// (`approval.logHead` of `state.json`) when given.
///
/// # Errors
///
/// [`ErrorKind::Corrupt`] naming the first entry whose `Prev-Hash` does not match, a missing
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
    let (header, entries) = split(text)?;
    let mut prev = sha(header.as_bytes());
    for (i, entry) in entries.iter().enumerate() {
        let claimed = entry
            .lines()
            .find_map(|l| l.strip_prefix("* Prev-Hash: "))
            .map(str::trim);
        if claimed != Some(prev.as_str()) {
            let heading = entry.lines().next().unwrap_or_default();
            return Err(Error::new(
                ErrorKind::Corrupt,
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
        return Err(Error::new(
            ErrorKind::Corrupt,
            "log.verify",
            "the last notifications.md entry does not match the head recorded in state.json: the log was edited or cut",
        ));
    }
    Ok(LogReport {
        entries: entries.len(),
        head: prev,
    })
}

/// The chain head of a log text: the hash of its last entry (or of the header).
///
/// # Errors
///
/// [`ErrorKind::Corrupt`] when the text has no marker line.
pub fn log_head(text: &str) -> Result<String> {
    let (header, entries) = split(text)?;
    Ok(sha(entries.last().copied().unwrap_or(header).as_bytes()))
}

/// Appends `entry` to the log at `path` (creating it with [`LOG_HEADER`]), chained to the current
/// last entry; returns the new head. The file is opened in append mode and synced; existing bytes
/// are never rewritten.
///
/// # Errors
///
/// [`ErrorKind::Io`] when the file cannot be read or written; [`ErrorKind::Corrupt`] when an
/// existing file has no marker line (nothing is appended then).
pub fn append_entry(path: &Path, entry: &LogEntry) -> Result<String> {
    let existing = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(Error::io("log.append", "cannot read notifications.md", e)),
    };
    let mut out = String::new();
    let prev = if existing.is_empty() {
        out.push_str(LOG_HEADER);
        sha(LOG_HEADER.as_bytes())
    } else {
        log_head(&existing)?
    };
    let rendered = entry.render(&prev);
    out.push_str(&rendered);
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| Error::io("log.append", "cannot open notifications.md", e))?;
    f.write_all(out.as_bytes())
        .and_then(|()| f.sync_all())
        .map_err(|e| Error::io("log.append", "cannot append to notifications.md", e))?;
    Ok(sha(rendered.as_bytes()))
}
