-- `fabtwin check`'s findings, created in every store and lake (collectors.store.schema.register_tables)
-- and by the check before it writes them. Table and column names are a public interface
-- (README, "Tables and views").

-- The findings of the latest `fabtwin check`, one row each (seq 1 first); each check replaces them.
CREATE TABLE IF NOT EXISTS check_findings (
    seq INTEGER NOT NULL,
    check_name VARCHAR NOT NULL,  -- rail, missing_link, extra_link, plane_shape, link_speed, ...
    severity VARCHAR NOT NULL,    -- error | warning
    entities VARCHAR,             -- JSON text: ["gpu-node-0003:eth2", "leaf-p0-01", ...]
    summary VARCHAR,
    evidence VARCHAR,             -- JSON text
    created TIMESTAMP NOT NULL
);
