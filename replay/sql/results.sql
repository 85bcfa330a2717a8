-- replay's result tables, created in every store and lake (collectors.store.schema.register_tables)
-- and by replay itself before it writes them. Table and column names are a public interface
-- (README, "Tables and views").

-- Written by `fabtwin replay` and `fabtwin investigate`; each run replaces the previous one.
-- One row per replay run (the latest only).
CREATE TABLE IF NOT EXISTS replay_runs (
    created TIMESTAMP NOT NULL, t_from TIMESTAMP, t_to TIMESTAMP, window_s DOUBLE,
    windows INTEGER, planes INTEGER, tiers INTEGER, ports INTEGER, routing VARCHAR,
    status VARCHAR NOT NULL,  -- ok | no_fabric (no cabling, or a fabric the twin refuses)
    note VARCHAR
);

-- Per port and replay window: the twin's expected load against what the port reported
-- (bytes/s averaged over the window). tier: 0 host-leaf, 1 leaf-spine/agg, 2 agg-core.
-- up_fraction: the share of the window the port's link was up. uplink: the port is the lower end
-- of its cable (its tx goes up the tree: a host's NIC port, a leaf's port to a spine).
CREATE TABLE IF NOT EXISTS expected_ports (
    window_start TIMESTAMP NOT NULL, window_end TIMESTAMP NOT NULL,
    port_id VARCHAR NOT NULL, device VARCHAR NOT NULL, ifname VARCHAR NOT NULL,
    link_id VARCHAR, peer_port VARCHAR, plane VARCHAR, tier INTEGER,
    capacity_bytes_per_s DOUBLE, up_fraction DOUBLE,
    expected_tx_bytes_per_s DOUBLE, observed_tx_bytes_per_s DOUBLE,
    expected_rx_bytes_per_s DOUBLE, observed_rx_bytes_per_s DOUBLE, uplink BOOLEAN
);

