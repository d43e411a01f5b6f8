//! Test fixtures shared by the tests of several squad crates (never published).
//!
//! - [`github`]: a GitHub REST emulator on wiremock (127.0.0.1), used by squad-notify's tests of
//!   its GitHub layer and by the `squad` CLI's tests of `squad approval` on a GitHub issue
//!   (feature `github`, on by default).
//! - [`postgres`]: a database of its own on the PostgreSQL server named by
//!   `SQUAD_TEST_POSTGRES_URL`, dropped at the end (feature `postgres`), for squad-routing's and
//!   the CLI's tests and the routing bench.
//!
//! A fixture that only one crate's tests use stays in that crate's `tests/`; it moves here once a
//! second crate needs it, instead of being pulled in with `#[path]` across crates.
#![expect(
    clippy::unwrap_used,
    reason = "test support: a broken fixture or an unexpected request fails the test"
)]

#[cfg(feature = "github")]
pub mod github;
#[cfg(feature = "postgres")]
pub mod postgres;
