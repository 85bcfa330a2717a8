"""Synthetic trace bundles: the twin runs a fabric with jobs and faults over a time window, and
the telemetry comes out as the real collectors write it, with `labels.json` as ground truth.

Scenario: the `fabtwin simulate` format (fabric, balancing, jobs) plus
```toml
[telemetry]
start = "2026-11-30T03:00:00Z"
duration_s = 600
sample_s = 10
# a real fleet's realism beyond every bundle's; the defaults add none of it (same bytes as before)
skew_ms = 300               # per-device clock offset, uniform within +- this (up to 60 s)
jitter = "stamp"            # "read": values read at the jittered instant (stamp: nominal values)
vendors = ["cumulus"]       # switch OSes by turns of three: cumulus swpN, sonic EthernetN, eos EthernetN/1
counters = "basic"          # "full": carrier transitions, NIC link-down events, port speed gauges
noise = false               # true: stray FCS errors, pause bursts, ECN microbursts, a counter
                            #   clear, 1% of the samples read twice
silent = []                 # devices that export nothing at all

[[faults]]   # kinds of design section 7; every kind and its keys: twin/faults.py
kind = "link_flap"          # link_down | link_flap | link_degraded | congestion | pfc_storm | load_imbalance
link = "leaf-p0-03:swp33--spine-p0-02:swp3"   # link faults
at_s = 300
duration_s = 20             # how long it lasts (link_flap: each down period)
repeat = 1                  # link_flap: how many times, every period_s
loss = 1e-3                 # link_degraded: packet loss, and/or speed_gbps
host = "gpu-node-0005"      # pfc_storm: the NIC that keeps pausing; congestion: the incast receiver
senders = 8                 # congestion: how many hosts send to it
device = "leaf-p0-02"       # load_imbalance: the leaf left in ECMP (adaptive routing off)
# issue 17's hard cases (labels.json marks each fault with its "hard_case"):
silent_root = true          # any kind: the root's device exports nothing (a link's upper end)
counted = false             # link_degraded with loss: silent loss, no error counter moves
logged = false              # link_flap: no syslog line (shorter than a sample: only counters)
victim_marks = 2.0          # congestion: the ports the leaf pauses mark 2x the root's ECN
weights_cv = 0.2            # load_imbalance: fixed uplink weights instead of ECMP
```
A `speed_gbps` below the link's is the `low_speed` hard case; it and `logged = false` turn the
full counters on by themselves (they are what shows them).
Jobs run for the whole window (training is back-to-back collectives), or for `iterations`
collectives of `size` when a job gives that: their transfers are streams at the twin's
max-min rates. Realism a parser must survive is added on top:
per-device clock skew and sampling jitter, missing and duplicated samples, 32-bit RDMA counters
that wrap, a switch reboot that resets its counters, and a few malformed lines (their count is
in labels.json); the `[telemetry]` keys above add more (`realism`). The same scenario and seed
give byte-identical files.

Layout: `bundle` (scenario -> twin simulation -> files, and the output directory), `writer`
(the per-port series with realism, labels), `realism` (vendors, noise, full counters and the
hard cases), one module per telemetry family (`switch_counters`,
`nic_snapshots`, `syslog_events`, `topology_files`, `jobs`), and `names`: the vendor names,
the parsers' counter maps inverted.
"""

from twin.synth.bundle import GENERATOR, Generated, OutputError, generate, parse_faults

__all__ = ["GENERATOR", "Generated", "OutputError", "generate", "parse_faults"]
