//! `squad notes list` and `notes show` at 100k and 1M notes against the git CLI, as processes:
//! wall time and peak memory (max RSS, and the peaks of anonymous and file-backed resident
//! memory) of every process of each side.
//!
//! Run it with the release binary built first (`SQUAD_BIN` names another one):
//!
//! ```text
//! cargo build --release -p squad-cli
//! cargo bench -p squad-bench --bench notes_scale                          # 100k
//! SQUAD_BENCH_MILLION=1 cargo bench -p squad-bench --bench notes_scale    # 100k, then 1M
//! ```
//!
//! `SQUAD_BENCH_SAMPLES` overrides the number of samples (default 11 at 100k, 3 at 1M). The
//! bench looks for the binary and keeps its fixtures under this workspace's `target/`: with
//! `CARGO_TARGET_DIR` elsewhere, set `SQUAD_BIN` to the binary built there.
//!
//! Fixtures: a linear history of N commits on `main` and one note per commit in
//! `refs/notes/squad/data` (one compact JSON entry of about 230 bytes each, as in the `notes`
//! bench), written in one notes commit by `git fast-import` (fanout 2/2/36) fed as it is
//! generated, then `git repack -adq` into one pack. They are cached under
//! `target/squad-bench-fixtures/notes-scale-N/`; the 1M fixture takes one to two minutes to
//! build and about 300 MB of disk, so it is built only with `SQUAD_BENCH_MILLION=1`.
//!
//! Each sample runs both sides once, in alternating order (ours first in even samples), each
//! process under GNU `/usr/bin/time -f %M` for its max RSS, while a thread polls
//! `/proc/<pid>/status` of every process every 2 ms for the peaks of `RssAnon` (heap and
//! stacks) and `RssFile` (resident pages of mapped files: the binary, the pack and its index;
//! the two peaks need not be at the same moment, and a process shorter than the poll, as
//! `show`, may show little or nothing); the wall time is measured here, from
//! the first spawn to the last exit, with every output read through a pipe and counted (the notes
//! ours lists, the note blobs git prints). The only assertion is that both sides printed the
//! same number of notes.
//! - `list --json`: `squad --json notes list --agent data` vs the pipeline that reads every
//!   note, `git notes --ref=squad/data list | cut -d' ' -f1 | git cat-file --batch` (ours reads
//!   every note too, to count its entries, and types every annotated object). For the pipeline,
//!   RSS is given for its largest process and as the sum of its three.
//! - `list`: `squad notes list --agent data` vs `git notes --ref=squad/data list` (both print one
//!   line per note; git does not read the notes, ours does).
//! - `show`: `squad notes show --agent data <commit>` vs `git notes --ref=squad/data show
//!   <commit>`, for the middle commit of the history.
//!
//! Measured 2026-12-06 on a 2-core machine, after `list --json` types its objects inside the
//! read (`GixNotes::stream_windows_typed`: the objects located by merging each pack index with
//! the walk's sorted objects, typed from their entry headers with the same packs; before, each
//! batch opened and scanned the packs again), medians; ratio = ours / git; git's pipeline as
//! its largest process / all three; RSS in MiB. Four more 100k runs of `list --json` in the
//! same hour gave 0.19x, 0.20x, 0.20x (148.2 to 168.9 ms vs 773.0 to 829.1 ms, load average
//! about 1.6) and, on a busier machine, 0.22x and 0.22x (213.6 / 952.6 and 221.3 / 991.3 ms).
//! Before this change: 0.22x to 0.28x, max RSS 93 to 96 MiB (1.45x to 1.49x).
//!
//! | 100k, 11 samples | time | max RSS | peak RssAnon | peak RssFile |
//! |---|---|---|---|---|
//! | `list --json` ours | 170.7 ms | 75 | 45 | 43 |
//! | git pipeline | 834.3 ms (0.20x) | 64 / 101 | 43 / 56 | 22 / 45 |
//! | `list` ours | 147.6 ms | 69 | 39 | 30 |
//! | `git notes list` | 150.4 ms (0.98x) | 35 | 13 | 22 |
//! | `show` ours / git | 6.8 / 4.6 ms | 17 / 5 | 5 / - | 10 / 4 |
//!
//! | 1M, 3 samples | time | max RSS | peak RssAnon | peak RssFile |
//! |---|---|---|---|---|
//! | `list --json` ours | 8.46 s | 323 | 30 | 296 |
//! | git pipeline | 29.42 s (0.29x) | 282 / 558 | 133 / 260 | 149 / 298 |
//! | `list` ours | 8.19 s | 189 | 30 | 164 |
//! | `git notes list` | 1.42 s (5.75x) | 275 | 127 | 149 |
//! | `show` ours / git | 9.1 / 6.9 ms | 25 / 6 | 5 / - | 16 / 1 |
//!
//! The run before (with the strict entry scanner, `squad-notes/src/scan.rs`, and the typing
//! after the read), at 1M: `list --json` 14.39 s vs 35.70 s (0.40x), max RSS 307 vs 282 MiB,
//! peak RssAnon 37 MiB.
//!
//! The 100k ratio of `list --json` moves with the load: when the sweep described below came in,
//! seven runs of the 100k part, alternating that binary and the one before it, gave 0.32, 0.25 (184 vs 733 ms),
//! 0.27 and 0.30x for this one, 0.27, 0.33 and 0.26x for the one before; in direct runs,
//! interleaved, the two take the same time (0.24 vs 0.26 s, median of seven). Fixture build at 1M: 71 s,
//! 294 MB on disk.
//!
//! Where the memory is. The heap (`RssAnon`) is bounded: 30 MiB at 1M, 45 at 100k (before the
//! windows: 158 MiB at 1M in one run, 58 at 100k). A namespace of at most one window (about 130k
//! notes) is read from a plan of its delta trees, as before; a larger one in windows of about
//! 65k notes that sweep the pack in pack order with one delta chain per thread, where a
//! window's plan held the bases of its notes, most of the pack at 1M (the notes pack's blobs
//! are linear delta chains of 51). A heap profile (heaptrack, under glibc's allocator) peaks
//! at 29 MB at 100k and 31 MB at 1M in windows of 128k; the rest is what mimalloc keeps of
//! what was freed (version 2, which purges after 10 ms: version 3, after a second, made the
//! 1M windows of 128k peak at 82 MiB). The time at 1M is the price: each window decodes the
//! chain prefixes its notes need again (16 windows, about 70% of the pack each): 13.7 s vs
//! 10.9 s for the binary before, in direct runs one after the other. The file-backed part grows with the pack and is not
//! bounded: every window touches most of the 241 MB pack (and `--json` the commits, to type
//! them) and looks its notes up in the 58 MB index, and the pages stay resident as long as
//! gix's read-only mapping of the whole file lives (git maps whole packs too: its `cat-file`
//! holds 148 MiB of them). Dropping them would take `madvise(MADV_DONTNEED)` on gix's map,
//! which gix keeps private, and unsafe code (forbidden here), or reopening the packs during a
//! sweep; the heap was the part that grew.
#![expect(clippy::unwrap_used, reason = "a broken fixture should stop the bench")]
#![expect(clippy::print_stdout, reason = "a bench prints its figures")]

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use squad_bench::{FixtureRepo, decision_entry, git_with_home, run, squad_bin};

