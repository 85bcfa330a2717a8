-- fabtwin store: views. Recreated on every write-open; names and columns are a public interface.

-- one rate per counter sample interval (value is in canonical units). A decrease is a wrap when
-- the counter was near the top of the 32-bit range at its own pace and the series never exceeded
-- 2^32, or in the top half of the 64-bit range (`counter_delta`); any other decrease is a reset
-- (reboot, clear counters): delta and rate are NULL and `reset` is true, so a reset never shows
-- as a huge or negative rate.
-- A series (device, ifname, metric, qualifier) is partitioned by its 64-bit hash: sorting on one
-- integer instead of four strings halves the cost (two series of 100,000 would share a hash
-- with a probability of 3e-10).
-- the increase of a counter from `prev` to `value`, `step` being the series' increase over the
-- interval before `prev` (NULL, the default, where unknown). A decrease is a 32-bit wrap only
-- when the series never exceeded 2^32 and `prev` was within two steps of 2^32 at the counter's
-- own pace (its previous step, or `value`, counted since the wrap, where that is more): at
-- that pace (a rate at most doubling from one interval to the next) it had to wrap before the
-- next read. A 64-bit counter cleared while below 2^32 (writer3's clears: 3.6e9 packets, 1.5e8
-- a step, to 2.3e7) is not near the top at its pace: read as a wrap it gave 4.7x the
-- interval's true increase. A decrease from the top half of the 64-bit range is a 64-bit wrap;
-- any other decrease is a reset or a clear: NULL (unknown), so a clear never shows as a huge
-- or negative rate, and a real wrap of a rate that jumped is one interval unknown, never a
-- bogus rate.
CREATE OR REPLACE MACRO counter_delta(value, prev, series_max, step := NULL) AS CASE
    WHEN value >= prev THEN value - prev
    WHEN series_max < 4294967296 AND prev >= 2147483648
         AND 4294967296 - prev <= 2 * greatest(step, value) THEN value + 4294967296 - prev
    WHEN prev >= 9223372036854775808 THEN value + 18446744073709551616 - prev
END;

-- Consecutive samples of a series, without a window over the whole table. Ingest stores with a
-- sample the gap and the increase since the series' previous sample in the same load batch
-- (prev_gap_us, prev_delta), within runs that end at the batch's end and before any decrease
-- (a wrap or a reset); `is_tail` marks a run's last sample (NULL is read as true). A run's
-- first sample (a "head") is paired with the sample before it through a window over the heads
-- and tails only: that sample is the previous run's tail while a series' runs do not overlap
-- in (ts, file_id, line) order, which the same window checks: a head right after another run's
-- head that is not also its tail means the runs interleave, and such a series ("mixed") is
-- paired by a window over all its samples. Rows without stored gaps are each a head and a
-- tail, so they are paired by the window: correct, only slower. Every decrease is at a head,
-- and a series' maximum (the wrap rule needs it) is one of its tails.
-- `rate_samples(counters)`: the finite samples of these counters, series as a 64-bit hash.
CREATE OR REPLACE MACRO rate_samples(counters) AS TABLE
SELECT hash(device, ifname, metric, qualifier) AS series, hash(device, ifname) AS port, counter,
    ts, value, file_id, line, prev_gap_us, prev_delta, prev_gap_us IS NULL AS head,
    is_tail IS NOT FALSE AS tail
FROM samples
WHERE counter IN (SELECT unnest(counters)) AND value IS NOT NULL AND isfinite(value);

