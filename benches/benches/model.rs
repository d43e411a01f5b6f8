//! Parsing and validating note entries (`squad-model`), the cost every notes read pays per line.
#![expect(clippy::unwrap_used, reason = "a broken fixture should stop the bench")]

use squad_model::{AgentName, NoteEntry, NoteType};

fn main() {
    divan::main();
}

fn sample_line() -> String {
    let mut e = NoteEntry::new(AgentName::new("data").unwrap(), NoteType::Decision);
    e.decision = Some("Use JWT RS256 for auth middleware".into());
    e.reasoning = Some("Existing pattern in the codebase.".into());
    e.alternatives_considered = Some(vec!["HS256".into(), "session tokens".into()]);
    e.promote_to_permanent = Some(true);
    e.to_line()
}

/// Schema validation plus typed conversion: what a strict reader does.
#[divan::bench]
fn parse_with_schema(b: divan::Bencher<'_, '_>) {
    let line = sample_line();
    b.bench(|| NoteEntry::from_json(divan::black_box(&line)).unwrap());
}

/// Typed conversion only (serde), the baseline without the schema.
#[divan::bench]
fn parse_serde_only(b: divan::Bencher<'_, '_>) {
    let line = sample_line();
    b.bench(|| serde_json::from_str::<NoteEntry>(divan::black_box(&line)).unwrap());
}

/// Serialising one entry to its wire line.
#[divan::bench]
fn to_line(b: divan::Bencher<'_, '_>) {
    let e = NoteEntry::from_json(&sample_line()).unwrap();
    b.bench(|| divan::black_box(&e).to_line());
}
