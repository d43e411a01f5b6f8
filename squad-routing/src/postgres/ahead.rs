//! Reading ahead: the records an event (or a trace's entities) will read, fetched in the round
//! trip that begins its transaction and kept as that transaction's reads.

use std::collections::{HashMap, HashSet};

use postgres::{SimpleQueryMessage, SimpleQueryRow};
use squad_model::{Issue, IssueId, SquadMember, Task, TaskId};

use super::{Lit, PostgresDirectory};
use crate::event::Event;
use crate::records::EvaluationOutcome;
use crate::store::Table;
use crate::trace::TraceLine;

/// What to read ahead: records by id, the members of squads, and (`lists`) the live tasks of
/// the issues named and of the named tasks' issues (the active ones and each agent's latest).
#[derive(Default)]
pub(super) struct Ahead {
    issues: Vec<String>,
    tasks: Vec<String>,
    comments: Vec<String>,
    workspaces: Vec<String>,
    users: Vec<String>,
    squads: Vec<String>,
    agents: Vec<String>,
    autopilots: Vec<String>,
    member_squads: Vec<String>,
    lists: bool,
}

/// One read-ahead statement: what its rows are.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Stmt {
    Issues,
    Family,
    Evaluations,
    Tasks,
    Comments,
    Workspaces,
    Users,
    Squads,
    Agents,
    Autopilots,
    Members,
    Lists,
}

/// `ids` as an SQL list of literals.
fn lit_list(ids: &[String]) -> String {
    let mut out = String::new();
    for (i, id) in ids.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(&Lit(id).to_string());
    }
    out
}

/// `ids` without repeats (first occurrence kept) and without ids holding NUL (never sent: read
/// one by one, and refused there).
fn clean(ids: &[String]) -> Vec<String> {
    let mut seen = HashSet::new();
    ids.iter()
        .filter(|s| !s.contains('\0') && seen.insert(s.as_str()))
        .cloned()
        .collect()
}

/// The rows of each statement of a simple-query answer, in order.
pub(super) fn rows_by_statement(messages: &[SimpleQueryMessage]) -> Vec<Vec<&SimpleQueryRow>> {
    let mut out = vec![Vec::new()];
    for m in messages {
        match m {
            SimpleQueryMessage::CommandComplete(_) => out.push(Vec::new()),
            SimpleQueryMessage::Row(row) => {
                if let Some(last) = out.last_mut() {
                    last.push(row);
                }
            }
            _ => {}
        }
    }
    out
}

