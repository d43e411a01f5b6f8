//! [`PostgresDirectory`]: the directory in a PostgreSQL server that many workers share (feature
//! `postgres`), and [`replay_parallel`]: a trace replayed by many workers at once.
//!
//! # Schema
//!
//! The tables mirror `SqliteDirectory`'s, with `jsonb` records, `bigserial` creation orders, and
//! three additions: a unique partial index that allows at most one pending task per (issue,
//! agent), `processed_events` (the events already handled, by position, with the decision line
//! each printed) and `squad_replays` (the traces replayed into the database). The schema is
//! versioned: [`migrate`] applies the embedded migrations (`squad_schema_version` records each)
//! under an advisory lock, idempotently; [`PostgresDirectory::connect`] refuses a database whose
//! schema is missing or older than this build's, naming `squad route migrate`.
//!
//! ```sql
#![doc = include_str!("schema_v1.sql")]
//! ```
//!
//! Version 2 adds the configuration version (see below):
//!
//! ```sql
#![doc = include_str!("schema_v2.sql")]
//! ```
//!
//! # One event, one transaction
//!
//! [`PostgresDirectory::handle_event`] runs an event in one transaction (`SERIALIZABLE` unless
//! [`set_isolation`](PostgresDirectory::set_isolation) says otherwise): it checks
//! `processed_events`, decides, applies, records the event as processed, and commits. A
//! serialization failure or a deadlock (SQLSTATE `40001`, `40P01`), or under `REPEATABLE READ` a
//! unique violation of `tasks_one_pending`, rolls back and runs the event again on the new state;
//! the caller never sees it. An event handled twice (a worker killed after its commit, then the
//! replay run again) prints its stored line and changes nothing.
//!
//! An event usually costs two round trips ([`round_trips`](PostgresDirectory::round_trips)
//! counts them):
//!
//! 1. `BEGIN`, the `processed_events` check, the configuration version, and what the event names
//!    (its issues, tasks and comments by id, and the live tasks of its issues: the active ones
//!    and each agent's latest), in one simple-query message;
//! 2. the event's writes, its `processed_events` row and `COMMIT`, in another.
//!
//! Between them the engine decides from what was read ahead; a read it cannot answer is one more
//! round trip. Writes wait in a buffer (SQL text with quoted literals: every connection sets
//! `standard_conforming_strings = on`, and text holding NUL is refused) and the reads they make
//! stale are forgotten, so that a later read of them goes to the server after the buffer is sent.
//!
//! **Configuration rows are kept across events.** Workspaces, users, memberships, squads,
//! members, agents and autopilots change rarely (barrier events). Triggers bump the one-row
//! `squad_config_version` in the transaction of every statement that writes them; a handle keeps
//! the configuration rows it read, with the version they were read at, and uses them only while
//! the version its transaction reads (in its first statement, so from its own snapshot) is the
//! same. A handle that writes a configuration row forgets them. Outside `handle_event` (the
//! trait's methods called by a host), nothing is kept across writes.
//!
//! The ids an event mints come from its position ([`Ids::Position`](crate::trace::Ids)), not from a
//! counter shared by the workers: whatever the interleaving, a task gets the same id.
//!
//! # Errors
//!
//! As for `SqliteDirectory`, the trait's methods cannot fail: a read that fails answers "not
//! found", a write that fails is skipped, and the first error is returned by
//! [`check`](PostgresDirectory::check) and [`commit`](PostgresDirectory::commit).

mod ahead;
mod parallel;
mod schema;

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use postgres::error::SqlState;
use postgres::types::ToSql;
use postgres::{Client, NoTls, Statement};
use serde::Serialize;
use serde::de::DeserializeOwned;
use squad_model::{
    Agent, AgentId, Assignee, Autopilot, AutopilotId, CommentId, Issue, IssueId, IssueStatus,
    MemberRef, Squad, SquadId, SquadMember, Task, TaskId, TaskStatus, Timestamp, UserId,
    WorkspaceId,
};

pub use parallel::{MAX_WORKERS, ParallelReplay, WINDOW, replay_parallel};

use ahead::{Ahead, rows_by_statement};

use crate::apply::apply;
use crate::directory::Directory;
use crate::engine::Engine;
use crate::error::{Error, ErrorKind, Result};
use crate::event::Event;
use crate::records::{Comment, EvaluationOutcome, Membership, User, Workspace, WorkspaceRole};
use crate::store::{
    Cache, Table, member_key, outcome_str, parse_role, role_str, squad_of, status_str,
};
use crate::trace::{EventOutput, IDS_PER_EVENT, check_event};

/// How long a connection attempt may take when the URL sets no `connect_timeout`.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// How many times an event is run again after a serialization failure or deadlock before the
/// error is returned.
const MAX_RETRIES: u32 = 10_000;

fn storage(e: impl std::fmt::Display) -> Error {
    Error::new(ErrorKind::Storage, format!("database: {e}"))
}

/// A connection URL with its password replaced by `***`, for messages.
///
/// ```
/// use squad_routing::postgres::redact;
/// assert_eq!(redact("postgres://ann:s3cret@db.example/routing"), "postgres://ann:***@db.example/routing");
/// assert_eq!(redact("postgres://ann@db/x?password=s3cret&sslmode=require"), "postgres://ann@db/x?password=***&sslmode=require");
/// ```
pub fn redact(url: &str) -> String {
    let mut out = url.to_owned();
    if let Some(scheme) = out.find("://") {
        let rest = scheme + 3;
        let end = out[rest..].find(['/', '?']).map_or(out.len(), |i| rest + i);
        if let Some(at) = out[rest..end].rfind('@') {
            let userinfo = &out[rest..rest + at];
            if let Some(colon) = userinfo.find(':') {
                out.replace_range(rest + colon + 1..rest + at, "***");
            }
        }
    }
    let lower = out.to_ascii_lowercase();
    if let Some(i) = lower.find("password=") {
        let start = i + "password=".len();
        let end = out[start..]
            .find(['&', ' '])
            .map_or(out.len(), |j| start + j);
        out.replace_range(start..end, "***");
    }
    out
}

/// Whether `url` names a PostgreSQL server (`postgres://` or `postgresql://`), as opposed to an
/// SQLite file.
pub fn is_postgres_url(url: &str) -> bool {
    url.starts_with("postgres://") || url.starts_with("postgresql://")
}

/// Opens a connection (with [`DEFAULT_CONNECT_TIMEOUT`] unless the URL sets one).
fn connect_client(url: &str) -> Result<Client> {
    let mut config = postgres::Config::from_str(url)
        .map_err(|e| storage(format!("invalid connection URL {}: {e}", redact(url))))?;
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(DEFAULT_CONNECT_TIMEOUT);
    }
    if config.get_application_name().is_none() {
        config.application_name("squad-routing");
    }
    config.connect(NoTls).map_err(|e| {
        let mut msg = format!("cannot connect to {}: {e}", redact(url));
        if let Some(src) = std::error::Error::source(&e) {
            msg.push_str(&format!(" ({src})"));
        }
        storage(msg)
    })
}

/// The schema version recorded in the database (0 when it was never migrated).
fn stored_version(client: &mut Client) -> Result<i32> {
    let exists: bool = client
        .query_one(
            "SELECT to_regclass('squad_schema_version') IS NOT NULL",
            &[],
        )
        .map_err(storage)?
        .get(0);
    if !exists {
        return Ok(0);
    }
    let v: Option<i32> = client
        .query_one("SELECT max(version) FROM squad_schema_version", &[])
        .map_err(storage)?
        .get(0);
    Ok(v.unwrap_or(0))
}

