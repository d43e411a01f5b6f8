//! squad-notes against the git CLI, on packed repositories with 10k and 100k notes.
//!
//! Fixtures: a linear history of N commits and one note per commit in `refs/notes/squad/data`
//! (one compact JSON entry of about 230 bytes each), written by `git fast-import` (so 2/38 at
//! 10k and 2/2/36 at 100k), plus `refs/notes/squad/native` with one note for the `copy --stdin`
//! baseline. They are built once and cached under `target/squad-bench-fixtures/`; the batch
//! import runs on its own copy, so the read benches always see one clean pack.
//!
//! Each group measures ours and the git CLI baseline in the same run:
//! - `show_one`: one commit's entries (`Notes::show`) vs `git notes show` (one process each).
//! - `list_all`: every noted commit (`Notes::list`, the tree walk alone) vs `git notes list`.
//! - `read_all`: every entry, parsed (`Notes::read_all`) vs `git notes list | git cat-file --batch`
//!   (see below: that pipeline reads no note) and the pipeline that reads every note.
//! - `read_all_history`: the same on notes written over time: 100 per notes commit, then a full
//!   repack, so that trees and blobs are deltas of their older versions (git's usual layout).
//! - `write_one`: one appended entry (`Notes::write`) vs `git notes append`.
//! - `batch_import`: 100k entries in one notes commit (`Notes::write_batch`) vs
//!   `git notes copy --stdin` creating 100k notes.
//! - `parse_one`: one note blob parsed (ours, typed and checked) vs an untyped `serde_json::Value`.
//! - `list_json_cli`: the command users run, `squad --json notes list --agent data` (the release
//!   binary), vs `git notes list | git cat-file --batch`, both as processes.
//!
//! Measured 2026-11-30 (session 3) on a 2-core machine, medians (100k notes; 10k in brackets):
//! `show_one` 42 µs vs 2.8 ms; `write_one` 0.87 ms vs 3.0 ms; `batch_import` 1.19 s vs 2.39 s;
//! `list_all` 33 ms vs 130 ms (1.6 ms vs 10.0 ms); `read_all` 106 ms vs 219 ms, 0.48x (9.6 ms
//! vs 25.1 ms, 0.38x) over 30 samples, 0.42x to 0.48x over four such runs; `read_all_history`
//! 94 ms vs 194 ms, 0.49x (7.8 ms vs 24.2 ms, 0.32x), 0.46x to 0.49x over four runs;
//! `ours_blobs_only` (the same read without the typed parse) 69 ms, 0.31x; `parse_one` 0.42 µs
//! vs 1.04 µs (fastest). With the system allocator instead of mimalloc (see `ALLOC`):
//! `read_all` 119 ms vs 204 ms, 0.58x, and `read_all_history` 114 ms vs 204 ms, 0.56x. At 100k
//! about half of `read_all` is the typed parse of 100k entries and a third the walk of the
//! 51,672 trees of the 2/2/36 fanout (a pack lookup and an inflate each). Full walks read each
//! tree from the packs without an object cache, so every sample reads every tree.
//! `examples/notes_profile.rs` times the phases.
//!
//! `list_json_cli`, measured 2026-12-01 on a loaded machine (load average 5 to 6 on 2 cores,
//! other builds running; in the same run `read_all` measured 0.98x median, 0.66x fastest, against
//! 0.48x quiet): 100k 407 ms vs 494 ms median (0.82x), 248 ms vs 452 ms fastest (0.55x); 10k
//! 35 ms vs 45 ms. Instructions (callgrind, load-independent), 100k: the command 1.87 G, git's
//! pipeline 2.67 G (`notes list` 1.12 G, `cat-file --batch` 1.56 G), the library's
//! `read_all_parsed` about 2.1 G: the command counts entries without building them
//! (`format::count_entries`), so it does less than the library read that measures 0.48x quiet.
//!
//! The baseline pipeline reads no note: `git notes list` prints `<blob> <object>` and plain
//! `cat-file --batch` takes that whole line as one name, answering `missing` 100k times (found
//! 2026-12-01; every `git_cli` figure above, and the issues' own figures, measured that). The
//! groups that read every entry now also measure `git_cli_reading`, the pipeline with
//! `--batch='%(objectname) %(objecttype) %(objectsize) %(rest)'`, which prints every note.
//! Quiet 2-core machine, 2026-12-01, 100k, fastest / median: `list_json_cli` ours 138 / 145 ms,
//! `git_cli` 162 / 197 ms (0.85x / 0.74x), `git_cli_reading` 594 / 630 ms (0.23x / 0.23x);
//! `read_all` ours 111 / 139 ms, `git_cli` 169 / 197 ms (0.66x / 0.71x), `git_cli_reading`
//! 594 / 624 ms (0.19x / 0.22x). `perf` on the command: a fifth of its time is the kernel
//! zeroing fresh pages (about 90 MB of allocator arenas touched across the worker threads).
#![expect(clippy::unwrap_used, reason = "a broken fixture should stop the bench")]

