//! Promotion scans against the git CLI, on packed linear histories of 10k and 100k commits with
//! one flagged decision note per commit in `refs/notes/squad/data` (written by `git fast-import`).
//!
//! Fixtures are built once and cached under `target/squad-bench-fixtures/promote-<n>`; the
//! incremental case also keeps a `squad-state` branch there (one full promotion, made once).
//!
//! Measured in the same run:
//! - `promote_cold`: `Promoter::promote` with no watermark into a fresh in-memory state store:
//!   resolve the branch, walk every commit, list the notes tree, read and parse every note,
//!   render every decision as Markdown (all n entries are flagged, so all n are promoted).
//! - `promote_incremental_noop`: `Promoter::promote` on the orphan-branch store after a full
//!   run, with nothing new (reads the watermark, compares tips, writes nothing).
//! - `git_rev_list_count`: `git rev-list --count main` (one process).
//! - `git_notes_list`: `git notes --ref=squad/data list` (one process).
//! - `git_rev_list_and_notes_list`: both, what a shell script needs before it can even start
//!   reading the notes it would promote.
//!
//! Every iteration opens a new `Promoter` (fresh repository handles and caches); the OS page
//! cache is warm.
//!
//! Measured 2026-11-30 on a quiet 2-core machine, medians: 100k commits: `promote_cold` 699 ms,
//! `promote_incremental_noop` 0.60 ms, `git rev-list --count` 244 ms, `git notes list` 129 ms,
//! both (`rev-list` + `notes list`) 491 ms. 10k: 51 ms, 0.48 ms, 23 ms, 10.5 ms, 52 ms. The
//! cold run also reads, parses and renders all 100k notes (22.9 MB), which the git baseline
//! does not. (Before the notes were read straight from the packs and parsed where decoded:
//! 944 ms and 73 ms cold.)
#![expect(clippy::unwrap_used, reason = "a broken fixture should stop the bench")]

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Mutex, OnceLock};

use squad_bench::FixtureRepo;
use squad_notes::promote::{PromoteOptions, Promoter};
use squad_notes::state::{InMemoryStateStore, OrphanBranchStore};

fn main() {
    divan::main();
}

const SIZES: [usize; 2] = [10_000, 100_000];
const FIXTURE_VERSION: &str = "promote-v1";

/// The notes history with `squad.defaultBranch`, in one pack, after one full promotion (the
/// state the incremental case starts from).
fn build(dir: &Path, home: &Path, n: usize) {
    squad_bench::build_notes_history(dir, home, n, &[("squad.defaultBranch", "main")]);
    let mut c = squad_bench::git_with_home(dir, home);
    c.args(["repack", "-adq"]);
    squad_bench::run(c);
    let promoter = Promoter::open(dir, OrphanBranchStore::open(dir).unwrap()).unwrap();
    let report = promoter.promote(&PromoteOptions::default()).unwrap();
    assert_eq!(report.promoted.len(), n);
}

fn fixture(n: usize) -> &'static FixtureRepo {
    static FIXTURES: OnceLock<Mutex<HashMap<usize, &'static FixtureRepo>>> = OnceLock::new();
    let map = FIXTURES.get_or_init(|| Mutex::new(HashMap::new()));
    let mut map = map.lock().unwrap();
    map.entry(n).or_insert_with(|| {
        Box::leak(Box::new(FixtureRepo::cached(
            &format!("promote-{n}"),
            FIXTURE_VERSION,
            |d, h| build(d, h, n),
        )))
    })
}

#[divan::bench(args = SIZES, sample_count = 5, sample_size = 1)]
fn promote_cold(bencher: divan::Bencher<'_, '_>, n: usize) {
    let f = fixture(n);
    bencher.bench(|| {
        let p = Promoter::open(&f.dir, InMemoryStateStore::new()).unwrap();
        let report = p.promote(&PromoteOptions::default()).unwrap();
        assert_eq!(report.promoted.len(), n);
        report
    });
}

#[divan::bench(args = SIZES, sample_count = 20, sample_size = 1)]
fn promote_incremental_noop(bencher: divan::Bencher<'_, '_>, n: usize) {
    let f = fixture(n);
    bencher.bench(|| {
        let p = Promoter::open(&f.dir, OrphanBranchStore::open(&f.dir).unwrap()).unwrap();
        let report = p.promote(&PromoteOptions::default()).unwrap();
        assert!(report.promoted.is_empty() && report.incremental);
        report
    });
}

#[divan::bench(args = SIZES, sample_count = 10, sample_size = 1)]
fn git_rev_list_count(bencher: divan::Bencher<'_, '_>, n: usize) {
    let f = fixture(n);
    bencher.bench(|| {
        let out = f.run(&["rev-list", "--count", "main"]);
        assert_eq!(out.trim().parse::<usize>().unwrap(), n);
    });
}

#[divan::bench(args = SIZES, sample_count = 10, sample_size = 1)]
fn git_notes_list(bencher: divan::Bencher<'_, '_>, n: usize) {
    let f = fixture(n);
    bencher.bench(|| {
        let out = f.run(&["notes", "--ref=squad/data", "list"]);
        assert_eq!(out.lines().count(), n);
    });
}

#[divan::bench(args = SIZES, sample_count = 10, sample_size = 1)]
fn git_rev_list_and_notes_list(bencher: divan::Bencher<'_, '_>, n: usize) {
    let f = fixture(n);
    bencher.bench(|| {
        let commits = f.run(&["rev-list", "main"]);
        let notes = f.run(&["notes", "--ref=squad/data", "list"]);
        assert_eq!(commits.lines().count(), n);
        assert_eq!(notes.lines().count(), n);
    });
}
