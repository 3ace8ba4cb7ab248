"""A Redis URL that names no server stops start-up in one line with the fix."""

from __future__ import annotations

import pytest

from crawler.policy.redisurl import check_redis_url


@pytest.mark.parametrize(
    "url",
    [
        "",
        "redis://localhost:6379/0",
        "redis://localhost",
        "rediss://user:secret@r.example:6380/2",
        "redis://[::1]:7000",
        "redis://r.example:6379/0?socket_timeout=5",
        "unix:///var/run/redis.sock",
        "unix:///var/run/redis.sock?db=1",
    ],
)
def test_a_redis_url_redis_py_takes_passes(url):
    check_redis_url(url)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        (
            "localhost:6379",
            "REDIS_URL 'localhost:6379' has no scheme: use redis://localhost:6379/0",
        ),
        ("r.example", "has no scheme: use redis://r.example/0"),
        ("/run/redis.sock", "has no scheme: use unix:///run/redis.sock"),
        ("redis:localhost", "has no scheme"),
        ("http://localhost:6379", "has the scheme 'http': use redis://, rediss://"),
        ("redis://localhost:abc", "has a bad port"),
        ("redis://localhost:99999", "has a bad port"),
        ("redis://localhost:0", "has a bad port"),
        ("redis://", "names no host"),
        ("redis://:secret@/0", "names no host"),
        ("redis://local host:6379", "has a space in its host 'local host'"),
        ("redis://localhost:6379/zero", "has the database 'zero': it must be a number"),
        ("unix://", "names no socket"),
    ],
)
def test_a_url_that_names_no_server_is_one_line_with_the_fix(url, message):
    with pytest.raises(ValueError, match="REDIS_URL") as raised:
        check_redis_url(url)
    assert message in str(raised.value)
    assert "\n" not in str(raised.value)
