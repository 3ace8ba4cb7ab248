"""A URL's entry in the URL library, and what one visit makes of it.

Pure: the library (``crawler.records.library``) reads the old entry and writes the
new one; what a visit means (a change, a 304, a failure on the way to "gone") and
when the next one is due is decided here, with the interval from
``crawler.policy.revisit``.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Literal

from crawler.policy.changehistory import History, small_change
from crawler.policy.revisit import next_interval
from crawler.policy.simhash import decode
from crawler.records.schema import clean_text

if TYPE_CHECKING:
    from crawler.items import PageRecord
    from crawler.policy.revisitconfig import RevisitConfig

# What a visit was, for the entry's ``last_outcome`` and the ``revisit/`` stats.
Outcome = Literal[
    "first",  # the URL's first fetch: revisits start
    "once",  # its first fetch failed or redirected: never revisited
    "changed",  # a revisit found another body
    "unchanged",  # a revisit found the same body (200)
    "small_change",  # another body whose text moved within REVISIT_CHANGE_THRESHOLD
    "not_modified",  # a revisit answered 304: the same, without a body
    "failed",  # a revisit failed; counted towards gone
    "gone",  # REVISIT_GONE_AFTER failures in a row: no more revisits
]
# Entry states: revisited, given up after failures, or never revisited.
ACTIVE, GONE, ONCE = "active", "gone", "once"
NOT_MODIFIED = 304


@dataclass(frozen=True, slots=True)
class Visit:
    """What one fetch of a URL told, from its page record."""

    url: str
    host: str
    depth: int
    status: int
    fate: str
    content_hash: str | None
    etag: str | None
    last_modified: str | None
    text_hash: str | None = None  # SimHash of the visible text (HTML answered 200)

    @classmethod
    def of(cls, record: PageRecord) -> Visit:
        return cls(
            url=clean_text(record.url),
            host=clean_text(record.host),
            depth=record.depth,
            status=record.status,
            fate=record.fate,
            content_hash=record.content_hash,
            etag=_text_or_none(record.etag),
            last_modified=_text_or_none(record.last_modified),
            text_hash=record.text_hash,
        )

    @property
    def answered(self) -> bool:
        """Whether the page was there: a body (even one whose links could not be
        read) or a 304. Redirects and failures are not."""
        if self.status == NOT_MODIFIED:
            return True
        return self.fate in ("fetched", "unparseable") and 200 <= self.status < 300


@dataclass(frozen=True, slots=True)
class Entry:
    """A row of table ``revisits`` (``crawler.records.library.SCHEMA``)."""

    url: str
    host: str
    depth: int
    state: str
    next_visit: float | None
    revisit_interval: float
    first_visit: float
    last_visit: float
    last_checked: float  # when the body was last seen (a 304 counts)
    last_change: float | None
    visits: int
    checks: float
    changes: float
    observed: float
    failures: int
    content_hash: str | None
    etag: str | None
    last_modified: str | None
    last_outcome: str
    claimed_until: float = 0.0
    # The SimHash of the text of the last version that counted as a change (or the
    # first): small edits that add up count once they add up to a change.
    text_hash: str | None = None

    @property
    def history(self) -> History:
        return History(self.checks, self.changes, self.observed)


COLUMNS = tuple(f.name for f in fields(Entry))


def after_visit(  # noqa: PLR0913 (the host's factor, keyword-only, beside the visit)
    old: Entry | None,
    visit: Visit,
    now: float,
    config: RevisitConfig,
    multiplier: float | None,
    *,
    site_factor: float = 1.0,
) -> tuple[Entry, Outcome]:
    """The entry after *visit* at *now*, and what the visit was, *site_factor*
    being its host's factor on its interval (``crawler.policy.laziness``). The
    claim on it ends (its revisit is recorded)."""
    if old is None or old.state != ACTIVE:
        return _first(old, visit, now, config)
    if not visit.answered:
        return _failed(old, visit, now, config)
    not_modified = visit.status == NOT_MODIFIED
    other_body = not not_modified and visit.content_hash != old.content_hash
    small = other_body and _small_change(old, visit, config.change_threshold)
    changed = other_body and not small
    history = old.history.observe(changed=changed, elapsed=now - old.last_checked)
    interval = next_interval(
        config.policy,
        current=old.revisit_interval,
        history=history,
        changed=changed,
        bounds=config.bounds_for(visit.host),
        multiplier=multiplier,
        site_factor=site_factor,
    )
    outcome: Outcome = (
        "changed"
        if changed
        else "not_modified"
        if not_modified
        else "small_change"
        if small
        else "unchanged"
    )
    entry = replace(
        old,
        depth=min(old.depth, visit.depth),
        next_visit=next_due(old, interval, now),
        revisit_interval=interval,
        last_visit=now,
        last_checked=now,
        last_change=now if changed else old.last_change,
        visits=old.visits + 1,
        checks=history.checks,
        changes=history.changes,
        observed=history.observed,
        failures=0,
        # A 304 keeps the stored version; it may bring fresher validators.
        content_hash=old.content_hash if not_modified else visit.content_hash,
        etag=visit.etag or (old.etag if not_modified else None),
        last_modified=visit.last_modified
        or (old.last_modified if not_modified else None),
        last_outcome=outcome,
        claimed_until=0.0,
        text_hash=visit.text_hash
        if changed or old.text_hash is None
        else old.text_hash,
    )
    return entry, outcome


def _small_change(old: Entry, visit: Visit, threshold: int) -> bool:
    """Whether *visit*'s text is within *threshold* SimHash bits of the version
    that last counted as a change (a clock, a rotated advert: no change)."""
    if old.text_hash is None or visit.text_hash is None:
        return False
    try:
        before, after = decode(old.text_hash), decode(visit.text_hash)
    except ValueError:  # a value this crawler did not write
        return False
    return small_change(before, after, threshold)


def next_due(old: Entry, interval: float, now: float) -> float:
    """One *interval* after the visit was due, not after it was made: the wait in
    the frontier (a feeder round, the host's politeness delay behind other pages)
    does not stretch the cycle, so a crawl whose schedule fills its fetch budget
    keeps up with it. A visit made more than an interval late (a stopped crawl, a
    budget too small) starts the cycle again from *now*, so missed visits are
    skipped, never made in a burst; one made early counts from *now*."""
    due = now if old.next_visit is None else min(old.next_visit, now)
    return due + interval if due + interval > now else now + interval


def _first(
    old: Entry | None, visit: Visit, now: float, config: RevisitConfig
) -> tuple[Entry, Outcome]:
    """A URL's first visit, or a fetch of one that is gone or never revisited (a
    rerun's seed): revisits start if the page was there, with what history it has."""
    interval = config.bounds_for(visit.host).interval
    answered = visit.answered and visit.status != NOT_MODIFIED
    outcome: Outcome = "first" if answered else "once"
    entry = Entry(
        url=visit.url,
        host=visit.host,
        depth=visit.depth,
        state=ACTIVE if answered else (old.state if old else ONCE),
        next_visit=now + interval if answered else None,
        revisit_interval=interval,
        first_visit=old.first_visit if old else now,
        last_visit=now,
        last_checked=now,
        last_change=old.last_change if old else None,
        visits=(old.visits if old else 0) + 1,
        checks=old.checks if old else 0.0,
        changes=old.changes if old else 0.0,
        observed=old.observed if old else 0.0,
        failures=0 if answered else (old.failures if old else 0),
        content_hash=visit.content_hash if answered else None,
        etag=visit.etag if answered else None,
        last_modified=visit.last_modified if answered else None,
        last_outcome=outcome,
        text_hash=visit.text_hash if answered else None,
    )
    return entry, outcome


def _failed(
    old: Entry, visit: Visit, now: float, config: RevisitConfig
) -> tuple[Entry, Outcome]:
    """A revisit that found no page: tried again after the same interval, until
    REVISIT_GONE_AFTER failures in a row make the page gone."""
    failures = old.failures + 1
    gone = failures >= config.gone_after
    outcome: Outcome = "gone" if gone else "failed"
    entry = replace(
        old,
        state=GONE if gone else ACTIVE,
        next_visit=None if gone else next_due(old, old.revisit_interval, now),
        last_visit=now,
        visits=old.visits + 1,
        failures=failures,
        last_outcome=outcome,
        claimed_until=0.0,
    )
    return entry, outcome


def _text_or_none(value: str | None) -> str | None:
    return clean_text(value) if value else None
