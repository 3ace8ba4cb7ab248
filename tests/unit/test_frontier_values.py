"""Unit tests for crawler/frontier/encoding/values.py (and allowlist, timevalues): typed JSON."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import socket
import sys
from datetime import UTC, date, datetime, time, timedelta, timezone, tzinfo
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any
from uuid import UUID
from zoneinfo import TZPATH, ZoneInfo

import lxml.html
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scrapy import Field, Item, Spider

from crawler.frontier.encoding.allowlist import Classes
from crawler.frontier.encoding.values import (
    MAX_DEPTH,
    BadValueError,
    UnencodableValueError,
    from_json,
    mapping_to_json,
    to_json,
)
from crawler.items import PageRecord
from tests.unit.properties import PROPERTY

if TYPE_CHECKING:
    from collections.abc import Callable

MODULE = __name__


class ValuesSpider(Spider):
    name = "values"


SPIDER = ValuesSpider()
CLASSES = Classes(SPIDER)


class Product(Item):
    name = Field()
    price = Field()
    tags = Field()


@dataclasses.dataclass
class Point:
    x: Any
    y: Any = 0


@dataclasses.dataclass(frozen=True, slots=True)
class Frozen:
    label: str
    parts: tuple[Any, ...] = ()
    derived: int = dataclasses.field(init=False, default=0)


@dataclasses.dataclass
class Normalizing:
    """A dataclass whose ``__init__`` changes its input: decode must not rerun it."""

    text: str

    def __post_init__(self) -> None:
        self.text = self.text + "!"


class Outer:
    @dataclasses.dataclass
    class Inner:
        value: Any


class NotStorable:
    """A plain class of the spider's package: neither an Item nor a dataclass."""


def round_trip(value: Any) -> Any:
    """Through JSON text, as the codec stores it."""
    return from_json(json.loads(json.dumps(to_json(value, CLASSES))), CLASSES)


def same(a: Any, b: Any) -> bool:
    """Exactly the same value: same types all the way down, NaN equal to NaN."""
    if type(a) is not type(b):
        return False
    for kinds, compare in _COMPARISONS:
        if isinstance(a, kinds):
            return compare(a, b)
    if dataclasses.is_dataclass(a):
        return same(fields_of(a), fields_of(b))
    return bool(a == b)


def _same_float(a: float, b: float) -> bool:
    if math.isnan(a):
        return math.isnan(b)
    return a == b and math.copysign(1, a) == math.copysign(1, b)


def _same_clock(a: datetime | time, b: datetime | time) -> bool:
    return same_zone(a.tzinfo, b.tzinfo) and (
        a.replace(tzinfo=None) == b.replace(tzinfo=None)  # type: ignore[operator]
    )


def _same_items(a: dict[Any, Any], b: dict[Any, Any]) -> bool:
    pairs = zip(a.items(), b.items(), strict=False)
    return len(a) == len(b) and all(
        same(ka, kb) and same(va, vb) for (ka, va), (kb, vb) in pairs
    )


def _same_set(a: set[Any], b: set[Any]) -> bool:
    return a == b and all(same(x, next(y for y in b if y == x)) for x in a)


_COMPARISONS: list[tuple[type | tuple[type, ...], Callable[[Any, Any], bool]]] = [
    (float, _same_float),
    (Decimal, lambda a, b: a.as_tuple() == b.as_tuple()),
    ((datetime, time), _same_clock),
    ((list, tuple), lambda a, b: len(a) == len(b) and all(map(same, a, b))),
    (dict, _same_items),
    ((set, frozenset), _same_set),
    (Item, lambda a, b: same(dict(a), dict(b))),
]


