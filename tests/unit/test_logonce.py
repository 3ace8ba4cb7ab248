"""OnceLogger: every event counted, the first of each kind logged."""

from __future__ import annotations

import logging

from scrapy.utils.test import get_crawler

from crawler.context.logonce import OnceLogger

logger = logging.getLogger("tests.logonce")


def _crawler():  # a crawler with a spider and live stats, no engine
    crawler = get_crawler()
    crawler.spider = crawler._create_spider("s")
    assert crawler.stats is not None
    return crawler


def test_each_event_is_counted_and_the_first_logged(caplog):
    crawler = _crawler()
    once = OnceLogger(logger, crawler)
    with caplog.at_level(logging.DEBUG, logger="tests.logonce"):
        first = once.event("c/errors", "failed %(what)s", {"what": "a"})
        second = once.event("c/errors", "failed %(what)s", {"what": "b"}, count=3)
    assert (first, second) == (True, False)
    assert crawler.stats.get_value("c/errors") == 4
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (logging.WARNING, "failed a")
    ]
    record = caplog.records[0]
    assert record.spider is crawler.spider
    assert record.pathname == __file__  # the caller's line, not the helper's


def test_each_kind_is_logged_once_at_its_level(caplog):
    crawler = _crawler()
    once = OnceLogger(logger, crawler)
    with caplog.at_level(logging.DEBUG, logger="tests.logonce"):
        for kind in ("x", "y", "x", "y"):
            once.event("c/bad", "bad %s", kind, level=logging.ERROR, key=kind)
    assert crawler.stats.get_value("c/bad") == 4
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (logging.ERROR, "bad x"),
        (logging.ERROR, "bad y"),
    ]


def test_one_key_may_stand_for_several_stats(caplog):
    crawler = _crawler()
    once = OnceLogger(logger, crawler)
    with caplog.at_level(logging.INFO, logger="tests.logonce"):
        once.event("c/refused", "failure one", key="failure")
        once.event("c/unreachable", "failure two", key="failure")
    assert crawler.stats.get_value("c/refused") == 1
    assert crawler.stats.get_value("c/unreachable") == 1
    assert [r.getMessage() for r in caplog.records] == ["failure one"]


def test_once_logs_without_counting(caplog):
    crawler = _crawler()
    once = OnceLogger(logger, crawler)
    with caplog.at_level(logging.INFO, logger="tests.logonce"):
        assert once.once("held", "holding %(url)s", {"url": "u"}, level=logging.INFO)
        assert not once.once("held", "holding %(url)s", {"url": "v"})
    assert crawler.stats.get_stats() == {}
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (logging.INFO, "holding u")
    ]


def test_without_a_crawler_nothing_is_counted_and_no_spider_added(caplog):
    once = OnceLogger(logger)
    with caplog.at_level(logging.WARNING, logger="tests.logonce"):
        once.event("c/damaged", "damaged", count=2)
        once.event("c/damaged", "damaged")
    assert len(caplog.records) == 1
    assert not hasattr(caplog.records[0], "spider")
    assert caplog.records[0].pathname == __file__


def test_a_logger_adapter_keeps_its_extra(caplog):
    adapter = logging.LoggerAdapter(logger, {"spider": "the spider"})
    once = OnceLogger(adapter)
    with caplog.at_level(logging.WARNING, logger="tests.logonce"):
        once.once("k", "via %s", "adapter")
    assert caplog.records[0].spider == "the spider"
    assert caplog.records[0].pathname == __file__