/// What [`migrate`] did: the schema version before and after.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Migrated {
    /// The version found (0: never migrated).
    pub from: i32,
    /// The version now ([`PostgresDirectory::SCHEMA_VERSION`]).
    pub to: i32,
}

/// Creates or upgrades the schema of the database at `url` to this build's version. Idempotent:
/// an up-to-date database is left as it is. Concurrent calls wait for each other (an advisory
/// lock), and each migration is one transaction.
///
/// # Errors
///
/// [`ErrorKind::Storage`] when the server cannot be reached, the schema is newer than this build,
/// or a migration fails (nothing of it is applied).
pub fn migrate(url: &str) -> Result<Migrated> {
    let mut client = connect_client(url)?;
    client
        .execute("SELECT pg_advisory_lock($1)", &[&schema::LOCK_KEY])
        .map_err(storage)?;
    let result = migrate_locked(&mut client);
    let unlock = client
        .execute("SELECT pg_advisory_unlock($1)", &[&schema::LOCK_KEY])
        .map_err(storage);
    let migrated = result?;
    unlock?;
    Ok(migrated)
}

fn migrate_locked(client: &mut Client) -> Result<Migrated> {
    client
        .batch_execute(schema::VERSION_TABLE)
        .map_err(storage)?;
    let from = stored_version(client)?;
    if from > schema::CURRENT {
        return Err(storage(format!(
            "the database schema is version {from}, newer than this build's ({}): use a newer squad",
            schema::CURRENT
        )));
    }
    for (version, sql) in schema::MIGRATIONS {
        if *version <= from {
            continue;
        }
        let mut tx = client.transaction().map_err(storage)?;
        tx.batch_execute(sql)
            .map_err(|e| storage(format!("migration {version}: {e}")))?;
        tx.execute(
            "INSERT INTO squad_schema_version (version) VALUES ($1)",
            &[version],
        )
        .map_err(storage)?;
        tx.commit().map_err(storage)?;
    }
    Ok(Migrated {
        from,
        to: schema::CURRENT,
    })
}

/// A storage error kept until [`PostgresDirectory::check`]; `retry` when it is a serialization
/// failure or deadlock, `unique` when a unique index refused a row (under `REPEATABLE READ`, how
/// a lost race for the one pending task of an (issue, agent) shows).
#[derive(Debug, Clone)]
struct Kept {
    message: String,
    retry: bool,
    unique: bool,
}

/// A database error as kept: its SQLSTATE and message, and whether it is worth a retry.
fn kept(e: &postgres::Error) -> Kept {
    Kept {
        retry: is_retryable(e),
        unique: is_unique_violation(e),
        message: match e.as_db_error() {
            Some(db) => format!("{}: {}", db.code().code(), db.message()),
            None => e.to_string(),
        },
    }
}

fn is_retryable(e: &postgres::Error) -> bool {
    matches!(
        e.code(),
        Some(c) if *c == SqlState::T_R_SERIALIZATION_FAILURE || *c == SqlState::T_R_DEADLOCK_DETECTED
    )
}

fn is_unique_violation(e: &postgres::Error) -> bool {
    e.code() == Some(&SqlState::UNIQUE_VIOLATION)
}

/// How an event's transaction is isolated ([`PostgresDirectory::set_isolation`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Isolation {
    /// `SERIALIZABLE` (the default): any interleaving of events is equivalent to some serial
    /// order, whatever events run at once; more transactions fail to serialize and run again.
    #[default]
    Serializable,
    /// `REPEATABLE READ`, plus the schema's constraints: enough when the caller never runs two
    /// events that touch one issue tree at once (what `replay_parallel`'s scheduler ensures); a
    /// lost race for an (issue, agent)'s pending task is a unique violation, run again.
    RepeatableRead,
}

/// Unique violations an event may meet (each run again) before the error is returned: a race
/// resolves in one retry; a violation that persists is not a race.
const MAX_UNIQUE_RETRIES: u32 = 20;

/// What [`PostgresDirectory::handle_event`] did.
#[derive(Debug, Clone, PartialEq)]
pub struct Handled {
    /// The event's decision line (JSON, as `squad route replay` prints it).
    pub output: String,
    /// `true` when the event had been handled before (its stored line is returned, nothing
    /// changed).
    pub already: bool,
    /// How many times the transaction was run again after a serialization failure or deadlock.
    pub retries: u32,
    /// The tasks the event enqueued, with their issues.
    pub enqueued: Vec<(TaskId, Option<IssueId>)>,
}

/// A [`Directory`] kept in a PostgreSQL server, which many workers (threads, processes, hosts)
/// share, each with its own `PostgresDirectory`.
///
/// Reads are queries, answered once per transaction from an arena (as `SqliteDirectory` does);
/// statements are prepared once per connection. Inside [`handle_event`](Self::handle_event) an
/// event's reads are mostly answered from what its first round trip read ahead and from the
/// configuration rows kept across events, and its writes wait for the commit (see the
/// [module documentation](self)). Hosts call
/// [`handle_event`](Self::handle_event) for each event, from as many workers as they like, giving
/// each event a unique position; see the [module documentation](self) for the schema and the
/// transaction.
///
/// ```no_run
/// use squad_routing::postgres::{PostgresDirectory, migrate};
/// use squad_routing::{Engine, Event};
/// use squad_routing::event::SetTaskStatus;
/// use squad_model::{TaskId, TaskStatus, Timestamp};
///
/// let url = "postgres://postgres@127.0.0.1:5432/test";
/// migrate(url)?;
/// let mut dir = PostgresDirectory::connect(url)?;
/// let event = Event::TaskStatus(SetTaskStatus { task_id: TaskId::new("t1")?, status: TaskStatus::Running });
/// let done = dir.handle_event(&Engine::default(), 1, 1, Timestamp::now(), &event)?;
/// println!("{}", done.output);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct PostgresDirectory {
    client: RefCell<Client>,
    statements: RefCell<HashMap<&'static str, Statement>>,
    cache: Cache,
    error: RefCell<Option<Kept>>,
    seq: u64,
    in_transaction: bool,
    isolation: Isolation,
    url: String,
    round_trips: Cell<u64>,
    /// Configuration rows kept across events (schema version 2), read at `config_version`.
    config: ConfigCache,
    config_version: Option<i64>,
    /// Whether configuration reads use `config`: inside `handle_event`, from the moment its
    /// transaction read `squad_config_version` (equal to `config_version`) until it writes a
    /// configuration row.
    config_live: bool,
    /// Whether writes wait in `pending` (inside `handle_event`) instead of running at once.
    buffering: bool,
    /// Writes not yet sent (SQL statements with literals, `;`-separated): sent before the next
    /// query, or with the commit.
    pending: RefCell<String>,
}

impl std::fmt::Debug for PostgresDirectory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresDirectory")
            .field("url", &self.url)
            .field("id_seq", &self.seq)
            .field("in_transaction", &self.in_transaction)
            .finish_non_exhaustive()
    }
}

impl PostgresDirectory {
    /// The version of the database schema this build reads and writes.
    pub const SCHEMA_VERSION: i32 = schema::CURRENT;