use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use squad_bench::{FixtureRepo, decision_entry, run, run_stdin, squad_bin};
use squad_model::{AgentName, NoteEntry};
use squad_notes::{GixNotes, Notes, Oid};

/// mimalloc, as in the routing bench. A full read returns 100k parsed entries, about 600k small
/// allocations, which divan frees after each timed section. glibc's allocator defers part of
/// that work (it consolidates freed small chunks at the next large allocation), so the next
/// sample's read paid for the previous sample's free: medians flipped between about 105 and
/// 140 ms at 100k from run to run. mimalloc frees at once, so the samples time the read alone,
/// as this bench means to. The system allocator's figures are in the header above.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    divan::main();
}

const SIZES: [usize; 2] = [10_000, 100_000];
const FIXTURE_VERSION: &str = "v2";

struct Fixture {
    repo: FixtureRepo,
    commits: Vec<Oid>,
    data_tip: String,
    native_tip: String,
    notes: Notes<GixNotes>,
}

/// The notes history, plus one note in `refs/notes/squad/native` for the `copy --stdin`
/// baseline, repacked into one pack. With `per_commit`, the notes come in commits of that many
/// and the repack recomputes every delta, as `git gc --aggressive` would (window 10, depth 50).
fn build(dir: &Path, home: &Path, n: usize, per_commit: Option<usize>) {
    squad_bench::build_notes_history_in(dir, home, n, per_commit.unwrap_or(n), &[]);
    let data = data();
    let mut c = squad_bench::git_with_home(dir, home);
    c.args([
        "notes",
        "--ref=squad/native",
        "add",
        "-m",
        &decision_entry(&data, 0).to_line(),
        "main~0",
    ]);
    run(c);
    let mut c = squad_bench::git_with_home(dir, home);
    c.args([
        "repack",
        if per_commit.is_some() {
            "-adfq"
        } else {
            "-adq"
        },
    ]);
    run(c);
}

/// The notes written over time: `HISTORY_PER_COMMIT` notes per notes commit, then a full
/// repack (notes trees and blobs become deltas of their older versions).
fn history(n: usize) -> &'static Fixture {
    fixture_named(n, "-history")
}

/// Notes per notes commit in the [`history`] fixtures.
const HISTORY_PER_COMMIT: usize = 100;

fn fixture(n: usize) -> &'static Fixture {
    fixture_named(n, "")
}

