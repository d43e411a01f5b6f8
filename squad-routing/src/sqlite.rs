//! [`SqliteDirectory`]: the directory in an embedded SQLite database (feature `sqlite`).
//!
//! # Schema
//!
//! Each record is stored whole, as the JSON of its `squad-model` type (`record`), next to the
//! columns the queries filter and order on. A record type that gains a field needs no migration;
//! a new query gets a column and an index. `PRAGMA user_version` holds the schema version
//! ([`SqliteDirectory::SCHEMA_VERSION`]).
//!
//! ```sql
#![doc = include_str!("sqlite_schema.sql")]
//! ```
//!
//! # The query behind each method
//!
//! | Method | Query |
//! |---|---|
//! | `workspace`, `user`, `squad`, `agent`, `comment`, `autopilot` | `SELECT record FROM <table> WHERE id = ?` |
//! | `workspace_role` | `SELECT role FROM memberships WHERE workspace_id = ? AND user_id = ?` |
//! | `squad_members` | `SELECT record FROM squad_members WHERE squad_id = ? ORDER BY seq` |
//! | `issue`, `issue_number` | `SELECT record` / `number FROM issues WHERE id = ?` |
//! | `children` | `SELECT id FROM issues WHERE child_of = ? ORDER BY child_seq` |
//! | `squad_issues` | `SELECT id FROM issues WHERE squad_id = ?` |
//! | `autopilot_issues` | `SELECT id FROM issues WHERE autopilot_id = ? ORDER BY seq` |
//! | `task` | `SELECT record FROM tasks WHERE id = ?` |
//! | `pending_task` | `... WHERE issue_id = ? AND agent_id = ? AND live AND status IN ('queued', 'dispatched') ORDER BY seq DESC LIMIT 1` |
//! | `latest_task` | `... WHERE issue_id = ? AND agent_id = ? AND live ORDER BY seq DESC LIMIT 1` |
//! | `active_tasks` | `... WHERE issue_id = ? AND live AND status NOT IN ('completed', 'failed', 'cancelled') ORDER BY seq` |
//! | `tasks_triggered_by` | `... WHERE trigger_comment_id = ? ORDER BY seq` |
//! | `squad_autopilots` | `SELECT id FROM autopilots WHERE squad_id = ? ORDER BY id` |
//! | `evaluation` | `SELECT outcome FROM evaluations WHERE task_id = ?` |
//! | `id_seq` | `meta` row `id_seq` (read once, kept in memory) |
//!
//! Writes are upserts (`INSERT ... ON CONFLICT (id) DO UPDATE`), which keep a row's `seq` and so
//! its place in every creation order. `delete_issue` deletes the row, detaches its tasks
//! (`live = 0`) and its children (`child_of = NULL`).
//!
//! # A Postgres host
//!
//! The same tables and indexes work in Postgres with `jsonb` for `record`, `bigserial` for `seq`,
//! and `ON CONFLICT` as written. What differs is how references are served: the trait lends
//! `&Squad`, `&[SquadMember]`..., so a directory must own what it returns. This one copies each row
//! it reads into an arena that lives until the next write (every write takes `&mut self`, so no
//! reference can outlive it); a Postgres host does the same, or, with a network round trip per
//! query, first loads the rows an event touches (its issue with children and tasks, the squad,
//! members and leader, the comment thread) with a few batched queries, and answers from memory.
//! Run each event in a transaction (`REPEATABLE READ`) so that the engine reads one state.
//!
//! # Errors
//!
//! The trait's methods cannot fail, so a database error is kept: a read that fails answers
//! "not found" (the reference's fail-closed reading), a write that fails is skipped, and the first
//! error is returned by [`SqliteDirectory::check`] and by [`SqliteDirectory::commit`], which then
//! rolls the transaction back: a host that commits each batch of events writes all of it or
//! nothing.

use std::cell::RefCell;
use std::path::Path;

use rusqlite::types::FromSql;
use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;
use serde::de::DeserializeOwned;
use squad_model::{
    Agent, AgentId, Assignee, Autopilot, AutopilotId, CommentId, Issue, IssueId, IssueStatus,
    MemberRef, Squad, SquadId, SquadMember, Task, TaskId, TaskStatus, UserId, WorkspaceId,
};

use crate::directory::Directory;
use crate::error::{Error, ErrorKind, Result};
use crate::records::{Comment, EvaluationOutcome, Membership, User, Workspace, WorkspaceRole};
use crate::store::{
    Cache, Table, member_key, outcome_str, parse_role, role_str, squad_of, status_str,
};