    /// Connects to the database at `url` (a `postgres://` URL; the password is never printed).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Storage`] when the server cannot be reached within the connect timeout, or
    /// when its schema is missing or older than this build's (the message names
    /// `squad route migrate`), or newer.
    pub fn connect(url: &str) -> Result<Self> {
        let mut client = connect_client(url)?;
        // Writes are sent as SQL text with quoted literals (`Lit`): a quote is doubled and a
        // backslash is itself, which holds only with standard conforming strings.
        // The prepared statements look rows up by id arrays: one generic plan serves every
        // call (a custom plan would be planned again each time). A plan is made on first use,
        // when a fresh database's tables are nearly empty and a sequential scan looks cheapest,
        // and kept until the table is next analyzed, a minute or more of ever longer scans: the
        // connection's lookups go by index from the start (a query with no index to use, such
        // as `state_snapshot`'s, still scans). That makes such a query's estimated cost huge,
        // and JIT compiling it on every run (190 ms) would follow: JIT is off too.
        client
            .batch_execute(
                "SET standard_conforming_strings = on; SET plan_cache_mode = force_generic_plan; \
                 SET enable_seqscan = off; SET jit = off",
            )
            .map_err(storage)?;
        let version = stored_version(&mut client)?;
        if version == 0 {
            return Err(storage(format!(
                "{} has no squad routing schema: run `squad route migrate --db <url>` first",
                redact(url)
            )));
        }
        if version < schema::CURRENT {
            return Err(storage(format!(
                "{} has schema version {version}, older than this build's ({}): run \
                 `squad route migrate --db <url>`",
                redact(url),
                schema::CURRENT
            )));
        }
        if version > schema::CURRENT {
            return Err(storage(format!(
                "{} has schema version {version}, newer than this build's ({}): use a newer squad",
                redact(url),
                schema::CURRENT
            )));
        }
        // The statements an event runs, parsed and planned once for the connection.
        let mut prepare = PREPARED.join(";\n");
        for p in ahead::PREPARED {
            prepare.push_str(";\n");
            prepare.push_str(p);
        }
        client.batch_execute(&prepare).map_err(storage)?;
        Ok(Self {
            client: RefCell::new(client),
            statements: RefCell::new(HashMap::new()),
            cache: Cache::default(),
            error: RefCell::new(None),
            seq: 0,
            in_transaction: false,
            isolation: Isolation::Serializable,
            url: redact(url),
            round_trips: Cell::new(0),
            config: ConfigCache::default(),
            config_version: None,
            config_live: false,
            buffering: false,
            pending: RefCell::new(String::new()),
        })
    }

    /// Sets how each transaction is isolated (default [`Isolation::Serializable`]).
    pub fn set_isolation(&mut self, isolation: Isolation) {
        self.isolation = isolation;
    }

    /// Lets commits return before their WAL record reaches the disk (`synchronous_commit = off`
    /// for this connection). A server crash may then lose the last commits, but never part of
    /// one: an event and its `processed_events` row are lost together, and a rerun handles the
    /// event again. What a replay wants; a host that acts on a decision outside the database
    /// (a task started) should keep the default.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Storage`] if the server refuses.
    pub fn relax_durability(&mut self) -> Result<()> {
        self.client
            .get_mut()
            .batch_execute("SET synchronous_commit TO off")
            .map_err(storage)
    }

    /// Starts a transaction (`SERIALIZABLE` unless [`set_isolation`](Self::set_isolation) said
    /// otherwise): the writes until [`commit`](Self::commit) land together, and the reads see
    /// one state.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Storage`] when a transaction is already open or the server refuses.
    pub fn begin(&mut self) -> Result<()> {
        if self.in_transaction {
            return Err(storage("a transaction is already open"));
        }
        self.cache.reset();
        let sql = match self.isolation {
            Isolation::Serializable => "BEGIN ISOLATION LEVEL SERIALIZABLE",
            Isolation::RepeatableRead => "BEGIN ISOLATION LEVEL REPEATABLE READ",
        };
        self.trip();
        self.client.get_mut().batch_execute(sql).map_err(storage)?;
        self.in_transaction = true;
        Ok(())
    }

    /// Commits the transaction, or, when a read or write failed since it began, rolls it back and
    /// returns that error.
    ///
    /// # Errors
    ///
    /// The first storage error of the transaction, or the commit's own.
    pub fn commit(&mut self) -> Result<()> {
        self.commit_kept().map_err(|k| storage(k.message))
    }

    fn commit_kept(&mut self) -> std::result::Result<(), Kept> {
        if let Some(kept) = self.error.get_mut().take() {
            let _ = self.rollback();
            return Err(kept);
        }
        self.cache.reset();
        self.buffering = false;
        // The writes still buffered go with the COMMIT.
        let mut sql = std::mem::take(self.pending.get_mut());
        if self.in_transaction {
            self.in_transaction = false;
            sql.push_str("COMMIT");
        }
        if !sql.is_empty() {
            self.trip();
            if let Err(e) = self.client.get_mut().batch_execute(&sql) {
                // A failed write leaves the transaction open, aborted.
                let _ = self.client.get_mut().batch_execute("ROLLBACK");
                return Err(kept(&e));
            }
        }
        Ok(())
    }

    /// Buffers this transaction's writes until [`commit`](Self::commit) (or a query that must
    /// see them), as `handle_event` does.
    pub(super) fn buffer_writes(&mut self) {
        self.buffering = true;
    }

    /// Rolls the open transaction back; no-op without one.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Storage`] if the server refuses.
    pub fn rollback(&mut self) -> Result<()> {
        self.cache.reset();
        self.buffering = false;
        self.pending.get_mut().clear();
        if self.in_transaction {
            self.in_transaction = false;
            self.trip();
            self.client
                .get_mut()
                .batch_execute("ROLLBACK")
                .map_err(storage)?;
        }
        Ok(())
    }

    /// The first storage error since the last call, if any (then cleared).
    ///
    /// # Errors
    ///
    /// That error, of kind [`ErrorKind::Storage`].
    pub fn check(&self) -> Result<()> {
        match self.error.borrow_mut().take() {
            Some(k) => Err(storage(k.message)),
            None => Ok(()),
        }
    }

    /// Handles one event in one transaction, as a worker does: `position` identifies the event
    /// among all events the database ever sees (a replay uses `epoch << 32 | index`), and its
    /// minted ids derive from it ([`crate::trace::id_base`]); `line` is reported in the output.
    /// An event whose position was handled before returns its stored line and changes nothing.
    /// Serialization failures and deadlocks are retried.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::UnknownReference`] (or another trace error) when the event acts on an id that
    /// does not exist (nothing is written); [`ErrorKind::OutOfRange`] for a position of 2^48 or
    /// more; [`ErrorKind::Storage`] for a database error that is not a serialization failure.
    pub fn handle_event(
        &mut self,
        engine: &Engine,
        position: u64,
        line: usize,
        at: Timestamp,
        event: &Event,
    ) -> Result<Handled> {
        if position >= 1 << 48 {
            return Err(Error::new(
                ErrorKind::OutOfRange,
                format!("event position {position} is 2^48 or more"),
            ));
        }
        let base = position << 16;
        let pos = position.cast_signed();
        let mut retries = 0;
        let mut unique = 0;
        loop {
            match self.try_event(engine, base, pos, line, at, event) {
                Ok(mut h) => {
                    h.retries = retries;
                    return Ok(h);
                }
                Err(Attempt::Retry(msg, was_unique)) => {
                    retries += 1;
                    unique += u32::from(was_unique);
                    if retries > MAX_RETRIES || unique > MAX_UNIQUE_RETRIES {
                        return Err(storage(format!(
                            "line {line}: still conflicting after {MAX_RETRIES} retries: {msg}"
                        )));
                    }
                    // Back off a little, more for each retry, so that the other transaction ends.
                    std::thread::sleep(Duration::from_micros(u64::from(retries.min(50)) * 50));
                }
                Err(Attempt::Fail(e)) => return Err(e),
            }
        }
    }

