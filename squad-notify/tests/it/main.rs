//! Integration tests of squad-notify.
#![allow(
    clippy::unwrap_used,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "tests panic on failure and may print diagnostics"
)]

mod attacks;
mod channels;
mod common;
mod crash;
mod fuzz;
mod github;
mod hardening;
mod log;
mod machine;
mod model;
mod parser;
mod policy;
mod store;
mod waiter;
mod webhook;
