//! Integration tests of `squad-routing`.
#![expect(
    clippy::unwrap_used,
    reason = "a test panics on failure; that is the point"
)]

mod world;

mod assign;
mod autopilot;
mod briefing;
mod child_done;
mod comments;
mod conformance;
mod equivalence;
mod fuzz;
mod hosts;
mod invoke;
mod postgres;
mod props;
mod replay;
mod simulate;
mod squads;

/// Public types can cross threads (hosts run the engine on worker threads).
#[test]
fn public_types_are_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<squad_routing::Engine>();
    check::<squad_routing::InMemoryDirectory>();
    check::<squad_routing::Decisions>();
    check::<squad_routing::Event>();
    check::<squad_routing::Replay>();
    check::<squad_routing::Error>();
    check::<squad_routing::SimpleDirectory>();
    // A database connection moves between threads but is not shared.
    fn send<T: Send>() {}
    send::<squad_routing::SqliteDirectory>();
    send::<squad_routing::PostgresDirectory>();
    send::<squad_routing::Replay<squad_routing::SqliteDirectory>>();
}