    fn try_event(
        &mut self,
        engine: &Engine,
        base: u64,
        pos: i64,
        line: usize,
        at: Timestamp,
        event: &Event,
    ) -> std::result::Result<Handled, Attempt> {
        if self.in_transaction {
            return Err(Attempt::Fail(storage("a transaction is already open")));
        }
        let r = self.run_event(engine, base, pos, line, at, event);
        self.buffering = false;
        self.config_live = false;
        self.pending.get_mut().clear();
        if self.in_transaction {
            let _ = self.rollback();
        }
        self.error.get_mut().take();
        r
    }

    /// [`try_event`](Self::try_event)'s transaction, in (usually) two round trips: the first
    /// begins it, checks `processed_events` and reads the configuration version; the second sends
    /// the writes, records the event and commits. Reads the caches cannot answer are one round
    /// trip each. The transaction is left open on error (the caller rolls it back).
    fn run_event(
        &mut self,
        engine: &Engine,
        base: u64,
        pos: i64,
        line: usize,
        at: Timestamp,
        event: &Event,
    ) -> std::result::Result<Handled, Attempt> {
        self.cache.reset();
        self.pending.get_mut().clear();
        self.error.get_mut().take();
        let begin = match self.isolation {
            Isolation::Serializable => "BEGIN ISOLATION LEVEL SERIALIZABLE",
            Isolation::RepeatableRead => "BEGIN ISOLATION LEVEL REPEATABLE READ",
        };
        let mut sql = format!("{begin}; EXECUTE squad_check({pos})");
        let ahead = Ahead::of(event);
        let stmts = ahead.sql(&mut sql);
        self.in_transaction = true;
        self.trip();
        let messages = self
            .client
            .get_mut()
            .simple_query(&sql)
            .map_err(|e| Attempt::from(kept(&e)))?;
        // Statement 0 is BEGIN, 1 the check, then `stmts`.
        let rows = rows_by_statement(&messages);
        let check = rows.get(1).and_then(|r| r.first());
        let done: Option<String> = check.and_then(|r| r.get(0)).map(str::to_owned);
        let version: Option<i64> = check.and_then(|r| r.get(1)).and_then(|v| v.parse().ok());
        if let Some(output) = done {
            self.commit_kept().map_err(Attempt::from)?;
            return Ok(Handled {
                output,
                already: true,
                retries: 0,
                enqueued: Vec::new(),
            });
        }
        // The configuration rows kept are this snapshot's when they were read at its version.
        if let Some(v) = version {
            if self.config_version != Some(v) {
                self.config = ConfigCache::default();
                self.config_version = Some(v);
            }
            self.config_live = true;
        }
        self.fill_ahead(&ahead, &stmts, rows.get(2..).unwrap_or_default());
        if let Err(e) = check_event(self, event) {
            return Err(match self.error.get_mut().take() {
                // A failed read looks like a missing record: report the read's error.
                Some(k) => Attempt::from(k),
                None => Attempt::Fail(e.at_line(line)),
            });
        }
        self.seq = base;
        let decisions = engine.decide(self, at, event);
        if decisions.id_seq > base + IDS_PER_EVENT {
            return Err(Attempt::Fail(Error::new(
                ErrorKind::OutOfRange,
                format!("line {line}: the event mints more than {IDS_PER_EVENT} ids"),
            )));
        }
        let instructions = decisions
            .decisions
            .iter()
            .find_map(|d| crate::briefing::claim_instructions(&*self, d));
        let enqueued = decisions
            .enqueued()
            .map(|t| (t.id.clone(), t.issue_id.clone()))
            .collect();
        self.buffering = true;
        apply(self, &decisions);
        self.buffering = false;
        let out = EventOutput {
            line,
            event: event.kind(),
            decisions,
            instructions,
        };
        let output = serde_json::to_string(&out)
            .map_err(|e| Attempt::Fail(storage(format!("cannot encode the decisions: {e}"))))?;
        if let Some(k) = self.error.get_mut().take() {
            return Err(Attempt::from(k));
        }
        let mut sql = std::mem::take(self.pending.get_mut());
        sql.push_str(&format!(
            "EXECUTE squad_done({pos}, {}); COMMIT",
            Lit(&output)
        ));
        if sql.contains('\0') {
            return Err(Attempt::Fail(storage(
                "a decision line holds a NUL character, which PostgreSQL text cannot",
            )));
        }
        self.trip();
        self.client
            .get_mut()
            .batch_execute(&sql)
            .map_err(|e| Attempt::from(kept(&e)))?;
        self.in_transaction = false;
        self.cache.reset();
        Ok(Handled {
            output,
            already: false,
            retries: 0,
            enqueued,
        })
    }

