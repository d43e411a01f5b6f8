//! Runnable examples of the squad crates; see the `examples` in this package.
//!
//! - `quickstart`: one squad round across every crate (`cargo run -p squad-examples --example
//!   quickstart`, needs the `git` CLI);
//! - `notes_alone`, `memory_alone`, `notify_in_memory`, `routing_replay`: one crate each, as a
//!   tool that depends on that crate alone would use it.
//!
//! `cargo test -p squad-examples` runs the per-crate examples (`tests/examples.rs`).
