//! A strict scanner for the one-line JSON entries squad itself writes, used to count entries
//! without a general JSON parser.
//!
//! [`entry_id`] answers only when it is sure: `Some(id)` means the line is one valid entry
//! (exactly as the typed check in `format` would find it) with that id; `None` means "not
//! sure", and the caller asks `serde_json`. So the scanner may be as narrow as it likes, as
//! long as it never accepts a line the typed check rejects, and never reads another id. It
//! declines, among others:
//!
//! - keys it does not know, keys given twice, keys with escapes;
//! - `\u` escapes anywhere (surrogate rules are serde's business);
//! - numbers with a sign or an exponent, or with more digits than an `f64` holds exactly;
//! - nesting deeper than [`MAX_DEPTH`] in `findings`;
//! - an `id`, `agent`, `timestamp`, `type` or `confidence` that is not plain valid text.
//!
//! The line given is trimmed, valid UTF-8 and holds no `\n`.

use squad_model::{AgentName, EntryId, Timestamp};

/// The deepest `findings` value the scanner walks; deeper ones go to `serde_json`.
const MAX_DEPTH: usize = 16;

/// The most digits a number may have in the integer or the fraction part.
const MAX_DIGITS: usize = 15;

/// The keys of an entry, as bits, to see a key given twice.
const ID: u16 = 1;
const AGENT: u16 = 1 << 1;
const TIMESTAMP: u16 = 1 << 2;
const TYPE: u16 = 1 << 3;
const REQUIRED: u16 = ID | AGENT | TIMESTAMP | TYPE;

/// The id of the one entry on `line`, when the scanner is sure the line is exactly one valid
/// entry; `None` when it is not sure (see the module docs).
pub(crate) fn entry_id(line: &str) -> Option<EntryId> {
    let mut s = Scanner {
        line,
        bytes: line.as_bytes(),
        at: 0,
    };
    let mut seen: u16 = 0;
    let mut id = None;
    s.list(b'{', b'}', |s| {
        let key = s.plain_string()?;
        s.ws();
        s.expect(b':')?;
        s.ws();
        let bit = s.field(key, &mut id)?;
        // A key given twice is serde's to judge.
        (seen & bit == 0).then_some(())?;
        seen |= bit;
        Some(())
    })?;
    (s.at == s.bytes.len() && seen & REQUIRED == REQUIRED).then_some(())?;
    id
}