    /// Counts of records: (squads, agents, issues, tasks, comments).
    pub fn counts(&self) -> (usize, usize, usize, usize, usize) {
        let count = |sql: &'static str| -> usize {
            self.scalar::<i64>(sql, &[])
                .and_then(|n| usize::try_from(n).ok())
                .unwrap_or(0)
        };
        (
            count("SELECT count(*) FROM squads"),
            count("SELECT count(*) FROM agents"),
            count("SELECT count(*) FROM issues"),
            count("SELECT count(*) FROM tasks"),
            count("SELECT count(*) FROM comments"),
        )
    }

    /// The whole routing state as sorted text lines (issues, tasks with their status, comments,
    /// evaluations, squads, members, agents, autopilots), for comparing two databases: two
    /// replays that reached the same state give the same lines.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Storage`] when a query fails.
    pub fn state_snapshot(&mut self) -> Result<Vec<String>> {
        let client = self.client.get_mut();
        let mut lines = Vec::new();
        for (name, sql) in [
            ("workspace", "SELECT id, record::text FROM workspaces"),
            ("user", "SELECT id, record::text FROM users"),
            (
                "membership",
                "SELECT workspace_id || '/' || user_id, role FROM memberships",
            ),
            ("squad", "SELECT id, record::text FROM squads"),
            (
                "member",
                "SELECT squad_id || '/' || member_key, record::text FROM squad_members",
            ),
            ("agent", "SELECT id, record::text FROM agents"),
            (
                "issue",
                "SELECT id, coalesce(child_of, '-') || ' ' || coalesce(number::text, '-') || ' ' \
                 || record::text FROM issues",
            ),
            (
                "task",
                "SELECT id, live::text || ' ' || record::text FROM tasks",
            ),
            ("comment", "SELECT id, record::text FROM comments"),
            ("autopilot", "SELECT id, record::text FROM autopilots"),
            ("evaluation", "SELECT task_id, outcome FROM evaluations"),
        ] {
            for row in client.query(sql, &[]).map_err(storage)? {
                let id: String = row.get(0);
                let v: String = row.get(1);
                lines.push(format!("{name} {id} {v}"));
            }
        }
        // The orders the trait promises (children, members) are part of the state.
        for (name, sql) in [
            (
                "children",
                "SELECT child_of, string_agg(id, ',' ORDER BY child_seq) FROM issues \
                 WHERE child_of IS NOT NULL GROUP BY child_of",
            ),
            (
                "roster",
                "SELECT squad_id, string_agg(member_key, ',' ORDER BY seq) FROM squad_members \
                 GROUP BY squad_id",
            ),
            (
                "issue-tasks",
                "SELECT issue_id || '/' || agent_id, string_agg(id, ',' ORDER BY seq) FROM tasks \
                 WHERE issue_id IS NOT NULL GROUP BY issue_id, agent_id",
            ),
        ] {
            for row in client.query(sql, &[]).map_err(storage)? {
                let id: String = row.get(0);
                let v: String = row.get(1);
                lines.push(format!("{name} {id} {v}"));
            }
        }
        lines.sort();
        Ok(lines)
    }

    /// The client, for the replay's own queries.
    fn client_mut(&mut self) -> &mut Client {
        self.client.get_mut()
    }

    /// Counts one round trip to the server.
    fn trip(&self) {
        self.round_trips.set(self.round_trips.get() + 1);
    }

    /// How many round trips to the server this handle made (queries, batches of writes,
    /// statements prepared, transaction control): what an event costs beyond the engine, and
    /// what [`ParallelReplay::round_trips`] adds up.
    pub fn round_trips(&self) -> u64 {
        self.round_trips.get()
    }

    /// The prepared statement for `sql` (prepared once per connection), counting the round trip
    /// that runs it (and the one that prepares it).
    fn statement(&self, sql: &'static str) -> Option<Statement> {
        self.trip();
        if let Some(st) = self.statements.borrow().get(sql) {
            return Some(st.clone());
        }
        self.trip();
        let prepared = self.client.borrow_mut().prepare(sql);
        let st = self.ok(prepared)?;
        self.statements.borrow_mut().insert(sql, st.clone());
        Some(st)
    }

    /// Keeps the first error; `None` for any error.
    fn ok<T>(&self, r: std::result::Result<T, postgres::Error>) -> Option<T> {
        match r {
            Ok(v) => Some(v),
            Err(e) => {
                let mut slot = self.error.borrow_mut();
                if slot.is_none() {
                    *slot = Some(kept(&e));
                }
                None
            }
        }
    }

    fn fail(&self, message: String) {
        let mut slot = self.error.borrow_mut();
        if slot.is_none() {
            *slot = Some(Kept {
                message,
                retry: false,
                unique: false,
            });
        }
    }

    /// One row's first column (`None` when there is no row or the read failed).
    fn scalar<T>(&self, sql: &'static str, args: &[&(dyn ToSql + Sync)]) -> Option<T>
    where
        T: for<'a> postgres::types::FromSql<'a>,
    {
        self.flush();
        let st = self.statement(sql)?;
        let row = self.ok(self.client.borrow_mut().query_opt(&st, args))??;
        self.ok(row.try_get(0))
    }

    /// One row's `record`, decoded.
    fn one<T: DeserializeOwned>(
        &self,
        sql: &'static str,
        args: &[&(dyn ToSql + Sync)],
    ) -> Option<T> {
        let text: String = self.scalar(sql, args)?;
        self.decode(&text)
    }

    fn cached<'s, T: DeserializeOwned>(
        &'s self,
        table: &'s Table<T>,
        sql: &'static str,
        id: &str,
    ) -> Option<&'s T> {
        table.get(id, || self.one(sql, &[&id]))
    }

    /// Every row's first column, decoded with `f`.
    fn all<T>(
        &self,
        sql: &'static str,
        args: &[&(dyn ToSql + Sync)],
        f: impl Fn(&Self, String) -> Option<T>,
    ) -> Vec<T> {
        self.flush();
        let Some(st) = self.statement(sql) else {
            return Vec::new();
        };
        let rows = self.ok(self.client.borrow_mut().query(&st, args));
        rows.unwrap_or_default()
            .into_iter()
            .filter_map(|r| self.ok(r.try_get::<_, String>(0)))
            .filter_map(|t| f(self, t))
            .collect()
    }

    fn decode<T: DeserializeOwned>(&self, text: &str) -> Option<T> {
        match serde_json::from_str(text) {
            Ok(v) => Some(v),
            Err(e) => {
                self.fail(format!("database: a stored record does not decode: {e}"));
                None
            }
        }
    }

    fn encode<T: Serialize>(&self, v: &T) -> Option<String> {
        match serde_json::to_string(v) {
            Ok(s) => Some(s),
            Err(e) => {
                self.fail(format!("database: a record does not encode: {e}"));
                None
            }
        }
    }

    /// Buffers the upsert of a configuration record keyed by `id` into `table` (`workspaces`,
    /// `users`, `squads`, `agents`); `false` when the record does not encode (the failure is
    /// kept for the event).
    fn upsert_config<T: Serialize>(&mut self, table: &str, id: &str, record: &T) -> bool {
        let Some(json) = self.encode(record) else {
            return false;
        };
        self.write(
            format!(
                "INSERT INTO {table} (id, record) VALUES ({}, {}::jsonb) \
                 ON CONFLICT (id) DO UPDATE SET record = excluded.record",
                Lit(id),
                Lit(&json)
            ),
            Touch::Config,
        );
        true
    }

    /// The configuration table to read: the rows kept across events while `config_live`, else
    /// the transaction's.
    fn config_table<'s, T>(&self, kept: &'s Table<T>, tx: &'s Table<T>) -> &'s Table<T> {
        if self.config_live { kept } else { tx }
    }

    /// Runs a write, or, inside [`handle_event`](Self::handle_event), keeps it for the next
    /// round trip; either way the reads it makes stale are forgotten.
    fn write(&mut self, sql: String, touch: Touch) {
        if sql.contains('\0') {
            self.fail(
                "database: a record holds a NUL character, which PostgreSQL text cannot".into(),
            );
            return;
        }
        self.touch(&touch);
        if self.buffering {
            let pending = self.pending.get_mut();
            pending.push_str(&sql);
            pending.push_str(";\n");
        } else {
            self.trip();
            let r = self.client.get_mut().batch_execute(&sql);
            self.ok(r);
        }
    }

    /// Forgets the reads a write makes stale: outside `handle_event` all of them (as before any
    /// write); inside it, the written record and the lists its table feeds.
    fn touch(&mut self, touch: &Touch) {
        if !self.buffering {
            self.cache.reset();
            if matches!(touch, Touch::Config) {
                self.drop_config();
            }
            return;
        }
        let plain = |k: &str| !k.contains('\0');
        match touch {
            // The transaction's own copies are written through by the caller.
            Touch::Config => self.drop_config(),
            Touch::Issue(id) => {
                self.cache.issues.retain(|k| k != id);
                self.cache.numbers.retain(|k| k != id);
                self.cache.id_lists.retain(|_| false);
            }
            Touch::Task(id) => {
                self.cache.tasks.retain(|k| k != id && plain(k));
                self.cache.task_lists.retain(|_| false);
            }
            Touch::Comment(id) => self.cache.comments.retain(|k| k != id),
            Touch::Number(id) => self.cache.numbers.retain(|k| k != id),
            Touch::Evaluation(id) => self.cache.evaluations.retain(|k| k != id),
        }
    }

    /// Forgets the configuration rows kept across events (a configuration write).
    fn drop_config(&mut self) {
        self.config = ConfigCache::default();
        self.config_version = None;
        self.config_live = false;
    }

    /// Sends the writes kept so far (before a query: the query must see them).
    fn flush(&self) {
        let sql = std::mem::take(&mut *self.pending.borrow_mut());
        if sql.is_empty() {
            return;
        }
        self.trip();
        let r = self.client.borrow_mut().batch_execute(&sql);
        self.ok(r);
    }
}

