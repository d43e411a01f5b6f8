//! The note format: one compact JSON entry per line, read back as a stream of JSON values.
//!
//! Reading is lenient: blank lines, `\n\n` separators (git's `append`), plain `\n` separators
//! (`append --no-separator`, `merge -s cat_sort_uniq`), duplicated text (`merge -s union`) and
//! several values on one line are all accepted. Entries are de-duplicated by id and ordered by
//! (`timestamp`, `id`). Anything that is not a valid entry comes back as an [`UnparsedLine`]
//! with its error, never dropped and never fatal for the rest of the note.
//!
//! Reads can also keep where each entry came from ([`parse_note_sourced`]), so that a tool can
//! show or copy an entry exactly as its author wrote it.
//!
//! These are pure functions, shared by `show`, `list` and sync, which unions the notes of two
//! clones with [`union_notes`] (byte for byte: every line keeps its original bytes).

use std::collections::{HashMap, HashSet};
use std::ops::Range;

use serde_json::Value;
use squad_model::{EntryId, NoteEntry};

/// A line of a note that did not hold a valid entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnparsedLine {
    /// The 1-based line number in the note blob.
    pub line: usize,
    /// The text of that line (lossy UTF-8, without the final newline).
    pub text: String,
    /// What is wrong with it.
    pub error: String,
}

/// A note read back: its valid entries (de-duplicated, ordered) and the lines that were not.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ParsedNote {
    /// Valid entries, de-duplicated by id (the first occurrence wins), ordered by (`timestamp`, `id`).
    pub entries: Vec<NoteEntry>,
    /// Lines that are not valid entries, in blob order.
    pub unparsed: Vec<UnparsedLine>,
}

/// Parses a note blob. Never fails: problems are reported in [`ParsedNote::unparsed`].
///
/// ```
/// use squad_notes::format::parse_note;
///
/// let blob = b"{\"id\":\"01ARZ3NDEKTSV4RRFFQ69G5FAV\",\"agent\":\"data\",\"timestamp\":\"2026-03-23T14:00:00Z\",\"type\":\"decision\"}\n\nnot json\n";
/// let note = parse_note(blob);
/// assert_eq!(note.entries.len(), 1);
/// assert_eq!(note.unparsed[0].line, 3);
/// ```
pub fn parse_note(bytes: &[u8]) -> ParsedNote {
    let (entries, _, unparsed) = parse(bytes, false);
    ParsedNote { entries, unparsed }
}

/// How many valid entries a note holds, de-duplicated by id: always
/// `parse_note(bytes).entries.len()`, but cheaper, since the entries are checked without being
/// built (no strings copied, unknown keys skipped instead of kept). What `squad notes list`
/// counts on every note of a namespace.
///
/// ```
/// use squad_notes::format::count_entries;
///
/// let line = "{\"id\":\"01ARZ3NDEKTSV4RRFFQ69G5FAV\",\"agent\":\"data\",\"timestamp\":\"2026-03-23T14:00:00Z\",\"type\":\"decision\"}\n";
/// assert_eq!(count_entries(format!("{line}\n{line}not json\n").as_bytes()), 1);
/// ```
pub fn count_entries(bytes: &[u8]) -> usize {
    count_fast(bytes).unwrap_or_else(|| parse_note(bytes).entries.len())
}

