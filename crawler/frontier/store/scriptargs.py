"""The arguments of each frontier script, defined once for Python and Lua.

A call sends ARGV[1], one JSON object of named arguments (``tag``, ``order``, ``now``
and the script's own, every value a string as ARGV values were), which the script
reads as ``args.<name>``; then its records, if it takes any (the requests pushed,
lease ids...), each a fixed group of ARGV values the script reads by field name
(``for item in records() do ... item.host``). Records stay out of the JSON: their
values may be bytes that are not text (Bloom hashes). Decoding a small JSON object
costs the script microseconds and no round trip.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

from crawler.frontier.store.roundtrip import ms

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from crawler.frontier.frontierconfig import FrontierConfig

# A named argument's value; a record field's value.
Scalar = str | int | float
Value = str | int | float | bytes

# The named arguments every call passes (the runner adds the shard's ``tag``).
COMMON = ("order", "now", "spill_head")

# Lua reading the named arguments, and the records after them as tables of their
# fields (each script's RECORD_FIELDS, from its Signature, come before it).
LUA_ARGUMENTS = """
local args = cjson.decode(ARGV[1])
local tag, order, now = args.tag, args.order, tonumber(args.now)
local spill_head = tonumber(args.spill_head) or 0
local function records()
  local i = 2
  return function()
    if #RECORD_FIELDS == 0 or i > #ARGV then return nil end
    local record = {}
    for j, field in ipairs(RECORD_FIELDS) do record[field] = ARGV[i + j - 1] end
    i = i + #RECORD_FIELDS
    return record
  end
end
"""


def common_args(config: FrontierConfig, now: float) -> dict[str, Scalar]:
    """The named arguments every call passes: the crawl's order, the time in whole
    milliseconds and the most entries a queue keeps in Redis (0: no spill)."""
    return {"order": config.order, "now": ms(now), "spill_head": config.spill_head}


@dataclass(frozen=True, slots=True)
class Signature:
    """A script's named arguments (beyond ``COMMON`` and ``tag``) and the fields of
    its records; a call that does not match fails in Python, not as a nil in Lua."""

    names: tuple[str, ...]
    record: tuple[str, ...] = ()

    def encode(
        self,
        tag: str,
        args: Mapping[str, Scalar],
        records: Sequence[Mapping[str, Value]] = (),
    ) -> list[Value]:
        """The ARGV of a call: the named arguments, then each record's fields."""
        if args.keys() != {*COMMON, *self.names}:
            raise ValueError(f"arguments {sorted(args)}, expected {self.names}")
        named = {"tag": tag} | {name: str(value) for name, value in args.items()}
        argv: list[Value] = [json.dumps(named, separators=(",", ":"))]
        for record in records:
            if len(record) != len(self.record):
                raise ValueError(f"record {sorted(record)}, expected {self.record}")
            argv += [record[field] for field in self.record]
        return argv

    def lua(self) -> str:
        """The Lua naming this signature's record fields, which the helpers'
        ``records()`` reads (it comes before them)."""
        fields = ", ".join(f"'{field}'" for field in self.record)
        return f"local RECORD_FIELDS = {{{fields}}}\n"


SIGNATURES = {
    "push": Signature(
        (
            "concurrency",
            "dedup_mode",
            "floor",
            "deepest",
            "per_depth",
            "reparse",
            "host_max_pages",
        ),
        (
            "host",
            "class",
            "dedup",
            "entry",
            "hold",
            "revive",
            "depth_key",
            "url_key",
            "importance",
            "backlinks",
            "credit",
            "gain",
            "host_credit",
            "strategy",
        ),
    ),
    "pop": Signature(
        (
            "concurrency",
            "expiry",
            "default_delay",
            "promote_limit",
            "score_limit",
            "node_id",
            "per_depth",
        )
    ),
    "credit": Signature(
        ("concurrency", "per_depth"),
        ("host", "url_key", "credit", "gain", "host_credit", "links"),
    ),
    "ack": Signature(
        (
            "concurrency",
            "delay",
            "lease_id",
            "fate",
            "fingerprint",
            "untouched",
            "not_before",
        )
    ),
    "requeue": Signature(("concurrency", "limit"), ("id",)),
    "promote": Signature(("limit", "concurrency", "floor")),
    "forget_idle": Signature(("cursor", "limit")),
    "retry": Signature(("concurrency",), ("fingerprint",)),
    "repair": Signature(("concurrency", "seen_type", "most_hashes")),
    "repair_hosts": Signature(("concurrency",), ("host",)),
    "repair_counts": Signature((), ("level", "count")),
    "spill_due": Signature(("limit", "cursor")),
    "spill_trim": Signature(("count",), ("first",)),
    "spill_refill": Signature(("concurrency", "host", "class"), ("entry",)),
    "spill_forget": Signature(("host", "class", "mark")),
    "spill_lost": Signature(("host", "class", "count", "mark")),
}
