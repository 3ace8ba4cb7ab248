"""Which Redis errors are waited out, the backoff between tries, and the log lines."""

from __future__ import annotations

import logging

import pytest
from redis.exceptions import (
    AuthenticationError,
    BusyLoadingError,
    ClusterDownError,
    ConnectionError,
    DataError,
    LockError,
    MasterDownError,
    NoScriptError,
    ReadOnlyError,
    RedisClusterException,
    ResponseError,
    TimeoutError,
    TryAgainError,
)
from scrapy.utils.test import get_crawler

from crawler.context.crawl import CrawlContext
from crawler.context.outage import Backoff, is_outage
from crawler.crawlstate.connection import RedisUnreachableError


@pytest.mark.parametrize(
    ("error", "waited_out"),
    [
        (ConnectionError("Connection refused"), True),
        (BusyLoadingError("Redis is loading the dataset in memory"), True),
        (TimeoutError("Timeout reading from socket"), True),
        (ClusterDownError("The cluster is down"), True),
        (MasterDownError("Link with MASTER is down"), True),
        (TryAgainError("Multiple keys request during rehashing of slot"), True),
        (ReadOnlyError("You can't write against a read only replica."), True),
        (ResponseError("LOADING Redis is loading the dataset in memory"), True),
        (ResponseError("MASTERDOWN Link with MASTER is down"), True),
        (RedisUnreachableError("Redis at redis://x is unreachable"), True),
        (RedisClusterException("Redis Cluster cannot be connected."), True),
        # A connection error that says nothing about the server: also waited out.
        (AuthenticationError("invalid password"), True),
        # Errors in what was asked, not in whether Redis is there: raised.
        (ResponseError("WRONGTYPE Operation against a key"), False),
        (ResponseError("ERR Error running script: frontier: no Bloom layout"), False),
        (NoScriptError("No matching script"), False),
        (DataError("Invalid input of type: 'dict'"), False),
        (LockError("Cannot release an unlocked lock"), False),
        (RedisClusterException("CROSSSLOT keys in request don't hash"), False),
        (ValueError("not Redis at all"), False),
    ],
)
def test_only_errors_that_say_redis_is_away_are_waited_out(error, waited_out):
    assert is_outage(error) is waited_out


def test_backoff_tries_at_once_then_waits_half_a_second_doubling_to_five():
    backoff = Backoff()
    waits = [backoff.failed(100.0) - 100.0 for _ in range(7)]
    assert waits == [0.0, 0.5, 1.0, 2.0, 4.0, 5.0, 5.0]
    assert not backoff.ready(104.9)
    assert backoff.ready(105.0)
    assert backoff.succeeded() is True  # it ended a run of failures
    assert backoff.ready(0.0)
    assert backoff.failed(200.0) == 200.0  # the next run starts over
    assert Backoff().succeeded() is False


def outage_records(caplog) -> list[tuple[int, str]]:
    return [
        (record.levelno, record.getMessage())
        for record in caplog.records
        if record.name == "crawler.context.outage"
    ]


def test_an_outage_is_logged_once_each_way_whoever_reports_it(caplog):
    caplog.set_level(logging.INFO)
    crawler = get_crawler(settings_dict={"ADDONS": {"crawler.addon.Frontier": 0}})
    outage = CrawlContext.of(crawler).outage
    assert CrawlContext.of(crawler).outage is outage  # one per crawl
    scheduler, robots = outage.gate("the scheduler"), outage.gate("robots")
    refused = ConnectionError("Connection refused")
    for now in (1.0, 2.0, 3.0):
        scheduler.failed(refused, now)
        robots.failed(refused, now)
    assert outage.down
    robots.succeeded()
    scheduler.succeeded()
    assert not outage.down
    lines = outage_records(caplog)
    assert [level for level, _ in lines] == [logging.WARNING, logging.INFO]
    assert "Redis is unreachable (Connection refused, in the scheduler)" in lines[0][1]
    assert "calls failed meanwhile" in lines[1][1]
    assert crawler.stats.get_value("redis/outages") == 1
    assert crawler.stats.get_value("redis/errors") == 6


def test_a_single_failed_call_is_counted_but_is_no_outage(caplog):
    caplog.set_level(logging.INFO)
    crawler = get_crawler(settings_dict={"ADDONS": {"crawler.addon.Frontier": 0}})
    gate = CrawlContext.of(crawler).outage.gate("the traffic counters")
    closed = ConnectionError("Connection closed by server.")
    assert gate.failed(closed, 10.0) == 10.0  # tried again at once
    gate.succeeded()
    assert outage_records(caplog) == []
    assert crawler.stats.get_value("redis/errors") == 1
    assert crawler.stats.get_value("redis/outages") is None