/// The fields of an entry, checked as [`NoteEntry`] checks them, without building it: the
/// strings are borrowed where they can be, and unknown keys are skipped.
#[derive(serde::Deserialize)]
struct EntryCheck<'a> {
    id: EntryId,
    #[expect(dead_code, reason = "checked by deserialising, not read")]
    agent: squad_model::AgentName,
    #[expect(dead_code, reason = "checked by deserialising, not read")]
    timestamp: squad_model::Timestamp,
    #[expect(dead_code, reason = "checked by deserialising, not read")]
    #[serde(rename = "type")]
    kind: squad_model::NoteType,
    #[expect(dead_code, reason = "checked by deserialising, not read")]
    #[serde(default, borrow)]
    content: Option<std::borrow::Cow<'a, str>>,
    #[expect(dead_code, reason = "checked by deserialising, not read")]
    #[serde(default, borrow)]
    decision: Option<std::borrow::Cow<'a, str>>,
    #[expect(dead_code, reason = "checked by deserialising, not read")]
    #[serde(default, borrow)]
    reasoning: Option<std::borrow::Cow<'a, str>>,
    #[expect(dead_code, reason = "checked by deserialising, not read")]
    #[serde(default, borrow)]
    alternatives_considered: Option<Vec<std::borrow::Cow<'a, str>>>,
    #[expect(dead_code, reason = "checked by deserialising, not read")]
    #[serde(default)]
    confidence: Option<squad_model::Confidence>,
    #[expect(dead_code, reason = "checked by deserialising, not read")]
    #[serde(default)]
    promote_to_permanent: Option<bool>,
    #[expect(dead_code, reason = "checked by deserialising, not read")]
    #[serde(default, borrow)]
    topic: Option<std::borrow::Cow<'a, str>>,
    #[expect(dead_code, reason = "checked by deserialising, not read")]
    #[serde(default)]
    findings: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    effort_hours: Option<f64>,
    #[expect(dead_code, reason = "checked by deserialising, not read")]
    #[serde(default)]
    archive_on_close: Option<bool>,
}

/// The id of the one valid entry `line` holds, by the typed check; `None` when it holds
/// anything else.
pub(crate) fn typed_id(line: &str) -> Option<EntryId> {
    let entry: EntryCheck<'_> = serde_json::from_str(line).ok()?;
    if entry.effort_hours.is_some_and(|h| h.is_nan() || h < 0.0) {
        return None;
    }
    Some(entry.id)
}

/// [`count_entries`] for notes of one valid entry per line; `None` at the first other line.
fn count_fast(bytes: &[u8]) -> Option<usize> {
    let mut ids: Vec<EntryId> = Vec::new();
    let mut rest = bytes;
    while !rest.is_empty() {
        let line = match memchr::memchr(b'\n', rest) {
            Some(i) => {
                let line = &rest[..i];
                rest = &rest[i + 1..];
                line
            }
            None => std::mem::take(&mut rest),
        };
        let line = line.trim_ascii();
        if line.is_empty() {
            continue;
        }
        if line.first() != Some(&b'{') {
            return None;
        }
        let line = std::str::from_utf8(line).ok()?;
        // The lines squad writes are read by the strict scanner; anything it is not sure of
        // by the typed check.
        let id = match crate::scan::entry_id(line) {
            Some(id) => id,
            None => typed_id(line)?,
        };
        if !ids.contains(&id) {
            if ids.len() > 64 {
                // Many entries in one note: the general path de-duplicates with a set.
                return None;
            }
            ids.push(id);
        }
    }
    Some(ids.len())
}

/// An entry read back with the bytes it was read from.
#[derive(Debug, Clone, PartialEq)]
pub struct SourcedEntry {
    /// The entry.
    pub entry: NoteEntry,
    /// Where its JSON text is in the note blob (without surrounding whitespace).
    pub source: Range<usize>,
}

impl SourcedEntry {
    /// The JSON text of the entry in `blob` (the blob it was parsed from), as its author wrote it.
    pub fn text<'b>(&self, blob: &'b [u8]) -> &'b str {
        blob.get(self.source.clone())
            .and_then(|b| std::str::from_utf8(b).ok())
            .unwrap_or_default()
    }
}

/// A note read back with the source of every entry: see [`parse_note_sourced`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SourcedNote {
    /// Valid entries, de-duplicated by id (the first occurrence wins), ordered by
    /// (`timestamp`, `id`), each with its place in the blob.
    pub entries: Vec<SourcedEntry>,
    /// Lines that are not valid entries, in blob order.
    pub unparsed: Vec<UnparsedLine>,
}