const FIXTURE_VERSION: &str = "v1";

fn main() {
    // `cargo bench` passes `--bench`; this harness takes no arguments of its own.
    let Some(squad) = squad_bin() else {
        println!("notes_scale: no release squad binary; run `cargo build --release -p squad-cli`");
        return;
    };
    let million = std::env::var_os("SQUAD_BENCH_MILLION").is_some_and(|v| v == "1");
    let samples = |default: usize| {
        std::env::var("SQUAD_BENCH_SAMPLES")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(default)
    };
    let mut sizes = vec![(100_000, samples(11))];
    if million {
        sizes.push((1_000_000, samples(3)));
    }
    for (n, samples) in sizes {
        let started = Instant::now();
        let repo = FixtureRepo::cached(&format!("notes-scale-{n}"), FIXTURE_VERSION, |d, h| {
            build(d, h, n);
        });
        println!(
            "notes_scale {n} notes ({} samples; fixture ready in {:.1?})",
            samples,
            started.elapsed()
        );
        let middle = repo.run(&["rev-parse", &format!("main~{}", n / 2)]);
        let middle = middle.trim();
        let bench = Bench {
            repo: &repo,
            squad: &squad,
        };
        bench.compare(
            "list --json",
            samples,
            n,
            &|| {
                bench.ours(
                    &["--json", "notes", "list", "--agent", "data"],
                    Count::JsonNotes,
                )
            },
            &|| bench.git_reading_pipeline(),
        );
        bench.compare(
            "list",
            samples,
            n,
            &|| bench.ours(&["notes", "list", "--agent", "data"], Count::Lines),
            &|| bench.git(&["notes", "--ref=squad/data", "list"], Count::Lines),
        );
        bench.compare(
            "show",
            samples.max(10),
            1,
            &|| bench.ours(&["notes", "show", "--agent", "data", middle], Count::One),
            &|| bench.git(&["notes", "--ref=squad/data", "show", middle], Count::One),
        );
    }
}