const SCHEMA: &str = include_str!("sqlite_schema.sql");

/// A [`Directory`] kept in an SQLite database: a host's squads, members, agents, issues, tasks,
/// comments and autopilots survive the process, and a later replay continues from them.
///
/// Reads are queries; the records they return live in an arena until the next write. Use
/// [`begin`](Self::begin) and [`commit`](Self::commit) around a batch of events: on disk, one
/// transaction per batch costs one sync instead of one per write. See the [module
/// documentation](self) for the schema, the query behind each method and a Postgres host.
///
/// ```
/// use squad_routing::{Directory, SqliteDirectory, Workspace};
/// use squad_model::WorkspaceId;
///
/// let mut dir = SqliteDirectory::open_in_memory()?;
/// dir.begin()?;
/// dir.put_workspace(Workspace { id: WorkspaceId::new("w1")?, name: "Acme".into(), issue_prefix: "SQ".into() });
/// dir.commit()?;
/// assert_eq!(dir.workspace(&WorkspaceId::new("w1")?).map(|w| w.name.as_str()), Some("Acme"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct SqliteDirectory {
    conn: Connection,
    cache: Cache,
    /// The first storage error since the last [`check`](Self::check).
    error: RefCell<Option<String>>,
    seq: u64,
    in_transaction: bool,
}

impl std::fmt::Debug for SqliteDirectory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteDirectory")
            .field("path", &self.conn.path())
            .field("id_seq", &self.seq)
            .field("in_transaction", &self.in_transaction)
            .finish_non_exhaustive()
    }
}

fn storage(e: impl std::fmt::Display) -> Error {
    Error::new(ErrorKind::Storage, format!("database: {e}"))
}

/// The stored `id_seq` (0 when none is stored).
fn stored_seq(conn: &Connection) -> Result<u64> {
    let seq: Option<i64> = conn
        .query_row("SELECT value FROM meta WHERE key = 'id_seq'", [], |r| {
            r.get(0)
        })
        .optional()
        .map_err(storage)?;
    Ok(seq.map_or(0, |s| s.cast_unsigned()))
}

impl SqliteDirectory {
    /// The version of the database schema this build writes (`PRAGMA user_version`).
    pub const SCHEMA_VERSION: i64 = 1;

