"""Keys of the wrong type: found by the error a read gets, deleted, counted.

A key the crawler did not write (a list where a hash belongs, a string where a
stream belongs) makes every command on it fail with ``WRONGTYPE``. The readers of
the crawl's global keys call ``retyped``: the key is deleted (its content was not
the crawler's), the damage is reported, and the read runs once more.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from redis.exceptions import ResponseError

if TYPE_CHECKING:
    from collections.abc import Callable

    from redis import Redis

T = TypeVar("T")


def retyped(
    client: Redis,
    key: str,
    expected: str,
    read: Callable[[], T],
    found: Callable[[int, str], None],
) -> T:
    """``read()``; if it fails, a *key* that is not a *expected* (a Redis type name)
    is deleted and ``found(1, what)`` called, and ``read()`` runs once more (also when
    another node deleted the key first). An error that stays propagates."""
    try:
        return read()
    except ResponseError:
        delete_if_wrong_type(client, key, expected, found)
    return read()


def delete_if_wrong_type(
    client: Redis, key: str, expected: str, found: Callable[[int, str], None]
) -> bool:
    """Delete *key* if it exists and is not a *expected*; whether it did."""
    kind = client.type(key)
    if kind in (expected.encode(), b"none", expected, "none"):
        return False
    client.delete(key)
    found(1, f"{key} was a {kind!r}, not a {expected}: deleted")
    return True
