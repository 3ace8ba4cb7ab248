"""Unit tests for crawler/frontier/encoding/codec.py: requests to compact JSON and back."""

from __future__ import annotations

import dataclasses
import json
import math
import pickle
from datetime import date, datetime, time, timedelta, timezone
from decimal import Decimal
from typing import TYPE_CHECKING, Any
from uuid import UUID
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scrapy import Field, Item, Request, Spider
from scrapy.http import FormRequest, JsonRequest

from crawler.frontier.encoding.codec import (
    BadEntryError,
    UnencodableRequestError,
    decode,
    encode,
)
from crawler.frontier.encoding.transientmeta import TRANSIENT_META
from tests.unit.properties import PROPERTY
from tests.unit.test_frontier_values import same

if TYPE_CHECKING:
    from collections.abc import Callable

URL = "http://example.com/page"


class _Helper:
    def run(self, response: object) -> None:
        """A public method of an object that is not the spider."""


class CodecSpider(Spider):
    name = "codec"
    not_a_method = "parse"

    def __init__(self) -> None:
        super().__init__()
        self.borrowed = _Helper().run

    def parse(self, response: object) -> None:
        """A callback."""

    def on_error(self, failure: object) -> None:
        """An errback."""

    def _secret(self, response: object) -> None:
        """A private method: a callback as good as a public one."""

    def __hidden(self, response: object) -> None:
        """A name-mangled method: its name starts with '__', so never stored."""

    def __call__(self, response: object) -> None:
        """A dunder method: never a callback named by a queue entry."""


class UnlistedRequest(Request):
    """A request class the codec does not know."""


SPIDER = CodecSpider()
OTHER_SPIDER = CodecSpider()


def fields(request: Request) -> dict[str, Any]:
    """Everything a request carries that the frontier must keep."""
    return {
        "class": type(request),
        "url": request.url,
        "method": request.method,
        "headers": dict(request.headers),
        "body": request.body,
        "cookies": request.cookies,
        "meta": request.meta,
        "encoding": request.encoding,
        "priority": request.priority,
        "dont_filter": request.dont_filter,
        "flags": request.flags,
        "cb_kwargs": request.cb_kwargs,
        "callback": request.callback,
        "errback": request.errback,
    }


def round_trip(request: Request) -> Request:
    return decode(encode(request, SPIDER), SPIDER)


def entry(**values: Any) -> str:
    """A JSON queue entry: a valid minimal one, changed by *values* (None removes)."""
    data: dict[str, Any] = {"v": 1, "u": URL}
    data.update(values)
    return json.dumps({k: v for k, v in data.items() if v is not None})


ROUND_TRIPS: dict[str, Callable[[], Request]] = {
    "plain GET": lambda: Request(URL),
    "GET with depth": lambda: Request(URL, meta={"depth": 3}),
    "POST with text body": lambda: Request(URL, method="POST", body=b"a=1&b=2"),
    "POST with non-UTF-8 body": lambda: Request(
        URL, method="POST", body=b"\xff\x00\xfe\x80 binary \xc3"
    ),
    "headers": lambda: Request(
        URL, headers={"Accept": "text/html", "X-Many": ["one", "two"]}
    ),
    "cookies as dict": lambda: Request(URL, cookies={"session": "abc", "n": "1"}),
    "cookies as list": lambda: Request(
        URL, cookies=[{"name": "a", "value": "b", "domain": "example.com"}]
    ),
    "cb_kwargs": lambda: Request(
        URL, cb_kwargs={"page": 3, "tags": ["a", "b"], "nested": {"k": None}}
    ),
    "positive priority": lambda: Request(URL, priority=12),
    "negative priority": lambda: Request(URL, priority=-7),
    "dont_filter": lambda: Request(URL, dont_filter=True),
    "flags": lambda: Request(URL, flags=["retried", "from-sitemap"]),
    "encoding": lambda: Request(URL, encoding="latin-1"),
    "IRI": lambda: Request("http://example.com/caf\u00e9?q=\u00fc&x=\u4e2d"),
    "rich meta": lambda: Request(
        URL,
        meta={"depth": 2, "retry_times": 1, "note": "\u00e9t\u00e9", "x": [1, 2.5]},
    ),
    "callback": lambda: Request(URL, callback=SPIDER.parse),
    "errback": lambda: Request(URL, errback=SPIDER.on_error),
    "callback and errback": lambda: Request(
        URL, callback=SPIDER.parse, errback=SPIDER.on_error
    ),
    "FormRequest": lambda: FormRequest(
        URL, formdata={"q": "bfs crawler", "page": "2"}, callback=SPIDER.parse
    ),
    "FormRequest GET": lambda: FormRequest(URL, method="GET", formdata={"q": "x"}),
    "JsonRequest": lambda: JsonRequest(URL, data={"query": [1, 2]}, priority=1),
    "everything": lambda: Request(
        URL,
        method="PUT",
        headers={"X-Token": "t"},
        body=b"\x00\x01",
        cookies={"c": "1"},
        meta={"depth": 5},
        encoding="latin-1",
        priority=-1,
        dont_filter=True,
        flags=["f"],
        cb_kwargs={"a": 1},
        callback=SPIDER.parse,
        errback=SPIDER.on_error,
    ),
}