def same_zone(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is b
    if type(a) is not type(b):
        return False
    if isinstance(a, ZoneInfo):
        return a is b
    return bool(a == b and a.tzname(None) == b.tzname(None))


def fields_of(instance: Any) -> list[Any]:
    return [getattr(instance, f.name) for f in dataclasses.fields(instance)]


PARIS = ZoneInfo("Europe/Paris")
EXAMPLES: dict[str, Any] = {
    "str": "caf\u00e9",
    "int": -(2**70),
    "int of 5000 digits": 7 * 10**5000,
    "float": 0.1,
    "negative zero": -0.0,
    "nan": math.nan,
    "inf": math.inf,
    "-inf": -math.inf,
    "bool": True,
    "None": None,
    "list": [1, "a", None],
    "tuple": (1, (2, 3), [4]),
    "empty tuple": (),
    "dict with int keys": {1: "a", 2: "b"},
    "dict with tuple and None keys": {(1, "a"): 1, None: 2, 1.5: 3, True: 4},
    "dict using the tag key": {"~": "tuple", "v": [1, 2]},
    "dict using the tag key, nested": {"a": {"~": "bytes", "v": "AA=="}},
    "bytes": b"\x00\xff\x80",
    "empty bytes": b"",
    "naive datetime": datetime(2024, 2, 29, 23, 59, 59, 999999),
    "UTC datetime": datetime(2024, 1, 1, tzinfo=UTC),
    "offset datetime": datetime(2024, 1, 1, tzinfo=timezone(timedelta(hours=-3.5))),
    "offset with seconds": datetime(
        2024, 1, 1, tzinfo=timezone(timedelta(hours=5, seconds=7, microseconds=9))
    ),
    "named offset": datetime(2024, 1, 1, tzinfo=timezone(timedelta(hours=1), "CET")),
    "zoneinfo datetime": datetime(2024, 7, 1, 12, tzinfo=PARIS),
    "zoneinfo time": time(12, tzinfo=PARIS),
    "zoneinfo datetime, second of a repeated hour": datetime(
        2024, 10, 27, 2, 30, tzinfo=PARIS, fold=1
    ),
    "date": date(1, 1, 1),
    "time": time(23, 59, 1, 5),
    "aware time": time(1, 2, tzinfo=timezone(timedelta(hours=9))),
    "timedelta": timedelta(days=-3, seconds=5, microseconds=1),
    "Decimal": Decimal("-1.50E+3"),
    "Decimal with trailing zeros": Decimal("1.000"),
    "Decimal NaN": Decimal("NaN"),
    "Decimal sNaN": Decimal("-sNaN"),
    "Decimal -Infinity": Decimal("-Infinity"),
    "UUID": UUID("12345678-1234-5678-1234-567812345678"),
    "set": {1, "a", (2, 3), frozenset({4})},
    "empty set": set(),
    "frozenset": frozenset({b"x", None}),
    "Item": Product(name="pen", price=Decimal("1.20"), tags=("a", "b")),
    "Item with fields unset": Product(name="pen"),
    "Item in an Item": Product(name=Product(name="inner")),
    "dataclass": Point(1, (2, 3)),
    "frozen slots dataclass with an init=False field": Frozen("f", (b"x",)),
    "dataclass whose __init__ changes its input": Normalizing("kept"),
    "nested dataclass class": Outer.Inner({1: {2}}),
    "the project's PageRecord": PageRecord(
        url="http://a.example/",
        status=200,
        depth=1,
        title=None,
        content_type=None,
        length=3,
        links=0,
        fetched_at="now",
        body=b"abc",
    ),
    "everything nested": {
        "k": [(Point(Product(name={1, 2}), date(2020, 1, 1)), {b"k": math.inf})]
    },
}


@pytest.mark.parametrize("value", EXAMPLES.values(), ids=EXAMPLES.keys())
def test_value_round_trips_exactly(value: Any) -> None:
    assert same(round_trip(value), value)


def test_same_tells_types_apart() -> None:
    """The control for the round-trip tests: ``same`` fails on what JSON would do."""
    assert not same([1, 2], (1, 2))
    assert not same({"1": "a"}, {1: "a"})
    assert not same(Decimal("1.0"), Decimal("1.00"))
    assert not same(1, True)
    assert not same(
        datetime(2024, 1, 1, tzinfo=UTC),
        datetime(2024, 1, 1, 1, tzinfo=timezone(timedelta(hours=1))),
    )
    assert not same(Point(1, 2), Point(1, 3))


@pytest.mark.parametrize(
    "value",
    [{"depth": 3}, ["a", 1, 2.5, None, True], {"a": {"b": [1, {"c": "d"}]}}, "text"],
)
def test_plain_json_is_stored_as_it_is(value: Any) -> None:
    assert to_json(value, CLASSES) == value
    assert json.dumps(to_json(value, CLASSES)) == json.dumps(value)


def test_dict_using_the_tag_key_is_not_taken_for_a_tag() -> None:
    stored = to_json({"~": "bytes", "v": "AA=="}, CLASSES)
    assert stored["~"] == "dict"
    assert round_trip({"~": "bytes", "v": "AA=="}) == {"~": "bytes", "v": "AA=="}


def test_decoded_dataclass_keeps_its_fields_without_running_init() -> None:
    decoded = round_trip(Normalizing("kept"))
    assert decoded.text == "kept!"  # once, by the constructor before encoding


def _open_file() -> Any:
    return Path(__file__).open(encoding="utf-8")


def _self_holding_list() -> list[Any]:
    value: list[Any] = [1]
    value.append(value)
    return value


UNENCODABLE: dict[str, Callable[[], Any]] = {
    "lambda": lambda: lambda: None,
    "function": lambda: round_trip,
    "object": object,
    "class": lambda: Point,
    "plain class instance": NotStorable,
    "socket": lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM),
    "open file": _open_file,
    "str subclass": lambda: type("Text", (str,), {})("x"),
    "dict subclass": lambda: type("Map", (dict,), {})(a=1),
    "bytearray": lambda: bytearray(b"x"),
    "scrapy's own Item class": Item,
    "datetime with a tzinfo that has no name": lambda: datetime(
        2024, 1, 1, tzinfo=_Zone()
    ),
    "zoneinfo without a key": lambda: datetime(2024, 1, 1, tzinfo=_keyless_paris()),
    "nested deep in a list": lambda: [1, [2, {"x": (3, object())}]],
    "dataclass field": lambda: Point(object()),
    "Item field": lambda: Product(name=lambda: None),
    "set element": lambda: {1, lambda: None},
    "dict key": lambda: {object(): 1},
    "a list that holds itself": _self_holding_list,
}