/// A separate copy for the benches that add many objects, so that the read benches always see
/// the same single-pack repository.
fn fixture_named(n: usize, suffix: &'static str) -> &'static Fixture {
    static FIXTURES: OnceLock<Mutex<HashMap<(usize, &'static str), &'static Fixture>>> =
        OnceLock::new();
    let map = FIXTURES.get_or_init(|| Mutex::new(HashMap::new()));
    let mut map = map.lock().unwrap();
    map.entry((n, suffix)).or_insert_with(|| {
        let per_commit = (suffix == "-history").then_some(HISTORY_PER_COMMIT);
        let repo = FixtureRepo::cached(&format!("notes-{n}{suffix}"), FIXTURE_VERSION, |d, h| {
            build(d, h, n, per_commit);
        });
        let commits = repo
            .run(&["rev-list", "--reverse", "main"])
            .lines()
            .map(|l| l.parse().unwrap())
            .collect();
        let rev = |r: &str| repo.run(&["rev-parse", r]).trim().to_owned();
        let data_tip = rev("refs/notes/squad/data");
        let native_tip = rev("refs/notes/squad/native");
        let notes = Notes::new(GixNotes::open(&repo.dir).unwrap());
        Box::leak(Box::new(Fixture {
            repo,
            commits,
            data_tip,
            native_tip,
            notes,
        }))
    })
}

impl Fixture {
    fn git(&self) -> Command {
        self.repo.git()
    }

    fn next_commit(&self) -> Oid {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let i = NEXT.fetch_add(7919, Ordering::Relaxed) % self.commits.len();
        self.commits[i].clone()
    }

    fn reset(&self, r: &str, tip: &str) {
        self.repo.run(&["update-ref", r, tip]);
    }
}

fn data() -> AgentName {
    AgentName::new("data").unwrap()
}

mod show_one {
    use super::*;

    #[divan::bench(args = SIZES, sample_count = 200)]
    fn ours(b: divan::Bencher<'_, '_>, n: usize) {
        let f = fixture(n);
        let ns = data();
        b.with_inputs(|| f.next_commit()).bench_local_refs(|c| {
            let note = f.notes.show(&ns, c).unwrap();
            assert_eq!(note.entries.len(), 1);
        });
    }

    #[divan::bench(args = SIZES, sample_count = 20)]
    fn git_cli(b: divan::Bencher<'_, '_>, n: usize) {
        let f = fixture(n);
        b.with_inputs(|| f.next_commit()).bench_local_refs(|c| {
            let mut cmd = f.git();
            cmd.args(["notes", "--ref=squad/data", "show", c.as_str()]);
            run(cmd)
        });
    }
}

mod list_all {
    use super::*;

    /// Every noted commit of the namespace (`Notes::list`: the tree walk alone).
    #[divan::bench(args = SIZES, sample_count = 5, sample_size = 1)]
    fn ours(b: divan::Bencher<'_, '_>, n: usize) {
        let f = fixture(n);
        f.reset("refs/notes/squad/data", &f.data_tip);
        let ns = data();
        b.bench_local(|| {
            let all = f.notes.list(&ns).unwrap();
            assert_eq!(all.len(), n);
            all
        });
    }

    #[divan::bench(args = SIZES, sample_count = 5, sample_size = 1)]
    fn git_cli(b: divan::Bencher<'_, '_>, n: usize) {
        let f = fixture(n);
        f.reset("refs/notes/squad/data", &f.data_tip);
        b.bench_local(|| {
            let mut cmd = f.git();
            cmd.args(["-c", "core.pager=cat", "notes", "--ref=squad/data", "list"]);
            run(cmd).len()
        });
    }
}

mod read_all {
    use super::*;

    #[divan::bench(args = SIZES, sample_count = 5, sample_size = 1)]
    fn ours(b: divan::Bencher<'_, '_>, n: usize) {
        read_all_ours(b, fixture(n), n);
    }

    /// The backend's bulk read alone (tree walk and blobs, no parsing).
    #[divan::bench(args = SIZES, sample_count = 5, sample_size = 1)]
    fn ours_blobs_only(b: divan::Bencher<'_, '_>, n: usize) {
        use squad_notes::{NotesBackend, NotesRef};
        let f = fixture(n);
        f.reset("refs/notes/squad/data", &f.data_tip);
        let tip = f
            .notes
            .backend()
            .tip(&NotesRef::squad(&data()))
            .unwrap()
            .unwrap();
        b.bench_local(|| f.notes.backend().read_all(&tip).unwrap());
    }

    #[divan::bench(args = SIZES, sample_count = 5, sample_size = 1)]
    fn git_cli(b: divan::Bencher<'_, '_>, n: usize) {
        read_all_git(b, fixture(n));
    }

    #[divan::bench(args = SIZES, sample_count = 5, sample_size = 1)]
    fn git_cli_reading(b: divan::Bencher<'_, '_>, n: usize) {
        read_all_git_reading(b, fixture(n));
    }
}

/// The command users run against the same baseline: `squad --json notes list --agent data`
/// (the release binary, with its own allocator: build it first with
/// `cargo build --release -p squad-cli`, or point `SQUAD_BIN` at it) vs
/// `git notes list | git cat-file --batch`, both as processes, output read to the end.
mod list_json_cli {
    use super::*;

    #[divan::bench(args = SIZES, sample_count = 10, sample_size = 1)]
    #[expect(
        clippy::print_stderr,
        reason = "a bench that cannot run says why, on stderr, instead of failing the whole run"
    )]
    fn ours_cli(b: divan::Bencher<'_, '_>, n: usize) {
        let f = fixture(n);
        f.reset("refs/notes/squad/data", &f.data_tip);
        let Some(bin) = squad_bin() else {
            eprintln!(
                "list_json_cli skipped: build the binary first (cargo build --release -p squad-cli)"
            );
            b.bench_local(|| ());
            return;
        };
        b.bench_local(|| {
            let out = Command::new(&bin)
                .arg("-C")
                .arg(&f.repo.dir)
                .args(["--json", "notes", "list", "--agent", "data"])
                .env("HOME", &f.repo.home)
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .stderr(Stdio::inherit())
                .output()
                .unwrap();
            assert!(out.status.success());
            out.stdout.len()
        });
    }

    #[divan::bench(args = SIZES, sample_count = 10, sample_size = 1)]
    fn git_cli(b: divan::Bencher<'_, '_>, n: usize) {
        read_all_git(b, fixture(n));
    }

    #[divan::bench(args = SIZES, sample_count = 10, sample_size = 1)]
    fn git_cli_reading(b: divan::Bencher<'_, '_>, n: usize) {
        read_all_git_reading(b, fixture(n));
    }
}

