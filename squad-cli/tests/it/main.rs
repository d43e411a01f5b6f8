//! Integration tests of the `squad` binary.
#![allow(
    clippy::unwrap_used,
    reason = "a test panics on failure; that is the point"
)]

mod approval;
mod memory;
mod notes;
mod notes_promote;
mod route;
mod schema;