    /// Opens (or creates) the database at `path`.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Storage`] when the file cannot be opened or is not a database of this
    /// schema (another SQLite file, or a newer schema version).
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Self::setup(Connection::open(path).map_err(storage)?)
    }

    /// A database in memory, gone when the directory is dropped.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Storage`] if SQLite cannot start.
    pub fn open_in_memory() -> Result<Self> {
        Self::setup(Connection::open_in_memory().map_err(storage)?)
    }

    fn setup(conn: Connection) -> Result<Self> {
        conn.set_prepared_statement_cache_capacity(64);
        let version: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(storage)?;
        if version > Self::SCHEMA_VERSION {
            return Err(storage(format!(
                "schema version {version} is newer than this build reads ({})",
                Self::SCHEMA_VERSION
            )));
        }
        if version == 0 {
            let tables: i64 = conn
                .query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))
                .map_err(storage)?;
            if tables > 0 {
                return Err(storage(
                    "the file holds other tables: not a squad routing database",
                ));
            }
            conn.execute_batch(SCHEMA).map_err(storage)?;
            conn.pragma_update(None, "user_version", Self::SCHEMA_VERSION)
                .map_err(storage)?;
        }
        let seq = stored_seq(&conn)?;
        Ok(Self {
            conn,
            cache: Cache::default(),
            error: RefCell::new(None),
            seq,
            in_transaction: false,
        })
    }

    /// Starts a transaction: the writes until [`commit`](Self::commit) land together.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Storage`] when a transaction is already open or SQLite refuses.
    pub fn begin(&mut self) -> Result<()> {
        if self.in_transaction {
            return Err(storage("a transaction is already open"));
        }
        self.conn.execute_batch("BEGIN").map_err(storage)?;
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
        if let Err(e) = self.check() {
            tracing::debug!(error = %e, "a write of the batch failed; rolling it back");
            self.rollback()?;
            return Err(e);
        }
        if self.in_transaction {
            self.in_transaction = false;
            self.conn.execute_batch("COMMIT").map_err(storage)?;
            tracing::debug!(id_seq = self.seq, "routing directory committed");
        }
        Ok(())
    }

    /// Rolls the open transaction back (nothing of it is written); no-op without one.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Storage`] if SQLite refuses.
    pub fn rollback(&mut self) -> Result<()> {
        self.cache.reset();
        if self.in_transaction {
            self.in_transaction = false;
            self.conn.execute_batch("ROLLBACK").map_err(storage)?;
            self.seq = stored_seq(&self.conn)?;
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
            Some(msg) => Err(Error::new(ErrorKind::Storage, msg)),
            None => Ok(()),
        }
    }

    /// Counts of records: (squads, agents, issues, tasks, comments).
    pub fn counts(&self) -> (usize, usize, usize, usize, usize) {
        let count = |table: &str| -> usize {
            let sql = format!("SELECT count(*) FROM {table}");
            self.ok(self.conn.query_row(&sql, [], |r| r.get::<_, i64>(0)))
                .and_then(|n| usize::try_from(n).ok())
                .unwrap_or(0)
        };
        (
            count("squads"),
            count("agents"),
            count("issues"),
            count("tasks"),
            count("comments"),
        )
    }

    /// Keeps the first error; `None` for any error.
    fn ok<T>(&self, r: rusqlite::Result<T>) -> Option<T> {
        match r {
            Ok(v) => Some(v),
            Err(e) => {
                self.fail(format!("database: {e}"));
                None
            }
        }
    }

    fn fail(&self, msg: String) {
        let mut slot = self.error.borrow_mut();
        if slot.is_none() {
            *slot = Some(msg);
        }
    }

    /// One row's first column: `None` when the read failed, `Some(None)` when there is no row.
    fn scalar<T: FromSql>(&self, sql: &str, args: impl rusqlite::Params) -> Option<Option<T>> {
        self.ok(self
            .conn
            .prepare_cached(sql)
            .and_then(|mut st| st.query_row(args, |r| r.get(0)).optional()))
    }

    /// One row's `record`, decoded.
    fn one<T: DeserializeOwned>(&self, sql: &str, args: impl rusqlite::Params) -> Option<T> {
        let text: String = self.scalar(sql, args)??;
        self.decode(&text)
    }

    /// The record `id` of a by-id query (`sql`, with `?1` for the id), read once into `table`
    /// until the next write.
    fn cached<'s, T: DeserializeOwned>(
        &'s self,
        table: &'s Table<T>,
        sql: &str,
        id: &str,
    ) -> Option<&'s T> {
        table.get(id, || self.one(sql, params![id]))
    }

    /// Every row's first column, decoded with `f`.
    fn all<T>(
        &self,
        sql: &str,
        args: impl rusqlite::Params,
        f: impl Fn(&Self, String) -> Option<T>,
    ) -> Vec<T> {
        let rows: Option<Vec<String>> =
            self.ok(self.conn.prepare_cached(sql).and_then(|mut st| {
                st.query_map(args, |r| r.get(0))?
                    .collect::<rusqlite::Result<Vec<String>>>()
            }));
        rows.unwrap_or_default()
            .into_iter()
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

    /// Runs a write (the read cache is dropped first: a write takes `&mut self`).
    fn exec(&mut self, sql: &str, args: impl rusqlite::Params) {
        self.cache.reset();
        let r = self
            .conn
            .prepare_cached(sql)
            .and_then(|mut st| st.execute(args));
        self.ok(r);
    }

    fn upsert_record<T: Serialize>(&mut self, table: &str, id: &str, record: &T) {
        let Some(json) = self.encode(record) else {
            return;
        };
        let sql = format!(
            "INSERT INTO {table} (id, record) VALUES (?1, ?2) \
             ON CONFLICT (id) DO UPDATE SET record = excluded.record"
        );
        self.exec(&sql, params![id, json]);
    }

    fn issue_exists(&self, id: &str) -> bool {
        self.ok(self
            .conn
            .prepare_cached("SELECT 1 FROM issues WHERE id = ?1")
            .and_then(|mut st| st.exists(params![id])))
            .unwrap_or(false)
    }
}

