//! Runnable examples of the squad crates; see the `examples` in this package.
//!
//! Run the quickstart with `cargo run -p squad-examples --example quickstart`.
