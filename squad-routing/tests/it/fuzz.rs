//! Fuzzing the two parsers a user feeds: trace lines and policy files. Arbitrary bytes, and
//! structure-aware mutations of valid lines (a key dropped, a value replaced by any JSON value,
//! the text cut or spliced), must never panic; each answers with a value or a typed error.
//! Mutated events go all the way through the engine, on a directory that holds the entities
//! they name.

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use squad_routing::generate::{GenConfig, generate};
use squad_routing::trace::parse_line;
use squad_routing::{Engine, ErrorKind, Replay, RoutingPolicy};

/// Valid lines: a generated trace (entities and events of every common kind) plus records of
/// the kinds it does not write.
fn corpus() -> Vec<String> {
    let mut lines: Vec<String> = generate(&GenConfig {
        squads: 2,
        issues_per_squad: 2,
        events: 60,
        seed: 5,
    })
    .unwrap()
    .lines()
    .collect();
    let extra = [
        r#"{"kind":"autopilot","id":"ap1","workspace_id":"00000000-0000-4000-8000-000000000001","title":"Nightly","execution_mode":"run_only","creator_type":"agent","creator_id":"a1"}"#,
        r#"{"kind":"task","id":"t-x","agent_id":"a1","status":"failed","context":{"type":"quick_create","prompt":"p"},"created_at":"2026-01-01T00:00:00Z"}"#,
        r#"{"kind":"event","event":{"type":"quick_create","actor":"u1","workspace_id":"w1","target_type":"squad","target_id":"s1","prompt":"p"}}"#,
        r#"{"kind":"event","event":{"type":"save_autopilot","actor":{"type":"agent","id":"a1"},"autopilot_id":"ap2","workspace_id":"w1","assignee_type":"squad","assignee_id":"s1","execution_mode":"create_issue"}}"#,
        r#"{"kind":"event","event":{"type":"trigger_autopilot","autopilot_id":"ap1","trigger":"manual","actor":"u1"}}"#,
        r#"{"kind":"event","event":{"type":"record_evaluation","agent_id":"a1","task_id":"T1","issue_id":"i1","outcome":"no_action"}}"#,
        r#"{"kind":"event","event":{"type":"update_squad","actor":"u1","squad_id":"s1","leader_id":"a2"}}"#,
        r#"{"kind":"event","event":{"type":"delete_issue","actor":{"type":"system"},"issue_id":"i1"}}"#,
    ];
    lines.extend(extra.iter().map(|s| (*s).to_owned()));
    lines
}

/// A replay holding the corpus's entities, so that mutated events reach the rules.
fn loaded() -> Replay {
    let mut r = Replay::new(Engine::default());
    for line in corpus().iter().filter(|l| !l.contains(r#""kind":"event""#)) {
        let _ = r.feed_line(line);
    }
    r
}

/// Any JSON value, nested a little.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|f| json!(f)),
        Just(json!(u64::MAX)),
        Just(json!(-1)),
        ".{0,12}".prop_map(Value::String),
        Just(json!("00000000-0000-4000-8000-0000000000a1")),
        Just(json!("2026-13-45T99:99:99Z")),
    ];
    leaf.prop_recursive(2, 8, 3, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            proptest::collection::vec((".{0,6}", inner), 0..3)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

#[derive(Debug, Clone)]
enum Mutation {
    /// Drop the n-th key (of the event, when the line is an event).
    Drop(usize),
    /// Replace the n-th key's value.
    Replace(usize, Value),
    /// Add a key.
    Add(String, Value),
    /// Cut the text at a byte.
    Cut(usize),
    /// Splice bytes into the text.
    Splice(usize, Vec<u8>),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (0..12usize).prop_map(Mutation::Drop),
        (0..12usize, any_json()).prop_map(|(k, v)| Mutation::Replace(k, v)),
        ("[a-z_]{1,12}", any_json()).prop_map(|(k, v)| Mutation::Add(k, v)),
        any::<usize>().prop_map(Mutation::Cut),
        (any::<usize>(), proptest::collection::vec(any::<u8>(), 1..6))
            .prop_map(|(at, b)| Mutation::Splice(at, b)),
    ]
}

