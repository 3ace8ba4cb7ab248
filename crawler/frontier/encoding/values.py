"""Meta and cb_kwargs values as typed JSON: back with their exact types, nothing run.

Plain JSON values (str, int, finite float, bool, None, lists, dicts with string keys)
are stored as they are, so a typical link's meta costs nothing more. Every other
supported value is a tagged object ``{"~": tag, "v": payload}``; a dict that holds
the tag key itself, or a key that is not a string, is stored tagged too, as pairs,
so no user dict is ever mistaken for a tag. Scrapy items and dataclass instances are
named ``module:QualName`` and resolved on decode only among classes defined in
modules already imported under an allowed package (``allowlist``): nothing is
imported, unpickled or evaluated, and any other tag, class or shape is refused.
"""

from __future__ import annotations

import base64
import dataclasses
import math
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any
from uuid import UUID

from scrapy import Item

from crawler.frontier.encoding.allowlist import Classes, ClassNotAllowedError
from crawler.frontier.encoding.timevalues import (
    TIME_DECODERS,
    TIME_ENCODERS,
    UnnamedZoneError,
)

if TYPE_CHECKING:
    from collections.abc import Callable

TAG = "~"
# Deepest nesting of lists, dicts and tagged values kept: deeper is refused on encode
# and hostile on decode, well before Python's recursion limit.
MAX_DEPTH = 100
_FLOATS = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
# Ints this long and longer are stored in hex: Python's JSON refuses their decimals.
_LONGEST = 10**4000


class BadValueError(ValueError):
    """A stored value this crawler did not write (unknown tag, class, shape)."""


class UnencodableValueError(TypeError):
    """A value the typed JSON cannot hold; ``value_type`` names the offending type."""

    def __init__(self, value: object, reason: str) -> None:
        self.value_type = type_name(type(value))
        self.reason = reason
        # The repr of the meta or cb_kwargs key at fault, when ``mapping_to_json`` knows.
        self.key: str | None = None
        super().__init__(f"{self.value_type}: {reason}")


def type_name(kind: type) -> str:
    """``module.QualName``, or the bare name of a builtin, for log lines."""
    if kind.__module__ == "builtins":
        return kind.__qualname__
    return f"{kind.__module__}.{kind.__qualname__}"


def mapping_to_json(mapping: dict[Any, Any], classes: Classes) -> Any:
    """*mapping* (meta, cb_kwargs) as typed JSON; a refusal names the key at fault."""
    try:
        return to_json(mapping, classes)
    except UnencodableValueError:
        for key, value in mapping.items():
            for item in (key, value):
                try:
                    to_json(item, classes, depth=1)
                except UnencodableValueError as exc:
                    exc.key = f"{key!r:.80}"
                    raise exc from None
        raise


def mapping_from_json(stored: Any, spider: object) -> dict[Any, Any]:
    """The mapping ``mapping_to_json`` stored; ``BadValueError`` for anything else."""
    mapping = from_json(stored, Classes(spider))
    if type(mapping) is not dict:
        raise BadValueError("not a dict")
    return mapping


def to_json(value: Any, classes: Classes, depth: int = 0) -> Any:
    """*value* as JSON-ready data; raises ``UnencodableValueError`` for the rest."""
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return value
    if (kind is int and -_LONGEST < value < _LONGEST) or (
        kind is float and math.isfinite(value)
    ):
        return value
    if kind in _SCALARS:
        return _scalar_to_json(value)
    if kind.__name__ == "_ElementUnicodeResult" and kind.__module__ == "lxml.etree":
        return str(value)  # an XPath text (CrawlSpider's link_text): only its text
    if depth >= MAX_DEPTH:
        raise UnencodableValueError(value, f"nested deeper than {MAX_DEPTH}")
    if kind is list or kind is dict or kind in _SEQUENCES:
        return _container_to_json(value, classes, depth + 1)
    return _object_to_json(value, classes, depth + 1)


def _scalar_to_json(value: Any) -> dict[str, Any]:
    tag, encoder = _SCALARS[type(value)]
    try:
        return {TAG: tag, "v": encoder(value)}
    except UnnamedZoneError as exc:
        raise UnencodableValueError(exc.zone, str(exc)) from None


def _container_to_json(value: Any, classes: Classes, depth: int) -> Any:
    kind = type(value)
    if kind is list:
        return [to_json(item, classes, depth) for item in value]
    if kind is not dict:
        return {TAG: _SEQUENCES[kind], "v": [to_json(i, classes, depth) for i in value]}
    if TAG not in value and all(type(key) is str for key in value):
        return {key: to_json(item, classes, depth) for key, item in value.items()}
    pairs = [
        [to_json(key, classes, depth), to_json(item, classes, depth)]
        for key, item in value.items()
    ]
    return {TAG: "dict", "v": pairs}


def _object_to_json(value: Any, classes: Classes, depth: int) -> dict[str, Any]:
    """An item or dataclass instance: its class name and its fields, typed."""
    if isinstance(value, Item):
        tag, fields = "item", dict(value)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        tag, fields = "dataclass", {}
        for field in dataclasses.fields(value):
            try:
                fields[field.name] = getattr(value, field.name)
            except AttributeError:
                raise UnencodableValueError(
                    value, f"field {field.name} unset"
                ) from None
    else:
        raise UnencodableValueError(value, "not a supported type")
    try:
        name = classes.name_of(type(value))
    except ClassNotAllowedError as exc:
        raise UnencodableValueError(value, str(exc)) from None
    payload = {key: to_json(item, classes, depth) for key, item in fields.items()}
    return {TAG: tag, "c": name, "v": payload}


