"""Requests to compact JSON and back. Nothing read from Redis is ever unpickled.

An entry is a JSON object with a version field ``v`` and short field names; fields at
their default value are left out, so a typical link costs its URL plus a few bytes.
Meta and cb_kwargs are typed JSON (``values``), so tuples, bytes, dates, items...
come back as they were; version-1 entries (plain JSON meta) are still read. Version
3 (issue 27: compact queue entries) keeps a Referer of the URL's own origin as its
path (``r``) and the depth as a number of its own (``d``), the two things nearly
every link carries, and leaves out the callback and errback of a spider that names
its usual pair (``frontier_callbacks``: the bfs spider's ``parse`` and ``failed``);
version-2 entries are still read. Version 4 (issue 27 again) is a JSON array, ``[4,
url, referer path, depth, {other fields}]`` with the trailing parts left out when
empty, and keeps the URL relative to its queue's host (``/p``, ``:8080/p``; ``~/p``
for https): the host is in the queue's key, so an entry is decoded with its host
(``decode(entry, spider, host)``). Entries written without a host (parked pages)
keep the whole URL; versions 1 to 3 are still read.
Decoding accepts only known versions, known fields of the expected types, callbacks
that are methods of the spider (never dunders), and request classes from a short
allow-list. Meta of one attempt (``transientmeta``) is never stored. Headers are kept
as their bytes (``headertext``), and the JSON is ASCII (other characters escaped), so
any text, even a lone surrogate, is kept.
"""

from __future__ import annotations

import base64
import inspect
import json
import re
from typing import TYPE_CHECKING, Any

from scrapy import Request
from scrapy.http import FormRequest, JsonRequest
from w3lib.url import safe_url_string

from crawler.frontier.encoding import values
from crawler.frontier.encoding.allowlist import Classes
from crawler.frontier.encoding.headertext import header_bytes, header_text
from crawler.frontier.encoding.plainurl import as_is
from crawler.frontier.encoding.transientmeta import TRANSIENT_META

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy import Spider

VERSION = 4
# Entries of version 1 (meta and cb_kwargs as plain JSON), 2 (no ``r``, ``d``) and
# 3 (an object, the whole URL) may still be queued.
VERSIONS = (1, 2, 3, VERSION)
# Fields of version 3 and later: the Referer's path on the URL's origin, the depth.
_COMPACT_FIELDS = {"r": str, "d": int}
# A version-4 URL relative to its host: ``/path`` or ``:port/path`` after
# ``http://host``, the same after ``~`` for ``https://host``.
_HTTPS_MARK = "~"
# What a version-4 entry's trailing parts are when left out: no Referer, no depth,
# no other fields.
_ARRAY_DEFAULTS: tuple[Any, ...] = ("", None, {})
# Host names a relative URL may be rebuilt with: names and IPv4 addresses as
# ``host_of`` gives them for a URL as ``Request`` keeps it (the push script rebuilds
# the URL in JSON text, so no quote or backslash may be in one). An IPv6 address
# (``host_of`` gives it without its brackets) keeps its URL whole.
_RELATIVE_HOST = re.compile(r"[a-z0-9._-]+")
REFERER = "Referer"
_CLASSES: dict[str, type[Request]] = {
    "FormRequest": FormRequest,
    "JsonRequest": JsonRequest,
}
# field -> (type it must have in JSON, Request keyword)
_FIELDS: dict[str, tuple[type | tuple[type, ...], str]] = {
    "u": (str, "url"),
    "m": (str, "method"),
    "h": (dict, "headers"),
    "b": (str, "body"),
    "k": ((dict, list), "cookies"),
    "t": (dict, "meta"),
    "n": (str, "encoding"),
    "p": (int, "priority"),
    "f": (bool, "dont_filter"),
    "g": (list, "flags"),
    "a": (dict, "cb_kwargs"),
    "c": (str, "callback"),
    "e": (str, "errback"),
    "x": (str, "class"),
}


class BadEntryError(ValueError):
    """A queue entry that is not a request this crawler wrote."""


class UnencodableRequestError(TypeError):
    """A request the frontier cannot store: ``where`` names the part (a meta key,
    the callback...) and ``value_type`` the type it holds that cannot be stored."""

    def __init__(self, where: str, value_type: str, reason: str) -> None:
        self.where = where
        self.value_type = value_type
        self.reason = reason
        super().__init__(f"{where} holds a value of type {value_type}: {reason}")