@pytest.mark.parametrize("make", ROUND_TRIPS.values(), ids=ROUND_TRIPS.keys())
def test_request_round_trips(make: Callable[[], Request]) -> None:
    original = make()
    assert fields(round_trip(original)) == fields(original)


def test_transient_meta_is_not_stored() -> None:
    meta = {"depth": 1, **dict.fromkeys(TRANSIENT_META, "one attempt")}
    original = Request(URL, meta=meta)
    encoded = encode(original, SPIDER)
    assert decode(encoded, SPIDER).meta == {"depth": 1}
    for key in TRANSIENT_META:
        assert key not in encoded
    assert original.meta == meta


def test_default_fields_are_left_out() -> None:
    assert encode(Request(URL), SPIDER) == '[4,"http://example.com/page"]'
    assert encode(Request(URL), SPIDER, "example.com") == '[4,"/page"]'


@pytest.mark.parametrize(
    ("url", "host", "stored"),
    [
        ("http://example.com/page", "example.com", "/page"),
        ("http://127.0.0.2:8080/p/1.html", "127.0.0.2", ":8080/p/1.html"),
        ("https://example.com/page?q=1", "example.com", "~/page?q=1"),
        ("https://example.com:8443/", "example.com", "~:8443/"),
        ("http://xn--caf-dma.example/", "xn--caf-dma.example", "/"),
        # Kept whole: the host is not what starts the URL, or not one to rebuild.
        ("http://user@example.com/page", "example.com", None),
        ("http://[::1]:8080/page", "::1", None),
        ("ftp://example.com/file", "example.com", None),
        ("http://example.com.evil.example/", "example.com", None),
        ("http://example.com/page", "other.example", None),
    ],
)
def test_a_url_is_kept_relative_to_its_queues_host(
    url: str, host: str, stored: str | None
) -> None:
    """Version 4: the queue's key names the host, so its entries leave out the
    scheme and host; decoded with that host, the request is the same."""
    original = Request(url, callback=SPIDER.parse, meta={"depth": 2})
    encoded = encode(original, SPIDER, host)
    assert json.loads(encoded)[1] == (url if stored is None else stored)
    assert fields(decode(encoded, SPIDER, host)) == fields(original)


@pytest.mark.parametrize(
    ("data", "host"),
    [
        ('[4,"/page"]', None),  # relative, and no host to make it whole
        ('[4,"~/page"]', None),
        ('[4,"/page"]', "ex ample.com"),  # a host that could not have been written
        ('[4,"/page"]', 'a".example'),
        ('[4,"/page"]', "~"),  # the reparse queue's pseudo-host
        ('[4,"~page"]', "example.com"),
        ('[4,"~~/page"]', "example.com"),
        ('[4,"/a b"]', "example.com"),  # not as Request keeps it
        ('[4,":99999/"]', "example.com"),  # a port out of range
    ],
)
def test_a_relative_url_without_a_host_it_fits_is_a_bad_entry(
    data: str, host: str | None
) -> None:
    with pytest.raises(BadEntryError):
        decode(data, SPIDER, host)


@pytest.mark.parametrize("value", [None, False, True, 0])
def test_a_requests_own_verbatim_url_value_comes_back(value: object) -> None:
    """The decoder builds the request with ``verbatim_url`` set, then gives the
    request its own value back (hypothesis found None coming back as True)."""
    decoded = round_trip(Request(URL, meta={"verbatim_url": value}))
    assert decoded.meta == {"verbatim_url": value}


def test_version_three_entries_are_still_read() -> None:
    data = '{"v":3,"u":"http://a.example/x","r":"/","d":3}'
    decoded = decode(data, SPIDER)
    assert decoded.url == "http://a.example/x"
    assert decoded.meta == {"depth": 3}
    assert decoded.headers.getlist("Referer") == [b"http://a.example/"]


def test_typical_link_costs_its_url_plus_thirty_bytes() -> None:
    url = "http://example.com/some/path/page.html"
    encoded = encode(Request(url, meta={"depth": 3}), SPIDER)
    assert len(encoded.encode("utf-8")) <= len(url) + 30