-- `sample_deltas(counters)`: one row per sample that has a predecessor earlier than it: the
-- increase over the interval (NULL: a reset), wraps added back.
CREATE OR REPLACE MACRO sample_deltas(counters) AS TABLE
WITH s AS NOT MATERIALIZED (FROM rate_samples(counters)),
c AS (
    SELECT series, port, counter, ts, value, file_id, line, head, tail,
        lag(ts) OVER w AS prev_ts, lag(value) OVER w AS prev_value,
        -- the increase into the previous row (a run's tail): stored with it, or (a tail that
        -- is also a head) from the row before it, the tail of the run before
        coalesce(lag(prev_delta) OVER w, lag(value) OVER w - lag(value, 2) OVER w) AS prev_step,
        lag(head AND NOT tail) OVER w AS after_open_head
    FROM s WHERE head OR tail
    WINDOW w AS (PARTITION BY series ORDER BY ts, file_id, line)
), mixed AS (SELECT DISTINCT series FROM c WHERE head AND after_open_head),
heads AS (
    SELECT series, port, counter, ts, file_id, line, value, head, prev_ts, prev_value, prev_step,
        max(value) FILTER (WHERE tail) OVER (PARTITION BY series) AS series_max
    FROM c WHERE series NOT IN (SELECT series FROM mixed)
), w AS (
    SELECT series, port, counter, ts, file_id, line, value,
        lag(ts) OVER o AS prev_ts, lag(value) OVER o AS prev_value,
        lag(value) OVER o - lag(value, 2) OVER o AS prev_step,
        max(value) OVER (PARTITION BY series) AS series_max
    FROM s SEMI JOIN mixed USING (series)
    WINDOW o AS (PARTITION BY series ORDER BY ts, file_id, line)
), paired AS (
    SELECT series, port, counter, ts, file_id, line, prev_ts,
        counter_delta(value, prev_value, series_max, prev_step) AS delta, value < prev_value AS fell
    FROM heads WHERE head AND prev_ts IS NOT NULL
    UNION ALL
    SELECT series, port, counter, ts, file_id, line, prev_ts,
        counter_delta(value, prev_value, series_max, prev_step), value < prev_value
    FROM w WHERE prev_ts IS NOT NULL
)
SELECT series, port, counter, file_id, line, ts - to_microseconds(prev_gap_us) AS ts_start, ts,
    prev_gap_us / 1e6 AS interval_s, prev_delta AS delta, false AS wrapped, false AS reset
FROM s WHERE NOT head AND prev_gap_us > 0 AND series NOT IN (SELECT series FROM mixed)
UNION ALL
SELECT series, port, counter, file_id, line, prev_ts, ts, epoch_us(ts - prev_ts) / 1e6, delta,
    fell AND delta IS NOT NULL, delta IS NULL
FROM paired WHERE ts > prev_ts;

CREATE OR REPLACE VIEW counter_rates AS
WITH names AS (
    SELECT DISTINCT hash(device, ifname, metric, qualifier) AS series, device, ifname, qualifier,
        metric
    FROM samples WHERE counter IN (SELECT counter FROM counters WHERE kind = 'counter')
)
SELECT n.device, n.ifname, d.counter, n.qualifier, n.metric, d.ts_start, d.ts, d.interval_s,
    d.delta, d.delta / d.interval_s AS rate, d.wrapped, d.reset
FROM sample_deltas((SELECT list(counter) FROM counters WHERE kind = 'counter')) d
JOIN names n USING (series);

-- one source per port and counter: a host may report its bytes through node_exporter, ethtool
-- and RDMA counters at once; the metric with the most samples wins (ties: alphabetical)
CREATE OR REPLACE VIEW preferred_metrics AS
SELECT device, ifname, counter, qualifier, metric
FROM (
    SELECT device, ifname, counter, qualifier, metric, count(*) AS n
    FROM samples WHERE counter IS NOT NULL
    GROUP BY device, ifname, counter, qualifier, metric
)
QUALIFY row_number() OVER (PARTITION BY device, ifname, counter, qualifier ORDER BY n DESC, metric) = 1;