impl Ahead {
    /// The tasks named, as evaluations are keyed (lower case) and as named.
    fn evaluation_keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = self.tasks.clone();
        keys.extend(self.tasks.iter().map(|t| t.to_ascii_lowercase()));
        clean(&keys)
    }

    /// What `event` names.
    pub(super) fn of(event: &Event) -> Self {
        let mut a = Self {
            lists: true,
            ..Self::default()
        };
        let issue = |a: &mut Self, id: &IssueId| a.issues.push(id.as_str().to_owned());
        let task = |a: &mut Self, id: Option<&TaskId>| {
            if let Some(t) = id {
                a.tasks.push(t.as_str().to_owned());
            }
        };
        match event {
            Event::CreateIssue(e) => {
                issue(&mut a, &e.issue_id);
                if let Some(p) = &e.parent_issue_id {
                    issue(&mut a, p);
                }
                task(&mut a, e.task_id.as_ref());
            }
            Event::UpdateIssue(e) => {
                issue(&mut a, &e.issue_id);
                task(&mut a, e.task_id.as_ref());
            }
            Event::BatchUpdate(e) => {
                for i in &e.issue_ids {
                    issue(&mut a, i);
                }
                task(&mut a, e.task_id.as_ref());
            }
            Event::DeleteIssue(e) => issue(&mut a, &e.issue_id),
            Event::Comment(e) => {
                issue(&mut a, &e.issue_id);
                task(&mut a, e.task_id.as_ref());
                a.comments.push(e.comment_id.as_str().to_owned());
                if let Some(p) = &e.parent_id {
                    a.comments.push(p.as_str().to_owned());
                }
            }
            Event::RecordEvaluation(e) => {
                issue(&mut a, &e.issue_id);
                if let Some(t) = &e.task_id {
                    a.tasks.push(t.clone());
                }
            }
            Event::TaskStatus(e) => task(&mut a, Some(&e.task_id)),
            Event::Claim(e) => task(&mut a, Some(&e.task_id)),
            _ => {}
        }
        a
    }

    /// What loading `entities` reads: each record's own id (is it new?) and the ids it refers
    /// to (do they exist?).
    pub(super) fn of_entities<'a>(entities: impl IntoIterator<Item = &'a TraceLine>) -> Self {
        let mut a = Self::default();
        for e in entities {
            match e {
                TraceLine::Workspace(w) => a.workspaces.push(w.id.to_string()),
                TraceLine::User(u) => a.users.push(u.id.to_string()),
                TraceLine::Membership(m) => {
                    a.workspaces.push(m.workspace_id.to_string());
                    a.users.push(m.user_id.to_string());
                }
                TraceLine::Agent(ag) => {
                    a.agents.push(ag.id.to_string());
                    a.workspaces.push(ag.workspace_id.to_string());
                }
                TraceLine::Squad(s) => {
                    a.squads.push(s.id.to_string());
                    a.workspaces.push(s.workspace_id.to_string());
                }
                TraceLine::Member(m) => {
                    a.squads.push(m.squad_id.to_string());
                    a.member_squads.push(m.squad_id.to_string());
                }
                TraceLine::Issue(r) => {
                    a.issues.push(r.issue.id.to_string());
                    a.workspaces.push(r.issue.workspace_id.to_string());
                    if let Some(p) = &r.issue.parent_issue_id {
                        a.issues.push(p.to_string());
                    }
                }
                TraceLine::Task(t) => {
                    a.tasks.push(t.id.to_string());
                    a.agents.push(t.agent_id.to_string());
                    if let Some(i) = &t.issue_id {
                        a.issues.push(i.to_string());
                    }
                }
                TraceLine::Comment(c) => {
                    a.comments.push(c.id.to_string());
                    a.issues.push(c.issue_id.to_string());
                }
                TraceLine::Autopilot(ap) => {
                    a.autopilots.push(ap.id.to_string());
                    a.workspaces.push(ap.workspace_id.to_string());
                }
                TraceLine::SchemaVersion { .. } | TraceLine::Event { .. } => {}
            }
        }
        a.issues = clean(&a.issues);
        a.tasks = clean(&a.tasks);
        a.comments = clean(&a.comments);
        a.workspaces = clean(&a.workspaces);
        a.users = clean(&a.users);
        a.squads = clean(&a.squads);
        a.agents = clean(&a.agents);
        a.autopilots = clean(&a.autopilots);
        a.member_squads = clean(&a.member_squads);
        a
    }

    /// Appends the read-ahead statements to `sql`, each after a `;`; their kinds, in order.
    pub(super) fn sql(&self, sql: &mut String) -> Vec<Stmt> {
        let mut kinds = Vec::new();
        if self.lists {
            // An event's: the statements prepared on every connection ([`PREPARED`]).
            let (issues, tasks) = (clean(&self.issues), clean(&self.tasks));
            let (issues_arr, tasks_arr) = (lit_array(&issues), lit_array(&tasks));
            if !issues.is_empty() {
                sql.push_str(&format!("; EXECUTE squad_family({issues_arr})"));
                kinds.push(Stmt::Family);
            }
            if !tasks.is_empty() {
                let keys = lit_array(&self.evaluation_keys());
                sql.push_str(&format!(
                    "; EXECUTE squad_tasks({tasks_arr}); EXECUTE squad_evaluations({keys})"
                ));
                kinds.push(Stmt::Tasks);
                kinds.push(Stmt::Evaluations);
            }
            let comments = clean(&self.comments);
            if !comments.is_empty() {
                sql.push_str(&format!(
                    "; EXECUTE squad_comments({})",
                    lit_array(&comments)
                ));
                kinds.push(Stmt::Comments);
            }
            if !issues.is_empty() || !tasks.is_empty() {
                sql.push_str(&format!(
                    "; EXECUTE squad_task_lists({issues_arr}, {tasks_arr})"
                ));
                kinds.push(Stmt::Lists);
            }
            return kinds;
        }
        // A trace's entities, once: plain statements.
        let by_id = [
            (Stmt::Issues, "issues", &self.issues),
            (Stmt::Tasks, "tasks", &self.tasks),
            (Stmt::Comments, "comments", &self.comments),
            (Stmt::Workspaces, "workspaces", &self.workspaces),
            (Stmt::Users, "users", &self.users),
            (Stmt::Squads, "squads", &self.squads),
            (Stmt::Agents, "agents", &self.agents),
            (Stmt::Autopilots, "autopilots", &self.autopilots),
        ];
        for (kind, table, ids) in by_id {
            let ids = clean(ids);
            if !ids.is_empty() {
                sql.push_str(&format!(
                    "; SELECT id, record::text FROM {table} WHERE id IN ({})",
                    lit_list(&ids)
                ));
                kinds.push(kind);
            }
        }
        let squads = clean(&self.member_squads);
        if !squads.is_empty() {
            sql.push_str(&format!(
                "; SELECT squad_id, record::text FROM squad_members WHERE squad_id IN ({}) \
                 ORDER BY seq",
                lit_list(&squads)
            ));
            kinds.push(Stmt::Members);
        }
        kinds
    }
}