fn mutate(line: &str, muts: &[Mutation]) -> String {
    let mut v: Value = serde_json::from_str(line).unwrap();
    let mut text = None;
    for m in muts {
        let target = match v.get_mut("event") {
            Some(e) if e.is_object() => e,
            _ => &mut v,
        };
        let Some(obj) = target.as_object_mut() else {
            continue;
        };
        let keys: Vec<String> = obj.keys().cloned().collect();
        match m {
            Mutation::Drop(k) if !keys.is_empty() => {
                obj.remove(&keys[k % keys.len()]);
            }
            Mutation::Replace(k, val) if !keys.is_empty() => {
                obj.insert(keys[k % keys.len()].clone(), val.clone());
            }
            Mutation::Add(k, val) => {
                obj.insert(k.clone(), val.clone());
            }
            Mutation::Cut(at) => {
                let s = v.to_string();
                let at = at % (s.len() + 1);
                text = Some(String::from_utf8_lossy(&s.as_bytes()[..at]).into_owned());
            }
            Mutation::Splice(at, bytes) => {
                let s = v.to_string();
                let at = at % (s.len() + 1);
                let mut b = s.into_bytes();
                b.splice(at..at, bytes.iter().copied());
                text = Some(String::from_utf8_lossy(&b).into_owned());
            }
            _ => {}
        }
    }
    text.unwrap_or_else(|| v.to_string())
}

/// Every error a trace line may give is one of these kinds.
fn trace_kind(k: ErrorKind) -> bool {
    matches!(
        k,
        ErrorKind::InvalidTrace
            | ErrorKind::UnknownEventKind
            | ErrorKind::UnknownReference
            | ErrorKind::UnsupportedVersion
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic_the_trace_parser(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        let text = String::from_utf8_lossy(&bytes);
        if let Err(e) = parse_line(&text) {
            prop_assert!(trace_kind(e.kind()), "{e:?}");
        }
        let mut r = Replay::new(Engine::default());
        if let Err(e) = r.feed_line(&text) {
            prop_assert!(trace_kind(e.kind()), "{e:?}");
            prop_assert_eq!(e.line(), Some(1));
        }
    }

    #[test]
    fn mutated_trace_lines_answer_with_a_value_or_a_typed_error(
        pick in any::<usize>(),
        muts in proptest::collection::vec(mutation(), 1..4),
    ) {
        let corpus = corpus();
        let line = mutate(&corpus[pick % corpus.len()], &muts);
        match parse_line(&line) {
            Ok(_) => {}
            Err(e) => prop_assert!(trace_kind(e.kind()), "{e:?}"),
        }
        // Through the engine, on a directory that knows the ids the corpus names.
        let mut r = loaded();
        if let Err(e) = r.feed_line(&line) {
            prop_assert!(trace_kind(e.kind()), "{line}: {e:?}");
            prop_assert!(!e.message().is_empty());
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic_the_policy_parser(bytes in proptest::collection::vec(any::<u8>(), 0..128)) {
        let text = String::from_utf8_lossy(&bytes);
        if let Err(e) = RoutingPolicy::from_json(&text) {
            prop_assert_eq!(e.kind(), ErrorKind::InvalidPolicy);
        }
    }

    #[test]
    fn mutated_policies_answer_with_a_policy_or_a_typed_error(
        muts in proptest::collection::vec(mutation(), 1..4),
    ) {
        let valid = r#"{"cancel_tasks_on_reassign":false,"cancel_tasks_on_issue_cancelled":true,"escalation_seconds":0,"autopilot_dedup_seconds":60,"max_attempts":3}"#;
        let text = mutate(valid, &muts);
        match RoutingPolicy::from_json(&text) {
            Ok(p) => {
                // Whatever parsed is a policy that reads back the same.
                let again = RoutingPolicy::from_json(&serde_json::to_string(&p).unwrap()).unwrap();
                prop_assert_eq!(p, again);
            }
            Err(e) => prop_assert_eq!(e.kind(), ErrorKind::InvalidPolicy),
        }
    }
}