/// `read_all` on notes written over time (see [`history`]): the same read and baseline.
mod read_all_history {
    use super::*;

    #[divan::bench(args = SIZES, sample_count = 5, sample_size = 1)]
    fn ours(b: divan::Bencher<'_, '_>, n: usize) {
        read_all_ours(b, history(n), n);
    }

    #[divan::bench(args = SIZES, sample_count = 5, sample_size = 1)]
    fn git_cli(b: divan::Bencher<'_, '_>, n: usize) {
        read_all_git(b, history(n));
    }
}

/// Every entry of `f`, parsed (`Notes::read_all`).
fn read_all_ours(b: divan::Bencher<'_, '_>, f: &'static Fixture, n: usize) {
    f.reset("refs/notes/squad/data", &f.data_tip);
    let ns = data();
    // The parsed notes are returned, so divan frees them after the timed section: freeing a
    // result is not part of reading it (git's baseline has no result to free either).
    b.bench_local(|| {
        let all = f.notes.read_all(&ns).unwrap();
        assert_eq!(all.len(), n);
        all
    });
}

/// The baseline: `git notes list | git cat-file --batch` on `f`.
/// `git notes list | git cat-file --batch`, the pipeline the notes issues name as the baseline.
/// `notes list` prints `<note blob> <object>` per line and `--batch` takes the whole line as
/// one object name, so it answers `missing` for every note and reads no blob: the baseline
/// measures the listing and 100k failed name lookups. Kept as named; `read_all_git_reading`
/// is the pipeline that does read every note.
fn read_all_git(b: divan::Bencher<'_, '_>, f: &'static Fixture) {
    git_pipeline(b, f, "--batch", b"missing");
}

/// `git notes list | git cat-file --batch='%(objectname) %(objecttype) %(objectsize) %(rest)'`:
/// with `%(rest)` cat-file splits the line at the first space, so it prints every note blob.
fn read_all_git_reading(b: divan::Bencher<'_, '_>, f: &'static Fixture) {
    git_pipeline(
        b,
        f,
        "--batch=%(objectname) %(objecttype) %(objectsize) %(rest)",
        b"\"promote_to_permanent\"",
    );
}

/// `git notes list | git cat-file <batch>`; checks (outside the timing, once) that the output
/// holds `expect`, so that a baseline cannot silently change what it does.
fn git_pipeline(b: divan::Bencher<'_, '_>, f: &'static Fixture, batch: &str, expect: &[u8]) {
    f.reset("refs/notes/squad/data", &f.data_tip);
    let run = || {
        let mut cmd = f.git();
        cmd.args(["-c", "core.pager=cat"])
            .arg("notes")
            .args(["--ref=squad/data", "list"]);
        let mut list = cmd.stdout(Stdio::piped()).spawn().unwrap();
        let mut cat = f.git();
        cat.args(["cat-file", batch])
            .stdin(list.stdout.take().unwrap())
            .stdout(Stdio::piped());
        let out = cat.output().unwrap();
        assert!(out.status.success() && list.wait().unwrap().success());
        out.stdout
    };
    let first = run();
    assert!(
        first.windows(expect.len()).any(|w| w == expect),
        "cat-file {batch} printed no {:?}",
        String::from_utf8_lossy(expect)
    );
    b.bench_local(|| run().len());
}

