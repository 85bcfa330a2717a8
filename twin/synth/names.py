"""The vendor names the synthesizer writes: the parsers' counter maps inverted.

Each family's writer names a canonical counter the way one real source does (a `source` row of
`collectors/data/counter_map_<family>.csv`), so the parser reads back the counter that was meant.
A canonical counter with no name in that source stops the import with the map file named.
"""

from __future__ import annotations

from collectors.core.schema import vendor_name, vendor_names
from collectors.formats.nic import qualifier

# the per-port counters the twin's telemetry gives every switch and NIC port, in the order the
# writers emit them (the order is part of the byte-identical bundles)
SWITCH_COUNTERS = ("rx_bytes", "tx_bytes", "rx_packets", "tx_packets", "tx_discards", "ecn_marked",
                   "rx_pause", "tx_pause", "rx_fcs_errors", "symbol_errors")
NIC_COUNTERS = ("rx_bytes", "tx_bytes", "rx_packets", "tx_packets", "rx_pause", "tx_pause",
                "tx_discards", "rx_fcs_errors", "symbol_errors")
PFC_PRIORITY = 3  # the lossless RoCE traffic class: its queue and switch priority
GAUGES = ("port_speed_bps",)  # values that are no counters: a reboot does not zero them

# gnmic as Cumulus Linux streams it: CUMULUS_GROUPS group -> (map source, counters in it)
_GNMI_GROUPS = {
    "counters": ("gnmic/openconfig", ("rx_bytes", "tx_bytes", "rx_packets", "tx_packets", "tx_discards")),
    "ethernet": ("gnmic/openconfig", ("rx_fcs_errors",)),
    "phy": ("gnmic/Cumulus phy", ("symbol_errors",)),
    "queue": ("gnmic/Cumulus qos queue", ("ecn_marked",)),
    "pfc": ("gnmic/Cumulus qos switch-priority", ("rx_pause", "tx_pause")),
}
GNMI_LEAVES = {group: {c: vendor_name("gnmi", c, source) for c in counters}
               for group, (source, counters) in _GNMI_GROUPS.items()}
GNMI_OPER_STATUS = vendor_name("gnmi", "oper_status",
                               "gnmic/openconfig (enum converted to the IF-MIB code)")
# `[telemetry] counters = "full"`: carrier transitions with the interface counters, the port
# speed as OpenConfig's ethernet state (an enum such as SPEED_400GB)
GNMI_CARRIER = vendor_name("gnmi", "carrier_transitions", "gnmic/openconfig")
GNMI_PORT_SPEED = vendor_name("gnmi", "port_speed_bps",
                              "gnmic/openconfig (Mb/s; SPEED_* enums converted to Mb/s)")

_PROM_SOURCE = "nvidia-cumulus/otel"
PROM_NAMES = {c: vendor_name("prom", c, _PROM_SOURCE) for c in SWITCH_COUNTERS}
PROM_OPER_STATE = vendor_name("prom", "oper_status", _PROM_SOURCE)
PROM_FULL = {c: vendor_name("prom", c, _PROM_SOURCE) for c in ("carrier_transitions", "port_speed_bps")}

_MLX5 = "ethtool -S (mlx5)"


def _ethtool_name(canonical: str) -> str:
    """mlx5's name of a counter; pauses are per priority: the one of the RoCE class."""
    names = vendor_names("nic", canonical, _MLX5)
    if canonical in ("rx_pause", "tx_pause"):
        want = f"priority={PFC_PRIORITY}"
        pick = [n for n in names if qualifier(n) == want]
        if len(pick) != 1:
            raise ValueError(f"counter_map_nic.csv: no single {canonical!r} name of {_MLX5!r} "
                             f"for {want}: {', '.join(names)}")
        return pick[0]
    return vendor_name("nic", canonical, _MLX5)


ETHTOOL_NAMES = {c: _ethtool_name(c) for c in NIC_COUNTERS}
ETHTOOL_FULL = {"link_down_events": _ethtool_name("link_down_events")}  # counters = "full"

# RDMA hw_counters of a RoCE NIC: congestion notifications, marks seen, timeouts, reordering
RDMA_COUNTERS = ("cnp_sent", "ecn_marked_roce", "local_ack_timeout_err", "out_of_sequence")
RDMA_NAMES = {c: vendor_name("nic", c, "rdma hw_counters (kernel)") for c in RDMA_COUNTERS}