BAD_ENTRIES: dict[str, str | bytes] = {
    "pickled dict": pickle.dumps({"v": 1, "u": URL}),
    "pickled dict, protocol 2": pickle.dumps({"v": 1, "u": URL}, protocol=2),
    "pickled request dict": pickle.dumps(Request(URL).to_dict(spider=SPIDER)),
    "pickle opcodes": b"\x80\x04\x95\x10\x00\x00\x00\x00\x00\x00\x00}\x94.",
    "garbage bytes": b"\x00\xffgarbage\xfe",
    "garbage text": "hello world",
    "empty": "",
    "empty bytes": b"",
    "truncated JSON": '{"v":1,"u":"http://exa',
    "null": "null",
    "number": "1",
    "string": '"http://example.com/"',
    "JSON list": "[1, 2]",
    "list of an entry": json.dumps([{"v": 1, "u": URL}]),
    "version 4 as an object": entry(v=4),
    "version 4 alone": "[4]",
    "version 4 too long": json.dumps([4, URL, "", None, {}, 1]),
    "version 4 url as int": "[4,1]",
    "version 4 url null": "[4,null]",
    "version 4 referer as int": json.dumps([4, URL, 1]),
    "version 4 referer not a path": json.dumps([4, URL, "a"]),
    "version 4 depth as string": json.dumps([4, URL, "", "3"]),
    "version 4 depth as bool": json.dumps([4, URL, "", True]),
    "version 4 depth negative": json.dumps([4, URL, "", -1]),
    "version 4 fields as list": json.dumps([4, URL, "", None, [1]]),
    "version 4 url twice": json.dumps([4, URL, "", None, {"u": URL}]),
    "version 4 version twice": json.dumps([4, URL, "", None, {"v": 4}]),
    "version 4 depth twice": json.dumps([4, URL, "", 1, {"d": 2}]),
    "version 4 unknown field": json.dumps([4, URL, "", None, {"z": 1}]),
    "version 4 as bool": json.dumps([True, URL]),
    "version 4 as float": json.dumps([4.0, URL]),
    "version 5 array": json.dumps([5, URL]),
    "version 3 array": json.dumps([3, URL]),
    "referer path in version 2": entry(v=2, r="/a"),
    "depth in version 1": entry(d=1),
    "referer path as list": entry(v=3, r=["/a"]),
    "referer path not a path": entry(v=3, r="a"),
    "referer path and a Referer header": entry(v=3, r="/a", h={"Referer": ["x"]}),
    "depth as string": entry(v=3, d="1"),
    "depth as bool": entry(v=3, d=True),
    "depth negative": entry(v=3, d=-1),
    "depth twice": entry(v=3, d=1, t={"depth": 2}),
    "version 0": entry(v=0),
    "version as string": entry(v="1"),
    "version null": json.dumps({"v": None, "u": URL}),
    "no version": json.dumps({"u": URL}),
    "unknown field": entry(z=1),
    "long field name": entry(url=URL),
    "priority as string": entry(p="1"),
    "priority as bool": entry(p=True),
    "priority as float": entry(p=1.5),
    "dont_filter as int": entry(f=1),
    "url as int": entry(u=1),
    "method as null": json.dumps({"v": 1, "u": URL, "m": None}),
    "headers as list": entry(h=[["Accept", "x"]]),
    "header value null": entry(h={"Accept": [None]}),
    "header value not a list": entry(h={"Accept": "text/html"}),
    "header value not latin-1": entry(h={"Accept": ["\u4e2d"]}),
    "header name not latin-1": entry(h={"\u4e2d": ["x"]}),
    "meta as list": entry(t=[1]),
    "flags as string": entry(g="flag"),
    "cookies as string": entry(k="a=b"),
    "cb_kwargs as list": entry(a=[1]),
    "callback as int": entry(c=1),
    "dunder callback": entry(c="__class__"),
    "dunder init callback": entry(c="__init__"),
    "dunder method callback": entry(c="__call__"),
    "callback not a method": entry(c="name"),
    "callback class attribute string": entry(c="not_a_method"),
    "callback method of another object": entry(c="borrowed"),
    "callback classmethod": entry(c="from_crawler"),
    "callback missing": entry(c="no_such_method"),
    "dunder errback": entry(e="__call__"),
    "errback method of another object": entry(e="borrowed"),
    "body not base64": entry(m="POST", b="!!not base64!!"),
    "body bad padding": entry(m="POST", b="YQ"),
    "missing url": json.dumps({"v": 1}),
    "missing url with fields": json.dumps({"v": 1, "m": "POST", "p": 1}),
    "relative url": entry(u="/relative"),
    "not a url": entry(u="not a url"),
    "empty url": entry(u=""),
    "url with lone surrogate": '{"v":1,"u":"http://example.com/\\ud800"}',
    "url not as stored (space)": entry(u="http://example.com/a b"),
    "url not as stored (IRI)": entry(u="http://example.com/caf\u00e9"),
    "url not as stored (bad IPv6)": entry(u="http://[::1/"),
    "class as int": entry(x=1),
    "class Request (never written)": entry(x="Request"),
    "encoding not for text": entry(n="base64"),
    "encoding that encodes nothing": entry(n="undefined"),
}