def encode(request: Request, spider: Spider, host: str | None = None) -> str:
    """Compact JSON for *request*, its URL relative to *host* (its queue's: see
    ``relative_url``) if given; raises ``UnencodableRequestError`` naming the key."""
    classes = Classes(spider)
    entry: dict[str, Any] = {"u": request.url}
    if request.method != "GET":
        entry["m"] = request.method
    headers = header_text(request) if request.headers else {}
    meta = {k: v for k, v in request.meta.items() if k not in TRANSIENT_META}
    entry.update(_compacted(headers, meta, request.url))
    if headers:
        entry["h"] = headers
    if request.body:
        entry["b"] = base64.b64encode(request.body).decode("ascii")
    if request.cookies:
        entry["k"] = request.cookies
    if meta:
        entry["t"] = _typed(meta, "meta", classes)
    if request.encoding != "utf-8":
        entry["n"] = request.encoding
    if request.priority:
        entry["p"] = request.priority
    if request.dont_filter:
        entry["f"] = True
    if request.flags:
        entry["g"] = request.flags
    if request.cb_kwargs:
        entry["a"] = _typed(request.cb_kwargs, "cb_kwargs", classes)
    entry.update(_callbacks(request, spider))
    if type(request) is not Request:
        entry["x"] = _class_name(request)
    return _dumps(_as_array(entry, host))


def _as_array(entry: dict[str, Any], host: str | None) -> list[Any]:
    """A version-4 entry from its fields: ``[4, url, referer, depth, {others}]``,
    without the trailing parts that are empty (no Referer is ``""``)."""
    url = entry.pop("u")
    referer, depth = entry.pop("r", ""), entry.pop("d", None)
    array = [VERSION, url if host is None else relative_url(url, host)]
    array += [referer, depth, entry]
    while len(array) > 2 and array[-1] == _ARRAY_DEFAULTS[len(array) - 3]:
        array.pop()
    return array


def relative_url(url: str, host: str) -> str:
    """*url* without ``http://host`` (``~`` in its place for https), when it starts
    with it and a port or path follows; else *url* whole."""
    if not _RELATIVE_HOST.fullmatch(host):
        return url
    for scheme, mark in (("http://", ""), ("https://", _HTTPS_MARK)):
        origin = scheme + host
        if url.startswith(origin) and url[len(origin) : len(origin) + 1] in {"/", ":"}:
            return mark + url[len(origin) :]
    return url


def _absolute_url(url: str, host: str | None) -> str:
    """The whole URL of a version-4 entry's *url* in the queue of *host*."""
    if url[:1] not in {"/", ":", _HTTPS_MARK}:
        return url
    scheme = "http://"
    if url.startswith(_HTTPS_MARK):
        scheme, url = "https://", url[1:]
    if host is None or not _RELATIVE_HOST.fullmatch(host) or url[:1] not in {"/", ":"}:
        raise BadEntryError("a URL relative to a host, without its host")
    return scheme + host + url


def decode(data: str | bytes, spider: Spider, host: str | None = None) -> Request:
    """The request stored in *data*, an entry of the queue of *host* (its URL may be
    relative to it); raises ``BadEntryError`` for anything else."""
    entry = _loads(data, host)
    version = entry.pop("v")
    compact = _compact_fields(entry, version)
    kwargs: dict[str, Any] = {}
    for field, value in entry.items():
        if field not in _FIELDS:
            raise BadEntryError(f"unknown field {field!r}")
        expected, keyword = _FIELDS[field]
        if not isinstance(value, expected) or (
            isinstance(value, bool) and expected is not bool
        ):
            raise BadEntryError(f"field {field!r} has the wrong type")
        kwargs[keyword] = value
    if "url" not in kwargs:
        raise BadEntryError("no URL")
    for keyword in ("meta", "cb_kwargs"):
        if keyword in kwargs and version >= 2:  # typed since version 2
            try:
                kwargs[keyword] = values.mapping_from_json(kwargs[keyword], spider)
            except values.BadValueError as exc:
                raise BadEntryError(f"{keyword}: {exc}") from None
    _expand(kwargs, compact)
    if version >= 3:  # the version usual callbacks came in
        _usual_callbacks(kwargs, spider)
    return _build(kwargs, spider)


