"""The one policy for waiting out a store that cannot answer now."""

from __future__ import annotations

import logging

from crawler.storage.errors import StoreUnavailableError
from crawler.storage.outage import StoreOutage

logger = logging.getLogger("tests.store_outage")


def outage() -> StoreOutage:
    return StoreOutage(
        logger,
        "%(store)s away (%(error)s), up to %(most)s s",
        "%(store)s back after %(seconds).0f s",
        {"store": "s3://bucket"},
        first=0.5,
        most=3.0,
    )


def test_waits_double_up_to_the_most_and_start_again_after_an_answer():
    waiting = outage()
    error = StoreUnavailableError("503")
    assert [waiting.failed(error) for _ in range(5)] == [0.5, 1.0, 2.0, 3.0, 3.0]
    waiting.answered()
    assert waiting.failed(error) == 0.5


def test_an_outage_is_logged_once_when_it_starts_and_once_when_it_ends(caplog):
    waiting = outage()
    caplog.set_level(logging.INFO, logger=logger.name)
    waiting.answered()  # no outage: nothing to say
    for _ in range(3):
        waiting.failed(StoreUnavailableError("503 Slow Down"))
    assert waiting.ongoing
    waiting.answered()
    waiting.answered()
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (logging.ERROR, "s3://bucket away (503 Slow Down), up to 3.0 s"),
        (logging.WARNING, "s3://bucket back after 0 s"),
    ]
    assert not waiting.ongoing
