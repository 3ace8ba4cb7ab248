"""Where rendering pays, learnt from samples (``RENDER_MODE = auto``): the rules.
Pure: no I/O.

Each rule reads what is known of a host's levels (``crawler.render.levels``: the
host, and its URL patterns once its samples disagree) and says what to do: render a
URL, fetch it statically or try for a sample (``verdict``), whether a sample paid
(``sample_pays``), what a level's outcomes decide (``decide``, ``after_outcome``) and
which parked pages a decision sends to be rendered (``parked_fate``). Every sample counts
for both its host and its pattern, so a host found mixed has its patterns' first
samples already. ``crawler.render.advisor`` and ``crawler.render.learning`` do the
I/O.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Literal

from crawler.render.levels import HOST, LevelRecord

if TYPE_CHECKING:
    from crawler.render.config import RenderConfig, Verdict
    from crawler.render.levels import Decision, HostRecord

# Patterns of one mixed host sampled at most; a host with more (a spider trap
# inventing directories) decides the others by its own samples' majority.
MAX_PATTERNS = 64
# Characters of text a page's growth is counted against, at least.
TEXT_BASE = 500


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


def parked_fate(record: HostRecord) -> tuple[list[str], list[str]]:
    """The levels whose parked pages (fetched statically while undecided) are to be
    rendered now, and those whose parked pages static fetches were right about:
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
    ``crawler.render.statescripts`` applies the same rule atomically."""
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
