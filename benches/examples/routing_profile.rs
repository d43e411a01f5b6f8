//! A profiling driver for the routing engine (not a benchmark): replays one chunk of a generated
//! trace after a warm-up chunk, inside `replay_chunk`. Run it under callgrind to count the
//! instructions (and allocator calls) of the replay alone, a figure that does not depend on the
//! machine's load:
//!
//! ```text
//! cargo build --profile bench -p squad-bench --example routing_profile
//! valgrind --tool=callgrind --toggle-collect='*replay_chunk*' \
//!     target/release/examples/routing_profile 1000
//! ```
#![allow(clippy::unwrap_used, reason = "a profiling driver")]
#![allow(clippy::print_stdout, reason = "it reports its timing on stdout")]

use squad_model::Timestamp;
use squad_routing::generate::{GenConfig, generate};
use squad_routing::{Decisions, Engine, Event, InMemoryDirectory, apply_drain};

#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

const CHUNK: usize = 50_000;

#[inline(never)]
fn replay_chunk(engine: &Engine, dir: &mut InMemoryDirectory, events: &[(Timestamp, Event)]) {
    let mut out = Decisions::default();
    for (at, ev) in events {
        engine.decide_into(dir, *at, ev, &mut out);
        apply_drain(dir, &mut out);
    }
}

fn main() {
    let squads: usize = std::env::args()
        .nth(1)
        .map_or(1_000, |s| s.parse().unwrap());
    let g = generate(&GenConfig {
        squads,
        issues_per_squad: 4,
        events: CHUNK * 2,
        seed: 42,
    })
    .unwrap();
    let mut dir = g.directory();
    let engine = Engine::default();
    // Warm-up chunk, then the measured one.
    replay_chunk(&engine, &mut dir, &g.events[..CHUNK]);
    let t = std::time::Instant::now();
    replay_chunk(&engine, &mut dir, &g.events[CHUNK..]);
    let secs = t.elapsed().as_secs_f64();
    println!(
        "{squads} squads: {CHUNK} events in {secs:.3} s = {:.0} events/s; counts {:?}",
        CHUNK as f64 / secs,
        dir.counts()
    );
}
