-- fabtwin store: raw tables. Names and columns are a public interface (see README).
-- All timestamps are UTC (TIMESTAMP, microsecond precision).
CREATE SEQUENCE IF NOT EXISTS file_id_seq START 1;

CREATE TABLE IF NOT EXISTS files (
    file_id      INTEGER PRIMARY KEY,
    path         VARCHAR NOT NULL,   -- as given on the command line, bundle-relative part last
    bundle       VARCHAR,
    sha256       VARCHAR NOT NULL,
    size_bytes   BIGINT,
    parser       VARCHAR,            -- NULL when skipped
    family       VARCHAR,
    status       VARCHAR NOT NULL,   -- loaded | skipped
    reason       VARCHAR,            -- why a file was skipped
    records_read BIGINT NOT NULL DEFAULT 0,
    loaded       BIGINT NOT NULL DEFAULT 0,
    rejected     BIGINT NOT NULL DEFAULT 0,
    rows_written BIGINT NOT NULL DEFAULT 0,
    ingested_at  TIMESTAMP NOT NULL DEFAULT current_timestamp,
    -- where the times of a loaded file's rows came from: sample (the file's own) | manifest |
    -- cli (--time) | boot_time (dmesg uptime + boot time) | mtime (the file's modification
    -- time: a guess, named in the ingest summary)
    time_source  VARCHAR
);
-- stores made before time_source
ALTER TABLE files ADD COLUMN IF NOT EXISTS time_source VARCHAR;

CREATE TABLE IF NOT EXISTS rejects (
    file_id INTEGER, path VARCHAR, line BIGINT, reason VARCHAR, raw VARCHAR
);

-- canonical counters (collectors/data/canonical_counters.csv)
CREATE TABLE IF NOT EXISTS counters (
    counter VARCHAR PRIMARY KEY, kind VARCHAR NOT NULL, unit VARCHAR, description VARCHAR
);

-- (parser family, vendor counter name) -> canonical counter (collectors/data/counter_map_*.csv)
CREATE TABLE IF NOT EXISTS counter_map (
    family VARCHAR NOT NULL, vendor_name VARCHAR NOT NULL, canonical VARCHAR NOT NULL,
    kind VARCHAR NOT NULL, scale DOUBLE NOT NULL, source VARCHAR,
    PRIMARY KEY (family, vendor_name)
);

-- numeric samples, long form. `metric` is the vendor name as received; `counter` the canonical
-- name (NULL if unmapped); `value` is in the canonical unit (the map's scale applied, 1 for
-- nearly every counter).
-- `prev_gap_us`, `prev_delta`: microseconds and increase since the previous finite sample of the
-- same series (device, ifname, metric, qualifier) in the same load batch, in (ts, line) order;
-- NULL for the batch's first sample of the series and after a decrease (a wrap or a reset: the
-- rates views pair those with the series' other samples). `is_tail`: the last sample of such a
-- run (NULL: unknown, read as true). They let the rates views pair samples without a window over
-- the whole table (views.sql); rows written without them (other tools, older stores, lakes) are
-- paired by the window, so they only cost speed.
CREATE TABLE IF NOT EXISTS samples (
    ts TIMESTAMP NOT NULL, device VARCHAR NOT NULL, ifname VARCHAR NOT NULL,
    counter VARCHAR, metric VARCHAR NOT NULL, qualifier VARCHAR NOT NULL,
    value DOUBLE, file_id INTEGER, line BIGINT,
    prev_gap_us BIGINT, prev_delta DOUBLE, is_tail BOOLEAN
);
ALTER TABLE samples ADD COLUMN IF NOT EXISTS prev_gap_us BIGINT;
ALTER TABLE samples ADD COLUMN IF NOT EXISTS prev_delta DOUBLE;
ALTER TABLE samples ADD COLUMN IF NOT EXISTS is_tail BOOLEAN;

CREATE TABLE IF NOT EXISTS text_samples (
    ts TIMESTAMP NOT NULL, device VARCHAR NOT NULL, ifname VARCHAR NOT NULL,
    metric VARCHAR NOT NULL, qualifier VARCHAR NOT NULL, value VARCHAR,
    file_id INTEGER, line BIGINT
);

CREATE TABLE IF NOT EXISTS events (
    ts TIMESTAMP NOT NULL, device VARCHAR NOT NULL, ifname VARCHAR NOT NULL,
    kind VARCHAR NOT NULL, message VARCHAR, file_id INTEGER, line BIGINT
);

CREATE TABLE IF NOT EXISTS logs (
    ts TIMESTAMP NOT NULL, device VARCHAR NOT NULL, program VARCHAR, message VARCHAR,
    file_id INTEGER, line BIGINT
);

CREATE TABLE IF NOT EXISTS neighbors (
    device VARCHAR NOT NULL, ifname VARCHAR NOT NULL, peer_device VARCHAR NOT NULL,
    peer_ifname VARCHAR NOT NULL, peer_mgmt_ip VARCHAR, file_id INTEGER, line BIGINT
);

CREATE TABLE IF NOT EXISTS addresses (
    address VARCHAR NOT NULL, device VARCHAR NOT NULL, file_id INTEGER, line BIGINT
);

CREATE TABLE IF NOT EXISTS ifmap (
    host VARCHAR NOT NULL, ibdev VARCHAR NOT NULL, port INTEGER, netdev VARCHAR NOT NULL,
    state VARCHAR, file_id INTEGER, line BIGINT
);

CREATE TABLE IF NOT EXISTS jobs (
    job_id VARCHAR NOT NULL, tenant VARCHAR, start TIMESTAMP, "end" TIMESTAMP, state VARCHAR,
    nodelist VARCHAR, file_id INTEGER, line BIGINT
);

CREATE TABLE IF NOT EXISTS job_hosts (job_id VARCHAR NOT NULL, host VARCHAR NOT NULL, file_id INTEGER);

-- The tables replay writes (its results) are replay's own: replay/sql/results.sql,
-- registered with the store by replay.results (collectors.store.schema.register_tables).
