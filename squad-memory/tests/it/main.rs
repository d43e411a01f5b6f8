//! Integration tests of `squad-memory`.
#![expect(
    clippy::unwrap_used,
    reason = "a test panics on failure; that is the point"
)]

mod conformance;
mod fixture;
mod fs_boundary;
mod fuzz;
mod golden;
mod import;
mod index;
mod lock;
mod logs;
mod names;
mod ops;
mod realistic;
mod render;
mod scribe;
mod shapes;

use squad_model::{AgentName, Timestamp};

pub(crate) fn agent(s: &str) -> AgentName {
    s.parse().unwrap()
}

pub(crate) fn at(s: &str) -> Timestamp {
    s.parse().unwrap()
}
