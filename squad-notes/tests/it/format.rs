//! The note format: stream parsing, de-duplication, ordering, unparsed lines, union.

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
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

/// Structure-aware mutations of a valid note: each picks a position and breaks the bytes there
/// the way editors, merges and truncation do.
fn mutate(blob: &[u8], ops: &[(u8, usize, u8)]) -> Vec<u8> {
    let mut out = blob.to_vec();
    for &(op, at, byte) in ops {
        let at = if out.is_empty() {
            0
        } else {
            at % (out.len() + 1)
        };
        match op % 8 {
            0 => out.truncate(at),
            1 => out.insert(at, byte),
            2 if at < out.len() => {
                out.remove(at);
            }
            3 => out
                .splice(at..at, b"{\"id\":".iter().copied())
                .for_each(drop),
            4 => out
                .splice(at..at, [b'"', b'\\', b'}', b']', b'\n'].iter().copied())
                .for_each(drop),
            5 => {
                let copy = out[..at].to_vec();
                out.extend_from_slice(&copy);
            }
            6 => out
                .splice(at..at, [0xff, 0xc3, 0x28].iter().copied())
                .for_each(drop),
            _ => out.splice(at..at, "[".repeat(200).bytes()).for_each(drop),
        }
    }
    out
}

/// Checks what every parse must give, whatever the input: no panic, each entry's source is in
/// the blob and holds that entry, every unparsed line number exists.
fn check_parse(bytes: &[u8]) -> Result<(), TestCaseError> {
    let plain = parse_note(bytes);
    prop_assert_eq!(
        squad_notes::format::count_entries(bytes),
        plain.entries.len()
    );
    let sourced = squad_notes::format::parse_note_sourced(bytes);
    prop_assert_eq!(
        plain.entries.clone(),
        sourced
            .entries
            .iter()
            .map(|e| e.entry.clone())
            .collect::<Vec<_>>()
    );
    prop_assert_eq!(&plain.unparsed, &sourced.unparsed);
    let lines = bytes.split(|&b| b == b'\n').count();
    for u in &plain.unparsed {
        prop_assert!(
            u.line >= 1 && u.line <= lines,
            "line {} of {}",
            u.line,
            lines
        );
        prop_assert!(!u.error.is_empty());
    }
    for e in &sourced.entries {
        prop_assert!(e.source.end <= bytes.len());
        let v: serde_json::Value = serde_json::from_str(e.text(bytes)).unwrap();
        prop_assert_eq!(v["id"].as_str(), Some(e.entry.id.as_str()));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    /// Arbitrary bytes: the note parsers, the entry parser and the union never panic; each
    /// answers with entries, typed errors or unparsed lines.
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        check_parse(&bytes)?;
        let _ = NoteEntry::from_json(&String::from_utf8_lossy(&bytes));
        let merged = union_notes(&bytes, b"{\"x\":1}\n");
        prop_assert!(merged.bytes.starts_with(&bytes));
        let merged = union_notes(b"text\n", &bytes);
        prop_assert!(merged.bytes.starts_with(b"text\n"));
    }

    /// Valid notes broken at random places (truncated, bytes inserted or removed, a stray
    /// `{"id":`, quotes and brackets, duplicated prefixes, invalid UTF-8, deep nesting).
    #[test]
    fn mutated_notes_never_panic(
        entries in proptest::collection::vec(arb_entry(), 1..5),
        ops in proptest::collection::vec((any::<u8>(), any::<usize>(), any::<u8>()), 1..6),
    ) {
        let blob: String = entries.iter().map(NoteEntry::to_line).collect();
        let bytes = mutate(blob.as_bytes(), &ops);
        check_parse(&bytes)?;
        let merged = union_notes(blob.as_bytes(), &bytes);
        prop_assert!(merged.bytes.starts_with(blob.as_bytes()));
        for line in bytes.split(|&b| b == b'\n') {
            let _ = NoteEntry::from_json(&String::from_utf8_lossy(line));
        }
    }
}

/// `count_entries` counts exactly what `parse_note` keeps, on the edge cases of the typed
/// fields: nulls, wrong types, duplicate keys, unknown keys, escapes.
#[test]
fn counting_agrees_with_parsing_on_edge_cases() {
    let base = |extra: &str| {
        format!(
            r#"{{"id":"{A}","agent":"data","timestamp":"2026-03-23T14:00:00.5+00:00","type":"decision"{extra}}}"#
        )
    };
    for extra in [
        "",
        r#","content":null"#,
        r#","content":1"#,
        r#","content":"caf\u00e9 \"quoted\"""#,
        r#","findings":{"a":[1,{"b":null}]}"#,
        r#","findings":null"#,
        r#","alternatives_considered":["x","y\n"]"#,
        r#","alternatives_considered":[1]"#,
        r#","confidence":"maybe""#,
        r#","confidence":"high""#,
        r#","effort_hours":-1"#,
        r#","effort_hours":2"#,
        r#","promote_to_permanent":"yes""#,
        r#","unknown":{"deep":[1,2,3]},"unknown":2"#,
        r#","content":"a","content":"b""#,
        r#","agent":"data""#,
        r#","type":"opinion""#,
    ] {
        for blob in [base(extra), format!("{}\n\n{}\n", base(extra), base(extra))] {
            assert_eq!(
                squad_notes::format::count_entries(blob.as_bytes()),
                parse_note(blob.as_bytes()).entries.len(),
                "{blob}"
            );
        }
    }
}