-- per-port rates, one row per port and sample time (queues and priorities summed, one source
-- per counter: see preferred_metrics). The same rates as counter_rates, computed narrow: only the
-- counters summed here, series as 64-bit hashes and ports as dense integer codes through the
-- joins and the grouping (names joined back at the end). The preferred source is counted per
-- series hash rather than per five strings, and each row carries its column's code (`k`) rather
-- than its counter's name: 37.2-44.7 against 47.1-49.4 s of CPU on the 256-switch hour
-- (each twice, alternated, load 5-12).
-- `port_rates_part(part, parts)`: the ports with hash(device, ifname) % parts = part; a big store's
-- rates computed a part at a time stay within memory instead of spilling.
CREATE OR REPLACE MACRO port_rates_part(part, parts) AS TABLE
WITH n AS (  -- preferred_metrics' count, per series and counter
    SELECT hash(device, ifname, metric, qualifier) AS series, counter, count(*) AS n,
        any_value(device) AS device, any_value(ifname) AS ifname, any_value(metric) AS metric,
        any_value(qualifier) AS qualifier
    FROM samples
    WHERE counter IN ('rx_bytes', 'tx_bytes', 'rx_packets', 'tx_packets', 'ecn_marked', 'rx_pause',
        'tx_pause', 'rx_discards', 'tx_discards', 'no_buffer_drops', 'wred_drops', 'rx_errors',
        'tx_errors', 'rx_fcs_errors', 'symbol_errors')
    GROUP BY series, counter
), pm AS (  -- the preferred series
    SELECT DISTINCT series, device, ifname FROM (
        FROM n WHERE hash(device, ifname) % parts = part
        QUALIFY row_number() OVER (PARTITION BY device, ifname, counter, qualifier
                                   ORDER BY n DESC, metric) = 1)
), codes AS (  -- their ports, as dense integer codes
    SELECT device, ifname, (row_number() OVER () - 1)::INTEGER AS pc
    FROM (SELECT DISTINCT device, ifname FROM pm)
), sk AS (  -- each counter of a preferred series, with the code of the column it sums into
    SELECT n.series, n.counter, c.pc, (CASE n.counter
        WHEN 'rx_bytes' THEN 0 WHEN 'tx_bytes' THEN 1 WHEN 'rx_packets' THEN 2
        WHEN 'tx_packets' THEN 3 WHEN 'ecn_marked' THEN 4 WHEN 'rx_pause' THEN 5
        WHEN 'tx_pause' THEN 6 WHEN 'rx_discards' THEN 7 WHEN 'tx_discards' THEN 7
        WHEN 'no_buffer_drops' THEN 7 WHEN 'wred_drops' THEN 7 WHEN 'rx_errors' THEN 8
        WHEN 'tx_errors' THEN 8 WHEN 'rx_fcs_errors' THEN 8 WHEN 'symbol_errors' THEN 8 END
        )::UTINYINT AS k
    FROM n SEMI JOIN pm USING (series) JOIN codes c USING (device, ifname)
), d AS (
    SELECT sk.pc, sk.k, d.ts, d.interval_s, d.delta / d.interval_s AS rate,
        d.delta IS NULL AS no_delta
    FROM sample_deltas(['rx_bytes', 'tx_bytes', 'rx_packets', 'tx_packets', 'ecn_marked',
        'rx_pause', 'tx_pause', 'rx_discards', 'tx_discards', 'no_buffer_drops', 'wred_drops',
        'rx_errors', 'tx_errors', 'rx_fcs_errors', 'symbol_errors']) d
    JOIN sk USING (series, counter)
), g AS (
    SELECT pc, ts, max(interval_s) AS interval_s,
        sum(rate) FILTER (WHERE k = 0) AS rx_bytes_per_s,
        sum(rate) FILTER (WHERE k = 1) AS tx_bytes_per_s,
        sum(rate) FILTER (WHERE k = 2) AS rx_packets_per_s,
        sum(rate) FILTER (WHERE k = 3) AS tx_packets_per_s,
        sum(rate) FILTER (WHERE k = 4) AS ecn_marked_per_s,
        sum(rate) FILTER (WHERE k = 5) AS rx_pause_per_s,
        sum(rate) FILTER (WHERE k = 6) AS tx_pause_per_s,
        sum(rate) FILTER (WHERE k = 7) AS discards_per_s,
        sum(rate) FILTER (WHERE k = 8) AS errors_per_s,
        bool_or(no_delta) AS reset,
        -- each byte and packet counter's own interval: where a read missed one counter, the
        -- next read's rate of it spans both intervals and `interval_s` (the longest) is its
        max(interval_s) FILTER (WHERE k = 0) AS rx_bytes_s,
        max(interval_s) FILTER (WHERE k = 1) AS tx_bytes_s,
        max(interval_s) FILTER (WHERE k = 2) AS rx_packets_s,
        max(interval_s) FILTER (WHERE k = 3) AS tx_packets_s
    FROM d GROUP BY pc, ts
)
-- after the public columns: the port's code (dense within a part) and the counters' intervals
SELECT c.device, c.ifname, g.ts, g.interval_s, g.rx_bytes_per_s, g.tx_bytes_per_s,
    g.rx_packets_per_s, g.tx_packets_per_s, g.ecn_marked_per_s, g.rx_pause_per_s,
    g.tx_pause_per_s, g.discards_per_s, g.errors_per_s, g.reset, g.pc, g.rx_bytes_s,
    g.tx_bytes_s, g.rx_packets_s, g.tx_packets_s
