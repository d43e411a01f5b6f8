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
//!
//! With a second argument, it compares `simulate` with a plain replay of the same whole trace
//! (entities loaded, then every event), each inside its own function, so that callgrind counts
//! what simulating adds per event (`run_plain` against `run_sim`; `barrier` simulates the
//! default policy and a leader barrier, whose counterfactual run translates the trace's ids):
//!
//! ```text
//! valgrind --tool=callgrind --toggle-collect='*run_plain*' target/release/examples/routing_profile 1000 plain
//! valgrind --tool=callgrind --toggle-collect='*run_sim*' target/release/examples/routing_profile 1000 sim
//! valgrind --tool=callgrind --toggle-collect='*run_sim*' target/release/examples/routing_profile 1000 barrier
//! ```
#![expect(clippy::unwrap_used, reason = "a profiling driver")]
#![expect(clippy::print_stdout, reason = "it reports its timing on stdout")]

use squad_model::Timestamp;
use squad_routing::generate::{GenConfig, generate};
use squad_routing::simulate::{NamedPolicy, SimOptions, Trace, simulate};
use squad_routing::{Decisions, Engine, Event, InMemoryDirectory, RoutingPolicy, apply_drain};

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

#[inline(never)]
fn run_plain(g: &squad_routing::generate::Generated) -> usize {
    let mut dir = g.directory();
    replay_chunk(&Engine::default(), &mut dir, &g.events);
    dir.counts().2
}

#[inline(never)]
fn run_sim(trace: &Trace, policies: &[NamedPolicy]) -> u64 {
    let r = simulate(trace, policies, &SimOptions::default()).unwrap();
    r.policies.iter().map(|p| p.metrics.wakes).sum()
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
    if let Some(mode) = std::env::args().nth(2) {
        let trace = Trace::from_generated(&g);
        let t = std::time::Instant::now();
        let n = match mode.as_str() {
            "plain" => run_plain(&g) as u64,
            "sim" => run_sim(
                &trace,
                &[NamedPolicy::new("default", RoutingPolicy::default())],
            ),
            _ => run_sim(
                &trace,
                &[
                    NamedPolicy::new("default", RoutingPolicy::default()),
                    NamedPolicy::new(
                        "barrier",
                        RoutingPolicy {
                            leader_barrier_seconds: 60,
                            ..RoutingPolicy::default()
                        },
                    ),
                ],
            ),
        };
        println!(
            "{mode}: {} events in {:.3} s ({n})",
            CHUNK * 2,
            t.elapsed().as_secs_f64()
        );
        return;
    }
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
