//! Integration tests of squad-notify: one binary for the crate.
#![allow(
    clippy::unwrap_used,
    reason = "tests unwrap: a failure is a test failure"
)]

mod github;
