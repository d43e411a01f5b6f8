//! Runs each per-crate example's body (its `run`, which `main` calls with stdout) and checks what
//! it prints: faster and steadier than `cargo run --example`, and the example files stay whole.
#![expect(
    clippy::unwrap_used,
    reason = "a test panics on failure; that is the point"
)]

#[path = "../notes_alone.rs"]
#[expect(dead_code, reason = "`main` is for `cargo run --example`")]
mod notes_alone;

#[path = "../memory_alone.rs"]
#[expect(dead_code, reason = "`main` is for `cargo run --example`")]
mod memory_alone;

#[path = "../notify_in_memory.rs"]
#[expect(dead_code, reason = "`main` is for `cargo run --example`")]
mod notify_in_memory;

#[path = "../routing_replay.rs"]
#[expect(dead_code, reason = "`main` is for `cargo run --example`")]
mod routing_replay;

/// What `run` printed.
fn output(run: impl FnOnce(&mut Vec<u8>) -> anyhow::Result<()>) -> String {
    let mut out = Vec::new();
    run(&mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn notes_alone_writes_a_note_git_reads() {
    let out = output(notes_alone::run);
    assert!(
        out.contains("git notes --ref refs/notes/squad/data show HEAD:"),
        "{out}"
    );
    assert!(
        out.contains(r#""decision":"Use JWT RS256 for the auth middleware""#),
        "{out}"
    );
}

#[test]
fn memory_alone_spawns_with_the_relevant_history() {
    let out = output(memory_alone::run);
    assert!(out.contains("imported 2 entries into cold memory"), "{out}");
    assert!(out.contains("## Memory Context"), "{out}");
    assert!(out.contains("clear stale cookies"), "{out}");
    assert!(
        !out.contains("npm publish"),
        "an irrelevant entry was loaded:\n{out}"
    );
}

#[test]
fn notify_in_memory_approves_the_gate() {
    let out = output(notify_in_memory::run);
    assert!(out.contains("nothing yet; the host pauses 30 s"), "{out}");
    // Spelled as the CLI prints a gate's state (`approved`), not as Rust's Debug (`Approved`).
    assert!(out.ends_with("is approved\n"), "{out}");
}

#[test]
fn routing_replay_wakes_the_leader_once_and_briefs_it() {
    let out = output(routing_replay::run);
    assert!(out.contains("\"enqueue\" ["), "{out}");
    assert!(out.contains("\"coalesce\" ["), "{out}");
    assert!(out.contains("## Squad Roster"), "{out}");
    assert!(out.contains("Worf"), "{out}");
}