/// Parses a note blob like [`parse_note`], and keeps where each entry's JSON text is, so that
/// it can be shown or copied byte for byte (a timestamp spelled `+00:00`, a `null` field and
/// the key order stay as the author wrote them).
///
/// ```
/// use squad_notes::format::parse_note_sourced;
///
/// let blob = b"{\"id\":\"01ARZ3NDEKTSV4RRFFQ69G5FAV\",\"agent\":\"data\",\"timestamp\":\"2026-03-23T14:00:00.120+00:00\",\"type\":\"research\",\"findings\":null}\n";
/// let note = parse_note_sourced(blob);
/// assert_eq!(note.entries[0].text(blob), std::str::from_utf8(&blob[..blob.len() - 1])?);
/// # Ok::<(), std::str::Utf8Error>(())
/// ```
pub fn parse_note_sourced(bytes: &[u8]) -> SourcedNote {
    let (entries, sources, unparsed) = parse(bytes, true);
    SourcedNote {
        entries: entries
            .into_iter()
            .zip(sources)
            .map(|(entry, source)| SourcedEntry { entry, source })
            .collect(),
        unparsed,
    }
}

type Parsed = (Vec<NoteEntry>, Vec<Range<usize>>, Vec<UnparsedLine>);

/// The one parser behind [`parse_note`] and [`parse_note_sourced`]: the sources are collected
/// only when `sourced` is set (the bulk reads do without them).
fn parse(bytes: &[u8], sourced: bool) -> Parsed {
    let (mut entries, mut sources, unparsed) = match fast_path(bytes, sourced) {
        Some((entries, sources)) => (entries, sources, Vec::new()),
        None => stream_parse(bytes, sourced),
    };
    if entries.len() > 1 {
        if sourced {
            let mut both: Vec<(NoteEntry, Range<usize>)> =
                entries.into_iter().zip(sources).collect();
            both.sort_by(|a, b| a.0.display_order(&b.0));
            (entries, sources) = both.into_iter().unzip();
        } else {
            entries.sort_by(NoteEntry::display_order);
        }
    }
    (entries, sources, unparsed)
}

/// The common case: one valid entry per line. Gives up (returns `None`) at the first line that
/// is not exactly one valid entry, leaving the general parser to report it.
fn fast_path(bytes: &[u8], sourced: bool) -> Option<(Vec<NoteEntry>, Vec<Range<usize>>)> {
    // Most notes hold one entry: no set and no sort for them, and a linear duplicate check for
    // small notes (a set only past `LINEAR_DEDUP` entries).
    const LINEAR_DEDUP: usize = 16;
    let mut entries: Vec<NoteEntry> = Vec::with_capacity(1);
    let mut sources: Vec<Range<usize>> = Vec::new();
    let mut seen: Option<HashSet<EntryId>> = None;
    let mut at = 0;
    while at < bytes.len() {
        let rest = &bytes[at..];
        let (line, next) = match memchr::memchr(b'\n', rest) {
            Some(i) => (&rest[..i], at + i + 1),
            None => (rest, bytes.len()),
        };
        let start = at + line.len() - line.trim_ascii_start().len();
        at = next;
        let line = line.trim_ascii();
        if line.is_empty() {
            continue;
        }
        if line.first() != Some(&b'{') {
            return None;
        }
        let entry = entry_from_line(line)?;
        let duplicate = match &mut seen {
            Some(set) => !set.insert(entry.id.clone()),
            None if entries.len() < LINEAR_DEDUP => entries.iter().any(|e| e.id == entry.id),
            None => {
                let mut set: HashSet<EntryId> = entries.iter().map(|e| e.id.clone()).collect();
                let duplicate = !set.insert(entry.id.clone());
                seen = Some(set);
                duplicate
            }
        };
        if !duplicate {
            entries.push(entry);
            if sourced {
                sources.push(start..start + line.len());
            }
        }
    }
    Some((entries, sources))
}

