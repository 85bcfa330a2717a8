-- Conservation residuals (replay/residuals.py fills link_residuals and switch_residuals with
-- these; `{n_win}` is the number of replay windows, `{window_s}` their length and `{span_s}`
-- the replay's span in seconds). A rate row whose interval saw a counter reset or clear
-- (`reset`) counts nowhere: a window it leaves under 90% counted is marked `reset` instead
-- of being guessed, one it leaves more of is counted over the rest (`uncounted_share`).

-- per port and replay window: what it sent and received in the window's own seconds. A sample
-- interval that straddles a window boundary counts in each window for the share of its seconds
-- that falls there (the cumulative counter interpolated at the boundary), so both ends of a
-- cable count over the same seconds whatever their sampling phase and cadence; a missing sample
-- widens one interval, a duplicate adds none. `secs`: the seconds the port's intervals cover;
-- `<counter>_secs`: a byte or packet counter's own seconds (its own intervals, port_rates_part's
-- `<counter>_s`: where a read missed the counter, the next read's rate of it spans both).
-- Both sums are computed in numpy from the analysis' rate arrays (replay/port_sums.py:
-- `_resid_ports` and `_resid_edges`, keyed on port codes); the statements below read them.

-- per port and window boundary b (at b x {window_s} s): the port's sent rate over one sample
-- interval either side of the boundary (each interval counted for the seconds it overlaps).
-- Ends that read a few seconds apart (clock skew, polling phase, an exporter's cache) count
-- what passed between their reads at one end only: at most that offset (bounded by the sample
-- interval) times the rate there, which cancels over a window unless the rate at its two
-- boundaries differs. Averaged over two sample intervals: a step at a seconds (< S) before a
-- boundary moves at most a x step, and S x the average's change is (S + a) / 2 x step, so
-- steps and ramps stay bounded, while a read's own jitter (which the bundle's MAD measures)
-- weighs half of what it would in one interval's rate.

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
WITH speed AS (  -- line rate per port where it reports one (bytes/s)
    SELECT device || ':' || ifname AS port, max(value) / 8 AS bytes_per_s FROM samples
    WHERE counter = 'port_speed_bps' AND value > 0 GROUP BY ALL
), dirs AS (  -- _link_dirs: each link's two directions, numbered (d)
    SELECT d, link_id, tx_port, rx_port,
        least((SELECT bytes_per_s FROM speed WHERE port = tx_port),
              (SELECT bytes_per_s FROM speed WHERE port = rx_port)) AS line_rate
    FROM _link_dirs
), j AS (  -- _link_pairs: per direction and window where an end has rates, both ends' sums
    SELECT g.w, g.link_id, g.tx_port, g.rx_port,
        s_secs, r_secs, s_window, s_reset OR r_reset AS reset,
        s_tx_bytes / s_tx_bytes_secs AS sent_bytes, r_rx_bytes / r_rx_bytes_secs AS recv_bytes,
        s_tx_packets / s_tx_packets_secs AS sent_packets,
        r_rx_packets / r_rx_packets_secs AS recv_packets,
        (r_errors + r_discards + s_discards) AS errors, s_tx_pause / s_secs AS sender_pause,
        s_samples + r_samples AS samples, greatest(s_sample_s, r_sample_s) AS sample_s,
        tx_seen, rx_seen, line_rate, s_quantum_s + r_quantum_s AS quantum_s,
        least(g.w * {window_s} - greatest(sf_first_t, rf_first_t),
              least(sf_last_t, rf_last_t) - g.w * {window_s} - s_window) AS edge_s,
        (e1 - e0) / nullif(cur, 0) AS rate_step,
        b0 / nullif(cur, 0) AS bend_start, b1 / nullif(cur, 0) AS bend_end
    FROM (SELECT p.*, d.link_id, d.tx_port, d.rx_port, d.line_rate,
                 coalesce(s_tx_packets / s_tx_packets_secs, s_tx_bytes / s_tx_bytes_secs) AS cur,
                 coalesce(e0_packets_per_s, e0_bytes_per_s) AS e0,
                 coalesce(e1_packets_per_s, e1_bytes_per_s) AS e1,
                 coalesce(e0_packets_spread, e0_bytes_spread) AS b0,
                 coalesce(e1_packets_spread, e1_bytes_spread) AS b1,
                 CASE WHEN s_present OR r_present
                      THEN least({window_s}, {span_s} - p.w * {window_s}) END AS s_window
          FROM _link_pairs p JOIN dirs d USING (d)) g
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
    basis, sample_s, abs(rate_step) AS rate_change,
    CASE WHEN coalesce(sent_packets, sent_bytes) > 0
         THEN (CASE WHEN basis = 'packets' THEN samples / sent_packets ELSE 0 END + quantum_s)
              / least(s_secs, r_secs) END AS granularity,
    errors / least(s_secs, r_secs) AS errors_per_s, sender_pause AS sender_pause_per_s,
    CASE WHEN NOT tx_seen THEN 'sender_silent'
         WHEN NOT rx_seen THEN 'receiver_silent'
         -- an end that covers less of the window (before its first sample, a long gap, the
         -- interval a counter clear fell in): the two averages would be over different seconds
         WHEN s_secs IS NULL OR r_secs IS NULL OR least(s_secs, r_secs) < 0.9 * s_window
         THEN CASE WHEN reset THEN 'reset' ELSE 'partial' END
         WHEN basis IS NULL THEN 'uncounted'
         -- frames of fewer than 60 bytes on average: a packet counter's clear read as a
         -- 32-bit wrap (byte counters pass 2^32 in a second at these speeds), not traffic
         WHEN sent_bytes < 60 * sent_packets OR recv_bytes < 60 * recv_packets THEN 'impossible'
         -- under 1% of the line rate, control frames (LLDP, ARP) that one end's unicast
         -- counter leaves out are a visible share: no basis for a loss rate
         WHEN coalesce(sent_packets, sent_bytes) = 0 OR sent_bytes < 0.01 * line_rate THEN 'idle'
         ELSE 'ok' END AS status,
    edge_s, rate_step, bend_start, bend_end,
    greatest(0.0, 1.0 - least(s_secs, r_secs) / s_window) AS uncounted_share
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