/// Where the first byte that stops a JSON string is: a quote, a backslash or a control
/// character (below 0x20). Eight bytes at a time: in each little-endian word, the lowest
/// flagged byte of each test below is exact (a borrow only moves up), so the lowest of all
/// is the first stop.
fn string_stop(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = u64::from_le_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_le_bytes([0x80; 8]);
    let zero_byte = |v: u64| v.wrapping_sub(ONES) & !v & HIGHS;
    let mut chunks = bytes.chunks_exact(8);
    let mut at = 0;
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let x = u64::from_le_bytes(word);
        let hits = zero_byte(x ^ (ONES * u64::from(b'"')))
            | zero_byte(x ^ (ONES * u64::from(b'\\')))
            | (x.wrapping_sub(ONES * 0x20) & !x & HIGHS);
        if hits != 0 {
            return Some(at + (hits.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    chunks
        .remainder()
        .iter()
        .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
        .map(|i| at + i)
}

struct Scanner<'a> {
    line: &'a str,
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Scanner<'a> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let b = self.peek()?;
        self.at += 1;
        Some(b)
    }

    fn expect(&mut self, want: u8) -> Option<()> {
        (self.next()? == want).then_some(())
    }

    /// Skips JSON whitespace.
    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\r' | b'\n')) {
            self.at += 1;
        }
    }

    /// The value of the entry's field `key`, checked as the typed check checks it (the id kept
    /// in `id`); the key's bit. `None` for a key the scanner does not know.
    fn field(&mut self, key: &str, id: &mut Option<EntryId>) -> Option<u16> {
        Some(match key {
            "id" => {
                *id = Some(self.plain_string()?.parse::<EntryId>().ok()?);
                ID
            }
            "agent" => {
                AgentName::is_valid(self.plain_string()?).then_some(())?;
                AGENT
            }
            "timestamp" => {
                Timestamp::parse(self.plain_string()?).ok()?;
                TIMESTAMP
            }
            "type" => {
                matches!(
                    self.plain_string()?,
                    "decision" | "research" | "review" | "progress" | "security"
                )
                .then_some(())?;
                TYPE
            }
            "content" => self.nullable(Self::text, 1 << 4)?,
            "decision" => self.nullable(Self::text, 1 << 5)?,
            "reasoning" => self.nullable(Self::text, 1 << 6)?,
            "topic" => self.nullable(Self::text, 1 << 7)?,
            "alternatives_considered" => self.nullable(Self::texts, 1 << 8)?,
            "confidence" => self.nullable(
                |s| matches!(s.plain_string()?, "low" | "medium" | "high").then_some(()),
                1 << 9,
            )?,
            "promote_to_permanent" => self.nullable(Self::boolean, 1 << 10)?,
            "archive_on_close" => self.nullable(Self::boolean, 1 << 11)?,
            "effort_hours" => self.nullable(Self::number, 1 << 12)?,
            "findings" => {
                self.value(0)?;
                1 << 13
            }
            _ => return None,
        })
    }

    /// `null` (the field is absent to the typed check), or what `read` accepts; the key's bit.
    fn nullable(&mut self, read: impl FnOnce(&mut Self) -> Option<()>, bit: u16) -> Option<u16> {
        if self.bytes[self.at..].starts_with(b"null") {
            self.at += 4;
        } else {
            read(self)?;
        }
        Some(bit)
    }

    /// A string without any escape or control character, borrowed.
    fn plain_string(&mut self) -> Option<&'a str> {
        self.expect(b'"')?;
        let start = self.at;
        let len = string_stop(&self.bytes[start..])?;
        if self.bytes[start + len] != b'"' {
            return None;
        }
        self.at = start + len + 1;
        // Both ends are at ASCII quotes, so on character boundaries: this never fails.
        self.line.get(start..start + len)
    }

    /// A string with the escapes `\" \\ \/ \b \f \n \r \t` allowed (not `\u`).
    fn text(&mut self) -> Option<()> {
        self.expect(b'"')?;
        loop {
            let rest = &self.bytes[self.at..];
            let len = string_stop(rest)?;
            self.at += len + 1;
            match rest[len] {
                b'"' => return Some(()),
                b'\\' => match self.next()? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {}
                    _ => return None,
                },
                _ => return None,
            }
        }
    }

    /// An array of strings.
    fn texts(&mut self) -> Option<()> {
        self.list(b'[', b']', Self::text)
    }

    /// `open`, items read by `item` and separated by commas, then `close`, with whitespace
    /// allowed between any two of them.
    fn list(
        &mut self,
        open: u8,
        close: u8,
        mut item: impl FnMut(&mut Self) -> Option<()>,
    ) -> Option<()> {
        self.expect(open)?;
        self.ws();
        if self.peek()? == close {
            self.at += 1;
            return Some(());
        }
        loop {
            self.ws();
            item(self)?;
            self.ws();
            match self.next()? {
                b',' => {}
                b if b == close => return Some(()),
                _ => return None,
            }
        }
    }

    fn boolean(&mut self) -> Option<()> {
        self.literal()
            .filter(|l| *l != b"null".as_slice())
            .map(drop)
    }

    /// `true`, `false` or `null`.
    fn literal(&mut self) -> Option<&'static [u8]> {
        let rest = &self.bytes[self.at..];
        let word: &'static [u8] = [b"true".as_slice(), b"false", b"null"]
            .into_iter()
            .find(|w| rest.starts_with(w))?;
        self.at += word.len();
        Some(word)
    }

    /// A number without sign or exponent, of at most [`MAX_DIGITS`] digits before and after
    /// the point: always a finite `f64` of at least zero.
    fn number(&mut self) -> Option<()> {
        let int = self.digits()?;
        if int > 1 && self.bytes[self.at - int] == b'0' {
            return None;
        }
        if self.peek() == Some(b'.') {
            self.at += 1;
            self.digits()?;
        }
        match self.peek() {
            Some(b'e' | b'E' | b'-' | b'+') => None,
            _ => Some(()),
        }
    }

    /// One to [`MAX_DIGITS`] ASCII digits; how many.
    fn digits(&mut self) -> Option<usize> {
        let n = self.bytes[self.at..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        self.at += n;
        (1..=MAX_DIGITS).contains(&n).then_some(n)
    }

    /// Any JSON value within the limits above.
    fn value(&mut self, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        match self.peek()? {
            b'"' => self.text(),
            b'0'..=b'9' => self.number(),
            b'[' => self.list(b'[', b']', |s| s.value(depth + 1)),
            b'{' => self.list(b'{', b'}', |s| {
                s.text()?;
                s.ws();
                s.expect(b':')?;
                s.ws();
                s.value(depth + 1)
            }),
            _ => self.literal().map(drop),
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use squad_model::{Confidence, NoteEntry, NoteType};

    use super::entry_id;
    use crate::format::typed_id;

    const ULID: &str = "01ARZ3NDEKTSV4RRFFQ69G5FAV";
    const UUID7: &str = "018e6b3c-8f6a-7cc2-9b1e-3f5a2d4c6e8f";

    /// What the scanner says must never differ from the typed check (nor from reading the
    /// whole entry) when it says anything at all.
    fn assert_sound(line: &str) -> Result<(), TestCaseError> {
        if let Some(id) = entry_id(line) {
            prop_assert_eq!(typed_id(line), Some(id.clone()), "{}", line);
            // What `parse_note` reads a line with.
            let entry = serde_json::from_str::<NoteEntry>(line);
            prop_assert!(entry.is_ok(), "{}: {:?}", line, entry);
            prop_assert_eq!(entry.map(|e| e.id).ok(), Some(id));
        }
        Ok(())
    }

    fn base(extra: &str) -> String {
        format!(
            r#"{{"id":"{ULID}","agent":"data","timestamp":"2026-03-23T14:00:00Z","type":"decision"{extra}}}"#
        )
    }

    /// The lines squad writes, and the plain hand-written shapes, are read by the scanner.
    #[test]
    fn reads_what_squad_writes() {
        let mut full = NoteEntry::new("data".parse().unwrap(), NoteType::Research);
        full.content = Some("caf\u{e9} \"quoted\" \\ tab\t line\n end/".into());
        full.decision = Some("use gix".into());
        full.reasoning = Some(String::new());
        full.alternatives_considered = Some(vec!["git2".into(), "shell out".into()]);
        full.confidence = Some(Confidence::High);
        full.promote_to_permanent = Some(true);
        full.topic = Some("notes".into());
        full.findings = Some(serde_json::json!({"a": [1, 2.5, {"b": null, "c": false}], "d": "x"}));
        full.effort_hours = Some(1.25);
        full.archive_on_close = Some(false);
        let plain = NoteEntry::new("worf".parse().unwrap(), NoteType::Progress);
        for line in [full.to_line(), plain.to_line()] {
            let line = line.trim_end();
            assert_eq!(entry_id(line), typed_id(line), "{line}");
            assert!(entry_id(line).is_some(), "{line}");
        }
        for line in [
            base(""),
            base(r#","content":null,"findings":null,"effort_hours":0"#),
            base(r#","alternatives_considered":[],"findings":[]"#),
            format!(
                r#"{{ "id" : "{UUID7}" , "agent":"a-1_b", "timestamp":"2026-03-23T14:00:00.120+00:00","type":"security" }}"#
            ),
            format!(
                "{{\t\"type\":\"review\",\"agent\":\"x\",\"timestamp\":\"2026-03-23T14:00:00Z\",\"id\":\"{ULID}\"\r}}"
            ),
        ] {
            assert_eq!(
                entry_id(&line).map(|i| i.to_string()),
                typed_id(&line).map(|i| i.to_string()),
                "{line}"
            );
            assert!(entry_id(&line).is_some(), "{line}");
        }
    }

    /// Every shape below is one the scanner must decline (the typed check decides), whether
    /// the typed check accepts it or not.
    #[test]
    fn declines_what_it_is_not_sure_of() {
        for extra in [
            r#","unknown":1"#,
            r#","content":"a","content":"b""#,
            r#","id":"01ARZ3NDEKTSV4RRFFQ69G5FAV""#,
            r#","content":"\u00e9""#,
            r#","content":"bad \x escape""#,
            "\",\"content\":\"raw \u{1} control\"",
            r#","content":1"#,
            r#","effort_hours":-0"#,
            r#","effort_hours":-1"#,
            r#","effort_hours":1e3"#,
            r#","effort_hours":01"#,
            r#","effort_hours":1."#,
            r#","effort_hours":1234567890123456789"#,
            r#","confidence":"maybe""#,
            r#","promote_to_permanent":"yes""#,
            r#","promote_to_permanent":nul"#,
            r#","alternatives_considered":["x",1]"#,
            r#","alternatives_considered":["x",]"#,
            r#","findings":{"a":1,}"#,
            r#","findings":[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]"#,
            r#","findings":{"\u0061":1}"#,
            r#","findings":-1"#,
            ",",
        ] {
            assert_eq!(entry_id(&base(extra)), None, "{extra}");
        }
        for line in [
            String::new(),
            "{}".into(),
            "{".into(),
            format!(r#"{{"id":"{ULID}","agent":"data","timestamp":"2026-03-23T14:00:00Z"}}"#),
            base("").replace("data", "Data"),
            base("").replace("14:00:00Z", "14:00:00+02:00"),
            base("").replace("2026-03-23", "2026-02-30"),
            base("").replace("decision", "opinion"),
            base("").replace(ULID, "01ARZ3NDEKTSV4RRFFQ69G5FAI"),
            base("").replace(ULID, "81ARZ3NDEKTSV4RRFFQ69G5FAV"),
            base("").replace("\"id\"", "\"i\\u0064\""),
            format!("{} ", base("")),
            format!("{}{}", base(""), base("")),
            base("").replace('}', "}}"),
        ] {
            assert_eq!(entry_id(&line), None, "{line}");
        }
    }

    proptest! {
        /// The word-at-a-time search finds what a byte-by-byte search finds, on any bytes.
        #[test]
        fn string_stop_is_the_first_stop_byte(
            bytes in proptest::collection::vec(
                prop_oneof![Just(b'"'), Just(b'\\'), 0u8..0x20, 0x20u8..=0xff, Just(0x21u8), Just(0x5du8)],
                0..40),
            from in 0usize..8,
        ) {
            let bytes = &bytes[from.min(bytes.len())..];
            prop_assert_eq!(
                super::string_stop(bytes),
                bytes.iter().position(|&b| b == b'"' || b == b'\\' || b < 0x20)
            );
        }
    }

    /// Pieces of lines: keys, values and whitespace, valid and not, to put together at random.
    const KEYS: &[&str] = &[
        "id",
        "agent",
        "timestamp",
        "type",
        "content",
        "decision",
        "reasoning",
        "topic",
        "alternatives_considered",
        "confidence",
        "promote_to_permanent",
        "archive_on_close",
        "effort_hours",
        "findings",
        "x",
        "Id",
        "i\\u0064",
        "i\\\"d",
    ];
    const VALUES: &[&str] = &[
        "\"01ARZ3NDEKTSV4RRFFQ69G5FAV\"",
        "\"01arz3ndektsv4rrffq69g5fav\"",
        "\"018e6b3c-8f6a-7cc2-9b1e-3f5a2d4c6e8f\"",
        "\"018e6b3c-8f6a-4cc2-9b1e-3f5a2d4c6e8f\"",
        "\"data\"",
        "\"Data\"",
        "\"a b\"",
        "\"\"",
        "\"2026-03-23T14:00:00Z\"",
        "\"2026-03-23T14:00:00.5+00:00\"",
        "\"2026-02-30T00:00:00Z\"",
        "\"2026-03-23t14:00:00z\"",
        "\"2026-03-23T14:00:60Z\"",
        "\"decision\"",
        "\"research\"",
        "\"opinion\"",
        "\"high\"",
        "\"low\"",
        "\"a\\\"b\"",
        "\"\\u00e9\"",
        "\"tab\\there\"",
        "\"\\x\"",
        "\"\u{1}\"",
        "\"é\"",
        "\"\\ud800\"",
        "\"unterminated",
        "0",
        "01",
        "-1",
        "-0",
        "1e3",
        "1.5",
        "1.",
        ".5",
        "1e400",
        "123456789012345678901234567890",
        "0.000000000000001",
        "NaN",
        "null",
        "true",
        "false",
        "nul",
        "tru",
        "[]",
        "[\"a\"]",
        "[\"a\",1]",
        "[",
        "[\"a\",]",
        "[ \"a\" , \"b\" ]",
        "{}",
        "{\"a\":[1,{\"b\":null}]}",
        "{\"a\":1,}",
        "{\"a\" 1}",
        "{1:2}",
        "[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]",
    ];
    const WS: &[&str] = &["", "", "", " ", "\t", "\r", "  \r\t", "\u{c}"];

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2048, failure_persistence: None, ..ProptestConfig::default() })]

        /// Lines put together from valid and invalid pieces: whenever the scanner reads an
        /// entry, the typed check reads the same one.
        #[test]
        fn never_accepts_what_the_typed_check_rejects(
            required in any::<bool>(),
            pairs in proptest::collection::vec(
                (0..KEYS.len(), 0..VALUES.len(), 0..WS.len(), 0..WS.len()), 0..8),
            commas in proptest::collection::vec(prop_oneof![Just(","), Just(","), Just(",,"), Just("")], 8),
            cut in any::<prop::sample::Index>(),
            truncate in any::<bool>(),
        ) {
            let mut parts: Vec<String> = Vec::new();
            if required {
                parts.extend([
                    format!("\"id\":\"{ULID}\""),
                    "\"agent\":\"data\"".into(),
                    "\"timestamp\":\"2026-03-23T14:00:00Z\"".into(),
                    "\"type\":\"decision\"".into(),
                ]);
            }
            for (k, v, w1, w2) in &pairs {
                parts.push(format!("{}\"{}\"{}:{}{}", WS[*w1], KEYS[*k], WS[*w2], WS[*w1], VALUES[*v]));
            }
            let mut line = String::from("{");
            for (i, part) in parts.iter().enumerate() {
                if i > 0 {
                    line.push_str(commas[i % commas.len()]);
                }
                line.push_str(part);
            }
            line.push('}');
            if truncate {
                let at = cut.index(line.len() + 1);
                let at = (0..=at).rev().find(|&i| line.is_char_boundary(i)).unwrap_or(0);
                line.truncate(at);
            }
            assert_sound(&line)?;
        }

        /// Entries squad writes, with any text: the scanner agrees with the typed check.
        #[test]
        fn agrees_on_written_entries(content in "\\PC{0,40}", hours in 0.0f64..1e6) {
            let mut e = NoteEntry::new("data".parse().unwrap(), NoteType::Decision);
            e.content = Some(content);
            e.effort_hours = Some(hours);
            let line = e.to_line();
            let line = line.trim_end();
            assert_sound(line)?;
        }
    }
}