-- Per port and replay window, for each counter C (replay/counters.py): observed_C, expected_C
-- (for the observed demand and link states), healthy_C (every cable up at its peers' speed,
-- queues under the marking threshold) and noise_C (C's residual scale on this bundle). C:
-- tx_bytes, rx_bytes (bytes/s), tx_packets, rx_packets, ecn_marked, tx_pause, rx_pause (pause
-- frames), discards, errors (per second), link_down_events (count in the window),
-- down_fraction (share of the window down), port_speed (bits/s), queue_depth (bytes, where
-- reported). One row per port and window: wide, so that an hour of a big fabric stays cheap.
CREATE TABLE IF NOT EXISTS expected_counters (
    window_start TIMESTAMP NOT NULL, window_end TIMESTAMP NOT NULL, port_id VARCHAR NOT NULL,
    observed_tx_bytes DOUBLE, expected_tx_bytes DOUBLE, healthy_tx_bytes DOUBLE, noise_tx_bytes DOUBLE,
    observed_rx_bytes DOUBLE, expected_rx_bytes DOUBLE, healthy_rx_bytes DOUBLE, noise_rx_bytes DOUBLE,
    observed_tx_packets DOUBLE, expected_tx_packets DOUBLE, healthy_tx_packets DOUBLE, noise_tx_packets DOUBLE,
    observed_rx_packets DOUBLE, expected_rx_packets DOUBLE, healthy_rx_packets DOUBLE, noise_rx_packets DOUBLE,
    observed_ecn_marked DOUBLE, expected_ecn_marked DOUBLE, healthy_ecn_marked DOUBLE, noise_ecn_marked DOUBLE,
    observed_tx_pause DOUBLE, expected_tx_pause DOUBLE, healthy_tx_pause DOUBLE, noise_tx_pause DOUBLE,
    observed_rx_pause DOUBLE, expected_rx_pause DOUBLE, healthy_rx_pause DOUBLE, noise_rx_pause DOUBLE,
    observed_discards DOUBLE, expected_discards DOUBLE, healthy_discards DOUBLE, noise_discards DOUBLE,
    observed_errors DOUBLE, expected_errors DOUBLE, healthy_errors DOUBLE, noise_errors DOUBLE,
    observed_link_down_events DOUBLE, expected_link_down_events DOUBLE, healthy_link_down_events DOUBLE, noise_link_down_events DOUBLE,
    observed_down_fraction DOUBLE, expected_down_fraction DOUBLE, healthy_down_fraction DOUBLE, noise_down_fraction DOUBLE,
    observed_port_speed DOUBLE, expected_port_speed DOUBLE, healthy_port_speed DOUBLE, noise_port_speed DOUBLE,
    observed_queue_depth DOUBLE, expected_queue_depth DOUBLE, healthy_queue_depth DOUBLE, noise_queue_depth DOUBLE
);

-- The ranked incidents of the latest diagnosis (rank 1 = best), and their evidence rows.
CREATE TABLE IF NOT EXISTS incidents (
    rank INTEGER NOT NULL, kind VARCHAR NOT NULL, root_type VARCHAR NOT NULL,
    root_id VARCHAR NOT NULL, start TIMESTAMP, "end" TIMESTAMP, score DOUBLE,
    summary VARCHAR, impact VARCHAR  -- JSON text: {"jobs": [...], "links": [...], ...}
);

CREATE TABLE IF NOT EXISTS incident_evidence (
    rank INTEGER NOT NULL, seq INTEGER NOT NULL, evidence VARCHAR  -- JSON text, one row each
);

-- Conservation residuals (replay/residuals.py), per replay window (the windows of
-- expected_ports). Per link and direction: what the sending port counted out against what the
-- receiving port counted in, per second; deficit_ratio = (sent - received) / sent, on packets
-- where both ends count them (`basis`), else bytes. sample_s: the coarser end's sampling
-- interval; rate_change: the sent rate's change between the window's boundaries (the highest
-- sample-interval rate near one against the lowest near the other) / the window's rate (ends
-- read apart disagree by at most that offset times it); granularity: the share the counters'
-- resolution explains (a packet per read, a timestamp quantum of traffic per end);
-- errors_per_s: the receiver's errors and both ends' discards; sender_pause_per_s: pause frames the sender sent (a NIC may count them as packets it sent,
-- a switch's unicast counter never as packets received).
-- status: ok | idle (nothing, or under 1% of the line rate, sent) | impossible (frames under 60
-- bytes on average: a packet counter's clear read as a wrap) | reset (a counter reset or clear
-- in the window leaves an end under 90% of it counted) | partial (an end's samples cover under 90% of the window) | uncounted |
-- sender_silent / receiver_silent (that end exports nothing: seen from the other end only).
-- Only `ok` rows carry a residual a reader may trust: the others say why not, no guess.
-- edge_s: seconds between the window and the nearer end of either port's reads (its first or
-- last sample): a rate step before a port's first read is one no sample shows.
-- rate_step: rate_change with its sign, (the rate near the window's end - near its start) / the
-- window's rate: adjacent windows share a boundary's rate, so over a span of them the steps
-- telescope to the change between the span's ends (what read timing can move over the span).
-- bend_start / bend_end: the spread of the sent rate's reads within a sample interval of the
-- window's start / end boundary, a share of the window's rate (what interpolating a count
-- inside the read interval that straddles the boundary can be off by: a quarter of the
-- interval times it). uncounted_share: the share of the window the less covered end did not
-- count (a counter clear's interval, a gap).
CREATE TABLE IF NOT EXISTS link_residuals (
    window_start TIMESTAMP NOT NULL, window_end TIMESTAMP NOT NULL,
    link_id VARCHAR NOT NULL, tx_port VARCHAR NOT NULL, rx_port VARCHAR NOT NULL,
    sent_bytes_per_s DOUBLE, received_bytes_per_s DOUBLE,
    sent_packets_per_s DOUBLE, received_packets_per_s DOUBLE,
    deficit_bytes_per_s DOUBLE, deficit_packets_per_s DOUBLE, deficit_ratio DOUBLE,
    basis VARCHAR, sample_s DOUBLE, rate_change DOUBLE, granularity DOUBLE, errors_per_s DOUBLE,
    sender_pause_per_s DOUBLE, status VARCHAR NOT NULL, edge_s DOUBLE, rate_step DOUBLE,
    bend_start DOUBLE, bend_end DOUBLE, uncounted_share DOUBLE
);

-- Per switch and window: what all its ports received against what they sent (in = out);
-- deficit_ratio = (in - out) / in, NULL unless every port it reports counted the window.
CREATE TABLE IF NOT EXISTS switch_residuals (
    window_start TIMESTAMP NOT NULL, window_end TIMESTAMP NOT NULL, device VARCHAR NOT NULL,
    ports INTEGER, in_bytes_per_s DOUBLE, out_bytes_per_s DOUBLE, in_packets_per_s DOUBLE,
    out_packets_per_s DOUBLE, discards_per_s DOUBLE, deficit_ratio DOUBLE, status VARCHAR NOT NULL
);

-- Why each incident is what it is (replay/explain.py): JSON text, the `explanation` object of
-- `investigate --json` (README, Investigate)
CREATE TABLE IF NOT EXISTS incident_explanations (
    rank INTEGER NOT NULL, explanation VARCHAR
);