def _compacted(
    headers: dict[str, list[str]], meta: dict[str, Any], url: str
) -> dict[str, Any]:
    """The version-3 fields of a request, taken out of its *headers* and *meta*:
    the Referer of a link's page, and the depth."""
    fields: dict[str, Any] = {}
    if (referer := _referer_path(headers, url)) is not None:
        fields["r"] = referer
        del headers[REFERER]
    depth = meta.get("depth")
    if type(depth) is int and depth >= 0:
        fields["d"] = meta.pop("depth")
    return fields


def _referer_path(headers: dict[str, list[str]], url: str) -> str | None:
    """The Referer's path if it is one URL of *url*'s own origin (a link's page);
    else None, and it stays with the other headers."""
    referers = headers.get(REFERER)
    origin = _origin(url)
    if origin is None or referers is None or len(referers) != 1:
        return None
    referer = referers[0]
    if not referer.startswith(origin + "/"):
        return None
    return referer[len(origin) :]


def _origin(url: str) -> str | None:
    """``scheme://host:port`` of *url*, or None for a URL without one."""
    scheme, sep, rest = url.partition("://")
    if not sep or not scheme or "/" in scheme:
        return None
    netloc = rest.split("/", 1)[0]
    return f"{scheme}://{netloc}" if netloc else None


def _compact_fields(entry: dict[str, Any], version: int) -> dict[str, Any]:
    """The version-3 fields taken out of *entry*, checked; ``BadEntryError`` for
    them in an older entry or with the wrong type."""
    found = {}
    for field, expected in _COMPACT_FIELDS.items():
        if field not in entry:
            continue
        value = entry.pop(field)
        if version < 3:  # the version they came in
            raise BadEntryError(f"unknown field {field!r}")
        if type(value) is not expected:
            raise BadEntryError(f"field {field!r} has the wrong type")
        found[field] = value
    return found


def _expand(kwargs: dict[str, Any], compact: dict[str, Any]) -> None:
    """Put the Referer and the depth back where the request holds them."""
    if "d" in compact:
        meta = kwargs.get("meta", {})
        if compact["d"] < 0 or "depth" in meta:
            raise BadEntryError("a bad or second depth")
        kwargs["meta"] = {"depth": compact["d"], **meta}
    if "r" in compact:
        headers = kwargs.setdefault("headers", {})
        origin = _origin(kwargs["url"])
        path = compact["r"]
        if origin is None or not path.startswith("/") or REFERER in headers:
            raise BadEntryError("a Referer that is not a path of the URL's origin")
        headers[REFERER] = [origin + path]


def _typed(mapping: dict[Any, Any], part: str, classes: Classes) -> Any:
    """*mapping* (meta, cb_kwargs) as typed JSON; refused naming the key at fault."""
    try:
        return values.mapping_to_json(mapping, classes)
    except values.UnencodableValueError as exc:
        where = part if exc.key is None else f"{part} key {exc.key}"
        raise UnencodableRequestError(where, exc.value_type, exc.reason) from None


def _loads(data: str | bytes, host: str | None) -> dict[str, Any]:
    """The parsed entry of a known version, as an object of fields (``v`` its
    version, ``u`` its whole URL); raises ``BadEntryError`` for the rest.

    ``RecursionError`` is caught as well: a deeply nested document from Redis is
    hostile input like any other, not a crash of the scheduler.
    """
    try:
        entry = json.loads(data)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise BadEntryError(f"not JSON: {exc}") from None
    if isinstance(entry, list):
        return _fields_of_array(entry, host)
    if not isinstance(entry, dict) or not _is_known_version(entry.get("v")):
        raise BadEntryError("not a frontier entry of a known version")
    if entry["v"] == VERSION:
        raise BadEntryError("a version-4 entry is an array")
    return entry