/// One line (trimmed) that holds exactly one valid entry, or `None`.
fn entry_from_line(line: &[u8]) -> Option<NoteEntry> {
    // One UTF-8 check for the line, so the JSON reader need not check every string again.
    let line = std::str::from_utf8(line).ok()?;
    let entry: NoteEntry = serde_json::from_str(line).ok()?;
    if entry.effort_hours.is_some_and(|h| h.is_nan() || h < 0.0) {
        return None;
    }
    Some(entry)
}

/// The general parser: a stream of JSON values, resynchronising at the next line after an error.
fn stream_parse(bytes: &[u8], sourced: bool) -> Parsed {
    let mut entries = Vec::new();
    let mut sources = Vec::new();
    let mut unparsed = Vec::new();
    let mut seen = HashSet::new();
    let mut pos = 0;
    let lines = LineIndex::new(bytes);
    while pos < bytes.len() {
        // Skip whitespace between values.
        while pos < bytes.len() && bytes[pos].is_ascii_whitespace() {
            pos += 1;
        }
        if pos >= bytes.len() {
            break;
        }
        let start = pos;
        let mut stream = serde_json::Deserializer::from_slice(&bytes[start..]).into_iter::<Value>();
        match stream.next() {
            Some(Ok(value)) => {
                pos = start + stream.byte_offset();
                match entry_from_value(value) {
                    Ok(entry) => {
                        if seen.insert(entry.id.clone()) {
                            entries.push(entry);
                            if sourced {
                                sources.push(start..pos);
                            }
                        }
                    }
                    Err(error) => unparsed.push(lines.unparsed(bytes, start, error)),
                }
            }
            Some(Err(e)) => {
                unparsed.push(lines.unparsed(bytes, start, format!("invalid JSON: {e}")));
                // Resume at the next line.
                pos = bytes[start..]
                    .iter()
                    .position(|&b| b == b'\n')
                    .map_or(bytes.len(), |i| start + i + 1);
            }
            None => break,
        }
    }
    (entries, sources, unparsed)
}

/// Converts one JSON value into an entry: the typed conversion checks the required fields and
/// their formats (id, agent name, UTC timestamp, type), the known optional fields' types, and
/// `effort_hours >= 0`, which is what the note-entry schema asks of a stored entry.
fn entry_from_value(value: Value) -> Result<NoteEntry, String> {
    if !value.is_object() {
        return Err("not a note entry: expected a JSON object".to_owned());
    }
    let entry: NoteEntry =
        serde_json::from_value(value).map_err(|e| format!("not a note entry: {e}"))?;
    if entry.effort_hours.is_some_and(|h| h.is_nan() || h < 0.0) {
        return Err("not a note entry: effort_hours must be >= 0".to_owned());
    }
    Ok(entry)
}

struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    fn new(bytes: &[u8]) -> Self {
        let mut starts = vec![0];
        starts.extend(
            bytes
                .iter()
                .enumerate()
                .filter(|&(_, &b)| b == b'\n')
                .map(|(i, _)| i + 1),
        );
        Self { starts }
    }

    fn unparsed(&self, bytes: &[u8], offset: usize, error: String) -> UnparsedLine {
        let idx = self
            .starts
            .partition_point(|&s| s <= offset)
            .saturating_sub(1);
        let start = self.starts[idx];
        let end = bytes[start..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(bytes.len(), |i| start + i);
        UnparsedLine {
            line: idx + 1,
            text: String::from_utf8_lossy(&bytes[start..end]).into_owned(),
            error,
        }
    }
}

/// The bytes of `old` with `line` appended: a `\n` is added first when `old` is non-empty and
/// does not end with one, so every entry stays on its own line.
pub fn append_line(old: &[u8], line: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(old.len() + line.len() + 1);
    out.extend_from_slice(old);
    push_line(&mut out, line.as_bytes());
    out
}

/// Appends `line` to `out` in place, as [`append_line`] does: a `\n` first when `out` is
/// non-empty and does not end with one, and a `\n` after `line` when it lacks one.
pub(crate) fn push_line(out: &mut Vec<u8>, line: &[u8]) {
    if !out.is_empty() && !out.ends_with(b"\n") {
        out.push(b'\n');
    }
    out.extend_from_slice(line);
    if !out.ends_with(b"\n") {
        out.push(b'\n');
    }
}

