-- fabtwin store: views. Recreated on every write-open; names and columns are a public interface.

-- one rate per counter sample interval (value is in canonical units). A decrease is a wrap when the previous raw value was in
-- the top half of the 32-bit range and the series never exceeded 2^32 (or in the top half of the
-- 64-bit range); any other decrease is a reset (reboot, clear counters): delta and rate are NULL
-- and `reset` is true, so a reset never shows as a huge or negative rate.
-- A series (device, ifname, metric, qualifier) is partitioned by its 64-bit hash: sorting on one
-- integer instead of four strings halves the cost (two series of 100,000 would share a hash
-- with a probability of 3e-10).
-- the increase of a counter from `prev` to `value`: a decrease is a wrap when `prev` was in the top
-- half of the 32-bit range and the series never exceeded 2^32 (or in the top half of the 64-bit
-- range); any other decrease is a reset (NULL)
CREATE OR REPLACE MACRO counter_delta(value, prev, series_max) AS CASE
    WHEN value >= prev THEN value - prev
    WHEN prev >= 2147483648 AND series_max < 4294967296 THEN value + 4294967296 - prev
    WHEN prev >= 9223372036854775808 THEN value + 18446744073709551616 - prev
END;

CREATE OR REPLACE VIEW counter_rates AS
WITH s AS (
    SELECT s.device, s.ifname, s.counter, s.qualifier, s.metric, s.ts, s.value, s.file_id, s.line,
        hash(s.device, s.ifname, s.metric, s.qualifier) AS series
    FROM samples s JOIN counters k ON s.counter = k.counter
    WHERE k.kind = 'counter' AND s.value IS NOT NULL AND isfinite(s.value)
), d AS (
    SELECT *,
        lag(value) OVER w AS prev,
        lag(ts) OVER w AS prev_ts,
        max(value) OVER (PARTITION BY series) AS series_max
    FROM s
    -- file and line break ties of ts (overlapping bundles), so every store agrees
    WINDOW w AS (PARTITION BY series ORDER BY ts, file_id, line)
), r AS (
    SELECT *, counter_delta(value, prev, series_max) AS raw_delta
    FROM d
    WHERE prev IS NOT NULL AND ts > prev_ts
)
SELECT device, ifname, counter, qualifier, metric,
    prev_ts AS ts_start, ts,
    epoch_us(ts - prev_ts) / 1e6 AS interval_s,
    raw_delta AS delta,
    raw_delta / (epoch_us(ts - prev_ts) / 1e6) AS rate,
    value < prev AND raw_delta IS NOT NULL AS wrapped,
    raw_delta IS NULL AS reset
FROM r;

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
-- counters summed here, and series and ports as 64-bit hashes through the window and the
-- grouping (names joined back at the end), which is 2x faster on big stores.
-- `port_rates_part(part, parts)`: the ports with hash(device, ifname) % parts = part; a big store's
-- rates computed a part at a time stay within memory instead of spilling.
CREATE OR REPLACE MACRO port_rates_part(part, parts) AS TABLE
WITH pm AS (
    SELECT hash(device, ifname, metric, qualifier) AS series, hash(device, ifname) AS port,
        device, ifname, counter
    FROM preferred_metrics
    WHERE counter IN ('rx_bytes', 'tx_bytes', 'rx_packets', 'tx_packets', 'ecn_marked', 'rx_pause',
        'tx_pause', 'rx_discards', 'tx_discards', 'no_buffer_drops', 'wred_drops', 'rx_errors',
        'tx_errors', 'rx_fcs_errors', 'symbol_errors')
        AND hash(device, ifname) % parts = part
), s AS (
    SELECT hash(device, ifname, metric, qualifier) AS series, ts, value, file_id, line
    FROM samples
    WHERE counter IN (SELECT DISTINCT counter FROM pm) AND value IS NOT NULL AND isfinite(value)
), d AS (
    SELECT series, ts, value, lag(value) OVER w AS prev, lag(ts) OVER w AS prev_ts,
        max(value) OVER (PARTITION BY series) AS series_max
    FROM s SEMI JOIN pm USING (series)
    WINDOW w AS (PARTITION BY series ORDER BY ts, file_id, line)
), r AS (
    SELECT series, ts, epoch_us(ts - prev_ts) / 1e6 AS interval_s,
        counter_delta(value, prev, series_max) AS delta
    FROM d WHERE prev IS NOT NULL AND ts > prev_ts
), g AS (
    SELECT port, ts, max(interval_s) AS interval_s,
        sum(delta / interval_s) FILTER (WHERE counter = 'rx_bytes')   AS rx_bytes_per_s,
        sum(delta / interval_s) FILTER (WHERE counter = 'tx_bytes')   AS tx_bytes_per_s,
        sum(delta / interval_s) FILTER (WHERE counter = 'rx_packets') AS rx_packets_per_s,
        sum(delta / interval_s) FILTER (WHERE counter = 'tx_packets') AS tx_packets_per_s,
        sum(delta / interval_s) FILTER (WHERE counter = 'ecn_marked') AS ecn_marked_per_s,
        sum(delta / interval_s) FILTER (WHERE counter = 'rx_pause')   AS rx_pause_per_s,
        sum(delta / interval_s) FILTER (WHERE counter = 'tx_pause')   AS tx_pause_per_s,
        sum(delta / interval_s) FILTER (WHERE counter IN ('rx_discards', 'tx_discards',
            'no_buffer_drops', 'wred_drops')) AS discards_per_s,
        sum(delta / interval_s) FILTER (WHERE counter IN ('rx_errors', 'tx_errors',
            'rx_fcs_errors', 'symbol_errors')) AS errors_per_s,
        bool_or(delta IS NULL) AS reset
    FROM r JOIN pm USING (series)
    GROUP BY ALL
)
SELECT p.device, p.ifname, g.ts, g.interval_s, g.rx_bytes_per_s, g.tx_bytes_per_s,
    g.rx_packets_per_s, g.tx_packets_per_s, g.ecn_marked_per_s, g.rx_pause_per_s,
    g.tx_pause_per_s, g.discards_per_s, g.errors_per_s, g.reset
FROM g JOIN (SELECT DISTINCT port, device, ifname FROM pm) p USING (port);

CREATE OR REPLACE VIEW port_rates AS SELECT * FROM port_rates_part(0, 1);

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
