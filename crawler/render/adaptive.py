"""Where rendering pays, learnt from samples (``RENDER_MODE = auto``). Pure: no I/O.

A request's decision is kept per *level*: its host (``host:port``) first. When a
host's samples disagree (rendering finds links or text on some of its pages and not
on others) the host is ``mixed`` and each URL pattern of it (the path's first
directory: ``/app/x.html`` -> ``/app/``, ``/index.html`` -> ``/``) gets a level of
its own. Every sample counts for both its host and its pattern, so a host found
mixed has its patterns' first samples already.

A level's record is a handful of counters and stamps, kept in a Redis hash per host
(``crawler.render.advisor``) as ``<field>:<level>`` (the host's own level is the
empty string). What is read from Redis may be hostile: ``read_host`` keeps what
parses and counts the rest.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Literal
from urllib.parse import quote, urlsplit

from crawler.policy.hosts import BadURLError, host_of

if TYPE_CHECKING:
    from collections.abc import Mapping

    from crawler.render.config import RenderConfig, Verdict

# The level of a host's own record (patterns start with "/").
HOST = ""
# A pattern longer than this is cut (a hostile path makes no long Redis fields).
MAX_PATTERN_LENGTH = 100
# Patterns of one mixed host sampled at most; a host with more (a spider trap
# inventing directories) decides the others by its own samples' majority.
MAX_PATTERNS = 64
# Characters of text a page's growth is counted against, at least.
TEXT_BASE = 500
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


def deciding_level(record: HostRecord, pattern: str) -> str:
    """The level whose decision applies to a URL of *pattern*: the host's, unless
    the host is mixed."""
    return pattern if record.level(HOST).decision == "mixed" else HOST


def undecided(record: HostRecord, pattern: str) -> bool:
    """Whether a URL of *pattern* waits for a decision its level's samples will
    make (a pattern past ``MAX_PATTERNS`` waits for none)."""
    level = deciding_level(record, pattern)
    if level != HOST and level not in record.levels:
        return record.patterns < MAX_PATTERNS
    return record.level(level).decision is None


def held_fate(record: HostRecord) -> tuple[list[str], list[str]]:
    """The levels whose held pages (fetched statically while undecided) are to be
    rendered now, and those whose held pages static fetches were right about:
    the host's (``HOST``: all its pages), or a mixed host's patterns'."""
    decision = record.level(HOST).decision
    if decision == "render":
        return [HOST], []
    if decision == "static":
        return [], [HOST]
    if decision != "mixed":
        return [], []
    render, static = [], []
    for level, found in record.levels.items():
        if level != HOST and found.decision == "render":
            render.append(level)
        elif level != HOST and found.decision == "static":
            static.append(level)
    return render, static


def verdict(
    record: HostRecord,
    pattern: str,
    *,
    now: float,
    config: RenderConfig,
    claim_seconds: float,
) -> Verdict:
    """What to do with a URL of *pattern*, from what is known of its host:
    ``render`` or ``static`` as decided; ``sample`` to try for a sample (a free
    sample slot, stale claims, or a decision due for a re-check; Redis has the
    last word); ``static`` while undecided and every slot is taken."""
    level = deciding_level(record, pattern)
    if level != HOST and level not in record.levels and record.patterns >= MAX_PATTERNS:
        return _majority(record.level(HOST))
    current = record.level(level)
    decision = current.decision
    if decision in ("render", "static"):
        if recheck_due(current.decided_at, now, config.recheck_interval):
            return "sample"
        return "render" if decision == "render" else "static"
    if decision == "mixed":  # a pattern has no "mixed": only a hostile host is here
        return "static"
    if may_claim(current, now=now, pages=config.sample_pages, life=claim_seconds):
        return "sample"
    return "static"


def may_claim(record: LevelRecord, *, now: float, pages: int, life: float) -> bool:
    """Whether an undecided level has a sample slot free: fewer than *pages*
    claimed (outcomes count as claims), or the claims not answered are older than
    *life* seconds (their samples failed or were lost). The claim script in
    ``crawler.render.advisor`` applies the same rule atomically."""
    taken = max(record.claimed, record.samples)
    if taken < pages:
        return True
    return record.samples < pages and now - record.claimed_at >= life


def recheck_due(decided_at: float, now: float, interval: float) -> bool:
    """Whether a decision made at *decided_at* is due for one more sample (an
    *interval* of 0: never)."""
    return interval > 0 and now - decided_at >= interval


def sample_pays(config: RenderConfig, *, gained_links: int, gained_text: float) -> bool:
    """Whether one sample's rendering paid: at least RENDER_MIN_GAINED_LINKS links
    the static fetch missed, or at least RENDER_MIN_GAINED_TEXT more text. A
    threshold of 0 is off (it would make every sample pay: that is ``always``)."""
    links = config.min_gained_links > 0 and gained_links >= config.min_gained_links
    text = config.min_gained_text > 0 and gained_text >= config.min_gained_text
    return links or text


def text_gain(static_text: int, rendered_text: int) -> float:
    """The growth of a page's text once rendered, relative to its static text
    (0.2: a fifth more), counted against at least ``TEXT_BASE`` characters: a
    short line a script writes into a small page (a date, a greeting) is not the
    content rendering is for."""
    return (rendered_text - static_text) / max(static_text, TEXT_BASE)


def decide(paid: int, static: int, *, level: str) -> Decision:
    """The decision once a level's samples are in: ``render`` if every sample
    paid, ``static`` if none did; samples that disagree make a host ``mixed``
    (decided per pattern) and a pattern ``render`` (the finest level there is: a
    link never found is lost for good, a render only costs time)."""
    if static == 0:
        return "render"
    if paid == 0:
        return "static"
    return "mixed" if level == HOST else "render"


def _majority(host: LevelRecord) -> Verdict:
    """The fallback of a pattern past ``MAX_PATTERNS``: render if at least half
    of the host's samples paid."""
    return "render" if 2 * host.paid >= max(host.samples, 1) else "static"


Change = Literal["decided", "reset"]


def after_outcome(
    record: LevelRecord, *, level: str, now: float, pages: int
) -> tuple[Change, LevelRecord] | None:
    """What an outcome, once counted in *record*, makes of its level: ``decided``
    (with the decided record) when the level was undecided and has *pages*
    outcomes; ``reset`` (an empty record: sampled afresh) when a decided level's
    new outcomes disagree with its decision (a re-check that found the host
    changed); else None."""
    if record.decision is None:
        if record.samples < pages:
            return None
        decision = decide(record.paid, record.static, level=level)
        decided = replace(
            record,
            decision=decision,
            decided_at=now,
            decided_paid=record.paid,
            decided_static=record.static,
        )
        return "decided", decided
    if record.decision == "mixed":
        return None
    if record.decision == "render":
        disagreeing = record.static - record.decided_static
    else:
        disagreeing = record.paid - record.decided_paid
    if disagreeing > 0:
        return "reset", LevelRecord()
    return None