/// Unions two note blobs, byte for byte, for merging the notes of two clones.
///
/// The result is `ours` unchanged, followed by the lines of `theirs` that `ours` lacks, in
/// their order and with their original bytes:
///
/// - a line holding one valid entry is left out when `ours` has a line with exactly the same
///   bytes (surrounding whitespace aside); an entry whose id `ours` holds with **other** bytes
///   is kept too (both versions stay) and its id is reported in [`Union::conflicts`];
/// - any other non-blank line (text that is not an entry) is matched line for line: each line
///   of `ours` accounts for one equal line of `theirs`, the rest are appended in order;
/// - blank lines of `theirs` are not copied.
///
/// So no entry is ever re-serialised (its timestamp spelling, its `null` fields and its key
/// order stay as the author wrote them), `union(x, x) == x`, and merging again changes nothing.
///
/// ```
/// use squad_notes::format::union_notes;
///
/// let ours = b"{\"id\":\"01ARZ3NDEKTSV4RRFFQ69G5FAV\",\"agent\":\"data\",\"timestamp\":\"2026-03-23T14:00:00.120+00:00\",\"type\":\"progress\"}\n";
/// let theirs = b"a remark\n";
/// let merged = union_notes(ours, theirs);
/// assert_eq!(merged.bytes, [&ours[..], &theirs[..]].concat());
/// assert!(merged.conflicts.is_empty());
/// ```
pub fn union_notes(ours: &[u8], theirs: &[u8]) -> Union {
    let mut entry_lines: HashSet<&[u8]> = HashSet::new();
    let mut entry_ids: HashSet<EntryId> = HashSet::new();
    let mut text_lines: HashMap<&[u8], usize> = HashMap::new();
    for line in ours.split(|&b| b == b'\n') {
        let trimmed = line.trim_ascii();
        if trimmed.is_empty() {
            continue;
        }
        match line_entry_id(trimmed) {
            Some(id) => {
                entry_lines.insert(trimmed);
                entry_ids.insert(id);
            }
            None => *text_lines.entry(trimmed).or_default() += 1,
        }
    }
    let mut out = ours.to_vec();
    let mut conflicts = Vec::new();
    for line in theirs.split(|&b| b == b'\n') {
        let trimmed = line.trim_ascii();
        if trimmed.is_empty() {
            continue;
        }
        let keep = match line_entry_id(trimmed) {
            Some(id) => {
                if entry_lines.insert(trimmed) {
                    if !entry_ids.insert(id.clone()) {
                        conflicts.push(id);
                    }
                    true
                } else {
                    false
                }
            }
            None => match text_lines.get_mut(trimmed) {
                Some(n) if *n > 0 => {
                    *n -= 1;
                    false
                }
                _ => true,
            },
        };
        if keep {
            // `line` holds no `\n` and, being non-blank, does not end with one once its `\r`
            // is gone: `push_line` ends it with exactly one.
            push_line(&mut out, line.strip_suffix(b"\r").unwrap_or(line));
        }
    }
    Union {
        bytes: out,
        conflicts,
    }
}

/// What [`union_notes`] made of two notes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Union {
    /// The merged note.
    pub bytes: Vec<u8>,
    /// Ids that both sides hold with different bytes: both versions were kept.
    pub conflicts: Vec<EntryId>,
}

/// The id of the entry a (trimmed) line holds, when it holds exactly one valid entry.
fn line_entry_id(line: &[u8]) -> Option<EntryId> {
    if line.first() != Some(&b'{') {
        return None;
    }
    entry_from_line(line).map(|e| e.id)
}

/// Serialises entries as a note blob: one compact line each, in the given order.
pub fn serialize_entries<'a>(entries: impl IntoIterator<Item = &'a NoteEntry>) -> Vec<u8> {
    let mut out = String::new();
    for e in entries {
        out.push_str(&e.to_line());
    }
    out.into_bytes()
}