@pytest.mark.parametrize("data", BAD_ENTRIES.values(), ids=BAD_ENTRIES.keys())
def test_bad_entry_is_rejected(data: str | bytes) -> None:
    with pytest.raises(BadEntryError):
        decode(data, SPIDER)


@pytest.mark.parametrize(
    "data",
    [entry(), entry(c="parse", e="on_error"), entry(c="_secret", e="_secret")],
    ids=["minimal", "callbacks", "private callbacks"],
)
def test_valid_entry_is_accepted_as_bytes_and_text(data: str) -> None:
    """The control for the rejection table: the same shapes, valid, decode."""
    assert decode(data, SPIDER).url == URL
    assert decode(data.encode("utf-8"), SPIDER).url == URL


@pytest.mark.parametrize("name", ["Evil", "scrapy.Request", "os.system", ""])
def test_class_outside_allow_list_is_rejected(name: str) -> None:
    with pytest.raises(BadEntryError):
        decode(entry(x=name), SPIDER)


@pytest.mark.parametrize("request_class", [FormRequest, JsonRequest])
def test_class_on_allow_list_is_accepted(request_class: type[Request]) -> None:
    """The control for the allow-list test: listed names still decode."""
    decoded = decode(entry(x=request_class.__name__), SPIDER)
    assert type(decoded) is request_class


@pytest.mark.parametrize("version", [True, 1.0, 2.0, "2"])
def test_version_must_be_a_known_integer(version: object) -> None:
    with pytest.raises(BadEntryError):
        decode(entry(v=version), SPIDER)


@pytest.mark.parametrize("encoding", ["no-such-encoding", "rot13"])
def test_unknown_encoding_is_a_bad_entry(encoding: str) -> None:
    with pytest.raises(BadEntryError):
        decode(entry(n=encoding), SPIDER)


@pytest.mark.parametrize("encoding", ["latin-1", "utf-16", "cp1252"])
def test_known_encoding_is_accepted(encoding: str) -> None:
    assert decode(entry(n=encoding), SPIDER).encoding == encoding


@pytest.mark.parametrize(
    "data",
    [
        "[" * 100_000,
        '{"v":1,"u":"http://example.com/","t":' + '{"a":' * 100_000 + "1",
    ],
    ids=["nested list", "nested meta"],
)
def test_deeply_nested_json_is_a_bad_entry(data: str) -> None:
    with pytest.raises(BadEntryError):
        decode(data, SPIDER)


@pytest.mark.parametrize(
    ("meta", "key", "value_type"),
    [
        ({"depth": 1, "handle": object()}, "handle", "object"),
        ({"call": lambda: None}, "call", "function"),
        ({"depth": 1, "when": {1, _Helper()}}, "when", f"{__name__}._Helper"),
        ({"nested": [(1, {"x": _Helper})]}, "nested", "type"),
    ],
)
def test_meta_value_that_cannot_be_stored_is_named(
    meta: dict[str, Any], key: str, value_type: str
) -> None:
    with pytest.raises(UnencodableRequestError, match=repr(key)) as raised:
        encode(Request(URL, meta=meta), SPIDER)
    assert raised.value.where == f"meta key {key!r}"
    assert raised.value.value_type == value_type


def test_cb_kwargs_value_that_cannot_be_stored_is_named() -> None:
    request = Request(URL, callback=SPIDER.parse, cb_kwargs={"ok": 1, "bad": object()})
    with pytest.raises(UnencodableRequestError) as raised:
        encode(request, SPIDER)
    assert raised.value.where == "cb_kwargs key 'bad'"
    assert raised.value.value_type == "object"


def _module_function(response: object) -> None:
    """A callback that is not a spider method."""


def _lambda_callback_request() -> Request:
    callback: Callable[[Any], None] = lambda response: None
    return Request(URL, callback=callback)


UNENCODABLE: dict[str, Callable[[], Request]] = {
    "lambda callback": _lambda_callback_request,
    "module function callback": lambda: Request(URL, callback=_module_function),
    "another spider's callback": lambda: Request(URL, callback=OTHER_SPIDER.parse),
    "another object's errback": lambda: Request(URL, errback=_Helper().run),
    "unlisted request class": lambda: UnlistedRequest(URL),
    "cb_kwargs not JSON": lambda: Request(URL, cb_kwargs={"x": object()}),
}


@pytest.mark.parametrize("make", UNENCODABLE.values(), ids=UNENCODABLE.keys())
def test_request_the_frontier_cannot_store_is_refused(
    make: Callable[[], Request],
) -> None:
    with pytest.raises(UnencodableRequestError):
        encode(make(), SPIDER)


