//! The versioned schema of [`PostgresDirectory`](super::PostgresDirectory): an embedded list of
//! migrations, applied in order under an advisory lock, each recorded in `squad_schema_version`.

/// The migrations, oldest first: `(version, SQL)`. A released migration is never edited; a change
/// is a new entry.
pub(super) const MIGRATIONS: &[(i32, &str)] = &[(1, V1), (2, V2)];

/// The schema version this build reads and writes.
pub(super) const CURRENT: i32 = 2;

/// The advisory lock key `migrate` holds (an arbitrary constant: "squadrt1").
pub(super) const LOCK_KEY: i64 = 0x7371_7561_6472_7431;

/// Creates the version table (idempotent).
pub(super) const VERSION_TABLE: &str = "CREATE TABLE IF NOT EXISTS squad_schema_version (\
     version integer PRIMARY KEY, \
     applied_at timestamptz NOT NULL DEFAULT now())";

/// Version 1. `record` holds the row's squad-model record as JSON; the other columns are what
/// the queries filter and order on. `seq` orders rows by creation; an upsert keeps it.
pub(super) const V1: &str = include_str!("schema_v1.sql");

/// Version 2: `squad_config_version`, one row that triggers bump whenever a configuration table
/// (workspaces, users, memberships, squads, members, agents, autopilots) changes, so that a
/// worker may keep those rows across events (idempotent, for a database at version 1).
pub(super) const V2: &str = include_str!("schema_v2.sql");