def from_json(value: Any, classes: Classes, depth: int = 0) -> Any:
    """The value ``to_json`` stored; raises ``BadValueError`` for anything else."""
    kind = type(value)
    if kind is not list and kind is not dict:
        return value
    if depth >= MAX_DEPTH:
        raise BadValueError(f"nested deeper than {MAX_DEPTH}")
    depth += 1
    if kind is list:
        return [from_json(item, classes, depth) for item in value]
    if TAG in value:
        return _tagged(value, classes, depth)
    return {key: from_json(item, classes, depth) for key, item in value.items()}


def _tagged(value: dict[str, Any], classes: Classes, depth: int) -> Any:
    tag, payload = value[TAG], value.get("v")
    if type(tag) is not str:
        raise BadValueError("a tag that is not a string")
    if tag in ("item", "dataclass"):
        if value.keys() != {TAG, "c", "v"} or type(payload) is not dict:
            raise BadValueError(f"a malformed {tag}")
        try:
            kind = classes.resolve(value["c"])
        except ClassNotAllowedError as exc:
            raise BadValueError(str(exc)) from None
        return _object_from_json(tag, kind, payload, classes, depth)
    if value.keys() != {TAG, "v"}:
        raise BadValueError(f"a tagged value with fields {sorted(value)}")
    if tag == "dict":
        return _dict_from_json(payload, classes, depth)
    if tag in _DECODED_SEQUENCES:
        if type(payload) is not list:
            raise BadValueError(f"a {tag} that is not a list")
        items = [from_json(item, classes, depth) for item in payload]
        try:
            return _DECODED_SEQUENCES[tag](items)
        except TypeError:
            raise BadValueError(f"a {tag} of unhashable values") from None
    decoder = _DECODERS.get(tag)
    if decoder is None:
        raise BadValueError(f"unknown tag {tag!r}")
    try:
        return decoder(payload)
    except (TypeError, ValueError, OverflowError, KeyError, InvalidOperation) as exc:
        raise BadValueError(f"a bad {tag}: {exc}") from None


def _dict_from_json(payload: Any, classes: Classes, depth: int) -> dict[Any, Any]:
    if type(payload) is not list or not all(
        type(pair) is list and len(pair) == 2 for pair in payload
    ):
        raise BadValueError("a tagged dict that is not a list of pairs")
    try:
        return {
            from_json(key, classes, depth): from_json(item, classes, depth)
            for key, item in payload
        }
    except TypeError:
        raise BadValueError("a dict with an unhashable key") from None


def _object_from_json(
    tag: str, kind: type, payload: dict[str, Any], classes: Classes, depth: int
) -> Any:
    """An instance of allow-listed *kind* with the stored fields.

    An item is made empty and filled, as Scrapy's own code does; a dataclass is
    restored as pickle restores it, without running ``__init__`` (or
    ``__post_init__``) again, which may transform its input a second time.
    """
    fields = {key: from_json(item, classes, depth) for key, item in payload.items()}
    if tag == "item":
        if not issubclass(kind, Item):
            raise BadValueError(f"{kind.__qualname__} is not an Item")
        item = kind()
        try:
            item.update(fields)
        except KeyError as exc:
            raise BadValueError(f"{kind.__qualname__} has no field {exc}") from None
        return item
    if issubclass(kind, Item) or not dataclasses.is_dataclass(kind):
        raise BadValueError(f"{kind.__qualname__} is not a dataclass")
    names = {field.name for field in dataclasses.fields(kind)}
    if fields.keys() != names:
        raise BadValueError(f"{kind.__qualname__} stored with other fields")
    instance = kind.__new__(kind)
    for key, item in fields.items():
        object.__setattr__(instance, key, item)
    return instance


def _finite_float(payload: Any) -> float:
    if payload not in _FLOATS:
        raise ValueError(f"{payload!r} is not nan, inf or -inf")
    return _FLOATS[payload]


def _text(payload: Any) -> str:
    if type(payload) is not str:
        raise TypeError("not a string")
    return payload


_SEQUENCES: dict[type, str] = {tuple: "tuple", set: "set", frozenset: "frozenset"}
_DECODED_SEQUENCES: dict[str, Callable[[list[Any]], Any]] = {
    "tuple": tuple,
    "set": set,
    "frozenset": frozenset,
}
_SCALARS: dict[type, tuple[str, Callable[[Any], Any]]] = {
    int: ("int", hex),
    float: ("float", repr),
    bytes: ("bytes", lambda value: base64.b64encode(value).decode("ascii")),
    Decimal: ("decimal", str),
    UUID: ("uuid", str),
    **TIME_ENCODERS,
}
_DECODERS: dict[str, Callable[[Any], Any]] = {
    "int": lambda payload: int(_text(payload), 16),
    "float": _finite_float,
    "bytes": lambda payload: base64.b64decode(_text(payload), validate=True),
    "decimal": lambda payload: Decimal(_text(payload)),
    "uuid": lambda payload: UUID(_text(payload)),
    **TIME_DECODERS,
}
