"""Which links a crawl follows, and what counts as a seed URL."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from crawler.policy.hosts import BadURLError, host_of, registered_domain

SCOPES = ("any", "seed-hosts", "seed-domains")


def parse_seed(line: str) -> str | None:
    """The seed URL on *line*; None for a blank line or ``#`` comment.

    Raises ``ValueError`` saying what is wrong with anything that is not an
    absolute http(s) URL with a host.
    """
    text = line.strip()
    if not text or text.startswith("#"):
        return None
    plain = text.startswith(("http://", "https://"))  # most seeds: no urlsplit
    if not plain and urlsplit(text).scheme.lower() not in ("http", "https"):
        raise ValueError(f"{text!r} is not an http(s) URL")
    try:
        host_of(text)
    except BadURLError as exc:
        raise ValueError(str(exc)) from None
    return text


class Scope:
    """``any`` follows every link; ``seed-hosts`` and ``seed-domains`` stay home."""

    def __init__(self, name: str, seeds: list[str]) -> None:
        if name not in SCOPES:
            raise ValueError(f"scope must be one of {', '.join(SCOPES)}, got {name!r}")
        self.name = name
        hosts = {host_of(url) for url in seeds}
        self._hosts = hosts
        self._domains = {registered_domain(host) for host in hosts}

    def allows(self, url: str) -> bool:
        if self.name == "any":
            return True
        try:
            host = host_of(url)
        except BadURLError:
            return False
        if self.name == "seed-hosts":
            return host in self._hosts
        return registered_domain(host) in self._domains


# What a seed pushed to the crawl's Redis seed list may be, besides a plain URL: the
# JSON object scrapy-redis reads (``make_request_from_data``): "url", optional
# "meta" (an object), "method", and any other key a form field (a string), as
# scrapy-redis sends them; plus "priority" (an integer), which the issue asks for.
SEED_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")
# Longest payload read (characters): a seed is a URL and a little meta.
MAX_SEED_PAYLOAD = 65536
# Meta keys a payload must not set: the frontier's own (crawler.meta: all start with
# this prefix) and the link depth, which BFS order rests on (a seed is depth 0).
RESERVED_META_PREFIX = "frontier_"
RESERVED_META = frozenset({"depth", "tier"})  # Scrapy's depth; crawler.meta.TIER
# Priorities a payload may give (Redis scores and Scrapy's own use stay exact).
MAX_SEED_PRIORITY = 2**31 - 1


class BadSeedError(ValueError):
    """A seed payload that cannot be queued; *kind* names the class of fault (one
    log line per class)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True, slots=True)
class SeedPayload:
    """A seed read from Redis: its URL and what scrapy-redis' JSON form may add."""

    url: str
    meta: dict[str, Any] = field(default_factory=dict)
    priority: int = 0
    method: str = "GET"
    formdata: dict[str, str] = field(default_factory=dict)


def parse_seed_payload(text: str) -> SeedPayload | None:
    """The seed in *text*: a plain URL line (as ``parse_seed``: None for a blank or
    comment line) or a scrapy-redis JSON object. Raises ``BadSeedError`` for
    anything else; never anything but that."""
    stripped = text.strip()
    if not stripped.startswith("{"):
        return _url_only(stripped)
    if len(stripped) > MAX_SEED_PAYLOAD:
        raise BadSeedError("too_large", f"payload over {MAX_SEED_PAYLOAD} characters")
    try:
        data = json.loads(stripped, parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:
        raise BadSeedError("json", f"not JSON: {str(exc)[:100]}") from None
    if not isinstance(data, dict):
        raise BadSeedError("json", "not a JSON object")
    url = data.pop("url", None)
    if not isinstance(url, str) or (seed := _url_only(url)) is None:
        raise BadSeedError("url", "no URL")
    return SeedPayload(
        seed.url,
        _meta(data.pop("meta", {})),
        _priority(data.pop("priority", 0)),
        _method(data.pop("method", "GET")),
        _formdata(data),
    )


def _url_only(text: str) -> SeedPayload | None:
    try:
        url = parse_seed(text)
    except ValueError as exc:
        raise BadSeedError("url", str(exc)[:200]) from None
    return None if url is None else SeedPayload(url)


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not a JSON value")


def _meta(meta: object) -> dict[str, Any]:
    if not isinstance(meta, dict):
        raise BadSeedError("meta", "meta is not a JSON object")
    for key in meta:
        if key in RESERVED_META or key.startswith(RESERVED_META_PREFIX):
            raise BadSeedError("meta", f"meta key {key[:50]!r} is the crawler's own")
    return meta


def _priority(priority: object) -> int:
    if isinstance(priority, bool) or not isinstance(priority, int):
        raise BadSeedError("priority", "priority is not an integer")
    if abs(priority) > MAX_SEED_PRIORITY:
        raise BadSeedError("priority", f"priority beyond +-{MAX_SEED_PRIORITY}")
    return priority


def _method(method: object) -> str:
    if not isinstance(method, str) or method.upper() not in SEED_METHODS:
        raise BadSeedError("method", f"method must be one of {', '.join(SEED_METHODS)}")
    return method.upper()


def _formdata(fields: dict[str, Any]) -> dict[str, str]:
    """The other keys: form fields, as scrapy-redis sends them (strings only)."""
    for name, value in fields.items():
        if not isinstance(value, str):
            raise BadSeedError("form", f"form field {name[:50]!r} is not a string")
    return fields
