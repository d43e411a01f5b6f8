//! Quickstart: an agent writes a note entry, it travels as one line of JSON, and is read back.
//!
//! Run with `cargo run -p squad-examples --example quickstart`.
#![allow(clippy::print_stdout, reason = "an example prints what it does")]

use squad_model::{AgentName, Confidence, NoteEntry, NoteType};

fn main() -> anyhow::Result<()> {
    let data = AgentName::new("data")?;
    println!("Agent `{data}` writes into {}.", data.notes_ref());

    let mut entry = NoteEntry::new(data, NoteType::Decision);
    entry.decision = Some("Use JWT RS256 for auth middleware".into());
    entry.reasoning = Some("The existing services already verify RS256 tokens.".into());
    entry.alternatives_considered = Some(vec!["HS256".into(), "session tokens".into()]);
    entry.confidence = Some(Confidence::High);
    entry.promote_to_permanent = Some(true);

    let line = entry.to_line();
    println!("On the wire ({} bytes):\n  {}", line.len(), line.trim_end());

    let back = NoteEntry::from_json(&line)?;
    anyhow::ensure!(back == entry, "the entry did not survive the round trip");
    println!(
        "Read back entry {} ({}, flagged for promotion: {}).",
        back.id,
        back.kind,
        back.promotes()
    );

    match NoteEntry::from_json(
        r#"{"id":"01ARZ3NDEKTSV4RRFFQ69G5FAV","timestamp":"soon","type":"decision"}"#,
    ) {
        Ok(_) => anyhow::bail!("an invalid entry was accepted"),
        Err(e) => println!("A malformed entry is refused: {e}"),
    }
    Ok(())
}
