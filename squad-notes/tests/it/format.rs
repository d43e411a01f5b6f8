//! The note format: stream parsing, de-duplication, ordering, unparsed lines, union.

use proptest::prelude::*;
use squad_model::{AgentName, EntryId, NoteEntry, NoteType, Timestamp};
use squad_notes::format::{append_line, parse_note, union_notes};

fn entry_at(id: &str, ts: &str) -> NoteEntry {
    let mut e = NoteEntry::with_id(
        EntryId::new(id).unwrap(),
        AgentName::new("data").unwrap(),
        Timestamp::parse(ts).unwrap(),
        NoteType::Decision,
    );
    e.decision = Some(format!("decision {id}"));
    e
}

const A: &str = "01ARZ3NDEKTSV4RRFFQ69G5FAA";
const B: &str = "01ARZ3NDEKTSV4RRFFQ69G5FBB";
const C: &str = "01ARZ3NDEKTSV4RRFFQ69G5FCC";

#[test]
fn accepts_every_separator_git_produces_and_orders_by_time_then_id() {
    let a = entry_at(A, "2026-03-23T14:00:02Z");
    let b = entry_at(B, "2026-03-23T14:00:01Z");
    let c = entry_at(C, "2026-03-23T14:00:01Z");
    // `append` (blank line), `--no-separator` (newline), duplicates (`union`), leading blank
    // lines, CRLF, two values on one line, and an entry without a final newline.
    let blob = format!(
        "\n\n{}\n{}\r\n{}{}{}",
        a.to_line(),
        c.to_line().trim_end(),
        b.to_line().trim_end(),
        a.to_line(),
        c.to_line().trim_end()
    );
    let note = parse_note(blob.as_bytes());
    assert!(note.unparsed.is_empty(), "{:?}", note.unparsed);
    assert_eq!(note.entries, vec![b, c, a]);
}

#[test]
fn bad_lines_are_reported_with_their_line_number_and_never_fatal() {
    let a = entry_at(A, "2026-03-23T14:00:00Z");
    let b = entry_at(B, "2026-03-23T14:00:01Z");
    let blob = format!(
        "{}not json at all\n{{\"agent\":\"data\"}}\n{{\"id\":\"{B}\",\"agent\":\"Data\",\"timestamp\":\"2026-03-23T14:00:00Z\",\"type\":\"decision\"}}\n[1,2]\n{{\"id\":\"{C}\",\"agent\":\"data\",\"timestamp\":\"2026-03-23T14:00:00Z\",\"type\":\"decision\",\"effort_hours\":-1}}\n{{\"unterminated\": \n{}",
        a.to_line(),
        b.to_line()
    );
    let note = parse_note(blob.as_bytes());
    assert_eq!(note.entries, vec![a, b]);
    let lines: Vec<usize> = note.unparsed.iter().map(|u| u.line).collect();
    assert_eq!(lines, vec![2, 3, 4, 5, 6, 7], "{:#?}", note.unparsed);
    assert_eq!(note.unparsed[0].text, "not json at all");
    assert!(note.unparsed[0].error.contains("invalid JSON"));
    assert!(
        note.unparsed[1].error.contains("missing field `id`"),
        "{}",
        note.unparsed[1].error
    );
    assert!(
        note.unparsed[2].error.contains("agent name"),
        "{}",
        note.unparsed[2].error
    );
    assert!(note.unparsed[3].error.contains("JSON object"));
    assert!(note.unparsed[4].error.contains("effort_hours"));
}

#[test]
fn invalid_utf8_is_reported_not_dropped() {
    let a = entry_at(A, "2026-03-23T14:00:00Z");
    let mut blob = b"\xff\xfe garbage\n".to_vec();
    blob.extend_from_slice(a.to_line().as_bytes());
    let note = parse_note(&blob);
    assert_eq!(note.entries, vec![a]);
    assert_eq!(note.unparsed.len(), 1);
    assert_eq!(note.unparsed[0].line, 1);
}

#[test]
fn append_line_keeps_one_entry_per_line() {
    assert_eq!(append_line(b"", "x\n"), b"x\n");
    assert_eq!(append_line(b"{\"nonl\":1}", "x\n"), b"{\"nonl\":1}\nx\n");
    assert_eq!(append_line(b"a\n", "x"), b"a\nx\n");
}