def _fields_of_array(array: list[Any], host: str | None) -> dict[str, Any]:
    """The fields of a version-4 entry (``_as_array``), checked."""
    if not 2 <= len(array) <= len(_ARRAY_DEFAULTS) + 2:
        raise BadEntryError("not a frontier entry of a known version")
    if type(array[0]) is not int or array[0] != VERSION:
        raise BadEntryError("not a frontier entry of a known version")
    url, referer, depth, others = [*array[1:], *_ARRAY_DEFAULTS[len(array) - 2 :]]
    if type(url) is not str or type(referer) is not str or type(others) is not dict:
        raise BadEntryError("a version-4 entry with parts of the wrong type")
    if any(field in others for field in ("v", "u", *_COMPACT_FIELDS)):
        raise BadEntryError("a version-4 entry with a field twice")
    fields: dict[str, Any] = {"v": VERSION, "u": _absolute_url(url, host), **others}
    if referer:
        fields["r"] = referer
    if depth is not None:
        fields["d"] = depth
    return fields


def _is_known_version(version: object) -> bool:
    """Only the integers: ``True == 1`` and ``1.0 == 1``, so ``in`` is not enough."""
    return type(version) is int and version in VERSIONS


def _build(kwargs: dict[str, Any], spider: Spider) -> Request:
    request_class = _request_class(kwargs.pop("class", None))
    try:
        headers = header_bytes(kwargs.pop("headers", {}))
    except ValueError as exc:
        raise BadEntryError(str(exc)) from None
    _check_url(kwargs["url"])
    _check_encoding(kwargs.get("encoding", "utf-8"))
    for name in ("callback", "errback"):
        if name in kwargs:
            kwargs[name] = _named_method(spider, kwargs[name])
    if "body" in kwargs:
        try:
            kwargs["body"] = base64.b64decode(kwargs["body"], validate=True)
        except ValueError:
            raise BadEntryError("body is not base64") from None
    request = _verbatim_request(request_class, kwargs)
    if headers:
        # Headers.update would title-case the stored keys again, which changes keys
        # encoded in UTF-16; they are restored exactly as they were stored.
        dict.update(request.headers, headers)
    return request


def _verbatim_request(request_class: type[Request], kwargs: dict[str, Any]) -> Request:
    """The request, its URL kept as stored (Scrapy's ``verbatim_url`` meta key).

    The stored URL is already the one ``Request`` made; normalizing it again in an
    encoding that is not ASCII-compatible (UTF-16) would escape it a second time.
    """
    meta = kwargs.pop("meta", {})
    try:
        request = request_class(**kwargs, meta={**meta, "verbatim_url": True})
    except (TypeError, ValueError) as exc:
        raise BadEntryError(f"not a valid request: {exc}") from None
    if "verbatim_url" in meta:  # the request's own value, whatever it is
        request.meta["verbatim_url"] = meta["verbatim_url"]
    else:
        del request.meta["verbatim_url"]
    return request


def _check_url(url: str) -> None:
    """Only a URL as ``Request`` normalizes it, as encode stored it, is kept verbatim."""
    try:
        normal = safe_url_string(url)
    except ValueError:
        normal = None
    if normal != url:
        raise BadEntryError(f"URL {url!r} is not in the form the frontier stores")


def _check_encoding(encoding: str) -> None:
    """A text encoding Python knows, which later header and form values need."""
    try:
        "".encode(encoding)
    except (LookupError, ValueError):
        raise BadEntryError(f"{encoding!r} is not a text encoding") from None


def _request_class(name: str | None) -> type[Request]:
    """The allow-listed class *name*; an unknown name is hostile, not a Request."""
    if name is None:
        return Request
    if name not in _CLASSES:
        raise BadEntryError(f"request class {name!r} is not allowed")
    return _CLASSES[name]


def _named_method(spider: Spider, name: str) -> Callable[..., Any]:
    """The spider's method *name*; raises ``BadEntryError`` if there is none."""
    method = _spider_method(spider, name)
    if method is None:
        raise BadEntryError(f"{name!r} is not a method of spider {spider.name!r}")
    return method


def _spider_method(spider: Spider, name: str) -> Callable[..., Any] | None:
    """The bound method *name* of the spider, or None: names from Redis may be hostile.

    Private methods (``self._parse_item``) are common callbacks and are allowed;
    dunders (``__init__``, ``__class__``) never are, nor attributes that are not
    methods bound to this spider (strings, classmethods, other objects' methods).
    """
    if name.startswith("__"):
        return None
    method = getattr(spider, name, None)
    if not inspect.ismethod(method) or method.__self__ is not spider:
        return None
    return method