/// The statements of an event's round trips (besides the read-ahead's), prepared once per
/// connection and run with `EXECUTE` and literal arguments.
const PREPARED: &[&str] = &[
    "PREPARE squad_check(bigint) AS \
     SELECT (SELECT output FROM processed_events WHERE position = $1), \
            (SELECT version FROM squad_config_version)",
    "PREPARE squad_done(bigint, text) AS \
     INSERT INTO processed_events (position, output) VALUES ($1, $2)",
    // A new issue is listed under its parent when the parent is stored, last among its
    // children; a stored one keeps its place unless its parent changes.
    "PREPARE squad_put_issue(text, text, text, text, jsonb) AS \
     INSERT INTO issues (id, parent_issue_id, child_of, child_seq, squad_id, autopilot_id, record) \
     VALUES ($1, $2, (SELECT p.id FROM issues p WHERE p.id = $2), \
             nextval('issues_child_seq'), $3, $4, $5) \
     ON CONFLICT (id) DO UPDATE SET \
       child_of = CASE WHEN issues.parent_issue_id IS DISTINCT FROM excluded.parent_issue_id \
                  THEN excluded.child_of ELSE issues.child_of END, \
       child_seq = CASE WHEN issues.parent_issue_id IS DISTINCT FROM excluded.parent_issue_id \
                  THEN excluded.child_seq ELSE issues.child_seq END, \
       parent_issue_id = excluded.parent_issue_id, \
       squad_id = excluded.squad_id, record = excluded.record",
    "PREPARE squad_update_issue(text, text, jsonb) AS \
     UPDATE issues SET squad_id = $2, record = $3 WHERE id = $1",
    "PREPARE squad_set_number(text, bigint) AS UPDATE issues SET number = $2 WHERE id = $1",
    // A task counts for its issue only if the issue is stored (an upsert keeps `live`).
    "PREPARE squad_put_task(text, text, text, text, text, jsonb) AS \
     INSERT INTO tasks (id, issue_id, agent_id, status, trigger_comment_id, live, record) \
     VALUES ($1, $2, $3, $4, $5, EXISTS (SELECT 1 FROM issues WHERE id = $2), $6) \
     ON CONFLICT (id) DO UPDATE SET issue_id = excluded.issue_id, \
       agent_id = excluded.agent_id, status = excluded.status, \
       trigger_comment_id = excluded.trigger_comment_id, record = excluded.record",
    "PREPARE squad_set_task_status(text, text, jsonb) AS \
     UPDATE tasks SET status = $2, record = $3 WHERE id = $1",
    "PREPARE squad_put_comment(text, jsonb) AS \
     INSERT INTO comments (id, record) VALUES ($1, $2) \
     ON CONFLICT (id) DO UPDATE SET record = excluded.record",
    "PREPARE squad_put_evaluation(text, text) AS \
     INSERT INTO evaluations (task_id, outcome) VALUES ($1, $2) \
     ON CONFLICT (task_id) DO UPDATE SET outcome = excluded.outcome",
];

/// Configuration rows (workspaces, users, memberships, squads, members, agents, autopilots)
/// kept across events while `squad_config_version` does not change.
#[derive(Default)]
struct ConfigCache {
    workspaces: Table<Workspace>,
    users: Table<User>,
    roles: Table<WorkspaceRole>,
    squads: Table<Squad>,
    members: Table<Vec<SquadMember>>,
    agents: Table<Agent>,
    autopilots: Table<Autopilot>,
    squad_autopilots: Table<Vec<AutopilotId>>,
}

/// What a write changes, so that the reads it makes stale are forgotten.
enum Touch {
    /// A configuration table.
    Config,
    /// The issue with this id (and the lists of issues).
    Issue(String),
    /// The task with this id (and the task lists); an empty id: only the lists.
    Task(String),
    /// The comment with this id.
    Comment(String),
    /// The number of the issue with this id.
    Number(String),
    /// The evaluation of the task with this id.
    Evaluation(String),
}

/// `s` as an SQL string literal. Every connection runs with `standard_conforming_strings = on`,
/// where a quote is written twice and nothing else is special; text with a NUL character is
/// refused before it is sent ([`PostgresDirectory::write`]).
struct Lit<'a>(&'a str);

impl fmt::Display for Lit<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("'")?;
        let mut parts = self.0.split('\'');
        if let Some(first) = parts.next() {
            f.write_str(first)?;
        }
        for part in parts {
            f.write_str("''")?;
            f.write_str(part)?;
        }
        f.write_str("'")
    }
}

/// An optional literal: `NULL` or [`Lit`].
struct OptLit<'a>(Option<&'a str>);

impl fmt::Display for OptLit<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(s) => Lit(s).fmt(f),
            None => f.write_str("NULL"),
        }
    }
}

/// One try of an event's transaction.
enum Attempt {
    /// A serialization failure, deadlock or (`true`) unique violation: run the event again.
    Retry(String, bool),
    /// Any other error.
    Fail(Error),
}

impl From<Kept> for Attempt {
    fn from(k: Kept) -> Self {
        if k.retry || k.unique {
            Self::Retry(k.message, k.unique)
        } else {
            Self::Fail(storage(k.message))
        }
    }
}