/// One run of one side: its wall time, the max RSS of each of its processes (KiB), the peaks
/// of their anonymous and file-backed resident memory (KiB, polled), and the number of notes it
/// printed.
struct Sample {
    wall: Duration,
    rss_kib: Vec<u64>,
    peaks: Vec<Peaks>,
    notes: usize,
}

/// The largest `RssAnon` and `RssFile` (KiB) seen in `/proc/<pid>/status` of one process: its
/// heap (and stacks), and the pages of mapped files (the binary, the pack and its index) it had
/// resident. Polled every [`POLL`], so a process shorter than that may show none.
#[derive(Clone, Copy, Default)]
struct Peaks {
    anon: u64,
    file: u64,
}

/// How often [`Poller`] reads the processes' status.
const POLL: Duration = Duration::from_millis(2);

/// Polls the processes that some `/usr/bin/time` wrappers run (their children, found through
/// `/proc/<pid>/task/<pid>/children`) until stopped, keeping each one's [`Peaks`].
struct Poller {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<Vec<Peaks>>,
}

impl Poller {
    fn start(wrappers: Vec<u32>) -> Self {
        use std::sync::atomic::Ordering;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stopped = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut peaks = vec![Peaks::default(); wrappers.len()];
            while !stopped.load(Ordering::Relaxed) {
                for (w, peak) in wrappers.iter().zip(&mut peaks) {
                    let children = format!("/proc/{w}/task/{w}/children");
                    let Ok(children) = std::fs::read_to_string(children) else {
                        continue;
                    };
                    for child in children.split_whitespace() {
                        let Ok(status) = std::fs::read_to_string(format!("/proc/{child}/status"))
                        else {
                            continue;
                        };
                        for line in status.lines() {
                            let kib = |rest: &str| {
                                rest.trim()
                                    .trim_end_matches("kB")
                                    .trim()
                                    .parse()
                                    .unwrap_or(0)
                            };
                            if let Some(rest) = line.strip_prefix("RssAnon:") {
                                peak.anon = peak.anon.max(kib(rest));
                            } else if let Some(rest) = line.strip_prefix("RssFile:") {
                                peak.file = peak.file.max(kib(rest));
                            }
                        }
                    }
                }
                std::thread::sleep(POLL);
            }
            peaks
        });
        Self { stop, thread }
    }

    fn finish(self) -> Vec<Peaks> {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.thread.join().unwrap()
    }
}

/// How to count the notes of an output.
#[derive(Clone, Copy)]
enum Count {
    /// `notes list --json`: one `"commit"` key per note.
    JsonNotes,
    /// One line per note.
    Lines,
    /// Any non-empty output is one note.
    One,
    /// `cat-file --batch`: one `<oid> blob <size>` header per note, then its content.
    Batch,
}

struct Bench<'a> {
    repo: &'a FixtureRepo,
    squad: &'a Path,
}