/// `ids` as an SQL `text[]` value.
fn lit_array(ids: &[String]) -> String {
    format!("ARRAY[{}]::text[]", lit_list(ids))
}

/// The read-ahead statements of an event, prepared once per connection (a statement run with
/// `EXECUTE` is not parsed and planned again). Arrays of ids, compared with `= ANY`, so that the
/// indexes serve.
pub(super) const PREPARED: &[&str] = &[
    // The issues named, their parents and their parents' children (siblings), with their
    // numbers, in the order of the parents' child lists.
    "PREPARE squad_family(text[]) AS \
     SELECT id, record::text, number::text, child_of FROM issues \
     WHERE id = ANY($1 || ARRAY(SELECT parent_issue_id FROM issues \
                                WHERE id = ANY($1) AND parent_issue_id IS NOT NULL)) \
        OR child_of = ANY(ARRAY(SELECT parent_issue_id FROM issues \
                                WHERE id = ANY($1) AND parent_issue_id IS NOT NULL)) \
     ORDER BY child_seq",
    "PREPARE squad_tasks(text[]) AS SELECT id, record::text FROM tasks WHERE id = ANY($1)",
    "PREPARE squad_evaluations(text[]) AS \
     SELECT task_id, outcome FROM evaluations WHERE task_id = ANY($1)",
    "PREPARE squad_comments(text[]) AS \
     SELECT id, record::text FROM comments WHERE id = ANY($1)",
    // The live tasks of the issues named, of their parents and of the named tasks' issues: the
    // active ones and each agent's latest, in creation order.
    "PREPARE squad_task_lists(text[], text[]) AS \
     SELECT issue_id, record::text, active, latest FROM ( \
       SELECT issue_id, record, seq, \
              status NOT IN ('completed', 'failed', 'cancelled') AS active, \
              seq = max(seq) OVER (PARTITION BY issue_id, agent_id) AS latest \
       FROM tasks WHERE live AND issue_id = ANY( \
         $1 || ARRAY(SELECT parent_issue_id FROM issues \
                     WHERE id = ANY($1) AND parent_issue_id IS NOT NULL) \
            || ARRAY(SELECT t.issue_id FROM tasks t \
                     WHERE t.id = ANY($2) AND t.issue_id IS NOT NULL))) x \
     WHERE active OR latest ORDER BY seq",
];

impl PostgresDirectory {
    /// Reads ahead what `ahead` names, in one round trip (inside the open transaction).
    pub(super) fn read_ahead(&mut self, ahead: &Ahead) -> Result<(), postgres::Error> {
        let mut sql = String::new();
        let stmts = ahead.sql(&mut sql);
        if stmts.is_empty() {
            return Ok(());
        }
        self.trip();
        let messages = self
            .client
            .get_mut()
            .simple_query(sql.trim_start_matches("; "))?;
        let rows = rows_by_statement(&messages);
        self.fill_ahead(ahead, &stmts, &rows);
        Ok(())
    }

