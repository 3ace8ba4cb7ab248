"""Domain-suffix tables: settings keyed by domain suffix, matched most specific first.

Time zones, politeness overrides and far-away hosts are all configured this way
(``{"de": ..., "example.de": ...}``): a host takes the value of its longest suffix
in the table. Hosts and suffixes are normalized alike, so ``WWW.Example.DE.`` matches
``example.de``.
"""

from __future__ import annotations

import ipaddress
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from collections.abc import Mapping

    from scrapy.settings import BaseSettings

MAX_NAME_LENGTH = 253  # the longest DNS name (RFC 1035): see suffixes_of
V = TypeVar("V")


def normalize_host(host: str) -> str:
    """*host* as table keys are written: lower case, no outer dots, IPs compressed.

    Hosts and configured suffixes both pass through here, so ``WWW.Example.DE.``
    matches ``example.de`` and ``[::0001]`` matches ``::1``.
    """
    name = host.strip().lower().strip(".")
    ip = _ip_address(name.removeprefix("[").removesuffix("]"))
    return ip if ip is not None else name


def suffixes_of(host: str) -> list[str]:
    """*host* and each parent domain of it, most specific first.

    An IP address is only itself: ``0.2`` is not a domain ``127.0.0.2`` belongs to.
    A DNS name has at most 253 characters; of a longer (hostile) one only the last
    253 are used, so a lookup costs the same whatever a page put in a URL.
    """
    name = normalize_host(host)
    if _ip_address(name) is not None:
        return [name]
    name = name[-MAX_NAME_LENGTH:]
    labels = name.split(".")
    return [".".join(labels[i:]) for i in range(len(labels))]


def suffix_table(settings: BaseSettings, name: str) -> dict[str, object]:
    """The dict setting *name* keyed by normalized domain suffix; one-line errors.

    ``-s NAME='{"de": ...}'`` arrives as a JSON string. Scrapy's ``getdict`` parses
    it, but fails with ``json``'s own message, which does not name the setting.
    """
    raw = settings.get(name)
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}
    try:
        table = settings.getdict(name)
    except (TypeError, ValueError):
        raise ValueError(
            f"{name} must be a JSON object of domain suffix -> value, got {raw!r}"
        ) from None
    return normalized_table(table, name)


def normalized_table(table: Mapping[object, V], name: str) -> dict[str, V]:
    """*table* keyed by normalized suffix; an empty or repeated one names *name*."""
    normalized: dict[str, V] = {}
    for key, value in table.items():
        suffix = normalize_host(str(key))
        if not suffix or suffix in normalized:
            raise ValueError(f"{name} has an empty or repeated domain suffix: {key!r}")
        normalized[suffix] = value
    return normalized


def most_specific(host: str, suffixes: Mapping[str, V]) -> V | None:
    """The value of the longest domain suffix of *host* in *suffixes*.

    *suffixes* keys are lower case without outer dots (as ``suffix_table`` makes
    them); *host* may be in any case and end with a dot.
    """
    return next((suffixes[s] for s in suffixes_of(host) if s in suffixes), None)


def _ip_address(text: str) -> str | None:
    """*text* in the canonical form of an IP address, or ``None`` if it is not one."""
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        return None
