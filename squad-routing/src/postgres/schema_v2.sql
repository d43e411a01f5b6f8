-- squad-routing PostgresDirectory, schema version 2: the configuration version.
-- One row, bumped (by the triggers below, in the writing transaction) by every transaction that
-- changes a configuration table: workspaces, users, memberships, squads, squad_members, agents,
-- autopilots. A worker keeps the configuration rows it read across events, and uses them only
-- while the version its transaction reads equals the one they were read at.
-- A transaction bumps it once (its first such statement), however many rows it writes: the
-- versions other transactions can see still differ whenever the rows do.
CREATE TABLE IF NOT EXISTS squad_config_version (
    id boolean PRIMARY KEY DEFAULT true CHECK (id),
    version bigint NOT NULL,
    bumped_by bigint -- the transaction (txid_current()) that last bumped it
);
INSERT INTO squad_config_version (id, version) VALUES (true, 1) ON CONFLICT (id) DO NOTHING;
CREATE OR REPLACE FUNCTION squad_bump_config_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE squad_config_version SET version = version + 1, bumped_by = txid_current()
        WHERE id AND bumped_by IS DISTINCT FROM txid_current();
    RETURN NULL;
END
$$;
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['workspaces', 'users', 'memberships', 'squads', 'squad_members',
                             'agents', 'autopilots'] LOOP
        EXECUTE format('DROP TRIGGER IF EXISTS squad_config_version ON %I', t);
        EXECUTE format('CREATE TRIGGER squad_config_version AFTER INSERT OR UPDATE OR DELETE '
                       'OR TRUNCATE ON %I FOR EACH STATEMENT '
                       'EXECUTE FUNCTION squad_bump_config_version()', t);
    END LOOP;
END
$$;
