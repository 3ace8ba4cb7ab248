"""The Lua scripts' key names, rendered from the key model, ``crawler.crawlstate.keys``.

A script gets its shard's fixed keys in KEYS, in the order of ``SHARD_KEYS``, and
sees each as a local named after its ``Keys`` member in capitals (``COUNTERS``).
Keys built from values (a host's queues, a depth's provisional requests, a Bloom
filter) come from a Lua function per ``KeyShape``, ``<name>_key(<fields>)``,
rendered from the shape's template: no script spells a key name by hand.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import TYPE_CHECKING

from crawler.crawlstate.keys import KEY_SHAPES, KeyShape

if TYPE_CHECKING:
    from crawler.crawlstate.keys import Keys

# The shard's fixed keys every script gets, in KEYS order, by their Keys member.
SHARD_KEYS = (
    "ready",
    "waiting",
    "ready_at",
    "inflight",
    "leases",
    "leased",
    "sequence",
    "counters",
    "seen",
    "delays",
    "outstanding",
    "owner",  # the node id that alone may pop
    "held",
    "failed",
    "superseded",  # queue entries replaced by a shallower copy
    "reparse",  # queue entries of pages fetched too deep, whose links go again
)

_IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]*")
_KEYWORDS = """and break do else elseif end false for function if in local nil not or
repeat return then true until while"""
_LUA_KEYWORDS = frozenset(_KEYWORDS.split())


@lru_cache(maxsize=4096)
def shard_keys(keys: Keys) -> tuple[str, ...]:
    """The KEYS of a shard's scripts, built once per shard: every call passes them."""
    return tuple(getattr(keys, name) for name in SHARD_KEYS)


def lua_key_names() -> str:
    """Lua locals naming the fixed keys: ``local READY, WAITING = KEYS[1], KEYS[2]``."""
    names = ", ".join(_identifier(name).upper() for name in SHARD_KEYS)
    indexes = ", ".join(f"KEYS[{i}]" for i in range(1, len(SHARD_KEYS) + 1))
    return f"local {names} = {indexes}\n"


def lua_key_function(shape: KeyShape) -> str:
    """A Lua function building *shape*'s key from the shard's ``tag`` and fields."""
    parts = ["tag"]
    for text, field in shape.pieces():
        if text:
            if not text.isascii():
                raise ValueError(f"{shape.name}: key text must be ASCII: {text!r}")
            parts.append(json.dumps(text))  # ASCII JSON: a valid Lua string too
        if field:
            parts.append(_identifier(field))
    arguments = ", ".join(_identifier(field) for field in shape.fields)
    name = _identifier(shape.name)
    return f"local function {name}_key({arguments}) return {' .. '.join(parts)} end\n"


def lua_keys() -> str:
    """The Lua that names every key a script uses (after ``tag`` is set)."""
    return lua_key_names() + "".join(lua_key_function(s) for s in KEY_SHAPES)


def _identifier(name: str) -> str:
    """*name*, checked to be a Lua name (shapes and members are lower-case words),
    so a renamed member fails at import, not as a script error in a crawl."""
    if not _IDENTIFIER.fullmatch(name) or name in _LUA_KEYWORDS:
        raise ValueError(f"not usable as a Lua name: {name!r}")
    return name