#[test]
fn union_keeps_ours_verbatim_and_adds_the_lines_it_lacks() {
    let a = entry_at(A, "2026-03-23T14:00:00Z");
    let b = entry_at(B, "2026-03-23T14:00:01Z");
    let c = entry_at(C, "2026-03-23T14:00:02Z");
    let ours = format!("{}{}human note\n", a.to_line(), b.to_line());
    let theirs = format!("{}\n\n{}human note\nhuman note\n", c.to_line(), a.to_line());
    let merged = union_notes(ours.as_bytes(), theirs.as_bytes());
    // Theirs' second "human note" has no counterpart in ours: text is matched line for line.
    let expect = format!("{ours}{}human note\n", c.to_line());
    assert_eq!(String::from_utf8(merged.bytes.clone()).unwrap(), expect);
    assert!(merged.conflicts.is_empty());
    assert_eq!(
        union_notes(&merged.bytes, &merged.bytes).bytes,
        merged.bytes,
        "idempotent"
    );
    assert_eq!(
        union_notes(&merged.bytes, theirs.as_bytes()).bytes,
        merged.bytes
    );
}

/// An entry git wrote (an offset spelled `+00:00`, milliseconds, a `null` field, its own key
/// order) comes through a union byte for byte; an id held with other bytes keeps both versions.
#[test]
fn union_never_reserialises_an_entry_and_reports_conflicting_ids() {
    let git_line = format!(
        "{{\"id\":\"{A}\",\"timestamp\":\"2026-03-23T14:00:00.120+00:00\",\"agent\":\"data\",\"type\":\"research\",\"findings\":null}}"
    );
    let b = entry_at(B, "2026-03-23T14:00:01Z");
    let ours = b.to_line();
    let theirs = format!("{git_line}\n");
    let merged = union_notes(ours.as_bytes(), theirs.as_bytes());
    assert_eq!(merged.bytes, format!("{ours}{git_line}\n").into_bytes());
    // The other clone edited entry A by hand: both versions stay, and A is reported.
    let edited = git_line.replace("research", "decision");
    let again = union_notes(&merged.bytes, format!("{edited}\n").as_bytes());
    assert_eq!(again.conflicts, vec![EntryId::new(A).unwrap()]);
    assert!(
        String::from_utf8(again.bytes)
            .unwrap()
            .ends_with(&format!("{git_line}\n{edited}\n"))
    );
}

fn arb_entry() -> impl Strategy<Value = NoteEntry> {
    (0u64..50, 0i64..5, "[ -~]{0,20}").prop_map(|(n, secs, content)| {
        let id = format!("01ARZ3NDEKTSV4RRFFQ69G{n:04}");
        let mut e = NoteEntry::with_id(
            EntryId::new(id).unwrap(),
            AgentName::new("data").unwrap(),
            Timestamp::from_unix_seconds(1_770_000_000 + secs).unwrap(),
            NoteType::Progress,
        );
        e.content = Some(content);
        e
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

    /// Whatever separators and duplication git applied, the parsed note is the set of entries
    /// (first occurrence per id), ordered by (timestamp, id), and union is a set union.
    #[test]
    fn parse_is_separator_and_duplicate_insensitive(
        entries in proptest::collection::vec(arb_entry(), 0..8),
        seps in proptest::collection::vec(prop_oneof![Just(""), Just("\n"), Just("\n\n")], 8),
        split in 0usize..8,
    ) {
        let mut blob = String::new();
        for (e, sep) in entries.iter().zip(seps.iter().cycle()) {
            blob.push_str(&e.to_line());
            blob.push_str(sep);
        }
        let mut expect: Vec<NoteEntry> = Vec::new();
        for e in &entries {
            if !expect.iter().any(|x| x.id == e.id) {
                expect.push(e.clone());
            }
        }
        expect.sort_by(NoteEntry::display_order);
        let parsed = parse_note(blob.as_bytes());
        prop_assert!(parsed.unparsed.is_empty());
        prop_assert_eq!(&parsed.entries, &expect);
        // Union of two halves equals the whole.
        let k = split.min(entries.len());
        let left: String = entries[..k].iter().map(NoteEntry::to_line).collect();
        let right: String = entries[k..].iter().map(NoteEntry::to_line).collect();
        let merged = parse_note(&union_notes(left.as_bytes(), right.as_bytes()).bytes);
        let ids: Vec<_> = merged.entries.iter().map(|e| e.id.clone()).collect();
        let want: Vec<_> = expect.iter().map(|e| e.id.clone()).collect();
        prop_assert_eq!(ids, want);
    }
}
