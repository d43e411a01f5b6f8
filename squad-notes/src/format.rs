//! The note format: one compact JSON entry per line, read back as a stream of JSON values.
//!
//! Reading is lenient: blank lines, `\n\n` separators (git's `append`), plain `\n` separators
//! (`append --no-separator`, `merge -s cat_sort_uniq`), duplicated text (`merge -s union`) and
//! several values on one line are all accepted. Entries are de-duplicated by id and ordered by
//! (`timestamp`, `id`). Anything that is not a valid entry comes back as an [`UnparsedLine`]
//! with its error, never dropped and never fatal for the rest of the note.
//!
//! These are pure functions, shared by `show`, `list` and (later) sync, which unions the notes of
//! two clones with [`union_notes`].

use std::collections::HashSet;

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
    fast_path(bytes).unwrap_or_else(|| stream_parse(bytes))
}

/// The common case: one valid entry per line. Gives up (returns `None`) at the first line that
/// is not exactly one valid entry, leaving the general parser to report it.
fn fast_path(bytes: &[u8]) -> Option<ParsedNote> {
    // Most notes hold one entry: no set and no sort for them, and a linear duplicate check for
    // small notes (a set only past `LINEAR_DEDUP` entries).
    const LINEAR_DEDUP: usize = 16;
    let mut entries: Vec<NoteEntry> = Vec::with_capacity(1);
    let mut seen: Option<HashSet<EntryId>> = None;
    let mut rest = bytes;
    while !rest.is_empty() {
        let (line, next) = match memchr::memchr(b'\n', rest) {
            Some(i) => (&rest[..i], &rest[i + 1..]),
            None => (rest, &[][..]),
        };
        rest = next;
        let line = line.trim_ascii();
        if line.is_empty() {
            continue;
        }
        if line.first() != Some(&b'{') {
            return None;
        }
        // One UTF-8 check for the line, so the JSON reader need not check every string again.
        let line = std::str::from_utf8(line).ok()?;
        let entry: NoteEntry = serde_json::from_str(line).ok()?;
        if entry.effort_hours.is_some_and(|h| h.is_nan() || h < 0.0) {
            return None;
        }
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
        }
    }
    if entries.len() > 1 {
        entries.sort_by(NoteEntry::display_order);
    }
    Some(ParsedNote {
        entries,
        unparsed: Vec::new(),
    })
}

/// The general parser: a stream of JSON values, resynchronising at the next line after an error.
fn stream_parse(bytes: &[u8]) -> ParsedNote {
    let mut entries = Vec::new();
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
    entries.sort_by(NoteEntry::display_order);
    ParsedNote { entries, unparsed }
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
    if !out.is_empty() && !out.ends_with(b"\n") {
        out.push(b'\n');
    }
    out.extend_from_slice(line.as_bytes());
    if !out.ends_with(b"\n") {
        out.push(b'\n');
    }
    out
}

/// Unions two note blobs by entry id, for merging the notes of two clones.
///
/// The result holds every entry of `ours` and of `theirs` once (ours wins when both hold an id),
/// one compact line each, ordered by (`timestamp`, `id`), followed by every non-entry line of
/// both sides verbatim (ours first, duplicates removed), so nothing is lost. The function is
/// pure, commutative on the set of entries, and idempotent: `union(x, x)` parses like `x`.
pub fn union_notes(ours: &[u8], theirs: &[u8]) -> Vec<u8> {
    let a = parse_note(ours);
    let b = parse_note(theirs);
    let mut seen = HashSet::new();
    let mut entries: Vec<&NoteEntry> = Vec::new();
    for e in a.entries.iter().chain(b.entries.iter()) {
        if seen.insert(&e.id) {
            entries.push(e);
        }
    }
    entries.sort_by(|x, y| x.display_order(y));
    let mut out = String::new();
    for e in entries {
        out.push_str(&e.to_line());
    }
    let mut kept = HashSet::new();
    for u in a.unparsed.iter().chain(b.unparsed.iter()) {
        if kept.insert(u.text.as_str()) {
            out.push_str(&u.text);
            out.push('\n');
        }
    }
    out.into_bytes()
}

/// Serialises entries as a note blob: one compact line each, in the given order.
pub fn serialize_entries<'a>(entries: impl IntoIterator<Item = &'a NoteEntry>) -> Vec<u8> {
    let mut out = String::new();
    for e in entries {
        out.push_str(&e.to_line());
    }
    out.into_bytes()
}