def _stored_or_refused(request: Request) -> None:
    """Encode either refuses *request* or stores one that decodes to it."""
    try:
        encoded = encode(request, SPIDER)
    except UnencodableRequestError:
        return
    assert fields(decode(encoded.encode("utf-8"), SPIDER)) == fields(request)


def test_private_callback_is_refused_or_kept() -> None:
    _stored_or_refused(Request(URL, callback=SPIDER._secret))


def _request_with(field: str, method: Callable[[Any], None]) -> Request:
    if field == "callback":
        return Request(URL, callback=method)
    return Request(URL, errback=method)


@pytest.mark.parametrize("field", ["callback", "errback"])
def test_private_method_round_trips(field: str) -> None:
    original = _request_with(field, SPIDER._secret)
    assert getattr(round_trip(original), field) == SPIDER._secret


@pytest.mark.parametrize(
    "method",
    [SPIDER._CodecSpider__hidden, SPIDER.__call__],  # type: ignore[attr-defined]
    ids=["name-mangled", "dunder"],
)
@pytest.mark.parametrize("field", ["callback", "errback"])
def test_method_decode_would_refuse_is_not_encoded(
    method: Callable[[object], None], field: str
) -> None:
    """Encode and decode agree: nothing is stored that is dropped at dequeue."""
    with pytest.raises(UnencodableRequestError):
        encode(_request_with(field, method), SPIDER)


def test_non_ascii_header_bytes_round_trip() -> None:
    _stored_or_refused(Request(URL, headers={"X-Name": b"caf\xe9"}))


def test_utf16_request_round_trips() -> None:
    _stored_or_refused(Request(URL, headers={"X-Token": "t"}, encoding="utf-16"))


NON_UTF8_REQUESTS: dict[str, Callable[[], Request]] = {
    "utf-16 POST with query": lambda: Request(
        URL + "?q=caf\u00e9&n=1",
        method="POST",
        headers={"X-Name": "caf\u00e9", "X-Raw": b"\xff\x00"},
        body="caf\u00e9",
        encoding="utf-16",
    ),
    "utf-32 IRI": lambda: Request(
        "http://example.com/\u4e2d?x=\u00fc", headers={"A": "b"}, encoding="utf-32"
    ),
    "utf-16 FormRequest": lambda: FormRequest(
        URL, formdata={"q": "caf\u00e9"}, encoding="utf-16", callback=SPIDER.parse
    ),
    "cp1252 headers": lambda: Request(
        URL, headers={"X-Name": "caf\u00e9 \u20ac"}, encoding="cp1252"
    ),
}


@pytest.mark.parametrize(
    "make", NON_UTF8_REQUESTS.values(), ids=NON_UTF8_REQUESTS.keys()
)
def test_request_in_another_encoding_round_trips(make: Callable[[], Request]) -> None:
    original = make()
    assert fields(round_trip(original)) == fields(original)


def test_decoded_request_keeps_its_encoding_for_later_headers() -> None:
    """A header a middleware sets after dequeue is encoded as on the original."""
    original = Request(URL, headers={"X-Token": "t"}, encoding="utf-16")
    decoded = round_trip(original)
    original.headers["User-Agent"] = "crawler"
    decoded.headers["User-Agent"] = "crawler"
    assert fields(decoded) == fields(original)


@PROPERTY
@given(
    headers=st.dictionaries(
        st.binary(min_size=1, max_size=8),
        st.lists(st.binary(max_size=8), min_size=1, max_size=3),
        max_size=4,
    ),
    encoding=st.sampled_from(["utf-8", "latin-1", "utf-16"]),
)
def test_any_header_bytes_round_trip(
    headers: dict[bytes, list[bytes]], encoding: str
) -> None:
    original = Request(URL, headers=headers, encoding=encoding)
    assert fields(round_trip(original)) == fields(original)


def test_meta_with_lone_surrogate_is_refused_or_kept() -> None:
    _stored_or_refused(Request(URL, meta={"name": "\udc80"}))


@pytest.mark.parametrize("text", ["\udc80", "a\ud800b", "\u00e9\U0001f600"])
def test_any_meta_text_round_trips_as_ascii(text: str) -> None:
    original = Request(URL, meta={text: text}, cb_kwargs={"x": text}, flags=[text])
    encoded = encode(original, SPIDER)
    assert encoded.isascii()
    assert fields(decode(encoded.encode("utf-8"), SPIDER)) == fields(original)


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"a": value}
    return value


def test_meta_too_deep_for_json_is_named() -> None:
    meta = {"depth": 1, "tree": _nested(100_000)}
    with pytest.raises(UnencodableRequestError, match="'tree'"):
        encode(Request(URL, meta=meta), SPIDER)


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)


