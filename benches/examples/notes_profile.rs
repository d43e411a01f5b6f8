//! A profiling driver for full notes reads (not a benchmark): phase timings on the cached
//! fixture of the notes bench (run `cargo bench -p squad-bench --bench notes` once to build it).
//! It prints the medians of the tree walk (`list`), the walk plus every blob (`read_all`), the
//! typed parse of those blobs on one thread, and all of it (`read_all_parsed`). Set
//! `ONLY=list|raw|parse|parsed` to run one of them alone, for `perf record` or callgrind (e.g.
//! `--toggle-collect='*parse_note*'` with `ONLY=parse`); pin it to one core with `taskset -c 0`
//! to see the single-thread cost.
//!
//! ```text
//! cargo build --profile bench -p squad-bench --example notes_profile
//! target/release/examples/notes_profile 100000 15
//! ```
#![expect(clippy::unwrap_used, reason = "a profiling driver")]
#![expect(clippy::print_stdout, reason = "it reports its timing on stdout")]

use std::time::{Duration, Instant};

use squad_notes::{GixNotes, NotesBackend, NotesRef};

/// The notes bench's allocator (see there why).
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().map_or(100_000, |a| a.parse().unwrap());
    let rounds: usize = args.next().map_or(15, |a| a.parse().unwrap());
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../target/squad-bench-fixtures")
        .join(format!("notes-{n}"));
    let backend = GixNotes::open(&dir).unwrap();
    let agent = squad_model::AgentName::new("data").unwrap();
    let tip = backend.tip(&NotesRef::squad(&agent)).unwrap().unwrap();
    // One phase alone, for `perf record` or callgrind.
    if let Ok(only) = std::env::var("ONLY") {
        let raw = backend.read_all(&tip).unwrap();
        for _ in 0..rounds {
            match only.as_str() {
                "list" => drop(backend.list(&tip).unwrap()),
                "raw" => drop(backend.read_all(&tip).unwrap()),
                "parse" => drop(
                    raw.iter()
                        .map(|(_, b)| squad_notes::format::parse_note(b))
                        .collect::<Vec<_>>(),
                ),
                "parsed" => drop(backend.read_all_parsed(&tip).unwrap()),
                other => panic!("ONLY is one of list, raw, parse, parsed; not {other}"),
            }
        }
        return;
    }
    let mut times: [Vec<Duration>; 4] = Default::default();
    for _ in 0..rounds {
        let t = Instant::now();
        let listed = backend.list(&tip).unwrap();
        times[0].push(t.elapsed());
        let t = Instant::now();
        let raw = backend.read_all(&tip).unwrap();
        times[1].push(t.elapsed());
        let t = Instant::now();
        let parsed: Vec<_> = raw
            .iter()
            .map(|(_, b)| squad_notes::format::parse_note(b))
            .collect();
        times[2].push(t.elapsed());
        let t = Instant::now();
        let all = backend.read_all_parsed(&tip).unwrap();
        times[3].push(t.elapsed());
        assert_eq!(listed.len(), all.len());
        assert_eq!(parsed.len(), all.len());
        // Freed outside the timed sections, as in the bench.
        drop((raw, parsed, all));
    }
    let names = [
        "walk (list)",
        "walk + blobs (read_all)",
        "parse alone, one thread",
        "read_all_parsed",
    ];
    for (name, t) in names.iter().zip(times) {
        println!("{name:<26} {:?}", median(t));
    }
}
