//! The state stores against the git CLI plumbing an orphan-branch store would otherwise run.
//!
//! Fixture: a repository whose `squad-state` branch holds 200 small keys in 10 directories plus a
//! `decisions.md` of about 20 KB, built once per benchmark in a temporary directory.
//!
//! Each group measures ours and the baseline in the same run:
//! - `append`: one line appended to `decisions.md` as one commit. Ours: `OrphanBranchStore`
//!   (gix, in process, compare-and-swap). Baseline: what upstream squad's orphan backend does per
//!   write with the git CLI: `cat-file` (old value), `hash-object -w`, `ls-tree` + `mktree`,
//!   `commit-tree` and `update-ref <ref> <new> <old>` (six processes).
//! - `read`: one key. Ours: `OrphanBranchStore::read`. Baseline: `git cat-file blob <ref>:<key>`.
//! - `worktree_append`: `WorktreeStateStore::append` (lock, temp file, fsync, rename), for scale.
#![expect(clippy::unwrap_used, reason = "a broken fixture should stop the bench")]

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use squad_notes::state::{
    OrphanBranchStore, StateEdit, StateStore, StateStoreExt, WorktreeStateStore,
};

fn main() {
    divan::main();
}

const LINE: &[u8] = b"- 2026-11-30 data: Use JWT RS256 for auth middleware (auth.go:47-89)\n";

use squad_bench::git;

fn run(mut c: Command) -> String {
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "{c:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn run_stdin(mut c: Command, input: &[u8]) -> String {
    let mut child = c
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{c:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// A repository with the state branch filled, and the store on it.
fn fixture() -> (tempfile::TempDir, PathBuf, OrphanBranchStore) {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    run({
        let mut c = git(&repo);
        c.args(["init", "-q", "-b", "main"]);
        c
    });
    for (k, v) in [
        ("user.name", "Bench"),
        ("user.email", "bench@test.invalid"),
        ("gc.auto", "0"),
    ] {
        run({
            let mut c = git(&repo);
            c.args(["config", k, v]);
            c
        });
    }
    let store = OrphanBranchStore::open(&repo).unwrap();
    let mut edits: Vec<StateEdit> = (0..200)
        .map(|i| StateEdit::write(format!("research/{}/{i}.md", i % 10), format!("note {i}\n")))
        .collect();
    edits.push(StateEdit::write("decisions.md", LINE.repeat(280)));
    store.apply(&edits).unwrap();
    (dir, repo, store)
}

/// One append the way a CLI-plumbing orphan backend does it.
fn cli_append(repo: &Path, line: &[u8]) {
    let old = run({
        let mut c = git(repo);
        c.args(["rev-parse", "refs/heads/squad-state"]);
        c
    });
    let old = old.trim();
    let mut content = run({
        let mut c = git(repo);
        c.args(["cat-file", "blob", &format!("{old}:decisions.md")]);
        c
    })
    .into_bytes();
    content.extend_from_slice(line);
    let blob = run_stdin(
        {
            let mut c = git(repo);
            c.args(["hash-object", "-w", "--stdin"]);
            c
        },
        &content,
    );
    let listing = run({
        let mut c = git(repo);
        c.args(["ls-tree", old]);
        c
    });
    let mut tree_input = String::new();
    for entry in listing.lines() {
        if entry.ends_with("\tdecisions.md") {
            tree_input.push_str(&format!("100644 blob {}\tdecisions.md\n", blob.trim()));
        } else {
            tree_input.push_str(entry);
            tree_input.push('\n');
        }
    }
    let tree = run_stdin(
        {
            let mut c = git(repo);
            c.args(["mktree"]);
            c
        },
        tree_input.as_bytes(),
    );
    let commit = run({
        let mut c = git(repo);
        c.args([
            "commit-tree",
            tree.trim(),
            "-p",
            old,
            "-m",
            "Append to decisions.md",
        ]);
        c
    });
    run({
        let mut c = git(repo);
        c.args(["update-ref", "refs/heads/squad-state", commit.trim(), old]);
        c
    });
}

mod append {
    use super::*;

    #[divan::bench(sample_count = 30, sample_size = 5)]
    fn ours_orphan_store(b: divan::Bencher<'_, '_>) {
        let (_dir, _repo, store) = fixture();
        b.bench_local(|| store.append("decisions.md", LINE).unwrap());
    }

    #[divan::bench(sample_count = 30, sample_size = 5)]
    fn baseline_git_cli_plumbing(b: divan::Bencher<'_, '_>) {
        let (_dir, repo, _store) = fixture();
        b.bench_local(|| cli_append(&repo, LINE));
    }
}

mod read {
    use super::*;

    #[divan::bench(sample_count = 50, sample_size = 10)]
    fn ours_orphan_store(b: divan::Bencher<'_, '_>) {
        let (_dir, _repo, store) = fixture();
        b.bench_local(|| store.read("research/3/123.md").unwrap().unwrap());
    }

    #[divan::bench(sample_count = 50, sample_size = 10)]
    fn baseline_git_cat_file(b: divan::Bencher<'_, '_>) {
        let (_dir, repo, _store) = fixture();
        b.bench_local(|| {
            run({
                let mut c = git(&repo);
                c.args([
                    "cat-file",
                    "blob",
                    "refs/heads/squad-state:research/3/123.md",
                ]);
                c
            })
        });
    }
}

#[divan::bench(sample_count = 30, sample_size = 5)]
fn worktree_append(b: divan::Bencher<'_, '_>) {
    let dir = tempfile::tempdir().unwrap();
    let store = WorktreeStateStore::new(dir.path().join(".squad"));
    store.write("decisions.md", &LINE.repeat(280)).unwrap();
    b.bench_local(|| store.append("decisions.md", LINE).unwrap());
}