def _request_or_bad_entry(data: str | bytes) -> None:
    try:
        request = decode(data, SPIDER)
    except BadEntryError:
        return
    assert isinstance(request, Request)


@PROPERTY
@given(data=st.binary(max_size=200))
def test_arbitrary_bytes_give_a_request_or_bad_entry(data: bytes) -> None:
    _request_or_bad_entry(data)


@PROPERTY
@given(value=JSON_VALUES)
def test_arbitrary_json_gives_a_request_or_bad_entry(value: object) -> None:
    _request_or_bad_entry(json.dumps(value))


HOSTILE_FIELDS = st.dictionaries(
    st.sampled_from(list("umhbktnpfgacex")),
    st.one_of(
        JSON_VALUES,
        st.sampled_from(["parse", "on_error", "_secret", "__class__", "borrowed"]),
        st.sampled_from([URL, "FormRequest", "JsonRequest", "YQ==", "POST"]),
        st.sampled_from(["utf-16", "rot13", "base64", "idna", "undefined", "nope"]),
        st.dictionaries(  # typed meta and cb_kwargs: tags with any payload
            st.sampled_from(["x", "~", "v"]),
            st.builds(
                lambda tag, payload: {"~": tag, "v": payload},
                st.sampled_from(["tuple", "set", "bytes", "dict", "datetime", "?"]),
                JSON_VALUES,
            ),
            max_size=2,
        ),
    ),
    max_size=6,
)


@PROPERTY
@given(
    values=HOSTILE_FIELDS,
    url=st.sampled_from([URL, None]),
    version=st.sampled_from([1, 2]),
)
def test_hostile_entry_of_a_known_version_gives_a_request_or_bad_entry(
    values: dict[str, object], url: str | None, version: int
) -> None:
    data: dict[str, object] = {"v": version}
    if url is not None:
        data["u"] = url
    data.update(values)
    _request_or_bad_entry(json.dumps(data))


@PROPERTY
@given(
    parts=st.lists(
        st.one_of(
            JSON_VALUES,
            st.sampled_from(["/page", ":8080/", "~/x", "~:1/", URL, "/", "", "/a b"]),
            st.integers(-2, 5),
            HOSTILE_FIELDS,
        ),
        max_size=5,
    ),
    version=st.sampled_from([4, 3, True, 4.0]),
    host=st.sampled_from([None, "example.com", "~", 'a"b', "", "[::1]"]),
)
def test_hostile_version_four_entry_gives_a_request_or_bad_entry(
    parts: list[object], version: object, host: str | None
) -> None:
    try:
        request = decode(json.dumps([version, *parts]), SPIDER, host)
    except BadEntryError:
        return
    assert isinstance(request, Request)


JSON_TEXT = st.text(alphabet=st.characters(codec="utf-8"), max_size=12)
META = st.dictionaries(
    JSON_TEXT.filter(lambda key: key not in TRANSIENT_META),
    st.recursive(
        st.none() | st.booleans() | st.integers() | JSON_TEXT,
        lambda children: (
            st.lists(children, max_size=3)
            | st.dictionaries(JSON_TEXT, children, max_size=3)
        ),
        max_leaves=6,
    ),
    max_size=4,
)


@st.composite
def requests(draw: st.DrawFn) -> Request:
    """Requests the codec must keep exactly: text that is valid UTF-8, any bytes."""
    callback = draw(st.sampled_from([None, "parse", "on_error"]))
    return Request(
        f"http://example.com/{draw(JSON_TEXT)}",
        method=draw(st.sampled_from(["GET", "POST", "HEAD", "PUT"])),
        body=draw(st.binary(max_size=40)),
        meta=draw(META),
        priority=draw(st.integers(-(2**40), 2**40)),
        dont_filter=draw(st.booleans()),
        flags=draw(st.lists(JSON_TEXT, max_size=3)),
        cb_kwargs=draw(
            st.dictionaries(JSON_TEXT, st.integers() | JSON_TEXT, max_size=3)
        ),
        callback=getattr(SPIDER, callback) if callback else None,
    )


@PROPERTY
@given(original=requests())
def test_generated_requests_round_trip(original: Request) -> None:
    assert fields(round_trip(original)) == fields(original)


# --- typed meta and cb_kwargs (entry version 2) ---------------------------------------


class Tagged(Item):
    name = Field()
    when = Field()


@dataclasses.dataclass(frozen=True)
class Span:
    start: Any
    end: Any