    /// Keeps what was read ahead as this transaction's reads (an id not found is kept as
    /// absent); `rows` holds each statement's rows, in `stmts`' order.
    pub(super) fn fill_ahead(&self, ahead: &Ahead, stmts: &[Stmt], rows: &[Vec<&SimpleQueryRow>]) {
        let mut list_issues = clean(&ahead.issues);
        for (kind, rows) in stmts.iter().zip(rows) {
            let pairs: HashMap<&str, &str> = rows
                .iter()
                .filter_map(|r| Some((r.get(0)?, r.get(1)?)))
                .collect();
            match kind {
                Stmt::Issues => self.keep(&self.cache.issues, &ahead.issues, &pairs),
                Stmt::Family => {
                    for r in rows {
                        let Some(id) = r.get(0) else { continue };
                        let issue = r.get(1).and_then(|t| self.decode::<Issue>(t));
                        let number = r.get(2).and_then(|n| n.parse::<u64>().ok());
                        self.cache.issues.insert(id, issue);
                        self.cache.numbers.insert(id, number);
                    }
                    let mut parents = Vec::new();
                    for id in &ahead.issues {
                        if !pairs.contains_key(id.as_str()) {
                            self.cache.issues.insert(id, None);
                            self.cache.numbers.insert(id, None);
                        }
                        if let Some(Some(issue)) = self.cache.issues.peek(id)
                            && let Some(p) = &issue.parent_issue_id
                            && !parents.contains(p)
                        {
                            parents.push(p.clone());
                        }
                    }
                    for p in parents {
                        let children: Vec<IssueId> = rows
                            .iter()
                            .filter(|r| r.get(3) == Some(p.as_str()))
                            .filter_map(|r| IssueId::new(r.get(0)?).ok())
                            .collect();
                        self.cache
                            .id_lists
                            .insert(&format!("c\0{p}"), Some(children));
                        if !list_issues.iter().any(|l| l == p.as_str()) {
                            list_issues.push(p.to_string());
                        }
                    }
                }
                Stmt::Evaluations => {
                    for id in ahead.evaluation_keys() {
                        let outcome = pairs
                            .get(id.as_str())
                            .and_then(|o| EvaluationOutcome::parse(o));
                        self.cache.evaluations.insert(&id, outcome);
                    }
                }
                Stmt::Comments => self.keep(&self.cache.comments, &ahead.comments, &pairs),
                Stmt::Workspaces => {
                    let t = self.config_table(&self.config.workspaces, &self.cache.workspaces);
                    self.keep(t, &ahead.workspaces, &pairs);
                }
                Stmt::Users => {
                    let t = self.config_table(&self.config.users, &self.cache.users);
                    self.keep(t, &ahead.users, &pairs);
                }
                Stmt::Squads => {
                    let t = self.config_table(&self.config.squads, &self.cache.squads);
                    self.keep(t, &ahead.squads, &pairs);
                }
                Stmt::Agents => {
                    let t = self.config_table(&self.config.agents, &self.cache.agents);
                    self.keep(t, &ahead.agents, &pairs);
                }
                Stmt::Autopilots => {
                    let t = self.config_table(&self.config.autopilots, &self.cache.autopilots);
                    self.keep(t, &ahead.autopilots, &pairs);
                }
                Stmt::Tasks => {
                    for id in &ahead.tasks {
                        let task: Option<Task> =
                            pairs.get(id.as_str()).and_then(|t| self.decode(t));
                        if let Some(i) = task.as_ref().and_then(|t| t.issue_id.as_ref())
                            && !list_issues.iter().any(|l| l == i.as_str())
                        {
                            list_issues.push(i.as_str().to_owned());
                        }
                        self.cache.tasks.insert(id, task);
                    }
                }
                Stmt::Members => {
                    let mut by_squad: HashMap<&str, Vec<SquadMember>> = HashMap::new();
                    for r in rows {
                        let (Some(squad), Some(text)) = (r.get(0), r.get(1)) else {
                            continue;
                        };
                        if let Some(m) = self.decode(text) {
                            by_squad.entry(squad).or_default().push(m);
                        }
                    }
                    let t = self.config_table(&self.config.members, &self.cache.members);
                    for squad in &ahead.member_squads {
                        t.insert(
                            squad,
                            Some(by_squad.remove(squad.as_str()).unwrap_or_default()),
                        );
                    }
                }
                Stmt::Lists => {
                    let mut active: HashMap<&str, Vec<Task>> = HashMap::new();
                    let mut latest: HashMap<&str, Vec<Task>> = HashMap::new();
                    for r in rows {
                        let (Some(issue), Some(text)) = (r.get(0), r.get(1)) else {
                            continue;
                        };
                        let Some(task) = self.decode::<Task>(text) else {
                            continue;
                        };
                        if r.get(2) == Some("t") {
                            active.entry(issue).or_default().push(task.clone());
                        }
                        if r.get(3) == Some("t") {
                            latest.entry(issue).or_default().push(task);
                        }
                    }
                    for issue in &list_issues {
                        let a = active.remove(issue.as_str()).unwrap_or_default();
                        let l = latest.remove(issue.as_str()).unwrap_or_default();
                        self.cache
                            .task_lists
                            .insert(&format!("a\0{issue}"), Some(a));
                        self.cache
                            .task_lists
                            .insert(&format!("L\0{issue}"), Some(l));
                    }
                }
            }
        }
    }

    /// Keeps the record of each of `ids` found in `pairs` (id to record text), or its absence.
    fn keep<T: serde::de::DeserializeOwned>(
        &self,
        table: &Table<T>,
        ids: &[String],
        pairs: &HashMap<&str, &str>,
    ) {
        for id in ids {
            let record = pairs.get(id.as_str()).and_then(|t| self.decode(t));
            table.insert(id, record);
        }
    }
}
