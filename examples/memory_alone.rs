//! squad-memory on its own: import a squad's `history.md`, add an entry, and assemble the memory
//! block of a spawn prompt within its byte budget.
//!
//! A tool needs one dependency, `squad-memory`; the vocabulary comes with it as
//! `squad_memory::squad_model`. The store here is the in-memory one; `FsStore::new(".squad")`
//! keeps the same documents as files under `.squad/memory/`.
//!
//! Run with `cargo run -p squad-examples --example memory_alone`.

use std::io::Write;

use anyhow::ensure;
use squad_memory::squad_model::AgentName;
use squad_memory::{
    Budget, DocRef, Entry, ImportOptions, ImportSource, ImportTarget, InMemoryStore, Kind,
    LoadPlan, MemoryStore, Situation, Touch, add, import, spawn,
};

const HISTORY: &str = "# DATA\n\n## Learnings\n\n\
### 2026-03-14: Login redirect loop\n- The redirect loops when the session cookie is stale.\n\n\
### Release tarball without dist/ (2026-05-01)\n- `npm publish` ran before `npm run build`.\n";

fn main() -> anyhow::Result<()> {
    run(&mut std::io::stdout().lock())
}

/// Imports a history, adds a decision to hot memory, spawns with a task, and reports on `out`.
pub(crate) fn run(out: &mut impl Write) -> anyhow::Result<()> {
    let store = InMemoryStore::new();
    let data = AgentName::new("data")?;
    let source = ImportSource {
        name: "history.md".into(),
        text: HISTORY.into(),
    };
    let imported = import(
        &store,
        &ImportTarget::Agent(data.clone()),
        &[source],
        &ImportOptions::new("2026-11-20T00:00:00Z".parse()?),
    )?;
    ensure!(
        imported.lines_in == imported.lines_stored,
        "an imported line was lost"
    );
    writeln!(out, "imported {} entries into cold memory", imported.added)?;

    store.write(
        &DocRef::Hot(data.clone()),
        "Current task: fix the login redirect\n",
    )?;
    let decision = Entry::new(
        "2026-11-30T10:00:00Z".parse()?,
        Kind::Decision,
        "clear stale cookies",
    )
    .with_body("The login page deletes a session cookie it cannot verify.");
    let added = add(&store, &data, decision, &Budget::default())?;
    writeln!(out, "added {} to hot memory", added.id)?;

    // Resuming loads hot, and the cold sections relevant to the task.
    let plan = LoadPlan::new(Situation::Resuming).task("why does the login redirect loop?");
    let spawned = spawn(&store, &data, &plan, &Budget::default(), Touch::No)?;
    ensure!(
        spawned.prompt.contains("Login redirect loop"),
        "the relevant entry is missing"
    );
    writeln!(
        out,
        "spawn prompt: {} bytes, {} item(s) left out",
        spawned.prompt.len(),
        spawned.manifest.left_out.len()
    )?;
    writeln!(out, "{}", spawned.prompt)?;
    Ok(())
}