RICH: dict[Any, Any] = {
    "depth": 2,
    "pair": (1, "a"),
    "raw": b"\x00\xff",
    "at": datetime(2024, 10, 27, 2, 30, tzinfo=ZoneInfo("Europe/Paris"), fold=1),
    "day": date(2024, 1, 31),
    "clock": time(12, 0, tzinfo=timezone(timedelta(hours=-5))),
    "wait": timedelta(seconds=90),
    "price": Decimal("19.90"),
    "id": UUID("12345678-1234-5678-1234-567812345678"),
    "tags": {"x", "y"},
    "frozen": frozenset({1}),
    "by_id": {1: "one", (2, 3): "pair"},
    "tag_key": {"~": "bytes", "v": "AA=="},
    "nan": math.nan,
    "item": Tagged(name="n", when=date(2020, 2, 2)),
    "span": Span(1.5, (2, b"x")),
    7: "a meta key that is not a string",
}


def test_rich_meta_and_cb_kwargs_round_trip_exactly() -> None:
    original = Request(URL, meta=RICH, cb_kwargs=dict(RICH), callback=SPIDER.parse)
    decoded = decode(encode(original, SPIDER).encode("utf-8"), SPIDER)
    assert same(decoded.meta, RICH)
    assert same(decoded.cb_kwargs, RICH)
    assert decoded.callback == SPIDER.parse


def test_a_link_keeps_its_page_as_a_path_and_its_depth_as_a_number() -> None:
    """Version 3: a link's Referer (its page, on its origin) and depth cost a few
    bytes, and come back exactly."""
    url = "http://127.0.0.2:8080/p/17.html"
    referer = "http://127.0.0.2:8080/p/3.html"
    original = Request(
        url,
        callback=SPIDER.parse,
        meta={"depth": 3, "kept": "x"},
        headers={"Referer": referer, "Accept": "text/html"},
    )
    encoded = encode(original, SPIDER)
    assert json.loads(encoded)[2] == "/p/3.html"
    assert json.loads(encoded)[3] == 3
    assert referer not in encoded
    decoded = decode(encoded, SPIDER)
    assert decoded.headers.getlist("Referer") == [referer.encode()]
    assert decoded.headers.getlist("Accept") == [b"text/html"]
    assert decoded.meta == {"depth": 3, "kept": "x"}


@pytest.mark.parametrize(
    "referer",
    [
        "https://127.0.0.2:8080/p/3.html",  # another scheme
        "http://127.0.0.2:8081/p/3.html",  # another port
        "http://127.0.0.2:8080.evil.example/p/3.html",
        "http://127.0.0.3:8080/p/3.html",
    ],
)
def test_a_referer_of_another_origin_stays_a_header(referer: str) -> None:
    original = Request("http://127.0.0.2:8080/p/17.html", headers={"Referer": referer})
    encoded = encode(original, SPIDER)
    assert json.loads(encoded)[2:3] in ([], [""])  # no Referer path
    assert decode(encoded, SPIDER).headers.getlist("Referer") == [referer.encode()]


def test_version_two_entries_are_still_read() -> None:
    data = (
        '{"v":2,"u":"http://a.example/x","h":{"Referer":["http://a.example/"]},'
        '"t":{"depth":3},"c":"parse"}'
    )
    decoded = decode(data, SPIDER)
    assert decoded.meta == {"depth": 3}
    assert decoded.headers.getlist("Referer") == [b"http://a.example/"]


def test_typical_link_entry_is_no_longer_than_in_version_one() -> None:
    url = "http://example.com/some/path/page.html"
    version_one = '{"v":1,"u":"' + url + '","t":{"depth":3}}'
    encoded = encode(Request(url, meta={"depth": 3}), SPIDER)
    assert len(encoded) <= len(version_one)
    assert decode(version_one, SPIDER).meta == decode(encoded, SPIDER).meta


@pytest.mark.parametrize(
    "meta",
    [
        {"~": "tuple", "v": [1, 2]},
        {"a": {"~": "bytes", "v": "AA=="}, "b": [1, 2]},
        {"~": 1},
    ],
)
def test_version_one_meta_is_read_as_plain_json(meta: dict[str, Any]) -> None:
    """Entries queued before typed meta hold plain JSON: nothing in them is a tag."""
    stored = entry(t=meta, a={"x": meta}, c="parse")
    decoded = decode(stored, SPIDER)
    assert decoded.meta == meta
    assert decoded.cb_kwargs == {"x": meta}


def entry2(**values: Any) -> str:
    """A version-2 queue entry (see ``entry``)."""
    return entry(v=2, **values)


HOSTILE_TYPED: dict[str, str] = {
    "unknown tag in meta": entry2(t={"x": {"~": "pickle", "v": "gAR9lC4="}}),
    "meta that is a tagged tuple": entry2(t={"~": "tuple", "v": [1]}),
    "meta class outside the allow-list": entry2(
        t={"x": {"~": "dataclass", "c": "subprocess:Popen", "v": {}}}
    ),
    "meta dunder class name": entry2(
        t={"x": {"~": "item", "c": f"{__name__}:Tagged.__class__", "v": {}}}
    ),
    "cb_kwargs with an unhashable dict key": entry2(
        a={"~": "dict", "v": [[[1], 2]]}, c="parse"
    ),
    "cb_kwargs item with an unknown field": entry2(
        a={"x": {"~": "item", "c": f"{__name__}:Tagged", "v": {"evil": 1}}}
    ),
    "meta nested too deep": entry2(t={"x": json.loads("[" * 150 + "]" * 150)}),
}