FROM g JOIN codes c USING (pc);

CREATE OR REPLACE VIEW port_rates AS
SELECT device, ifname, ts, interval_s, rx_bytes_per_s, tx_bytes_per_s, rx_packets_per_s,
    tx_packets_per_s, ecn_marked_per_s, rx_pause_per_s, tx_pause_per_s, discards_per_s,
    errors_per_s, reset
FROM port_rates_part(0, 1);

-- the latest value of every gauge and state (speed, oper status, queue depth) per port
CREATE OR REPLACE VIEW port_gauges AS
SELECT s.device, s.ifname, s.counter, s.qualifier,
    arg_max(s.value, s.ts) AS value, max(s.ts) AS ts
FROM samples s JOIN counters k ON s.counter = k.counter
WHERE k.kind IN ('gauge', 'state')
GROUP BY ALL;

-- link state changes from events and oper-status samples, repeated states folded
CREATE OR REPLACE VIEW link_state_changes AS
WITH obs AS (
    SELECT device, ifname, ts, CASE WHEN kind = 'link_up' THEN 'up' ELSE 'down' END AS state,
        'event' AS source
    FROM events WHERE kind IN ('link_up', 'link_down')
    UNION ALL
    SELECT device, ifname, ts, CASE WHEN value = 1 THEN 'up' ELSE 'down' END AS state,
        'counter' AS source
    FROM samples WHERE counter IN ('oper_status', 'link_up')
), o AS (
    SELECT *, lag(state) OVER (PARTITION BY device, ifname ORDER BY ts, source) AS prev_state
    FROM obs
)
SELECT device, ifname, device || ':' || ifname AS port_id, ts, state, source
FROM o WHERE prev_state IS NULL OR prev_state <> state;

CREATE OR REPLACE VIEW link_state_intervals AS
SELECT device, ifname, port_id, state, ts AS start,
    lead(ts) OVER (PARTITION BY device, ifname ORDER BY ts) AS "end",
    epoch_us(lead(ts) OVER (PARTITION BY device, ifname ORDER BY ts) - ts) / 1e6 AS duration_s,
    source
FROM link_state_changes;

-- cables, one row per link whichever end reported it (design section 3 link ids)
CREATE OR REPLACE VIEW links AS
WITH ends AS (
    SELECT device || ':' || ifname AS a, peer_device || ':' || peer_ifname AS b, file_id
    FROM neighbors
)
SELECT least(a, b) || '--' || greatest(a, b) AS link_id,
    least(a, b) AS port_a, greatest(a, b) AS port_b,
    split_part(least(a, b), ':', 1) AS device_a, split_part(greatest(a, b), ':', 1) AS device_b,
    count(*) AS reports
FROM ends GROUP BY ALL;