mod write_one {
    use super::*;

    #[divan::bench(args = SIZES, sample_count = 30, sample_size = 1)]
    fn ours(b: divan::Bencher<'_, '_>, n: usize) {
        let f = fixture(n);
        f.reset("refs/notes/squad/data", &f.data_tip);
        let ns = data();
        b.with_inputs(|| (f.next_commit(), decision_entry(&ns, 1)))
            .bench_local_refs(|(c, e)| f.notes.write(&ns, c, e).unwrap());
        f.reset("refs/notes/squad/data", &f.data_tip);
    }

    #[divan::bench(args = SIZES, sample_count = 30, sample_size = 1)]
    fn git_cli(b: divan::Bencher<'_, '_>, n: usize) {
        let f = fixture(n);
        f.reset("refs/notes/squad/data", &f.data_tip);
        let ns = data();
        b.with_inputs(|| (f.next_commit(), decision_entry(&ns, 1).to_line()))
            .bench_local_refs(|(c, line)| {
                let mut cmd = f.git();
                cmd.args([
                    "notes",
                    "--ref=squad/data",
                    "append",
                    "-m",
                    line,
                    c.as_str(),
                ]);
                run(cmd)
            });
        f.reset("refs/notes/squad/data", &f.data_tip);
    }
}

mod batch_import {
    use super::*;

    static RUN: AtomicUsize = AtomicUsize::new(0);

    #[divan::bench(args = [100_000], sample_count = 3, sample_size = 1)]
    fn ours(b: divan::Bencher<'_, '_>, n: usize) {
        let f = fixture_named(n, "-import");
        b.with_inputs(|| {
            let ns =
                AgentName::new(format!("import{}", RUN.fetch_add(1, Ordering::Relaxed))).unwrap();
            // A fresh namespace every time (earlier runs may have left one of this name).
            let mut del = f.git();
            del.args(["update-ref", "-d", &ns.notes_ref()]);
            run(del);
            let batch: Vec<(Oid, NoteEntry)> = f
                .commits
                .iter()
                .enumerate()
                .map(|(i, c)| (c.clone(), decision_entry(&ns, i)))
                .collect();
            (ns, batch)
        })
        .bench_local_values(|(ns, batch)| {
            f.notes.write_batch(&ns, &batch).unwrap();
            ns
        });
    }

    #[divan::bench(args = [100_000], sample_count = 1, sample_size = 1)]
    fn git_cli_copy_stdin(b: divan::Bencher<'_, '_>, n: usize) {
        let f = fixture_named(n, "-import");
        let from = f.commits[f.commits.len() - 1].clone();
        let lines: String = f.commits[..f.commits.len() - 1]
            .iter()
            .map(|c| format!("{from} {c}\n"))
            .collect();
        b.with_inputs(|| {
            let r = format!(
                "refs/notes/squad/copy{}",
                RUN.fetch_add(1, Ordering::Relaxed)
            );
            f.reset(&r, &f.native_tip);
            r
        })
        .bench_local_refs(|r| {
            let mut cmd = f.git();
            cmd.args(["notes", &format!("--ref={r}"), "copy", "--stdin"]);
            run_stdin(cmd, lines.as_bytes());
        });
    }
}

/// Parsing one note blob of one entry (the shape of the fixture's notes): ours (typed, every
/// field checked, unknown keys kept) against an untyped `serde_json::Value` parse of the same
/// bytes, the floor for any JSON reader on serde.
mod parse_one {
    use super::*;

    fn blob() -> Vec<u8> {
        decision_entry(&data(), 12_345).to_line().into_bytes()
    }

    #[divan::bench]
    fn ours(b: divan::Bencher<'_, '_>) {
        let blob = blob();
        b.bench_local(|| squad_notes::format::parse_note(divan::black_box(&blob)));
    }

    #[divan::bench]
    fn serde_json_value(b: divan::Bencher<'_, '_>) {
        let blob = blob();
        b.bench_local(|| {
            serde_json::from_slice::<serde_json::Value>(divan::black_box(&blob)).unwrap()
        });
    }
}
