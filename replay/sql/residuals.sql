-- Conservation residuals (replay/residuals.py fills link_residuals and switch_residuals with
-- these; `{n_win}` is the number of replay windows, `{window_s}` their length and `{span_s}`
-- the replay's span in seconds). A rate row whose interval saw a counter reset or clear
-- (`reset`) counts nowhere: the window of that port is marked instead of being guessed.

-- per port and replay window: what it sent and received in the window's own seconds. A sample
-- interval that straddles a window boundary counts in each window for the share of its seconds
-- that falls there (the cumulative counter interpolated at the boundary), so both ends of a
-- cable count over the same seconds whatever their sampling phase and cadence; a missing sample
-- widens one interval, a duplicate adds none. `secs`: the seconds the port's intervals cover.
-- name: port_windows
CREATE OR REPLACE TEMP TABLE _resid_ports AS
WITH r AS (
    SELECT device, ifname, ts, interval_s, coalesce(reset, false) AS reset,
        epoch_us(ts - $t_from) / 1e6 AS t1, epoch_us(ts - $t_from) / 1e6 - interval_s AS t0,
        tx_bytes_per_s, rx_bytes_per_s, tx_packets_per_s, rx_packets_per_s,
        coalesce(errors_per_s, 0) AS errors_per_s, coalesce(discards_per_s, 0) AS discards_per_s,
        coalesce(tx_pause_per_s, 0) AS tx_pause_per_s
    FROM port_rates
    WHERE ts > $t_from AND ts - to_microseconds(CAST(interval_s * 1e6 AS BIGINT)) < $t_to
        AND interval_s > 0
), first AS (SELECT r.*, floor(t0 / {window_s})::BIGINT AS w0 FROM r),
split AS (  -- each interval over the windows it overlaps: seconds of overlap `o`. The windows
    -- are w0 + k for k up to the most any interval spans (a cross join with that few rows:
    -- a lateral unnest of each interval's range was planned as a hash join on (t0, t1))
    SELECT f.*, w, least(t1, (w + 1) * {window_s}, {span_s}) - greatest(t0, w * {window_s}, 0) AS o
    FROM (SELECT f.*, w0 + k AS w FROM first f,
              range((SELECT coalesce(max(floor(t1 / {window_s})::BIGINT - w0), 0) + 1 FROM first))
              AS u(k)) f
    WHERE w >= 0 AND w < {n_win} AND w <= floor(t1 / {window_s})
)
SELECT device || ':' || ifname AS port, device, w,
    -- a read that carried none of the byte and packet counters (only queue or pause paths
    -- arrived at that time) covers no second of them: its interval is the next read's
    sum(o) FILTER (WHERE NOT reset AND coalesce(tx_bytes_per_s, rx_bytes_per_s, tx_packets_per_s,
                                                rx_packets_per_s) IS NOT NULL) AS secs,
    -- and per counter, the seconds of the rows that carry it: where a read missed one counter
    -- (its update never arrived) the next read's rate of it spans both intervals, and that
    -- row's interval (the longest of its counters') counts the other counters' last interval
    -- again; over their own seconds each counter's sum is a time-weighted mean rate, where
    -- the port's seconds gave a deficit of the missed interval's share (14% of a 60 s window
    -- for one 10 s read: writer3 seed 600 w3_039, a healthy bundle, z 55)
    sum(o) FILTER (WHERE NOT reset AND tx_bytes_per_s IS NOT NULL) AS tx_bytes_secs,
    sum(o) FILTER (WHERE NOT reset AND rx_bytes_per_s IS NOT NULL) AS rx_bytes_secs,
    sum(o) FILTER (WHERE NOT reset AND tx_packets_per_s IS NOT NULL) AS tx_packets_secs,
    sum(o) FILTER (WHERE NOT reset AND rx_packets_per_s IS NOT NULL) AS rx_packets_secs,
    bool_or(reset) AS reset, count(*) AS samples,
    median(interval_s) AS sample_s,
    -- the quantum of the port's timestamps (a scrape stamped in ms, `date -Iseconds` in s): a
    -- boundary interpolated between reads can be off by that much of the port's traffic
    CASE WHEN bool_and(epoch_us(ts) % 1000000 = 0) THEN 1.0
         WHEN bool_and(epoch_us(ts) % 1000 = 0) THEN 1e-3 ELSE 1e-6 END AS quantum_s,
    sum(tx_bytes_per_s * o) FILTER (WHERE NOT reset) AS tx_bytes,
    sum(rx_bytes_per_s * o) FILTER (WHERE NOT reset) AS rx_bytes,
    sum(tx_packets_per_s * o) FILTER (WHERE NOT reset) AS tx_packets,
    sum(rx_packets_per_s * o) FILTER (WHERE NOT reset) AS rx_packets,
    sum(errors_per_s * o) AS errors, sum(discards_per_s * o) AS discards,
    sum(tx_pause_per_s * o) AS tx_pause,
    least({window_s}, {span_s} - w * {window_s}) AS window_secs,
    min(t0) AS first_t, max(t1) AS last_t  -- the port's first and last read around the window
FROM split WHERE o > 0
GROUP BY ALL;

-- per port and window boundary b (at b x {window_s} s): the port's sent rate over one sample
-- interval either side of the boundary (each interval counted for the seconds it overlaps).
-- Ends that read a few seconds apart (clock skew, polling phase, an exporter's cache) count
-- what passed between their reads at one end only: at most that offset (bounded by the sample
-- interval) times the rate there, which cancels over a window unless the rate at its two
-- boundaries differs. Averaged over two sample intervals: a step at a seconds (< S) before a
-- boundary moves at most a x step, and S x the average's change is (S + a) / 2 x step, so
-- steps and ramps stay bounded, while a read's own jitter (which the bundle's MAD measures)
-- weighs half of what it would in one interval's rate.
-- name: port_edges
CREATE OR REPLACE TEMP TABLE _resid_edges AS
WITH r AS (
    SELECT device || ':' || ifname AS port, interval_s,
        epoch_us(ts - $t_from) / 1e6 AS t1, epoch_us(ts - $t_from) / 1e6 - interval_s AS t0,
        tx_packets_per_s, tx_bytes_per_s
    FROM port_rates
    WHERE ts > $t_from AND ts - to_microseconds(CAST(interval_s * 1e6 AS BIGINT)) < $t_to
        AND interval_s > 0 AND NOT coalesce(reset, false)
), s AS (SELECT port, median(interval_s) AS s FROM r GROUP BY port),
first AS (SELECT r.*, s.s AS s, ceil((t0 - s.s) / {window_s})::BIGINT AS b0 FROM r JOIN s USING (port)),
o AS (  -- the boundaries b0 + k within a sample interval of each interval (as port_windows)
    SELECT port, b, tx_packets_per_s, tx_bytes_per_s,
        least(t1, b * {window_s} + s) - greatest(t0, b * {window_s} - s) AS o
    FROM (SELECT f.*, b0 + k AS b FROM first f,
              range((SELECT coalesce(max(floor((t1 + s) / {window_s})::BIGINT - b0), 0) + 1
                     FROM first)) AS u(k)) f
    WHERE b >= 0 AND b <= {n_win} AND b <= floor((t1 + s) / {window_s})
)
SELECT port, b,
    sum(tx_packets_per_s * o) / nullif(sum(o) FILTER (WHERE tx_packets_per_s IS NOT NULL), 0)
        AS packets_per_s,
    sum(tx_bytes_per_s * o) / nullif(sum(o) FILTER (WHERE tx_bytes_per_s IS NOT NULL), 0)
        AS bytes_per_s
FROM o WHERE o > 0
GROUP BY ALL;

-- per link, direction and window: the sender's tx against the receiver's rx. The deficit is on
-- packets where both ends count them (bytes differ between vendors by what they count of a
-- frame's header and FCS; a packet is a packet), else on bytes. `sample_s`: the coarser end's
-- sampling interval (the noise of a window's two averages grows with it). `rate_change`: how
-- much the sent rate differs between the window's two boundaries, as a share of the window's
-- (`_resid_edges`: the sender's rate within a sample interval of each); two devices' counters read
-- up to a sample interval apart (skew, polling phase, an exporter's cache) disagree over a
-- window by at most that offset times this change. `granularity`: the relative deficit the
-- counters' resolution alone could show: one whole packet per read at each end, and one
-- timestamp quantum of traffic per end (`quantum_s`: a boundary interpolated between reads
-- stamped in ms or in s is off by up to that much).
-- name: link_residuals
INSERT INTO link_residuals
WITH dirs AS (
    SELECT link_id, port_a AS tx_port, port_b AS rx_port FROM links
    UNION ALL SELECT link_id, port_b, port_a FROM links
), speed AS (  -- line rate per port where it reports one (bytes/s)
    SELECT device || ':' || ifname AS port, max(value) / 8 AS bytes_per_s FROM samples
    WHERE counter = 'port_speed_bps' AND value > 0 GROUP BY ALL
), win AS (SELECT range AS w FROM range({n_win})),
grid AS (SELECT * FROM dirs, win),
seen AS (SELECT DISTINCT port FROM _resid_ports),
reads AS (SELECT port, min(first_t) AS first_t, max(last_t) AS last_t FROM _resid_ports GROUP BY port),
j AS (
    SELECT g.w, g.link_id, g.tx_port, g.rx_port,
        s.secs AS s_secs, r.secs AS r_secs, coalesce(s.window_secs, r.window_secs) AS s_window,
        s.reset OR r.reset AS reset,
        s.tx_bytes / s.tx_bytes_secs AS sent_bytes, r.rx_bytes / r.rx_bytes_secs AS recv_bytes,
        s.tx_packets / s.tx_packets_secs AS sent_packets,
        r.rx_packets / r.rx_packets_secs AS recv_packets,
        (r.errors + r.discards + s.discards) AS errors, s.tx_pause / s.secs AS sender_pause,
        s.samples + r.samples AS samples, greatest(s.sample_s, r.sample_s) AS sample_s,
        g.tx_port IN (SELECT port FROM seen) AS tx_seen,
        g.rx_port IN (SELECT port FROM seen) AS rx_seen,
        least((SELECT bytes_per_s FROM speed WHERE port = g.tx_port),
              (SELECT bytes_per_s FROM speed WHERE port = g.rx_port)) AS line_rate,
        s.quantum_s + r.quantum_s AS quantum_s,
        least(g.w * {window_s} - greatest(sf.first_t, rf.first_t),
              least(sf.last_t, rf.last_t) - g.w * {window_s}
              - coalesce(s.window_secs, r.window_secs)) AS edge_s,
        abs(e1 - e0) / nullif(cur, 0) AS rate_change
    FROM (SELECT g.*, coalesce(s.tx_packets / s.tx_packets_secs, s.tx_bytes / s.tx_bytes_secs) AS cur,
                 coalesce(e0.packets_per_s, e0.bytes_per_s) AS e0,
                 coalesce(e1.packets_per_s, e1.bytes_per_s) AS e1
          FROM grid g
          LEFT JOIN _resid_ports s ON s.port = g.tx_port AND s.w = g.w
          LEFT JOIN _resid_edges e0 ON e0.port = g.tx_port AND e0.b = g.w
          LEFT JOIN _resid_edges e1 ON e1.port = g.tx_port AND e1.b = g.w + 1) g
    LEFT JOIN _resid_ports s ON s.port = g.tx_port AND s.w = g.w
    LEFT JOIN _resid_ports r ON r.port = g.rx_port AND r.w = g.w
    LEFT JOIN reads sf ON sf.port = g.tx_port
    LEFT JOIN reads rf ON rf.port = g.rx_port
    WHERE g.tx_port IN (SELECT port FROM seen) OR g.rx_port IN (SELECT port FROM seen)
), k AS (
    SELECT *, CASE WHEN sent_packets IS NOT NULL AND recv_packets IS NOT NULL THEN 'packets'
                   WHEN sent_bytes IS NOT NULL AND recv_bytes IS NOT NULL THEN 'bytes' END AS basis
    FROM j
)
SELECT $t0 + to_microseconds(CAST(round(w * $window_us) AS BIGINT)) AS window_start,
    least($t_to, $t0 + to_microseconds(CAST(round((w + 1) * $window_us) AS BIGINT))) AS window_end,
    link_id, tx_port, rx_port, sent_bytes AS sent_bytes_per_s, recv_bytes AS received_bytes_per_s,
    sent_packets AS sent_packets_per_s, recv_packets AS received_packets_per_s,
    sent_bytes - recv_bytes AS deficit_bytes_per_s,
    sent_packets - recv_packets AS deficit_packets_per_s,
    CASE basis WHEN 'packets' THEN (sent_packets - recv_packets) / nullif(sent_packets, 0)
               WHEN 'bytes' THEN (sent_bytes - recv_bytes) / nullif(sent_bytes, 0) END AS deficit_ratio,
    basis, sample_s, rate_change,
    CASE WHEN coalesce(sent_packets, sent_bytes) > 0
         THEN (CASE WHEN basis = 'packets' THEN samples / sent_packets ELSE 0 END + quantum_s)
              / least(s_secs, r_secs) END AS granularity,
    errors / least(s_secs, r_secs) AS errors_per_s, sender_pause AS sender_pause_per_s,
    CASE WHEN NOT tx_seen THEN 'sender_silent'
         WHEN NOT rx_seen THEN 'receiver_silent'
         WHEN reset THEN 'reset'
         -- an end that covers less of the window (before its first sample, a long gap): the
         -- two averages would be over different seconds
         WHEN s_secs IS NULL OR r_secs IS NULL OR least(s_secs, r_secs) < 0.9 * s_window
         THEN 'partial'
         WHEN basis IS NULL THEN 'uncounted'
         -- frames of fewer than 60 bytes on average: a packet counter's clear read as a
         -- 32-bit wrap (byte counters pass 2^32 in a second at these speeds), not traffic
         WHEN sent_bytes < 60 * sent_packets OR recv_bytes < 60 * recv_packets THEN 'impossible'
         -- under 1% of the line rate, control frames (LLDP, ARP) that one end's unicast
         -- counter leaves out are a visible share: no basis for a loss rate
         WHEN coalesce(sent_packets, sent_bytes) = 0 OR sent_bytes < 0.01 * line_rate THEN 'idle'
         ELSE 'ok' END AS status,
    edge_s
FROM k;

-- per switch and window: everything its ports received against everything they sent (a
-- switch keeps no traffic); only where every port it reports counted the whole window
-- name: switch_residuals
INSERT INTO switch_residuals
WITH sw AS (
    SELECT device FROM _resid_ports
    EXCEPT SELECT device FROM {hosts}
), p AS (
    SELECT device, w, count(*) AS ports, bool_or(reset OR secs IS NULL) AS reset,
        count(*) < any_value(n_ports) AS partial,
        sum(rx_packets / rx_packets_secs) AS in_packets, sum(tx_packets / tx_packets_secs) AS out_packets,
        sum(rx_bytes / rx_bytes_secs) AS in_bytes, sum(tx_bytes / tx_bytes_secs) AS out_bytes,
        sum(discards / secs) AS discards
    FROM _resid_ports JOIN (SELECT device, count(DISTINCT port) AS n_ports FROM _resid_ports
                            GROUP BY device) USING (device)
    WHERE device IN (SELECT device FROM sw) GROUP BY device, w
)
SELECT $t0 + to_microseconds(CAST(round(w * $window_us) AS BIGINT)) AS window_start,
    least($t_to, $t0 + to_microseconds(CAST(round((w + 1) * $window_us) AS BIGINT))) AS window_end,
    device, ports, in_bytes AS in_bytes_per_s, out_bytes AS out_bytes_per_s,
    in_packets AS in_packets_per_s, out_packets AS out_packets_per_s, discards AS discards_per_s,
    CASE WHEN reset OR partial THEN NULL
         WHEN in_packets IS NOT NULL AND out_packets IS NOT NULL
         THEN (in_packets - out_packets) / nullif(in_packets, 0)
         ELSE (in_bytes - out_bytes) / nullif(in_bytes, 0) END AS deficit_ratio,
    CASE WHEN reset THEN 'reset' WHEN partial THEN 'partial' WHEN coalesce(in_packets, in_bytes) IS NULL THEN 'uncounted'
         WHEN coalesce(in_packets, in_bytes) = 0 THEN 'idle' ELSE 'ok' END AS status
FROM p;