impl Directory for SqliteDirectory {
    fn workspace(&self, id: &WorkspaceId) -> Option<&Workspace> {
        let sql = "SELECT record FROM workspaces WHERE id = ?1";
        self.cached(&self.cache.workspaces, sql, id.as_str())
    }
    fn user(&self, id: &UserId) -> Option<&User> {
        let sql = "SELECT record FROM users WHERE id = ?1";
        self.cached(&self.cache.users, sql, id.as_str())
    }
    fn workspace_role(&self, workspace: &WorkspaceId, user: &UserId) -> Option<WorkspaceRole> {
        let role: String = self.scalar(
            "SELECT role FROM memberships WHERE workspace_id = ?1 AND user_id = ?2",
            params![workspace.as_str(), user.as_str()],
        )??;
        parse_role(&role)
    }
    fn squad(&self, id: &SquadId) -> Option<&Squad> {
        let sql = "SELECT record FROM squads WHERE id = ?1";
        self.cached(&self.cache.squads, sql, id.as_str())
    }
    fn squad_members(&self, id: &SquadId) -> &[SquadMember] {
        self.cache
            .members
            .get(id.as_str(), || {
                Some(self.all(
                    "SELECT record FROM squad_members WHERE squad_id = ?1 ORDER BY seq",
                    params![id.as_str()],
                    |s, t| s.decode(&t),
                ))
            })
            .map_or(&[], Vec::as_slice)
    }
    fn agent(&self, id: &AgentId) -> Option<&Agent> {
        let sql = "SELECT record FROM agents WHERE id = ?1";
        self.cached(&self.cache.agents, sql, id.as_str())
    }
    fn issue(&self, id: &IssueId) -> Option<&Issue> {
        let sql = "SELECT record FROM issues WHERE id = ?1";
        self.cached(&self.cache.issues, sql, id.as_str())
    }
    fn issue_number(&self, id: &IssueId) -> Option<u64> {
        let n: Option<Option<i64>> = self.scalar(
            "SELECT number FROM issues WHERE id = ?1",
            params![id.as_str()],
        )?;
        n.flatten().map(i64::cast_unsigned)
    }
    fn children(&self, parent: &IssueId) -> &[IssueId] {
        self.cache
            .id_lists
            .get(&format!("c\0{parent}"), || {
                Some(self.all(
                    "SELECT id FROM issues WHERE child_of = ?1 ORDER BY child_seq",
                    params![parent.as_str()],
                    |_, t| IssueId::new(t).ok(),
                ))
            })
            .map_or(&[], Vec::as_slice)
    }
    fn squad_issues(&self, squad: &SquadId) -> Vec<IssueId> {
        self.all(
            "SELECT id FROM issues WHERE squad_id = ?1 ORDER BY seq",
            params![squad.as_str()],
            |_, t| IssueId::new(t).ok(),
        )
    }
    fn autopilot_issues(&self, autopilot: &AutopilotId) -> &[IssueId] {
        self.cache
            .id_lists
            .get(&format!("a\0{autopilot}"), || {
                Some(self.all(
                    "SELECT id FROM issues WHERE autopilot_id = ?1 ORDER BY seq",
                    params![autopilot.as_str()],
                    |_, t| IssueId::new(t).ok(),
                ))
            })
            .map_or(&[], Vec::as_slice)
    }
    fn task(&self, id: &TaskId) -> Option<&Task> {
        let sql = "SELECT record FROM tasks WHERE id = ?1";
        self.cached(&self.cache.tasks, sql, id.as_str())
    }
    fn pending_task(&self, issue: &IssueId, agent: &AgentId) -> Option<&Task> {
        self.cache.tasks.get(&format!("p\0{issue}\0{agent}"), || {
            self.one(
                "SELECT record FROM tasks WHERE issue_id = ?1 AND agent_id = ?2 AND live = 1 \
                 AND status IN ('queued', 'dispatched') ORDER BY seq DESC LIMIT 1",
                params![issue.as_str(), agent.as_str()],
            )
        })
    }
    fn latest_task(&self, issue: &IssueId, agent: &AgentId) -> Option<&Task> {
        self.cache.tasks.get(&format!("l\0{issue}\0{agent}"), || {
            self.one(
                "SELECT record FROM tasks WHERE issue_id = ?1 AND agent_id = ?2 AND live = 1 \
                 ORDER BY seq DESC LIMIT 1",
                params![issue.as_str(), agent.as_str()],
            )
        })
    }
    fn active_tasks(&self, issue: &IssueId) -> Vec<&Task> {
        self.cache
            .task_lists
            .get(&format!("a\0{issue}"), || {
                Some(self.all(
                    "SELECT record FROM tasks WHERE issue_id = ?1 AND live = 1 \
                     AND status NOT IN ('completed', 'failed', 'cancelled') ORDER BY seq",
                    params![issue.as_str()],
                    |s, t| s.decode(&t),
                ))
            })
            .map_or_else(Vec::new, |v| v.iter().collect())
    }
    fn comment(&self, id: &CommentId) -> Option<&Comment> {
        let sql = "SELECT record FROM comments WHERE id = ?1";
        self.cached(&self.cache.comments, sql, id.as_str())
    }
    fn tasks_triggered_by(&self, comment: &CommentId) -> Vec<&Task> {
        self.cache
            .task_lists
            .get(&format!("t\0{comment}"), || {
                Some(self.all(
                    "SELECT record FROM tasks WHERE trigger_comment_id = ?1 ORDER BY seq",
                    params![comment.as_str()],
                    |s, t| s.decode(&t),
                ))
            })
            .map_or_else(Vec::new, |v| v.iter().collect())
    }
    fn autopilot(&self, id: &AutopilotId) -> Option<&Autopilot> {
        let sql = "SELECT record FROM autopilots WHERE id = ?1";
        self.cached(&self.cache.autopilots, sql, id.as_str())
    }
    fn squad_autopilots(&self, squad: &SquadId) -> Vec<AutopilotId> {
        self.all(
            "SELECT id FROM autopilots WHERE squad_id = ?1 ORDER BY id",
            params![squad.as_str()],
            |_, t| AutopilotId::new(t).ok(),
        )
    }
    fn evaluation(&self, task: &TaskId) -> Option<EvaluationOutcome> {
        let o: String = self.scalar(
            "SELECT outcome FROM evaluations WHERE task_id = ?1",
            params![task.as_str()],
        )??;
        EvaluationOutcome::parse(&o)
    }
    fn id_seq(&self) -> u64 {
        self.seq
    }

