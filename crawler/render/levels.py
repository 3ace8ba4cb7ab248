"""Decision levels of ``RENDER_MODE = auto``: where a URL's decision lives, and what
the cluster knows of each level. Pure: no I/O.

A URL's decision is kept per *level*: its host (``host:port``, ``key_of``) and, on a
host whose samples disagree, its URL pattern (the path's first directory,
``pattern_of``). A level's record (``LevelRecord``) is a handful of counters and
stamps, kept in a Redis hash per host (``crawler.render.state``) as
``<field>:<level>`` (the host's own level is the empty string). What is read from
Redis may be hostile: ``read_host`` keeps what parses and counts the rest. The rules
that read these records are ``crawler.render.adaptive``'s.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Literal
from urllib.parse import quote, urlsplit

from crawler.policy.hosts import BadURLError, host_of

if TYPE_CHECKING:
    from collections.abc import Mapping

# The level of a host's own record (patterns start with "/").
HOST = ""
# A pattern longer than this is cut (a hostile path makes no long Redis fields).
MAX_PATTERN_LENGTH = 100
DECISIONS = ("render", "static", "mixed")
Decision = Literal["render", "static", "mixed"]
DEFAULT_PORTS = {"http": 80, "https": 443}
_COUNT = re.compile(r"\d{1,15}")


@dataclass(frozen=True, slots=True)
class DecisionKey:
    """Where a URL's decision lives: its host (``host:port``) and URL pattern."""

    host: str
    pattern: str


def key_of(url: str) -> DecisionKey:
    """The decision key of *url*; raises ``BadURLError`` for a URL without a host
    (or with a port that cannot be read)."""
    host = host_of(url)
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError as exc:
        raise BadURLError(f"bad port in {url!r}: {exc}") from None
    if port is None:
        port = DEFAULT_PORTS.get(parts.scheme.lower(), 0)
    name = f"[{host}]" if ":" in host else host
    return DecisionKey(f"{name}:{port}", pattern_of(parts.path))


def pattern_of(path: str) -> str:
    """The first directory of *path* (``/`` for a file at the root), printable,
    at most ``MAX_PATTERN_LENGTH`` characters, always starting and ending with
    ``/``."""
    segments = path.split("/")
    if len(segments) < 3:  # "", "/", "/index.html", "index.html"
        return "/"
    directory = quote(segments[1], safe="!$&'()*+,;=:@-._~%")
    return f"/{directory[: MAX_PATTERN_LENGTH - 2]}/"


@dataclass(frozen=True, slots=True)
class LevelRecord:
    """What the cluster knows of one level: samples claimed (and when last),
    outcomes (samples where rendering paid, where static was enough, links
    rendering found that static fetches missed), and the decision with when it
    was made and the outcomes it was made on."""

    claimed: int = 0
    claimed_at: float = 0.0
    paid: int = 0
    static: int = 0
    links: int = 0
    decision: Decision | None = None
    decided_at: float = 0.0
    decided_paid: int = 0
    decided_static: int = 0

    @property
    def samples(self) -> int:
        """Outcomes recorded."""
        return self.paid + self.static


FIELDS = tuple(f.name for f in fields(LevelRecord))
_STAMPS = frozenset({"claimed_at", "decided_at"})


@dataclass(frozen=True, slots=True)
class HostRecord:
    """A host's levels: ``HOST`` and the patterns sampled."""

    levels: Mapping[str, LevelRecord] = field(default_factory=dict)

    def level(self, name: str) -> LevelRecord:
        return self.levels.get(name) or LevelRecord()

    @property
    def patterns(self) -> int:
        return sum(1 for name in self.levels if name != HOST)


def read_host(hash_fields: Mapping[bytes, bytes]) -> tuple[HostRecord, int]:
    """The host record a Redis hash holds, and how many of its fields were not
    the crawler's (unknown names, values that do not parse: ignored)."""
    values: dict[str, dict[str, object]] = {}
    bad = 0
    for raw_name, raw_value in hash_fields.items():
        try:
            name, _, level = raw_name.decode("utf-8").partition(":")
            value = _value(name, raw_value.decode("ascii"))
        except (UnicodeDecodeError, ValueError):
            bad += 1
            continue
        if level != HOST and level != pattern_of(level):
            bad += 1
            continue
        values.setdefault(level, {})[name] = value
    levels = {level: LevelRecord(**found) for level, found in values.items()}  # type: ignore[arg-type]
    return HostRecord(levels), bad


def _value(name: str, text: str) -> object:
    """A field's value; ``ValueError`` for a name or value the crawler never
    writes."""
    if name == "decision":
        if text not in DECISIONS:
            raise ValueError(text)
        return text
    if name in _STAMPS:
        stamp = float(text)
        if not math.isfinite(stamp) or stamp < 0:
            raise ValueError(text)
        return stamp
    if name in FIELDS and _COUNT.fullmatch(text):
        return int(text)
    raise ValueError(name)


def write_level(record: LevelRecord, level: str) -> dict[str, str]:
    """The hash fields of *record* (as ``read_host`` reads them)."""
    out = {}
    for name in FIELDS:
        value = getattr(record, name)
        if value is None:
            continue
        out[f"{name}:{level}"] = f"{value:.3f}" if name in _STAMPS else str(value)
    return out


def level_fields(level: str) -> list[str]:
    """Every hash field of *level* (to delete it)."""
    return [f"{name}:{level}" for name in FIELDS]
