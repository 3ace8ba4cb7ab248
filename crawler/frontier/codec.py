"""Requests to compact JSON and back. Nothing read from Redis is ever unpickled.

An entry is a JSON object with a version field ``v`` and short field names; fields at
their default value are left out, so a typical link costs its URL plus a few bytes.
Decoding accepts only known versions, known fields of the expected types, callbacks
that are public methods of the spider, and request classes from a short allow-list.
"""

from __future__ import annotations

import base64
import json
from typing import TYPE_CHECKING, Any

from scrapy import Request
from scrapy.http import FormRequest, JsonRequest

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy import Spider

VERSION = 1
# Meta keys that describe one attempt, not the request: never stored.
TRANSIENT_META = frozenset({"download_latency", "frontier_lease", "_frontier_host"})
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
    """A request whose meta or arguments cannot be stored as JSON."""


def encode(request: Request, spider: Spider) -> str:
    """Compact JSON for *request*; raises ``UnencodableRequestError`` naming the key."""
    entry: dict[str, Any] = {"v": VERSION, "u": request.url}
    if request.method != "GET":
        entry["m"] = request.method
    if request.headers:
        entry["h"] = {
            key.decode("latin-1"): [value.decode("latin-1") for value in values]
            for key, values in request.headers.items()
        }
    if request.body:
        entry["b"] = base64.b64encode(request.body).decode("ascii")
    if request.cookies:
        entry["k"] = request.cookies
    meta = {k: v for k, v in request.meta.items() if k not in TRANSIENT_META}
    if meta:
        entry["t"] = meta
    if request.encoding != "utf-8":
        entry["n"] = request.encoding
    if request.priority:
        entry["p"] = request.priority
    if request.dont_filter:
        entry["f"] = True
    if request.flags:
        entry["g"] = request.flags
    if request.cb_kwargs:
        entry["a"] = request.cb_kwargs
    entry.update(_callbacks(request, spider))
    if type(request) is not Request:
        entry["x"] = _class_name(request)
    return _dumps(entry)


def decode(data: str | bytes, spider: Spider) -> Request:
    """The request stored in *data*; raises ``BadEntryError`` for anything else."""
    try:
        entry = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadEntryError(f"not JSON: {exc}") from None
    if not isinstance(entry, dict) or entry.get("v") != VERSION:
        raise BadEntryError("not a version-1 frontier entry")
    kwargs: dict[str, Any] = {}
    for field, value in entry.items():
        if field == "v":
            continue
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
    return _build(kwargs, spider)


def _build(kwargs: dict[str, Any], spider: Spider) -> Request:
    request_class = _CLASSES.get(kwargs.pop("class", ""), Request)
    for name in ("callback", "errback"):
        if name in kwargs:
            kwargs[name] = _spider_method(spider, kwargs[name])
    if "body" in kwargs:
        try:
            kwargs["body"] = base64.b64decode(kwargs["body"], validate=True)
        except ValueError:
            raise BadEntryError("body is not base64") from None
    try:
        return request_class(**kwargs)
    except (TypeError, ValueError) as exc:
        raise BadEntryError(f"not a valid request: {exc}") from None


def _spider_method(spider: Spider, name: str) -> Callable[..., Any]:
    """A public method of the spider; any other name is a hostile entry."""
    method = getattr(spider, name, None) if not name.startswith("_") else None
    if not callable(method) or getattr(method, "__self__", None) is not spider:
        raise BadEntryError(f"{name!r} is not a method of spider {spider.name!r}")
    return method  # type: ignore[no-any-return]


def _callbacks(request: Request, spider: Spider) -> dict[str, str]:
    names = {}
    for field, function in (("c", request.callback), ("e", request.errback)):
        if function is None:
            continue
        if getattr(function, "__self__", None) is not spider:
            raise UnencodableRequestError(
                f"{request}: {function!r} is not a method of the spider, so the "
                "frontier cannot store it (use a spider method as callback)"
            )
        names[field] = function.__name__
    return names


def _class_name(request: Request) -> str:
    for name, request_class in _CLASSES.items():
        if type(request) is request_class:
            return name
    raise UnencodableRequestError(
        f"{request}: request class {type(request).__name__} cannot be stored in the "
        f"frontier (supported: Request, {', '.join(_CLASSES)})"
    )


def _dumps(entry: dict[str, Any]) -> str:
    try:
        return json.dumps(entry, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError):
        pass
    for key, value in entry.get("t", {}).items():
        try:
            json.dumps(value)
        except (TypeError, ValueError) as exc:
            raise UnencodableRequestError(
                f"request meta key {key!r} cannot be stored in the frontier: {exc}"
            ) from None
    raise UnencodableRequestError(
        "request cookies or cb_kwargs cannot be stored in the frontier as JSON"
    )
