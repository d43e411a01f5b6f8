-- squad-routing PostgresDirectory, schema version 1 (squad_schema_version).
CREATE TABLE workspaces (id text PRIMARY KEY, record jsonb NOT NULL);
CREATE TABLE users (id text PRIMARY KEY, record jsonb NOT NULL);
CREATE TABLE memberships (
    workspace_id text NOT NULL,
    user_id text NOT NULL,
    role text NOT NULL,
    PRIMARY KEY (workspace_id, user_id)
);
CREATE TABLE squads (id text PRIMARY KEY, record jsonb NOT NULL);
CREATE TABLE squad_members (
    seq bigserial NOT NULL,
    squad_id text NOT NULL,
    member_key text NOT NULL, -- 'agent:<id>' or 'member:<id>'
    record jsonb NOT NULL,
    PRIMARY KEY (squad_id, member_key)
);
CREATE TABLE agents (id text PRIMARY KEY, record jsonb NOT NULL);
CREATE SEQUENCE issues_child_seq;
CREATE TABLE issues (
    id text PRIMARY KEY,
    seq bigserial NOT NULL,
    parent_issue_id text,
    child_of text,      -- the parent it is listed under (stored when the child was put)
    child_seq bigint,   -- its place among the parent's children
    squad_id text,      -- the assignee, when a squad
    autopilot_id text,  -- the autopilot it came from
    number bigint,
    record jsonb NOT NULL
);
CREATE INDEX issues_child_of ON issues (child_of, child_seq);
CREATE INDEX issues_squad ON issues (squad_id);
CREATE INDEX issues_autopilot ON issues (autopilot_id, seq);
CREATE TABLE tasks (
    id text PRIMARY KEY,
    seq bigserial NOT NULL,
    issue_id text,
    agent_id text NOT NULL,
    status text NOT NULL,
    trigger_comment_id text,
    live boolean NOT NULL, -- false once its issue is deleted (or when put before its issue)
    record jsonb NOT NULL
);
CREATE INDEX tasks_issue_agent ON tasks (issue_id, agent_id, seq);
CREATE INDEX tasks_trigger ON tasks (trigger_comment_id, seq);
-- At most one pending (queued or dispatched) task per (issue, agent): the schema refuses a second
-- one whatever the code does, so two workers racing cannot both enqueue.
CREATE UNIQUE INDEX tasks_one_pending ON tasks (issue_id, agent_id)
    WHERE live AND status IN ('queued', 'dispatched');
CREATE TABLE comments (id text PRIMARY KEY, record jsonb NOT NULL);
CREATE TABLE autopilots (id text PRIMARY KEY, squad_id text, record jsonb NOT NULL);
CREATE INDEX autopilots_squad ON autopilots (squad_id, id);
CREATE TABLE evaluations (task_id text PRIMARY KEY, outcome text NOT NULL);
-- Events already handled, by position (epoch << 32 | 1-based event index), with the decision
-- line they printed: handling an event again prints that line and changes nothing.
CREATE TABLE processed_events (position bigint PRIMARY KEY, output text NOT NULL);
-- Traces replayed into the database, by digest: a rerun of one continues it (same epoch, its
-- entities loaded once).
CREATE TABLE squad_replays (
    epoch integer PRIMARY KEY CHECK (epoch BETWEEN 0 AND 65535),
    digest text NOT NULL UNIQUE,
    entities_loaded boolean NOT NULL DEFAULT false
);