    fn put_workspace(&mut self, workspace: Workspace) {
        self.upsert_record("workspaces", workspace.id.as_str(), &workspace);
    }
    fn put_user(&mut self, user: User) {
        self.upsert_record("users", user.id.as_str(), &user);
    }
    fn put_membership(&mut self, m: Membership) {
        self.exec(
            "INSERT INTO memberships (workspace_id, user_id, role) VALUES (?1, ?2, ?3) \
             ON CONFLICT (workspace_id, user_id) DO UPDATE SET role = excluded.role",
            params![
                m.workspace_id.as_str(),
                m.user_id.as_str(),
                role_str(m.role)
            ],
        );
    }
    fn put_squad(&mut self, squad: Squad) {
        self.upsert_record("squads", squad.id.as_str(), &squad);
    }
    fn put_member(&mut self, member: SquadMember) {
        let Some(json) = self.encode(&member) else {
            return;
        };
        self.exec(
            "INSERT INTO squad_members (squad_id, member_key, record) VALUES (?1, ?2, ?3) \
             ON CONFLICT (squad_id, member_key) DO UPDATE SET record = excluded.record",
            params![member.squad_id.as_str(), member_key(&member.member), json],
        );
    }
    fn remove_member(&mut self, squad: &SquadId, member: &MemberRef) {
        self.exec(
            "DELETE FROM squad_members WHERE squad_id = ?1 AND member_key = ?2",
            params![squad.as_str(), member_key(member)],
        );
    }
    fn put_agent(&mut self, agent: Agent) {
        self.upsert_record("agents", agent.id.as_str(), &agent);
    }
    fn put_issue(&mut self, issue: Issue) {
        let Some(json) = self.encode(&issue) else {
            return;
        };
        let id = issue.id.as_str();
        let parent = issue.parent_issue_id.as_ref().map(IssueId::as_str);
        let squad = squad_of(issue.assignee.as_ref());
        // None: the read failed; Some(None): a new issue; Some(Some(parent)): a stored one.
        let old_parent: Option<Option<Option<String>>> = self.scalar(
            "SELECT parent_issue_id FROM issues WHERE id = ?1",
            params![id],
        );
        let Some(old_parent) = old_parent else {
            return;
        };
        // Listed under its parent only when the parent is stored (as the trait says); a new
        // parent puts it last among the children.
        let child_of = parent.filter(|p| self.issue_exists(p));
        match old_parent {
            None => {
                let autopilot = issue
                    .origin
                    .as_ref()
                    .filter(|o| o.kind == "autopilot")
                    .and_then(|o| o.id.as_deref());
                self.exec(
                    "INSERT INTO issues (id, parent_issue_id, child_of, child_seq, squad_id, \
                     autopilot_id, record) VALUES (?1, ?2, ?3, \
                     (SELECT coalesce(max(child_seq), 0) + 1 FROM issues), ?4, ?5, ?6)",
                    params![id, parent, child_of, squad, autopilot, json],
                );
            }
            Some(old) if old.as_deref() != parent => {
                self.exec(
                    "UPDATE issues SET parent_issue_id = ?2, child_of = ?3, \
                     child_seq = (SELECT coalesce(max(child_seq), 0) + 1 FROM issues), \
                     squad_id = ?4, record = ?5 WHERE id = ?1",
                    params![id, parent, child_of, squad, json],
                );
            }
            Some(_) => {
                self.exec(
                    "UPDATE issues SET squad_id = ?2, record = ?3 WHERE id = ?1",
                    params![id, squad, json],
                );
            }
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
        let squad = squad_of(issue.assignee.as_ref());
        self.exec(
            "UPDATE issues SET squad_id = ?2, record = ?3 WHERE id = ?1",
            params![id.as_str(), squad, json],
        );
    }
    fn set_issue_number(&mut self, id: &IssueId, number: u64) {
        self.exec(
            "UPDATE issues SET number = ?2 WHERE id = ?1",
            params![id.as_str(), number.cast_signed()],
        );
    }
    fn delete_issue(&mut self, id: &IssueId) {
        if !self.issue_exists(id.as_str()) {
            return;
        }
        self.exec("DELETE FROM issues WHERE id = ?1", params![id.as_str()]);
        self.exec(
            "UPDATE tasks SET live = 0 WHERE issue_id = ?1",
            params![id.as_str()],
        );
        self.exec(
            "UPDATE issues SET child_of = NULL WHERE child_of = ?1",
            params![id.as_str()],
        );
    }
    fn put_task(&mut self, task: Task) {
        let Some(json) = self.encode(&task) else {
            return;
        };
        let issue = task.issue_id.as_ref().map(IssueId::as_str);
        // A task counts for its issue only if the issue is stored (an upsert keeps `live`).
        let live = issue.is_some_and(|i| self.issue_exists(i));
        self.exec(
            "INSERT INTO tasks (id, issue_id, agent_id, status, trigger_comment_id, live, record) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) \
             ON CONFLICT (id) DO UPDATE SET issue_id = excluded.issue_id, \
             agent_id = excluded.agent_id, status = excluded.status, \
             trigger_comment_id = excluded.trigger_comment_id, record = excluded.record",
            params![
                task.id.as_str(),
                issue,
                task.agent_id.as_str(),
                status_str(task.status),
                task.trigger_comment_id.as_ref().map(CommentId::as_str),
                live,
                json
            ],
        );
    }
    fn set_task_status(&mut self, id: &TaskId, status: TaskStatus) {
        let Some(mut task) = self.task(id).cloned() else {
            return;
        };
        task.status = status;
        let Some(json) = self.encode(&task) else {
            return;
        };
        self.exec(
            "UPDATE tasks SET status = ?2, record = ?3 WHERE id = ?1",
            params![id.as_str(), status_str(status), json],
        );
    }
    fn put_comment(&mut self, comment: Comment) {
        self.upsert_record("comments", comment.id.as_str(), &comment);
    }
    fn put_autopilot(&mut self, autopilot: Autopilot) {
        let Some(json) = self.encode(&autopilot) else {
            return;
        };
        self.exec(
            "INSERT INTO autopilots (id, squad_id, record) VALUES (?1, ?2, ?3) \
             ON CONFLICT (id) DO UPDATE SET squad_id = excluded.squad_id, \
             record = excluded.record",
            params![
                autopilot.id.as_str(),
                squad_of(autopilot.assignee.as_ref()),
                json
            ],
        );
    }
    fn put_evaluation(&mut self, task: TaskId, outcome: EvaluationOutcome) {
        self.exec(
            "INSERT INTO evaluations (task_id, outcome) VALUES (?1, ?2) \
             ON CONFLICT (task_id) DO UPDATE SET outcome = excluded.outcome",
            params![task.as_str(), outcome_str(outcome)],
        );
    }
    fn advance_id_seq(&mut self, seq: u64) {
        if seq <= self.seq {
            return;
        }
        self.seq = seq;
        self.exec(
            "INSERT INTO meta (key, value) VALUES ('id_seq', ?1) \
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            params![seq.cast_signed()],
        );
    }
}