class _Zone(tzinfo):
    """A tzinfo subclass of the spider's own: it has no name the codec can store."""

    def utcoffset(self, dt: object) -> timedelta:
        return timedelta(hours=2)


def _keyless_paris() -> ZoneInfo:
    """Europe/Paris read from its file: a ZoneInfo whose key is None."""
    path = next(Path(root, "Europe", "Paris") for root in TZPATH if Path(root).is_dir())
    with path.open("rb") as file:
        return ZoneInfo.from_file(file)


@pytest.mark.parametrize("make", UNENCODABLE.values(), ids=UNENCODABLE.keys())
def test_value_that_cannot_be_stored_is_refused(make: Callable[[], Any]) -> None:
    value = make()
    try:
        with pytest.raises(UnencodableValueError):
            to_json(value, CLASSES)
    finally:
        if hasattr(value, "close"):
            value.close()


@pytest.mark.parametrize(
    ("value", "type_name"),
    [
        (lambda: None, "function"),
        (Point(NotStorable()), f"{MODULE}.NotStorable"),
        ({"k": [socket]}, "module"),
    ],
)
def test_refusal_names_the_type_at_fault(value: Any, type_name: str) -> None:
    with pytest.raises(UnencodableValueError) as raised:
        to_json(value, CLASSES)
    assert raised.value.value_type == type_name


def test_refusal_of_a_mapping_names_its_key() -> None:
    with pytest.raises(UnencodableValueError) as raised:
        mapping_to_json({"fine": (1, 2), "bad": [1, {2: object()}]}, CLASSES)
    assert raised.value.key == "'bad'"
    assert raised.value.value_type == "object"


def test_refusal_of_a_mapping_names_a_key_that_cannot_be_stored() -> None:
    with pytest.raises(UnencodableValueError) as raised:
        mapping_to_json({"fine": 1, NotStorable: 2}, CLASSES)
    assert raised.value.key is not None
    assert "NotStorable" in raised.value.key
    assert raised.value.value_type == "type"