CREATE OR REPLACE VIEW devices AS
SELECT device, min(first_seen) AS first_seen, max(last_seen) AS last_seen, sum(n)::BIGINT AS samples
FROM (
    SELECT device, min(ts) AS first_seen, max(ts) AS last_seen, count(*) AS n FROM samples GROUP BY 1
    UNION ALL SELECT device, min(ts), max(ts), 0 FROM events GROUP BY 1
    UNION ALL SELECT device, NULL, NULL, 0 FROM neighbors GROUP BY 1
    UNION ALL SELECT host, NULL, NULL, 0 FROM job_hosts GROUP BY 1
) GROUP BY device;

CREATE OR REPLACE VIEW ports AS
SELECT device, ifname, device || ':' || ifname AS port_id, min(ts) AS first_seen,
    max(ts) AS last_seen, count(*) AS samples, count(DISTINCT counter) AS counters
FROM samples GROUP BY device, ifname;

-- which vendor names arrived without a canonical mapping (candidates for counter_map.csv)
CREATE OR REPLACE VIEW unmapped_metrics AS
SELECT metric, count(*) AS samples, count(DISTINCT device) AS devices
FROM samples WHERE counter IS NULL GROUP BY metric;

-- one row per job. `jobs` keeps a row per file line that lists a job (the raw listing, owned by
-- its file: a grown file's new version replaces only its own rows), so the same job comes twice
-- when a bundle carries both sacct and squeue (or two captures). The view merges them field by
-- field: each field from the first row that gives it, rows ranked sacct / --json over squeue's
-- table (whose start is the collection time minus its elapsed TIME, and whose end is unknown),
-- then a row that knows the end, then the file ingested last. A state from a row that did not
-- know the job's end is not kept beside that end (squeue's RUNNING of a job sacct saw finish).
-- `source` names the parser of the first-ranked row, `start_source` the one whose start was kept,
-- `rows` how many rows there were; `nodes_file_id` is the file whose node list was kept: its
-- `job_hosts` rows are the job's hosts (`job_span_hosts`).
CREATE OR REPLACE VIEW job_spans AS
WITH ranked AS (
    SELECT j.*, f.parser AS source,
        bool_or(j."end" IS NOT NULL) OVER (PARTITION BY j.job_id) AS ended,
        row_number() OVER (PARTITION BY j.job_id ORDER BY (f.parser = 'squeue_table') ASC NULLS LAST,
                           (j."end" IS NULL) ASC, j.file_id DESC, j.line DESC) AS pick
    FROM jobs j LEFT JOIN files f USING (file_id)
)
SELECT job_id,
    coalesce(arg_min(tenant, pick) FILTER (WHERE coalesce(tenant, '') <> ''),
             arg_min(tenant, pick)) AS tenant,
    arg_min(start, pick) FILTER (WHERE start IS NOT NULL) AS start,
    arg_min("end", pick) FILTER (WHERE "end" IS NOT NULL) AS "end",
    coalesce(arg_min(state, pick) FILTER (WHERE coalesce(state, '') <> ''
                                          AND ("end" IS NOT NULL OR NOT ended)),
             arg_min(state, pick) FILTER (WHERE "end" IS NOT NULL OR NOT ended)) AS state,
    coalesce(arg_min(nodelist, pick) FILTER (WHERE coalesce(nodelist, '') <> ''),
             arg_min(nodelist, pick)) AS nodelist,
    arg_min(source, pick) AS source, count(*) AS rows,
    arg_min(file_id, pick) AS file_id, arg_min(line, pick) AS line,
    arg_min(source, pick) FILTER (WHERE start IS NOT NULL) AS start_source,
    arg_min(file_id, pick) FILTER (WHERE coalesce(nodelist, '') <> '') AS nodes_file_id
FROM ranked GROUP BY job_id;

-- the hosts of each job of `job_spans`, once each: those its kept node list's file names (sacct
-- over squeue, as the view ranks them), not the union of every listing
CREATE OR REPLACE VIEW job_span_hosts AS
SELECT DISTINCT s.job_id, h.host
FROM job_spans s JOIN job_hosts h ON h.job_id = s.job_id AND h.file_id = s.nodes_file_id;