@pytest.mark.parametrize("data", HOSTILE_TYPED.values(), ids=HOSTILE_TYPED.keys())
def test_hostile_typed_meta_is_a_bad_entry(data: str) -> None:
    with pytest.raises(BadEntryError):
        decode(data, SPIDER)


def test_valid_typed_meta_entry_is_accepted() -> None:
    """The control for the hostile typed entries: a valid tag in each field decodes."""
    stored = entry2(
        t={"x": {"~": "tuple", "v": [1]}},
        a={"y": {"~": "item", "c": f"{__name__}:Tagged", "v": {"name": "n"}}},
    )
    decoded = decode(stored, SPIDER)
    assert decoded.meta == {"x": (1,)}
    assert decoded.cb_kwargs == {"y": Tagged(name="n")}


TYPED_META = st.dictionaries(
    JSON_TEXT.filter(lambda key: key not in TRANSIENT_META),
    st.recursive(
        st.none() | st.integers() | st.floats() | JSON_TEXT | st.binary(max_size=6)
        | st.datetimes(timezones=st.none() | st.timezones()) | st.decimals()
        | st.builds(Span, st.integers(), st.text(max_size=3)),
        lambda children: (
            st.lists(children, max_size=3)
            | st.tuples(children, children)
            | st.dictionaries(st.integers() | JSON_TEXT, children, max_size=3)
            | st.frozensets(st.integers() | st.binary(max_size=3), max_size=3)
            | st.builds(Tagged, name=children)
        ),
        max_leaves=8,
    ),
    max_size=4,
)  # fmt: skip


@PROPERTY
@given(meta=TYPED_META, cb_kwargs=TYPED_META)
def test_generated_typed_meta_round_trips_exactly(
    meta: dict[str, Any], cb_kwargs: dict[str, Any]
) -> None:
    original = Request(URL, meta=meta, cb_kwargs=cb_kwargs)
    decoded = round_trip(original)
    assert same(decoded.meta, meta)
    assert same(decoded.cb_kwargs, cb_kwargs)


class UsualSpider(CodecSpider):
    """A spider that names the callbacks most of its requests carry."""

    name = "usual"
    frontier_callbacks = ("parse", "on_error")


USUAL = UsualSpider()


def other_fields(encoded: list[Any]) -> dict[str, Any]:
    """The fields of a version-4 entry after its URL, Referer path and depth."""
    return encoded[4] if len(encoded) > 4 else {}


@pytest.mark.parametrize(
    ("callback", "errback", "stored"),
    [
        ("parse", "on_error", {}),
        ("parse", None, {"c": "parse", "e": ""}),
        (None, None, {"c": "", "e": ""}),
        ("_secret", "on_error", {"c": "_secret", "e": "on_error"}),
    ],
)
def test_a_spiders_usual_callbacks_are_left_out(
    callback: str | None, errback: str | None, stored: dict[str, str]
) -> None:
    """Only the usual pair is left out; any other pair is written whole, an empty
    name for none, and each comes back as it was."""
    original = Request(
        URL,
        callback=None if callback is None else getattr(USUAL, callback),
        errback=None if errback is None else getattr(USUAL, errback),
    )
    encoded = json.loads(encode(original, USUAL))
    assert {k: v for k, v in other_fields(encoded).items() if k in "ce"} == stored
    decoded = decode(json.dumps(encoded), USUAL)
    assert decoded.callback == original.callback
    assert decoded.errback == original.errback


@pytest.mark.parametrize(
    ("spider", "data"),
    [
        (SPIDER, entry(v=3, c="")),  # no usual pair: an empty name is no method
        (USUAL, entry(v=2, c="")),  # only version 3 has empty names
        (USUAL, entry(v=3, c="__init__", e="")),
    ],
)
def test_empty_or_hostile_callback_names_are_bad_entries(
    spider: Spider, data: str
) -> None:
    with pytest.raises(BadEntryError):
        decode(data, spider)


def test_usual_callbacks_that_are_no_methods_are_ignored() -> None:
    class Odd(CodecSpider):
        name = "odd"
        frontier_callbacks = ("parse", "no_such_method")

    spider = Odd()
    original = Request(URL, callback=spider.parse)
    assert other_fields(json.loads(encode(original, spider)))["c"] == "parse"
    assert decode(encode(original, spider), spider).callback == spider.parse
