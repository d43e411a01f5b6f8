-- squad-routing SqliteDirectory, schema version 1 (PRAGMA user_version).
-- `record` holds the row's squad-model record as JSON; the other columns are what queries use.
-- `seq` orders rows by creation; an upsert keeps it.
CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE workspaces (id TEXT PRIMARY KEY, record TEXT NOT NULL);
CREATE TABLE users (id TEXT PRIMARY KEY, record TEXT NOT NULL);
CREATE TABLE memberships (
    workspace_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    role TEXT NOT NULL,
    PRIMARY KEY (workspace_id, user_id)
);
CREATE TABLE squads (id TEXT PRIMARY KEY, record TEXT NOT NULL);
CREATE TABLE squad_members (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    squad_id TEXT NOT NULL,
    member_key TEXT NOT NULL, -- 'agent:<id>' or 'member:<id>'
    record TEXT NOT NULL,
    UNIQUE (squad_id, member_key)
);
CREATE TABLE agents (id TEXT PRIMARY KEY, record TEXT NOT NULL);
CREATE TABLE issues (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    parent_issue_id TEXT,
    child_of TEXT,      -- the parent it is listed under (stored when the child was put)
    child_seq INTEGER,  -- its place among the parent's children
    squad_id TEXT,      -- the assignee, when a squad
    autopilot_id TEXT,  -- the autopilot it came from
    number INTEGER,
    record TEXT NOT NULL
);
CREATE INDEX issues_child_of ON issues (child_of, child_seq);
CREATE INDEX issues_squad ON issues (squad_id);
CREATE INDEX issues_autopilot ON issues (autopilot_id, seq);
CREATE TABLE tasks (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    issue_id TEXT,
    agent_id TEXT NOT NULL,
    status TEXT NOT NULL,
    trigger_comment_id TEXT,
    live INTEGER NOT NULL, -- 0 once its issue is deleted (or when put before its issue)
    record TEXT NOT NULL
);
CREATE INDEX tasks_issue_agent ON tasks (issue_id, agent_id, seq);
CREATE INDEX tasks_trigger ON tasks (trigger_comment_id, seq);
CREATE TABLE comments (id TEXT PRIMARY KEY, record TEXT NOT NULL);
CREATE TABLE autopilots (id TEXT PRIMARY KEY, squad_id TEXT, record TEXT NOT NULL);
CREATE INDEX autopilots_squad ON autopilots (squad_id, id);
CREATE TABLE evaluations (task_id TEXT PRIMARY KEY, outcome TEXT NOT NULL);
