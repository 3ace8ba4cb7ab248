"""How a host's delay learns from the host's own answers (``POLITENESS_BACKOFF``).

A host that answers 429 or 503, or lets a request time out, was asked too fast. Its
*learnt delay* then rises from the delay in force when it happened: x1.1, or x2 when
the answer before was a throttle too (a limit far above the delay is reached in a
few steps), never above ``POLITENESS_MAX_DELAY``. After
``POLITENESS_BACKOFF_QUIET`` answers in a row without a throttle it falls by 3%, so
the crawl probes back towards the host's limit and settles just above it: about one
throttle in three quiet runs, and a rate a few percent under what the host allows
(``bench.backoff`` measures both at the server). Once it falls to the delay the
policy gives anyway, the host is forgotten.

A ``Retry-After`` is honoured as well (``crawler.context.hostdelays``' back-off for a
time); the learnt delay is what stays once that time is over. The state is one
small record a host, kept in the crawl state so that every node, and a node that
takes the host over, keeps it (``crawler.frontier.backoffs``). Pure: no I/O, no
clock.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal, TypeGuard, cast

from crawler.policy.typedsettings import get_bool, get_float, get_int

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

Throttle = Literal["429", "503", "timeout"]
THROTTLES: frozenset[str] = frozenset({"429", "503", "timeout"})
STEP_UP = 1.1  # a throttle after quiet answers: a little too fast
LEAP_UP = 2.0  # a throttle right after a throttle: still far too fast
STEP_DOWN = 0.97  # after a quiet run: probe a little faster
# Where a throttle starts from when the delay in force was shorter (0 included).
LEAST_FLOOR = 0.25
_MAX_RECORD_BYTES = 256


@dataclass(frozen=True, slots=True)
class BackoffConfig:
    """The back-off settings, checked once at start-up."""

    enabled: bool = True
    max_delay: float = 120.0
    quiet: int = 30

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> BackoffConfig:
        """The settings; a one-line ``ValueError`` naming the first bad one."""
        return cls(
            get_bool(settings, "POLITENESS_BACKOFF"),
            get_float(settings, "POLITENESS_MAX_DELAY", above=0, note="seconds"),
            get_int(settings, "POLITENESS_BACKOFF_QUIET", at_least=1),
        )


@dataclass(frozen=True, slots=True)
class Learnt:
    """What a host taught the crawl: the least delay between two of its fetches, why,
    and since when (seconds since the epoch). *quiet* and *throttled* are this node's
    count of answers since the last change and whether the last one was a throttle."""

    delay: float
    reason: Throttle
    since: float
    quiet: int = 0
    throttled: bool = False


def after_throttle(
    config: BackoffConfig,
    learnt: Learnt | None,
    *,
    in_force: float,
    reason: Throttle,
    now: float,
) -> Learnt:
    """The learnt delay after a throttle while *in_force* seconds was the host's delay
    (the policy's or the learnt one, whichever was larger)."""
    step = LEAP_UP if learnt is not None and learnt.throttled else STEP_UP
    floor = max(in_force, learnt.delay if learnt is not None else 0.0, LEAST_FLOOR)
    return Learnt(min(config.max_delay, floor * step), reason, now, throttled=True)


def after_answer(
    config: BackoffConfig, learnt: Learnt, *, policy_delay: float, now: float
) -> Learnt | None:
    """The learnt delay after an answer that was no throttle: lowered by 3% after a
    quiet run; None once it is no longer above *policy_delay* (the host is
    forgotten)."""
    quiet = learnt.quiet + 1
    if quiet < config.quiet:
        return replace(learnt, quiet=quiet, throttled=False)
    lowered = learnt.delay * STEP_DOWN
    if lowered <= policy_delay:
        return None
    return Learnt(lowered, learnt.reason, now, quiet=0, throttled=False)


def encode(learnt: Learnt) -> str:
    """The record kept in the crawl state (this node's counts are not shared)."""
    return json.dumps(
        {"delay": round(learnt.delay, 4), "reason": learnt.reason,
         "since": round(learnt.since, 3)},
        separators=(",", ":"),
    )  # fmt: skip


def decode(raw: bytes | str, config: BackoffConfig) -> Learnt | None:
    """A record read from the crawl state; None for anything damaged or hostile (a
    delay that is not a positive finite number, an unknown reason). A delay above
    ``POLITENESS_MAX_DELAY`` (set lower since) is capped."""
    if len(raw) > _MAX_RECORD_BYTES:
        return None
    try:
        record = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(record, dict):
        return None
    delay, reason, since = (
        record.get("delay"),
        record.get("reason"),
        record.get("since"),
    )
    if not (_is_number(delay) and _is_number(since)) or reason not in THROTTLES:
        return None
    if not (0 < delay < math.inf and 0 <= since < math.inf):
        return None
    return Learnt(min(float(delay), config.max_delay), cast("Throttle", reason), since)


def _is_number(value: object) -> TypeGuard[int | float]:
    """An int or a float, not a bool (JSON's true is no number of seconds)."""
    return isinstance(value, int | float) and not isinstance(value, bool)
