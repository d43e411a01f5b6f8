//! squad-notes on its own: write a note on a commit of a git repository and read it back.
//!
//! A tool needs one dependency, `squad-notes` (its default feature `gix` is the git backend); the
//! vocabulary comes with it as `squad_notes::squad_model`.
//!
//! Run with `cargo run -p squad-examples --example notes_alone` (needs the `git` CLI, which here
//! only makes the repository and its first commit).

use std::io::Write;
use std::path::Path;
use std::process::Command;

use anyhow::{Context as _, ensure};
use squad_notes::squad_model::{AgentName, NoteEntry, NoteType};
use squad_notes::{GixNotes, Notes, Oid};

fn main() -> anyhow::Result<()> {
    run(&mut std::io::stdout().lock())
}

/// Writes a decision on the first commit of a new repository, reads it back with the library and
/// with `git notes`, and says what it did on `out`.
pub(crate) fn run(out: &mut impl Write) -> anyhow::Result<()> {
    let repo = tempfile::tempdir()?;
    git(repo.path(), &["init", "-q"])?;
    git(repo.path(), &["config", "user.name", "Squad Example"])?;
    git(
        repo.path(),
        &["config", "user.email", "squad@example.invalid"],
    )?;
    git(
        repo.path(),
        &["commit", "-q", "--allow-empty", "-m", "Add auth"],
    )?;
    let head: Oid = git(repo.path(), &["rev-parse", "HEAD"])?.parse()?;

    let notes = Notes::new(GixNotes::open(repo.path())?);
    let data = AgentName::new("data")?;
    let mut entry = NoteEntry::new(data.clone(), NoteType::Decision);
    entry.decision = Some("Use JWT RS256 for the auth middleware".into());
    notes.write(&data, &head, &entry)?; // validated, appended, compare-and-swap on the ref

    let shown = notes.show(&data, &head)?;
    ensure!(shown.entries == [entry], "the note does not read back");
    writeln!(out, "data's note on {head}: {} entry", shown.entries.len())?;
    let notes_ref = data.notes_ref(); // refs/notes/squad/data
    let raw = git(repo.path(), &["notes", "--ref", &notes_ref, "show", "HEAD"])?;
    writeln!(out, "git notes --ref {notes_ref} show HEAD:\n{raw}")?;
    Ok(())
}

/// Runs `git` in `dir` without the user's or the system's configuration.
fn git(dir: &Path, args: &[&str]) -> anyhow::Result<String> {
    let output = Command::new("git")
        .current_dir(dir)
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .context("cannot run git; is it installed?")?;
    ensure!(
        output.status.success(),
        "git {} failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(String::from_utf8(output.stdout)?.trim().to_owned())
}
