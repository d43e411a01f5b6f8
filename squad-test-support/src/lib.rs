//! Test fixtures shared by the tests of several squad crates (never published).
//!
//! - [`github`]: a GitHub REST emulator on wiremock (127.0.0.1), used by squad-notify's tests of
//!   its GitHub layer and by the `squad` CLI's tests of `squad approval` on a GitHub issue.
//!
//! A fixture that only one crate's tests use stays in that crate's `tests/`; it moves here once a
//! second crate needs it, instead of being pulled in with `#[path]` across crates.
#![expect(
    clippy::unwrap_used,
    reason = "test support: a broken fixture or an unexpected request fails the test"
)]

pub mod github;