impl Bench<'_> {
    /// `program args` in the fixture under `/usr/bin/time`, which writes the max RSS to `rss`.
    fn timed(&self, rss: &Path, program: &Path, args: &[&str]) -> Command {
        // The environment of the git baselines (no user configuration, the C locale), for
        // every process of both sides, each run by `time`.
        let base = git_with_home(&self.repo.dir, &self.repo.home);
        let mut t = Command::new("/usr/bin/time");
        t.args(["-f", "%M", "-o"]).arg(rss).arg(program).args(args);
        t.current_dir(&self.repo.dir);
        for (k, v) in base.get_envs() {
            match v {
                Some(v) => t.env(k, v),
                None => t.env_remove(k),
            };
        }
        t
    }

    fn rss_file(&self, i: usize) -> PathBuf {
        std::env::temp_dir().join(format!("squad-notes-scale-{}-{i}", std::process::id()))
    }

    fn ours(&self, args: &[&str], count: Count) -> Sample {
        let rss = self.rss_file(0);
        let mut c = self.timed(&rss, self.squad, args);
        self.single(&mut c, &rss, count)
    }

    fn git(&self, args: &[&str], count: Count) -> Sample {
        let rss = self.rss_file(0);
        let mut c = self.timed(&rss, Path::new("git"), args);
        self.single(&mut c, &rss, count)
    }

    fn single(&self, c: &mut Command, rss: &Path, count: Count) -> Sample {
        let start = Instant::now();
        let mut child = c.stdout(Stdio::piped()).spawn().unwrap();
        let poller = Poller::start(vec![child.id()]);
        let notes = counted(&mut child, count);
        let peaks = poller.finish();
        assert!(child.wait().unwrap().success(), "{c:?}");
        let wall = start.elapsed();
        Sample {
            wall,
            rss_kib: vec![read_rss(rss)],
            peaks,
            notes,
        }
    }

    /// `git notes list | cut -d' ' -f1 | git cat-file --batch`.
    fn git_reading_pipeline(&self) -> Sample {
        let files = [self.rss_file(1), self.rss_file(2), self.rss_file(3)];
        let start = Instant::now();
        let mut list = self
            .timed(
                &files[0],
                Path::new("git"),
                &["notes", "--ref=squad/data", "list"],
            )
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut cut = self
            .timed(&files[1], Path::new("cut"), &["-d", " ", "-f1"])
            .stdin(list.stdout.take().unwrap())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut batch = self
            .timed(&files[2], Path::new("git"), &["cat-file", "--batch"])
            .stdin(cut.stdout.take().unwrap())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let poller = Poller::start(vec![list.id(), cut.id(), batch.id()]);
        let notes = counted(&mut batch, Count::Batch);
        let peaks = poller.finish();
        for child in [&mut list, &mut cut, &mut batch] {
            assert!(child.wait().unwrap().success());
        }
        let wall = start.elapsed();
        Sample {
            wall,
            rss_kib: files.iter().map(|f| read_rss(f)).collect(),
            peaks,
            notes,
        }
    }

    /// Runs `ours` and `git` alternately, `samples` times each after one warm-up run each, and
    /// prints their medians.
    fn compare(
        &self,
        what: &str,
        samples: usize,
        expected: usize,
        ours: &dyn Fn() -> Sample,
        git: &dyn Fn() -> Sample,
    ) {
        ours();
        git();
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for i in 0..samples {
            if i % 2 == 0 {
                a.push(ours());
                b.push(git());
            } else {
                b.push(git());
                a.push(ours());
            }
        }
        for s in a.iter().chain(&b) {
            assert_eq!(s.notes, expected, "{what}: notes printed");
        }
        let wall = |v: &[Sample]| median(v.iter().map(|s| s.wall.as_secs_f64() * 1e3).collect());
        let max = |v: &[Sample]| {
            median(
                v.iter()
                    .map(|s| s.rss_kib.iter().copied().max().unwrap_or(0) as f64 / 1024.0)
                    .collect(),
            )
        };
        let sum = |v: &[Sample]| {
            median(
                v.iter()
                    .map(|s| s.rss_kib.iter().sum::<u64>() as f64 / 1024.0)
                    .collect(),
            )
        };
        let fastest = |v: &[Sample]| {
            v.iter()
                .map(|s| s.wall.as_secs_f64() * 1e3)
                .fold(f64::MAX, f64::min)
        };
        // Median over samples of the largest (or the sum) over a sample's processes of a peak.
        let peak = |v: &[Sample], of: fn(&Peaks) -> u64, all: bool| {
            median(
                v.iter()
                    .map(|s| {
                        let each = s.peaks.iter().map(of);
                        let kib = if all {
                            each.sum()
                        } else {
                            each.max().unwrap_or(0)
                        };
                        kib as f64 / 1024.0
                    })
                    .collect(),
            )
        };
        let (wa, wb) = (wall(&a), wall(&b));
        println!(
            "  {what:<12} ours {wa:9.1} ms (fastest {:.1}), git {wb:9.1} ms (fastest {:.1}): {:.2}x; \
             max RSS ours {:.1} MiB, git {:.1} MiB largest process / {:.1} MiB all: {:.2}x",
            fastest(&a),
            fastest(&b),
            wa / wb,
            max(&a),
            max(&b),
            sum(&b),
            max(&a) / max(&b),
        );
        println!(
            "  {:<12} peak RssAnon ours {:.1} MiB, git {:.1} / {:.1} MiB; \
             peak RssFile ours {:.1} MiB, git {:.1} / {:.1} MiB (largest process / all)",
            "",
            peak(&a, |p| p.anon, false),
            peak(&b, |p| p.anon, false),
            peak(&b, |p| p.anon, true),
            peak(&a, |p| p.file, false),
            peak(&b, |p| p.file, false),
            peak(&b, |p| p.file, true),
        );
        std::io::stdout().flush().unwrap();
    }
}

