//! Integration tests of the `squad` binary.
#![expect(
    clippy::unwrap_used,
    reason = "a test panics on failure; that is the point"
)]

mod approval;
mod approval_github;
mod approval_runs;
mod cli_contract;
mod crash_table;
mod doc_examples;
mod doctor;
mod e2e;
mod git_repo;
mod help;
mod mcp;
mod memory;
mod memory_lock;
mod notes;
mod notes_across;
mod notes_git_states;
mod notes_hardening;
mod notes_promote;
mod notes_sign;
mod notes_sync;
mod output;
mod route;
mod route_postgres;
mod route_simulate;
mod schema;
mod secrets;