def usual_callbacks(spider: Spider) -> tuple[str, str] | None:
    """The callback and errback names the spider's class says most of its requests
    carry (``frontier_callbacks``), if both are methods ``decode`` resolves."""
    pair = getattr(type(spider), "frontier_callbacks", None)
    if (
        isinstance(pair, tuple)
        and len(pair) == 2
        and all(isinstance(name, str) and _spider_method(spider, name) for name in pair)
    ):
        return pair
    return None


def _usual_callbacks(kwargs: dict[str, Any], spider: Spider) -> None:
    """A version-3 entry of a spider with usual callbacks: neither field is the
    usual pair, and an empty name is none."""
    usual = usual_callbacks(spider)
    if usual is None:
        return
    if "callback" not in kwargs and "errback" not in kwargs:
        kwargs["callback"], kwargs["errback"] = usual
        return
    for name in ("callback", "errback"):
        if kwargs.get(name) == "":
            del kwargs[name]


def _callbacks(request: Request, spider: Spider) -> dict[str, str]:
    """The names of the callback and errback; only names ``decode`` resolves back.
    Nothing for a spider's usual pair; for its other requests both, an empty name
    for none (``_usual_callbacks``)."""
    names = _callback_names(request, spider)
    usual = usual_callbacks(spider)
    if usual is None:
        return names
    if (names.get("c"), names.get("e")) == usual:
        return {}
    return {"c": names.get("c", ""), "e": names.get("e", "")}


def _callback_names(request: Request, spider: Spider) -> dict[str, str]:
    names = {}
    for field, function in (("c", request.callback), ("e", request.errback)):
        if function is None:
            continue
        name = getattr(function, "__name__", None)
        if not isinstance(name, str) or _spider_method(spider, name) != function:
            raise UnencodableRequestError(
                "callback" if field == "c" else "errback",
                values.type_name(type(function)),
                f"{function!r} is not a method of the spider the frontier can name "
                "(use a spider method whose name does not start with '__')",
            )
        names[field] = name
    return names


def _class_name(request: Request) -> str:
    for name, request_class in _CLASSES.items():
        if type(request) is request_class:
            return name
    raise UnencodableRequestError(
        "request",
        values.type_name(type(request)),
        f"supported request classes: Request, {', '.join(_CLASSES)}",
    )


def _dumps(entry: list[Any]) -> str:
    """ASCII JSON, so that it is valid UTF-8 even for a string with a lone surrogate."""
    try:
        return json.dumps(entry, separators=(",", ":"), ensure_ascii=True)
    except (TypeError, ValueError, RecursionError) as exc:
        # Meta and cb_kwargs are JSON-ready by now: only cookies are stored untyped.
        raise UnencodableRequestError("cookies", "value", str(exc)) from None


def plain_get_entries(
    spider: Spider, meta: dict[str, Any]
) -> Callable[[str, str], str]:
    """A function giving, for a URL as ``Request`` keeps it and its host, the entry
    ``encode`` writes for ``Request(url, meta=meta)`` (a GET, no callback): bulk seeding
    (issue 27) encodes a seed without building a Request. *meta* is typed once."""
    kept = {k: v for k, v in meta.items() if k not in TRANSIENT_META}
    compact = _compacted({}, kept, "")  # the depth, as encode takes it out
    typed = _typed(kept, "meta", Classes(spider)) if kept else None
    # No callback: nothing, or empty names for a spider with usual ones.
    callbacks = {} if usual_callbacks(spider) is None else {"c": "", "e": ""}

    def entry(url: str, host: str) -> str:
        fields: dict[str, Any] = {"u": url, **compact}
        if typed is not None:
            fields["t"] = typed
        return _dumps(_as_array({**fields, **callbacks}, host))

    # The entry around its URL, for URLs JSON keeps as they are (most seeds: a
    # seed's JSON took a tenth of its time).
    head, _, tail = entry("http://h/", "h").partition('"/"')

    def quick_entry(url: str, host: str) -> str:
        relative = relative_url(url, host)
        if not as_is(url) or relative is url:
            return entry(url, host)
        return f'{head}"{relative}"{tail}'

    return quick_entry