def _nested_lists(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


def test_values_nested_up_to_the_limit_round_trip() -> None:
    value = _nested_lists(MAX_DEPTH)
    assert round_trip(value) == value


def test_values_nested_past_the_limit_are_refused() -> None:
    with pytest.raises(UnencodableValueError, match="deeper"):
        to_json(_nested_lists(MAX_DEPTH + 1), CLASSES)


def test_class_outside_the_spider_package_is_refused_on_encode() -> None:
    """A spider of another package: the test module's classes are not its own."""
    other = type("Other", (Spider,), {"name": "o", "__module__": "otherpkg.spiders"})
    with pytest.raises(UnencodableValueError, match="outside"):
        to_json(Point(1), Classes(other()))


def test_spider_modules_setting_widens_the_allow_list() -> None:
    other = type("Other", (Spider,), {"name": "o", "__module__": "otherpkg.spiders"})
    spider = other()
    spider.settings = _Settings(SPIDER_MODULES=["tests.unit"])  # type: ignore[assignment]
    assert same(
        from_json(to_json(Point(1), Classes(spider)), Classes(spider)), Point(1)
    )


class _Settings(dict[str, Any]):
    def getlist(self, name: str) -> list[str]:
        return list(self.get(name, []))


def test_project_items_module_is_always_allowed() -> None:
    other = type("Other", (Spider,), {"name": "o", "__module__": "otherpkg.spiders"})
    record = EXAMPLES["the project's PageRecord"]
    classes = Classes(other())
    assert same(from_json(to_json(record, classes), classes), record)


def tagged(tag: Any, payload: Any = None, **fields: Any) -> dict[str, Any]:
    return {"~": tag, "v": payload, **fields}


def obj(kind: str, name: Any, payload: Any = None) -> dict[str, Any]:
    return {"~": kind, "c": name, "v": {} if payload is None else payload}


HOSTILE: dict[str, Any] = {
    "unknown tag": tagged("pickle", "gASVAAAAAAAAAAB9lC4="),
    "tag naming a function": tagged("os.system", "id"),
    "tag that is not a string": tagged(1, []),
    "tag that is a list": {"~": ["tuple"], "v": []},
    "tag without payload": {"~": "tuple"},
    "tag with an extra field": tagged("tuple", [], x=1),
    "tuple payload not a list": tagged("tuple", "ab"),
    "set of unhashable values": tagged("set", [[1]]),
    "frozenset of a dict": tagged("frozenset", [{"a": 1}]),
    "dict payload not pairs": tagged("dict", [[1, 2, 3]]),
    "dict payload a dict": tagged("dict", {"a": 1}),
    "dict with an unhashable key": tagged("dict", [[[1], 2]]),
    "bytes not base64": tagged("bytes", "!!!"),
    "bytes not a string": tagged("bytes", 1),
    "float that is a number": tagged("float", "1e5"),
    "float not a string": tagged("float", 1.0),
    "int not hex": tagged("int", "zz"),
    "decimal garbage": tagged("decimal", "one"),
    "decimal not a string": tagged("decimal", 1),
    "uuid garbage": tagged("uuid", "not-a-uuid"),
    "date garbage": tagged("date", "2024-13-45"),
    "datetime with its zone in the text": tagged(
        "datetime", ["2024-01-01T00:00:00+01:00", 0, None]
    ),
    "datetime fold 2": tagged("datetime", ["2024-01-01T00:00:00", 2, None]),
    "datetime fold True": tagged("datetime", ["2024-01-01T00:00:00", True, None]),
    "datetime zone path": tagged(
        "datetime", ["2024-01-01T00:00:00", 0, ["zone", "../../../etc/passwd"]]
    ),
    "datetime zone absolute": tagged(
        "datetime", ["2024-01-01T00:00:00", 0, ["zone", "/etc/localtime"]]
    ),
    "datetime zone directory": tagged(
        "datetime", ["2024-01-01T00:00:00", 0, ["zone", "America"]]
    ),
    "datetime zone not a zone file": tagged(
        "datetime", ["2024-01-01T00:00:00", 0, ["zone", "zone.tab"]]
    ),
    "datetime zone unknown": tagged(
        "datetime", ["2024-01-01T00:00:00", 0, ["zone", "Mars/Olympus"]]
    ),
    "datetime offset of a day": tagged(
        "datetime", ["2024-01-01T00:00:00", 0, ["offset", 86_400_000_000, None]]
    ),
    "datetime unknown zone kind": tagged(
        "datetime", ["2024-01-01T00:00:00", 0, ["pytz", "UTC"]]
    ),
    "time with a date": tagged("time", ["2024-01-01T00:00:00", 0, None]),
    "timedelta overflow": tagged("timedelta", [10**10, 0, 0]),
    "timedelta of floats": tagged("timedelta", [1.5, 0, 0]),
    "item: module never imported": obj("item", "tests.unit.no_such_module:X"),
    "item: module outside the allow-list": obj("item", "subprocess:Popen"),
    "item: scrapy's Item": obj("item", "scrapy.item:Item"),
    "item: class re-exported by the spider's module": obj("item", f"{MODULE}:Item"),
    "item: dunder module": obj("item", "__main__:Product"),
    "item: dunder in the module path": obj("item", "tests.__init__:Product"),
    "item: dunder attribute": obj("item", f"{MODULE}:Product.__init__"),
    "item: dunder class": obj("item", f"{MODULE}:Product.__class__"),
    "item: function": obj("item", f"{MODULE}:round_trip"),
    "item: plain class": obj("item", f"{MODULE}:NotStorable"),
    "item: a dataclass": obj("item", f"{MODULE}:Point", {"x": 1, "y": 2}),
    "item: unknown field": obj("item", f"{MODULE}:Product", {"owner": "x"}),
    "item: fields not a dict": {"~": "item", "c": f"{MODULE}:Product", "v": []},
    "item: no class": {"~": "item", "v": {}},
    "item: class not a string": obj("item", ["tests", "Product"]),
    "item: empty name": obj("item", ""),
    "item: no qualname": obj("item", f"{MODULE}:"),
    "item: dotted garbage": obj("item", f"{MODULE}:Product..x"),
    "dataclass: an Item": obj("dataclass", f"{MODULE}:Product", {}),
    "dataclass: missing field": obj("dataclass", f"{MODULE}:Point", {"x": 1}),
    "dataclass: extra field": obj(
        "dataclass", f"{MODULE}:Point", {"x": 1, "y": 2, "z": 3}
    ),
    "dataclass: builtin": obj("dataclass", "builtins:object", {}),
    "dataclass: os module": obj("dataclass", "os:environ", {}),
    "deep lists": _nested_lists(MAX_DEPTH + 1),
    "deep tuples": json.loads(
        '{"~":"tuple","v":[' * (MAX_DEPTH + 1) + "1" + "]}" * (MAX_DEPTH + 1)
    ),
    "deep dicts": json.loads('{"a":' * (MAX_DEPTH + 1) + "1" + "}" * (MAX_DEPTH + 1)),
    "hostile value deep inside": {"a": [1, {"b": tagged("nope", 1)}]},
}


@pytest.mark.parametrize("stored", HOSTILE.values(), ids=HOSTILE.keys())
def test_hostile_stored_value_is_refused(stored: Any) -> None:
    with pytest.raises(BadValueError):
        from_json(stored, CLASSES)


VALID_SHAPES: dict[str, Any] = {
    "tuple": tagged("tuple", [1]),
    "datetime with a zone": tagged(
        "datetime", ["2024-01-01T00:00:00", 0, ["zone", "Europe/Paris"]]
    ),
    "item": obj("item", f"{MODULE}:Product", {"name": "x"}),
    "dataclass": obj("dataclass", f"{MODULE}:Point", {"x": 1, "y": 2}),
    "nested class": obj("dataclass", f"{MODULE}:Outer.Inner", {"value": 1}),
    "project record class": obj(
        "dataclass",
        "crawler.items:PageRecord",
        to_json(EXAMPLES["the project's PageRecord"], CLASSES)["v"],
    ),
    "lists at the depth limit": _nested_lists(MAX_DEPTH),
}


@pytest.mark.parametrize("stored", VALID_SHAPES.values(), ids=VALID_SHAPES.keys())
def test_valid_stored_value_is_accepted(stored: Any) -> None:
    """The control for the hostile table: the same shapes, valid, decode."""
    from_json(stored, CLASSES)


def test_module_is_never_imported_to_find_a_class(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A module of the allowed package that exists on disk is still not imported."""
    package = tmp_path / "trappkg"
    package.mkdir()
    marker = tmp_path / "imported"
    (package / "__init__.py").write_text("")
    (package / "evil.py").write_text(
        f"open({str(marker)!r}, 'w').close()\n"
        "import dataclasses\n"
        "@dataclasses.dataclass\nclass Thing:\n    x: int = 0\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    spider = type("Trap", (Spider,), {"name": "t", "__module__": "trappkg.spiders"})
    with pytest.raises(BadValueError, match="imported"):
        from_json(obj("dataclass", "trappkg.evil:Thing", {"x": 1}), Classes(spider()))
    assert not marker.exists()
    assert "trappkg.evil" not in sys.modules


class _Recorder:
    calls: list[str] = []  # noqa: RUF012 (a record of calls, read by the test)


@dataclasses.dataclass
class Watched:
    x: Any

    def __post_init__(self) -> None:
        _Recorder.calls.append("init")


def test_decoding_runs_no_constructor_of_a_stored_class() -> None:
    stored = obj("dataclass", f"{MODULE}:Watched", {"x": 1})
    _Recorder.calls.clear()
    decoded = from_json(stored, CLASSES)
    assert type(decoded) is Watched
    assert decoded.x == 1
    assert _Recorder.calls == []


# --- properties ---------------------------------------------------------------------

HASHABLE_LEAVES = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(max_size=8)
    | st.binary(max_size=8)
    | st.dates()
    | st.uuids()
    | st.decimals(allow_nan=False).filter(lambda d: not d.is_snan())
)
HASHABLE = st.recursive(
    HASHABLE_LEAVES,
    lambda children: (
        st.tuples(children, children) | st.frozensets(children, max_size=3)
    ),
    max_leaves=6,
)
ZONES = (
    st.none()
    | st.timezones()
    | st.builds(timezone, st.timedeltas(timedelta(hours=-23), timedelta(hours=23)))
)
LEAVES = (
    HASHABLE_LEAVES
    | st.floats()
    | st.decimals()
    | st.datetimes(timezones=ZONES)
    | st.times(timezones=ZONES)
    | st.timedeltas()
    | st.builds(Product, name=st.text(max_size=4), price=st.decimals(places=2))
)


def _containers(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return (
        st.lists(children, max_size=4)
        | st.tuples(children, children)
        | st.dictionaries(st.text(max_size=4), children, max_size=4)
        | st.dictionaries(HASHABLE, children, max_size=3)
        | st.sets(HASHABLE, max_size=3)
        | st.frozensets(HASHABLE, max_size=3)
        | st.builds(Point, children, children)
        | st.builds(Product, tags=children)
        | st.builds(Frozen, st.text(max_size=4), st.tuples(children))
    )


VALUES = st.recursive(LEAVES, _containers, max_leaves=12)


@PROPERTY
@given(value=VALUES)
def test_any_supported_value_round_trips_exactly(value: Any) -> None:
    assert same(round_trip(value), value)


@PROPERTY
@given(value=st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=6)
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(
            st.text(max_size=4).filter(lambda key: key != "~"), children, max_size=3
        )
    ),
    max_leaves=10,
))  # fmt: skip
def test_plain_json_costs_nothing_more(value: Any) -> None:
    assert to_json(value, CLASSES) == value


TAGS = st.sampled_from(
    ["tuple", "set", "frozenset", "dict", "bytes", "float", "int", "decimal", "uuid",
     "date", "datetime", "time", "timedelta", "item", "dataclass", "nope", "__class__"]
)  # fmt: skip
CLASS_NAMES = st.sampled_from(
    [f"{MODULE}:Product", f"{MODULE}:Point", f"{MODULE}:Frozen", f"{MODULE}:Watched",
     f"{MODULE}:NotStorable", "os:system", "builtins:eval", f"{MODULE}:Product.__new__",
     "crawler.items:PageRecord"]
)  # fmt: skip
JSON_LEAVES = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=10)
    | st.sampled_from(["nan", "AA==", "2024-01-01T00:00:00", "Europe/Paris", "zone"])
)


def _hostile(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return (
        st.lists(children, max_size=3)
        | st.dictionaries(st.text(max_size=3), children, max_size=3)
        | st.builds(lambda tag, v: {"~": tag, "v": v}, TAGS, children)
        | st.builds(
            lambda tag, c, v: {"~": tag, "c": c, "v": v},
            TAGS,
            CLASS_NAMES,
            st.dictionaries(st.sampled_from(["x", "y", "name", "label"]), children),
        )
    )


@PROPERTY
@given(stored=st.recursive(JSON_LEAVES, _hostile, max_leaves=12))
def test_any_stored_json_gives_a_value_or_bad_value(stored: Any) -> None:
    _Recorder.calls.clear()
    with contextlib.suppress(BadValueError):
        from_json(stored, CLASSES)
    assert _Recorder.calls == []  # no stored class was ever constructed


def test_an_xpath_text_is_stored_as_its_text():
    """CrawlSpider puts lxml's XPath text (a str subclass) in meta["link_text"]."""
    text = lxml.html.fromstring("<a href='/x'>next page</a>").xpath("string(.)")
    assert type(text) is not str  # lxml's _ElementUnicodeResult
    revived = round_trip(text)
    assert revived == "next page"
    assert type(revived) is str
