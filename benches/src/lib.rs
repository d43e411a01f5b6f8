//! Benchmarks of the squad crates; run them with `cargo bench -p squad-bench`.
//!
//! Each bench file measures our code and its baseline in the same run, so that the ratio can be
//! reported.