impl Directory for PostgresDirectory {
    fn workspace(&self, id: &WorkspaceId) -> Option<&Workspace> {
        let sql = "SELECT record::text FROM workspaces WHERE id = $1";
        let table = self.config_table(&self.config.workspaces, &self.cache.workspaces);
        self.cached(table, sql, id.as_str())
    }
    fn user(&self, id: &UserId) -> Option<&User> {
        let sql = "SELECT record::text FROM users WHERE id = $1";
        let table = self.config_table(&self.config.users, &self.cache.users);
        self.cached(table, sql, id.as_str())
    }
    fn workspace_role(&self, workspace: &WorkspaceId, user: &UserId) -> Option<WorkspaceRole> {
        let load = || {
            let role: String = self.scalar(
                "SELECT role FROM memberships WHERE workspace_id = $1 AND user_id = $2",
                &[&workspace.as_str(), &user.as_str()],
            )?;
            parse_role(&role)
        };
        if self.config_live {
            self.config
                .roles
                .get(&format!("{workspace}\0{user}"), load)
                .copied()
        } else {
            load()
        }
    }
    fn squad(&self, id: &SquadId) -> Option<&Squad> {
        let sql = "SELECT record::text FROM squads WHERE id = $1";
        let table = self.config_table(&self.config.squads, &self.cache.squads);
        self.cached(table, sql, id.as_str())
    }
    fn squad_members(&self, id: &SquadId) -> &[SquadMember] {
        self.config_table(&self.config.members, &self.cache.members)
            .get(id.as_str(), || {
                Some(self.all(
                    "SELECT record::text FROM squad_members WHERE squad_id = $1 ORDER BY seq",
                    &[&id.as_str()],
                    |s, t| s.decode(&t),
                ))
            })
            .map_or(&[], Vec::as_slice)
    }
    fn agent(&self, id: &AgentId) -> Option<&Agent> {
        let sql = "SELECT record::text FROM agents WHERE id = $1";
        let table = self.config_table(&self.config.agents, &self.cache.agents);
        self.cached(table, sql, id.as_str())
    }
    fn issue(&self, id: &IssueId) -> Option<&Issue> {
        let sql = "SELECT record::text FROM issues WHERE id = $1";
        self.cached(&self.cache.issues, sql, id.as_str())
    }
    fn issue_number(&self, id: &IssueId) -> Option<u64> {
        if let Some(n) = self.cache.numbers.peek(id.as_str()) {
            return n.copied();
        }
        let n: Option<i64> =
            self.scalar("SELECT number FROM issues WHERE id = $1", &[&id.as_str()])?;
        n.map(i64::cast_unsigned)
    }
    fn children(&self, parent: &IssueId) -> &[IssueId] {
        self.cache
            .id_lists
            .get(&format!("c\0{parent}"), || {
                Some(self.all(
                    "SELECT id FROM issues WHERE child_of = $1 ORDER BY child_seq",
                    &[&parent.as_str()],
                    |_, t| IssueId::new(t).ok(),
                ))
            })
            .map_or(&[], Vec::as_slice)
    }
    fn squad_issues(&self, squad: &SquadId) -> Vec<IssueId> {
        self.all(
            "SELECT id FROM issues WHERE squad_id = $1 ORDER BY seq",
            &[&squad.as_str()],
            |_, t| IssueId::new(t).ok(),
        )
    }
    fn autopilot_issues(&self, autopilot: &AutopilotId) -> &[IssueId] {
        self.cache
            .id_lists
            .get(&format!("a\0{autopilot}"), || {
                Some(self.all(
                    "SELECT id FROM issues WHERE autopilot_id = $1 ORDER BY seq",
                    &[&autopilot.as_str()],
                    |_, t| IssueId::new(t).ok(),
                ))
            })
            .map_or(&[], Vec::as_slice)
    }
    fn task(&self, id: &TaskId) -> Option<&Task> {
        let sql = "SELECT record::text FROM tasks WHERE id = $1";
        self.cached(&self.cache.tasks, sql, id.as_str())
    }
    fn pending_task(&self, issue: &IssueId, agent: &AgentId) -> Option<&Task> {
        // The issue's active tasks, when read, hold its pending ones (the newest last).
        if let Some(active) = self.cache.task_lists.peek(&format!("a\0{issue}")) {
            return active?.iter().rev().find(|t| {
                t.agent_id == *agent
                    && matches!(t.status, TaskStatus::Queued | TaskStatus::Dispatched)
            });
        }
        self.cache.tasks.get(&format!("p\0{issue}\0{agent}"), || {
            self.one(
                "SELECT record::text FROM tasks WHERE issue_id = $1 AND agent_id = $2 AND live \
                 AND status IN ('queued', 'dispatched') ORDER BY seq DESC LIMIT 1",
                &[&issue.as_str(), &agent.as_str()],
            )
        })
    }
    fn latest_task(&self, issue: &IssueId, agent: &AgentId) -> Option<&Task> {
        if let Some(latest) = self.cache.task_lists.peek(&format!("L\0{issue}")) {
            return latest?.iter().find(|t| t.agent_id == *agent);
        }
        self.cache.tasks.get(&format!("l\0{issue}\0{agent}"), || {
            self.one(
                "SELECT record::text FROM tasks WHERE issue_id = $1 AND agent_id = $2 AND live \
                 ORDER BY seq DESC LIMIT 1",
                &[&issue.as_str(), &agent.as_str()],
            )
        })
    }
    fn active_tasks(&self, issue: &IssueId) -> Vec<&Task> {
        self.cache
            .task_lists
            .get(&format!("a\0{issue}"), || {
                Some(self.all(
                    "SELECT record::text FROM tasks WHERE issue_id = $1 AND live \
                     AND status NOT IN ('completed', 'failed', 'cancelled') ORDER BY seq",
                    &[&issue.as_str()],
                    |s, t| s.decode(&t),
                ))
            })
            .map_or_else(Vec::new, |v| v.iter().collect())
    }
    fn comment(&self, id: &CommentId) -> Option<&Comment> {
        let sql = "SELECT record::text FROM comments WHERE id = $1";
        self.cached(&self.cache.comments, sql, id.as_str())
    }
    fn tasks_triggered_by(&self, comment: &CommentId) -> Vec<&Task> {
        self.cache
            .task_lists
            .get(&format!("t\0{comment}"), || {
                Some(self.all(
                    "SELECT record::text FROM tasks WHERE trigger_comment_id = $1 ORDER BY seq",
                    &[&comment.as_str()],
                    |s, t| s.decode(&t),
                ))
            })
            .map_or_else(Vec::new, |v| v.iter().collect())
    }
    fn autopilot(&self, id: &AutopilotId) -> Option<&Autopilot> {
        let sql = "SELECT record::text FROM autopilots WHERE id = $1";
        let table = self.config_table(&self.config.autopilots, &self.cache.autopilots);
        self.cached(table, sql, id.as_str())
    }
    fn squad_autopilots(&self, squad: &SquadId) -> Vec<AutopilotId> {
        let load = || {
            self.all(
                "SELECT id FROM autopilots WHERE squad_id = $1 ORDER BY id",
                &[&squad.as_str()],
                |_, t| AutopilotId::new(t).ok(),
            )
        };
        if self.config_live {
            self.config
                .squad_autopilots
                .get(squad.as_str(), || Some(load()))
                .cloned()
                .unwrap_or_default()
        } else {
            load()
        }
    }
    fn evaluation(&self, task: &TaskId) -> Option<EvaluationOutcome> {
        if let Some(o) = self.cache.evaluations.peek(task.as_str()) {
            return o.copied();
        }
        let o: String = self.scalar(
            "SELECT outcome FROM evaluations WHERE task_id = $1",
            &[&task.as_str()],
        )?;
        EvaluationOutcome::parse(&o)
    }
    fn id_seq(&self) -> u64 {
        self.seq
    }

