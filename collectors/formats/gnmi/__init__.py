"""gnmic output: the default `json` format and the `event` format (design section 4).

Both parsers share one reader. The stream is cut into JSON documents: one per line on the fast
path (`orjson.loads` of the whole line), otherwise through a small brace-depth scanner that
understands JSON strings, so pretty-printed objects, concatenated objects and top-level arrays
stream without loading the file. A record is one top-level JSON object, or one object element of
a top-level array (gnmic prints `event` messages as an array per notification), numbered by the
line it starts on. gnmic's plain-text status lines between objects are rejects.

Records whose values are all plain numbers (Cumulus counters as numeric strings, the bulk of any
capture) take a fast path: per record only the floats and a few ids are kept (the tag context, a
template of names for the record's paths, cached), and each batch becomes one polars frame by
gathering names from those tables. Any other record, or any odd value (enums, text, containers,
numbers float() reads but that do not start like one), goes value by value; both paths give the
same rows in the same order, with the same accounting.

Faster still, for the shapes real captures are made of (gnmic's split events and one-update
notifications: one value per line, a few hundred bytes of JSON around it), whole blocks of lines
are read with polars string kernels (`_Lines`): a line in gnmic's own member order with one plain
number or status word is checked by one pattern and cut by literal finds, and lines of the same
shape (everything but timestamp, time and value) share the plan the per-record fast path makes
from the first of them. Every other line of the block is read as above, in file order.

Numeric samples keep the leaf name (`in-octets`, `transmit-octets`); `counter_map_gnmi.csv`
maps them to canonical counters. Interface keys (`interface[name=..]`, `port[port-id=..]`, the
event tags `interface_name`, `port_port-id`) give the ifname; other keys become qualifiers
(`queue[name=3]` -> `queue=3`, `switch-priority[priority=3]` -> `priority=3`).
"""

from collectors.formats.gnmi.parser import PARSERS, GnmicEventParser, GnmicJsonParser
from collectors.formats.gnmi.writer import (
    CUMULUS_GROUPS,
    GnmiNotification,
    cumulus_notification,
    write_event,
    write_json,
)

__all__ = ["CUMULUS_GROUPS", "PARSERS", "GnmiNotification", "GnmicEventParser", "GnmicJsonParser",
           "cumulus_notification", "write_event", "write_json"]
