//! Integration tests of squad-notify.
#![expect(clippy::unwrap_used, reason = "tests panic on failure")]

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
