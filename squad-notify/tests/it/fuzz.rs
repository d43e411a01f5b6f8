//! Property tests over every parser of stored or received text (issue 14): arbitrary bytes and
//! structure-aware mutations of valid inputs. None panics; each answers with a typed error.

use proptest::prelude::*;
use squad_notify::*;

/// A valid log of three entries and a valid state.json, the seeds of the mutations.
fn seeds() -> (String, String) {
    let mut text = LOG_HEADER.to_owned();
    for (i, title) in ["impactful-action", "ignored-signal", "risk-gate"]
        .iter()
        .enumerate()
    {
        let e = LogEntry::new(
            squad_model::Timestamp::from_unix_seconds(1_800_000_000 + i as i64).unwrap(),
            title,
        )
        .field("Mode", "autopilot")
        .field("Gate", &format!("g-{i:012x}"))
        .field("Resolved", "pending");
        let prev = log_head(&text).unwrap();
        text.push_str(&e.render(&prev));
    }
    let state = r#"{"schemaVersion":"1.3","notify":{"approvalChannel":"github-issue","enabled":true,"email":"","github":{"handle":"octocat","repo":"o/r"}},"approval":{"currentRun":"r-1","runs":[{"id":"r-1","started":"2027-01-15T08:00:00Z"}],"pendingGate":null,"recent":[],"logHead":"sha256:00","batch":{"op":"request","logLenBefore":10,"append":"x"},"tamper":{"detected":"2027-01-15T08:00:00Z","problem":"p"}}}"#;
    (text, state.to_owned())
}

/// Structure-aware mutations of a text: delete, duplicate or swap lines, flip a byte, cut, or
/// splice in arbitrary text.
#[derive(Debug, Clone)]
enum Mutation {
    DeleteLine(usize),
    DuplicateLine(usize),
    SwapLines(usize, usize),
    FlipByte(usize, u8),
    Cut(usize),
    Splice(usize, String),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        any::<usize>().prop_map(Mutation::DeleteLine),
        any::<usize>().prop_map(Mutation::DuplicateLine),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::SwapLines(a, b)),
        (any::<usize>(), any::<u8>()).prop_map(|(a, b)| Mutation::FlipByte(a, b)),
        any::<usize>().prop_map(Mutation::Cut),
        (any::<usize>(), ".{0,40}").prop_map(|(a, s)| Mutation::Splice(a, s)),
    ]
}

fn apply(text: &str, m: &Mutation) -> String {
    let mut lines: Vec<String> = text.split_inclusive('\n').map(str::to_owned).collect();
    let n = lines.len().max(1);
    match m {
        Mutation::DeleteLine(i) if !lines.is_empty() => {
            lines.remove(i % n);
        }
        Mutation::DuplicateLine(i) if !lines.is_empty() => {
            let l = lines[i % n].clone();
            lines.insert(i % n, l);
        }
        Mutation::SwapLines(a, b) if !lines.is_empty() => lines.swap(a % n, b % n),
        Mutation::FlipByte(i, b) => {
            let mut bytes = text.as_bytes().to_vec();
            if !bytes.is_empty() {
                let at = i % bytes.len();
                bytes[at] ^= b | 1;
            }
            return String::from_utf8_lossy(&bytes).into_owned();
        }
        Mutation::Cut(i) => {
            let at = i % (text.len() + 1);
            return String::from_utf8_lossy(&text.as_bytes()[..at]).into_owned();
        }
        Mutation::Splice(i, s) => {
            let at = i % n;
            lines.insert(at, s.clone());
        }
        _ => {}
    }
    lines.concat()
}

fn arbitrary_text() -> impl Strategy<Value = String> {
    prop::collection::vec(any::<u8>(), 0..400)
        .prop_map(|b| String::from_utf8_lossy(&b).into_owned())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn the_log_verifier_answers_every_text(
        text in arbitrary_text(),
        mutations in prop::collection::vec(mutation(), 1..4),
    ) {
        let (seed, _) = seeds();
        let head = log_head(&seed).unwrap();
        for input in [text.clone(), mutations.iter().fold(seed.clone(), |t, m| apply(&t, m))] {
            match verify_log(&input, Some(&head)) {
                Ok(r) => prop_assert_eq!(r.head, head.clone(), "only the intact log verifies"),
                Err(e) => prop_assert_eq!(e.kind(), ErrorKind::Corrupt),
            }
            let _ = log_head(&input).map_err(|e| assert_eq!(e.kind(), ErrorKind::Corrupt));
        }
    }

    #[test]
    fn state_json_parsing_answers_every_text(
        text in arbitrary_text(),
        mutations in prop::collection::vec(mutation(), 1..4),
    ) {
        let (_, seed) = seeds();
        prop_assert!(StateDoc::from_json(&seed).is_ok());
        for input in [text.clone(), mutations.iter().fold(seed.clone(), |t, m| apply(&t, m))] {
            if let Err(e) = StateDoc::from_json(&input) {
                prop_assert_eq!(e.kind(), ErrorKind::Corrupt, "{}", e);
            }
        }
    }

    #[test]
    fn the_signal_parsers_answer_every_text(
        text in arbitrary_text(),
        lines in prop::collection::vec(
            prop_oneof![
                Just("```".to_owned()), Just("~~~".to_owned()), Just("> q".to_owned()),
                Just("/approve".to_owned()), Just("/stop g-0123456789ab".to_owned()),
                Just("<!--".to_owned()), Just("-->".to_owned()), Just(String::new()),
                "[ -~]{0,30}",
            ],
            0..30,
        ),
    ) {
        let _ = parse_comment(&text);
        let _ = parse_label(&text);
        let mut chat = ChatLines::new();
        for l in text.lines().chain(lines.iter().map(String::as_str)) {
            let judged = chat.push(l);
            // A line inside a block is never a command; one outside is judged as a comment.
            if judged == Parsed::Note(NotCommand::InsideBlock) {
                prop_assert!(judged.command().is_none());
            }
        }
        // Inside a fence that nothing closes early, no line is a command, whatever it says.
        let closes = |l: &String| {
            let t = l.trim_start();
            t.starts_with("```") || t.starts_with("~~~")
        };
        if !lines.iter().any(closes) {
            let mut chat = ChatLines::new();
            for fence in ["```", "~~~"] {
                let session = format!("{fence}\n{}\n{fence}", lines.join("\n"));
                let judged: Vec<Parsed> = session.lines().map(|l| chat.push(l)).collect();
                prop_assert!(judged.iter().all(|p| p.command().is_none()), "{:?}", judged);
                prop_assert!(!chat.in_block());
            }
        }
    }

    #[test]
    fn gate_records_read_from_json_answer_with_a_typed_error(text in arbitrary_text()) {
        if let Err(e) = serde_json::from_str::<Gate>(&text) {
            let _ = e.to_string();
        }
        let _ = GateId::new(&text).map_err(|e| assert_eq!(e.kind(), ErrorKind::InvalidInput));
        let _ = RunId::new(&text).map_err(|e| assert_eq!(e.kind(), ErrorKind::InvalidInput));
        let _ = text.parse::<Trigger>().map_err(|e| assert_eq!(e.kind(), ErrorKind::InvalidInput));
    }
}