/// Reads `child`'s whole output and counts the notes in it as `count` says.
fn counted(child: &mut Child, count: Count) -> usize {
    let mut out = BufReader::with_capacity(1 << 16, child.stdout.take().unwrap());
    let mut line = Vec::new();
    let mut notes = 0;
    match count {
        Count::JsonNotes | Count::Lines => loop {
            line.clear();
            if out.read_until(b'\n', &mut line).unwrap() == 0 {
                break notes;
            }
            if matches!(count, Count::Lines) || line.starts_with(b"    \"commit\": ") {
                notes += 1;
            }
        },
        Count::One => {
            let mut all = Vec::new();
            out.read_to_end(&mut all).unwrap();
            usize::from(!all.is_empty())
        }
        Count::Batch => loop {
            line.clear();
            if out.read_until(b'\n', &mut line).unwrap() == 0 {
                break notes;
            }
            let header = String::from_utf8_lossy(&line);
            let mut fields = header.split_whitespace();
            let (Some(_), Some("blob"), Some(size)) = (fields.next(), fields.next(), fields.next())
            else {
                panic!("unexpected cat-file line {header:?}");
            };
            let size: u64 = size.parse().unwrap();
            // The content and its newline.
            let skipped = std::io::copy(&mut (&mut out).take(size + 1), &mut std::io::sink());
            assert_eq!(skipped.unwrap(), size + 1);
            notes += 1;
        },
    }
}

fn read_rss(file: &Path) -> u64 {
    let text = std::fs::read_to_string(file).unwrap();
    // GNU time writes "Command exited with non-zero status" first when it did; the RSS is last.
    text.lines().last().unwrap().trim().parse().unwrap()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// `git init`, then `n` commits and one note per commit through `git fast-import` (its input
/// generated as it is written, about 500 MB at 1M), then one pack.
fn build(dir: &Path, home: &Path, n: usize) {
    let git = |args: &[&str]| {
        let mut c = git_with_home(dir, home);
        c.args(args);
        run(c)
    };
    git(&["init", "-q", "-b", "main"]);
    for (k, v) in [
        ("user.name", "Bench"),
        ("user.email", "bench@test.invalid"),
        ("gc.auto", "0"),
        ("maintenance.auto", "false"),
        ("core.hooksPath", "/dev/null"),
    ] {
        git(&["config", k, v]);
    }
    let mut c = git_with_home(dir, home);
    c.args(["fast-import", "--quiet"]).stdin(Stdio::piped());
    let mut child = c.spawn().unwrap();
    {
        let mut w = std::io::BufWriter::with_capacity(1 << 20, child.stdin.take().unwrap());
        for i in 1..=n {
            write!(
                w,
                "commit refs/heads/main\nmark :{i}\ncommitter Bench <bench@test.invalid> {} +0000\ndata 0\n\n",
                1_700_000_000 + i
            )
            .unwrap();
        }
        let data = squad_model::AgentName::new("data").unwrap();
        for i in 1..=n {
            let line = decision_entry(&data, i).to_line();
            write!(w, "blob\nmark :{}\ndata {}\n{line}\n", n + i, line.len()).unwrap();
        }
        write!(
            w,
            "commit refs/notes/squad/data\ncommitter Bench <bench@test.invalid> 1700000000 +0000\ndata 8\nfixture\n"
        )
        .unwrap();
        for i in 1..=n {
            writeln!(w, "N :{} :{i}", n + i).unwrap();
        }
        writeln!(w).unwrap();
        w.flush().unwrap();
    }
    assert!(child.wait().unwrap().success(), "git fast-import");
    git(&["repack", "-adq"]);
}