    fn put_workspace(&mut self, workspace: Workspace) {
        if self.upsert_config("workspaces", workspace.id.as_str(), &workspace) && self.buffering {
            let id = workspace.id.to_string();
            self.cache.workspaces.insert(&id, Some(workspace));
        }
    }
    fn put_user(&mut self, user: User) {
        if self.upsert_config("users", user.id.as_str(), &user) && self.buffering {
            let id = user.id.to_string();
            self.cache.users.insert(&id, Some(user));
        }
    }
    fn put_membership(&mut self, m: Membership) {
        self.write(
            format!(
                "INSERT INTO memberships (workspace_id, user_id, role) VALUES ({}, {}, {}) \
                 ON CONFLICT (workspace_id, user_id) DO UPDATE SET role = excluded.role",
                Lit(m.workspace_id.as_str()),
                Lit(m.user_id.as_str()),
                Lit(role_str(m.role))
            ),
            Touch::Config,
        );
    }
    fn put_squad(&mut self, squad: Squad) {
        if self.upsert_config("squads", squad.id.as_str(), &squad) && self.buffering {
            let id = squad.id.to_string();
            self.cache.squads.insert(&id, Some(squad));
        }
    }
    fn put_member(&mut self, member: SquadMember) {
        let Some(json) = self.encode(&member) else {
            return;
        };
        self.write(
            format!(
                "INSERT INTO squad_members (squad_id, member_key, record) VALUES ({}, {}, {}::jsonb) \
                 ON CONFLICT (squad_id, member_key) DO UPDATE SET record = excluded.record",
                Lit(member.squad_id.as_str()),
                Lit(&member_key(&member.member)),
                Lit(&json)
            ),
            Touch::Config,
        );
        // The roster keeps a member's place; a new one comes last.
        let key = member.squad_id.to_string();
        if self.buffering
            && let Some(Some(roster)) = self.cache.members.peek(&key)
        {
            let mut roster = roster.clone();
            match roster.iter_mut().find(|m| m.member == member.member) {
                Some(m) => *m = member,
                None => roster.push(member),
            }
            self.cache.members.insert(&key, Some(roster));
        }
    }
    fn remove_member(&mut self, squad: &SquadId, member: &MemberRef) {
        self.write(
            format!(
                "DELETE FROM squad_members WHERE squad_id = {} AND member_key = {}",
                Lit(squad.as_str()),
                Lit(&member_key(member))
            ),
            Touch::Config,
        );
        if self.buffering
            && let Some(Some(roster)) = self.cache.members.peek(squad.as_str())
        {
            let roster: Vec<SquadMember> = roster
                .iter()
                .filter(|m| m.member != *member)
                .cloned()
                .collect();
            self.cache.members.insert(squad.as_str(), Some(roster));
        }
    }
    fn put_agent(&mut self, agent: Agent) {
        if self.upsert_config("agents", agent.id.as_str(), &agent) && self.buffering {
            let id = agent.id.to_string();
            self.cache.agents.insert(&id, Some(agent));
        }
    }
    fn put_issue(&mut self, issue: Issue) {
        let Some(json) = self.encode(&issue) else {
            return;
        };
        let id = Lit(issue.id.as_str());
        let parent = OptLit(issue.parent_issue_id.as_ref().map(IssueId::as_str));
        let squad = OptLit(squad_of(issue.assignee.as_ref()));
        let autopilot = OptLit(
            issue
                .origin
                .as_ref()
                .filter(|o| o.kind == "autopilot")
                .and_then(|o| o.id.as_deref()),
        );
        let sql = format!(
            "EXECUTE squad_put_issue({id}, {parent}, {squad}, {autopilot}, {})",
            Lit(&json)
        );
        let id = issue.id.to_string();
        self.write(sql, Touch::Issue(id.clone()));
        if self.buffering {
            self.cache.issues.insert(&id, Some(issue));
        }
    }
    fn update_issue(
        &mut self,
        id: &IssueId,
        status: Option<IssueStatus>,
        assignee: Option<Option<Assignee>>,
    ) {
        let Some(mut issue) = self.issue(id).cloned() else {
            return;
        };
        if let Some(s) = status {
            issue.status = s;
        }
        if let Some(a) = assignee {
            issue.assignee = a;
        }
        let Some(json) = self.encode(&issue) else {
            return;
        };
        self.write(
            format!(
                "EXECUTE squad_update_issue({}, {}, {})",
                Lit(id.as_str()),
                OptLit(squad_of(issue.assignee.as_ref())),
                Lit(&json)
            ),
            Touch::Issue(id.as_str().to_owned()),
        );
        if self.buffering {
            self.cache.issues.insert(id.as_str(), Some(issue));
        }
    }
    fn set_issue_number(&mut self, id: &IssueId, number: u64) {
        self.write(
            format!(
                "EXECUTE squad_set_number({}, {})",
                Lit(id.as_str()),
                number.cast_signed()
            ),
            Touch::Number(id.to_string()),
        );
    }
    fn delete_issue(&mut self, id: &IssueId) {
        let id_lit = Lit(id.as_str());
        self.write(
            format!(
                "DELETE FROM issues WHERE id = {id_lit}; \
                 UPDATE tasks SET live = false WHERE issue_id = {id_lit} AND live; \
                 UPDATE issues SET child_of = NULL WHERE child_of = {id_lit}"
            ),
            Touch::Issue(id.as_str().to_owned()),
        );
        // The issue's tasks left the lists.
        self.touch(&Touch::Task(String::new()));
        if self.buffering {
            self.cache.issues.insert(id.as_str(), None);
        }
    }
    fn put_task(&mut self, task: Task) {
        let Some(json) = self.encode(&task) else {
            return;
        };
        let issue = OptLit(task.issue_id.as_ref().map(IssueId::as_str));
        let sql = format!(
            "EXECUTE squad_put_task({}, {issue}, {}, {}, {}, {})",
            Lit(task.id.as_str()),
            Lit(task.agent_id.as_str()),
            Lit(status_str(task.status)),
            OptLit(task.trigger_comment_id.as_ref().map(CommentId::as_str)),
            Lit(&json),
        );
        let id = task.id.to_string();
        self.write(sql, Touch::Task(id.clone()));
        if self.buffering {
            self.cache.tasks.insert(&id, Some(task));
        }
    }
    fn set_task_status(&mut self, id: &TaskId, status: TaskStatus) {
        let Some(mut task) = self.task(id).cloned() else {
            return;
        };
        task.status = status;
        let Some(json) = self.encode(&task) else {
            return;
        };
        self.write(
            format!(
                "EXECUTE squad_set_task_status({}, {}, {})",
                Lit(id.as_str()),
                Lit(status_str(status)),
                Lit(&json)
            ),
            Touch::Task(id.as_str().to_owned()),
        );
        if self.buffering {
            self.cache.tasks.insert(id.as_str(), Some(task));
        }
    }
    fn put_comment(&mut self, comment: Comment) {
        let Some(json) = self.encode(&comment) else {
            return;
        };
        self.write(
            format!(
                "EXECUTE squad_put_comment({}, {})",
                Lit(comment.id.as_str()),
                Lit(&json)
            ),
            Touch::Comment(comment.id.as_str().to_owned()),
        );
        if self.buffering {
            let id = comment.id.to_string();
            self.cache.comments.insert(&id, Some(comment));
        }
    }
    fn put_autopilot(&mut self, autopilot: Autopilot) {
        let Some(json) = self.encode(&autopilot) else {
            return;
        };
        self.write(
            format!(
                "INSERT INTO autopilots (id, squad_id, record) VALUES ({}, {}, {}::jsonb) \
                 ON CONFLICT (id) DO UPDATE SET squad_id = excluded.squad_id, \
                 record = excluded.record",
                Lit(autopilot.id.as_str()),
                OptLit(squad_of(autopilot.assignee.as_ref())),
                Lit(&json)
            ),
            Touch::Config,
        );
        if self.buffering {
            let id = autopilot.id.to_string();
            self.cache.autopilots.insert(&id, Some(autopilot));
        }
    }
    fn put_evaluation(&mut self, task: TaskId, outcome: EvaluationOutcome) {
        self.write(
            format!(
                "EXECUTE squad_put_evaluation({}, {})",
                Lit(task.as_str()),
                Lit(outcome_str(outcome))
            ),
            Touch::Evaluation(task.to_string()),
        );
    }
    fn advance_id_seq(&mut self, seq: u64) {
        // Ids come from event positions: the counter is this handle's, never shared.
        self.seq = self.seq.max(seq);
    }
}
