//! squad-routing on its own: replay a small trace and print whom each event wakes, with the rule
//! that decided, then the squad leader's briefing.
//!
//! A tool needs one dependency, `squad-routing` (feature `sqlite` for a directory kept in a
//! database); the vocabulary comes with it as `squad_routing::squad_model`. The trace format is
//! JSON Lines, one entity or event per line (`squad schema trace` prints its JSON Schema).
//!
//! Run with `cargo run -p squad-examples --example routing_replay`.

use std::io::Write;

use anyhow::{Context as _, ensure};
use squad_routing::squad_model::SquadId;
use squad_routing::{Directory as _, Engine, Replay, briefing};

/// Sam's workspace: a squad led by Data, with Worf; an issue assigned to the squad, a comment.
const TRACE: &str = r#"{"kind":"schema_version","version":2}
{"kind":"workspace","id":"w1","issue_prefix":"SQ"}
{"kind":"user","id":"u1","name":"Sam"}
{"kind":"membership","workspace_id":"w1","user_id":"u1","role":"owner"}
{"kind":"agent","id":"00000000-0000-4000-8000-0000000000a1","workspace_id":"w1","name":"Data","owner_id":"u1","runtime":{"runtime_id":"rt1","status":"online"},"created_at":"2026-11-30T09:00:00Z"}
{"kind":"agent","id":"00000000-0000-4000-8000-0000000000a2","workspace_id":"w1","name":"Worf","owner_id":"u1","runtime":{"runtime_id":"rt1","status":"online"},"created_at":"2026-11-30T09:00:00Z"}
{"kind":"issue","id":"i1","workspace_id":"w1","title":"Rotate the signing keys","status":"todo","created_at":"2026-11-30T09:00:00Z","number":1}
{"kind":"event","at":"2026-11-30T10:00:00Z","event":{"type":"create_squad","actor":"u1","workspace_id":"w1","squad_id":"00000000-0000-4000-8000-0000000005a1","name":"Core","leader_id":"00000000-0000-4000-8000-0000000000a1"}}
{"kind":"event","event":{"type":"add_member","actor":"u1","squad_id":"00000000-0000-4000-8000-0000000005a1","member_type":"agent","member_id":"00000000-0000-4000-8000-0000000000a2","role":"security"}}
{"kind":"event","event":{"type":"update_issue","actor":{"type":"member","id":"u1"},"issue_id":"i1","assignee_type":"squad","assignee_id":"00000000-0000-4000-8000-0000000005a1"}}
{"kind":"event","at":"2026-11-30T10:05:00Z","event":{"type":"comment","comment_id":"c1","issue_id":"i1","author":{"type":"member","id":"u1"},"content":"Any news?"}}
"#;

fn main() -> anyhow::Result<()> {
    run(&mut std::io::stdout().lock())
}

/// Replays [`TRACE`], printing each event's decisions and the leader's briefing on `out`.
pub(crate) fn run(out: &mut impl Write) -> anyhow::Result<()> {
    let mut replay = Replay::new(Engine::default());
    let mut woken = 0;
    for line in TRACE.lines() {
        let Some(output) = replay.feed_line(line)? else {
            continue; // an entity record: it only fills the directory
        };
        writeln!(out, "line {} ({}):", output.line, output.event)?;
        for decision in &output.decisions.decisions {
            let kind = serde_json::to_value(decision)?["type"].clone();
            match decision.rule() {
                Some(rule) => writeln!(out, "  {kind} [{}: {}]", rule.id(), rule.summary())?,
                None => writeln!(out, "  {kind}")?,
            }
        }
        woken += output.decisions.enqueued().count();
    }
    ensure!(
        woken == 1,
        "the assignment wakes the leader, the comment is absorbed by its task"
    );

    let dir = replay.directory();
    let squad = dir
        .squad(&SquadId::new("00000000-0000-4000-8000-0000000005a1")?)
        .context("no squad")?;
    writeln!(
        out,
        "\nThe leader's briefing:\n{}",
        briefing::briefing(dir, squad, true)
    )?;
    Ok(())
}
