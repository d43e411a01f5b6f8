//! How two clones' versions of one state file are joined when the state branch is synced:
//! each promoted entry appears once, whichever clones promoted it.

use std::collections::HashSet;

use crate::format::push_line;

use super::{ARCHIVED_LEDGER_KEY, DECISIONS_KEY, PROMOTED_LEDGER_KEY, WATERMARK_KEY, Watermarks};

/// Joins two versions of the state file `key`: `ours` (the local branch) and `theirs` (another
/// clone's). The result keeps `ours` as it is and adds what only `theirs` has:
///
/// - `decisions.md`: the sections (from one `### ` heading to the next) of `theirs` whose entry
///   id (the `- **Entry:** <id>` line) `ours` lacks, in their order; a section without an id is
///   added unless `ours` holds the same text. So an entry promoted in two clones appears once.
/// - `ledger/promoted`, `ledger/archived`: the lines of `theirs` whose entry id (the first word)
///   `ours` lacks.
/// - `ledger/watermark`: the branches only `theirs` has a watermark for (the ledger keeps
///   promotion exactly once either way; a watermark only saves work).
/// - any other file (`research/…` files are named by entry id): `ours`.
///
/// The join is deterministic: the same two versions give the same bytes in every clone.
///
/// ```
/// use squad_notes::promote::merge_state_file;
///
/// let ours = b"a1 refs/notes/squad/data c1 r1\n";
/// let theirs = b"a1 refs/notes/squad/data c1 r2\nb2 refs/notes/squad/data c2 r2\n";
/// assert_eq!(
///     merge_state_file("ledger/promoted", ours, theirs),
///     b"a1 refs/notes/squad/data c1 r1\nb2 refs/notes/squad/data c2 r2\n"
/// );
/// ```
pub fn merge_state_file(key: &str, ours: &[u8], theirs: &[u8]) -> Vec<u8> {
    if ours.is_empty() {
        return theirs.to_vec();
    }
    match key {
        DECISIONS_KEY => merge_sections(ours, theirs),
        PROMOTED_LEDGER_KEY | ARCHIVED_LEDGER_KEY => merge_ledger(ours, theirs),
        WATERMARK_KEY => merge_watermarks(ours, theirs),
        _ => ours.to_vec(),
    }
}

fn merge_ledger(ours: &[u8], theirs: &[u8]) -> Vec<u8> {
    let first_word = |line: &[u8]| -> Vec<u8> {
        line.split(|&b| b == b' ')
            .next()
            .unwrap_or_default()
            .to_vec()
    };
    let mut ids: HashSet<Vec<u8>> = ours
        .split(|&b| b == b'\n')
        .filter(|l| !l.trim_ascii().is_empty())
        .map(first_word)
        .collect();
    let mut out = ours.to_vec();
    for line in theirs.split(|&b| b == b'\n') {
        if line.trim_ascii().is_empty() {
            continue;
        }
        if ids.insert(first_word(line)) {
            push_line(&mut out, line);
        }
    }
    out
}

/// A Markdown file cut at its `### ` headings: the text before the first one, then each section.
fn sections(text: &[u8]) -> (Vec<u8>, Vec<Vec<u8>>) {
    let mut preamble = Vec::new();
    let mut sections: Vec<Vec<u8>> = Vec::new();
    for line in text.split_inclusive(|&b| b == b'\n') {
        if line.starts_with(b"### ") {
            sections.push(Vec::new());
        }
        match sections.last_mut() {
            Some(section) => section.extend_from_slice(line),
            None => preamble.extend_from_slice(line),
        }
    }
    (preamble, sections)
}

fn section_id(section: &[u8]) -> Option<Vec<u8>> {
    section.split(|&b| b == b'\n').find_map(|line| {
        line.strip_prefix(b"- **Entry:** ")
            .map(|id| id.trim_ascii().to_vec())
    })
}

fn merge_sections(ours: &[u8], theirs: &[u8]) -> Vec<u8> {
    let (_, mine) = sections(ours);
    let (_, their_sections) = sections(theirs);
    let mut ids: HashSet<Vec<u8>> = mine.iter().filter_map(|s| section_id(s)).collect();
    let mut texts: HashSet<Vec<u8>> = mine.iter().cloned().collect();
    let mut out = ours.to_vec();
    for section in their_sections {
        let new = match section_id(&section) {
            Some(id) => ids.insert(id),
            None => texts.insert(section.clone()),
        };
        if new {
            if !out.is_empty() && !out.ends_with(b"\n") {
                out.push(b'\n');
            }
            if !out.is_empty() && !out.ends_with(b"\n\n") {
                out.push(b'\n');
            }
            out.extend_from_slice(&section);
        }
    }
    out
}

fn merge_watermarks(ours: &[u8], theirs: &[u8]) -> Vec<u8> {
    let (Ok(mut mine), Ok(their_marks)) = (
        serde_json::from_slice::<Watermarks>(ours),
        serde_json::from_slice::<Watermarks>(theirs),
    ) else {
        return ours.to_vec();
    };
    let before = mine.branches.len();
    for (branch, mark) in their_marks.branches {
        mine.branches.entry(branch).or_insert(mark);
    }
    if mine.branches.len() == before {
        return ours.to_vec();
    }
    super::to_json(&mine).unwrap_or_else(|_| ours.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_join_by_entry_id_and_keep_ours() {
        let ours = b"# Decisions\n\n### A\n\n- **Entry:** a1\n\n### B\n\n- **Entry:** b2\n\n";
        let theirs = b"# Decisions\n\n### B again\n\n- **Entry:** b2\n\n### C\n\n- **Entry:** c3\n\n### Note\n\nfree text\n";
        let merged = merge_state_file(DECISIONS_KEY, ours, theirs);
        assert_eq!(
            String::from_utf8(merged.clone()).unwrap(),
            "# Decisions\n\n### A\n\n- **Entry:** a1\n\n### B\n\n- **Entry:** b2\n\n### C\n\n- **Entry:** c3\n\n### Note\n\nfree text\n"
        );
        // Merging again adds nothing.
        assert_eq!(merge_state_file(DECISIONS_KEY, &merged, theirs), merged);
        assert_eq!(merge_state_file(DECISIONS_KEY, b"", theirs), theirs);
        assert_eq!(
            merge_state_file("research/x.md", b"mine", b"theirs"),
            b"mine"
        );
    }
}
