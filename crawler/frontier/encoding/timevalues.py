"""Dates, times and durations as JSON payloads for ``values``: exact, zone included.

A datetime or time is ``[naive ISO text, fold, zone]``; the zone is None (naive),
``["offset", microseconds, name or None]`` for a ``datetime.timezone``, or
``["zone", key]`` for a ``zoneinfo.ZoneInfo``. Other tzinfo classes (pytz,
dateutil) cannot be named safely and are refused. A zone key read back is checked
before ``ZoneInfo`` opens its file, which reads data and never runs code.
"""

from __future__ import annotations

import re
from datetime import date, datetime, time, timedelta, timezone, tzinfo
from functools import partial
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

if TYPE_CHECKING:
    from collections.abc import Callable

_ZONE_KEY = re.compile(r"[A-Za-z0-9_+-]{1,32}(/[A-Za-z0-9_+-]{1,32}){0,3}")
_MICROSECOND = timedelta(microseconds=1)


class UnnamedZoneError(TypeError):
    """A tzinfo that is neither a ``timezone`` nor a ``ZoneInfo`` with a key."""

    def __init__(self, zone: tzinfo) -> None:
        self.zone = zone
        super().__init__(f"time zone {zone!r} cannot be stored by name")


def zone_to_json(zone: tzinfo | None) -> list[Any] | None:
    """The payload naming *zone*; raises ``UnnamedZoneError`` for other classes."""
    if zone is None:
        return None
    if type(zone) is timezone:
        offset = zone.utcoffset(None)
        name = zone.tzname(None)
        default = timezone(offset).tzname(None)
        return ["offset", offset // _MICROSECOND, None if name == default else name]
    if type(zone) is ZoneInfo and zone.key is not None:
        return ["zone", zone.key]
    raise UnnamedZoneError(zone)


def zone_from_json(payload: Any) -> tzinfo | None:
    """The zone ``zone_to_json`` named; raises ``ValueError`` for anything else."""
    if payload is None:
        return None
    if type(payload) is list and len(payload) == 3 and payload[0] == "offset":
        _kind, micros, name = payload
        if type(micros) is not int or not (name is None or type(name) is str):
            raise ValueError("a malformed offset")
        offset = timedelta(microseconds=micros)
        return timezone(offset) if name is None else timezone(offset, name)
    if type(payload) is list and len(payload) == 2 and payload[0] == "zone":
        key = payload[1]
        if type(key) is not str or not _ZONE_KEY.fullmatch(key) or ".." in key:
            raise ValueError("a malformed zone key")
        try:
            return ZoneInfo(key)
        except (KeyError, OSError):  # not found (a KeyError), or a directory
            raise ValueError(f"no time zone {key!r}") from None
    raise ValueError("a malformed zone")


def _clock_to_json(value: datetime | time) -> list[Any]:
    zone = zone_to_json(value.tzinfo)
    return [value.replace(tzinfo=None, fold=0).isoformat(), value.fold, zone]


def _clock_from_json(payload: Any, clock: type[datetime | time]) -> datetime | time:
    """The datetime or time (*clock*) ``_clock_to_json`` wrote: naive text, with
    its zone only from the payload."""
    if type(payload) is not list or len(payload) != 3:
        raise ValueError("not [text, fold, zone]")
    text, fold, zone = payload
    if type(text) is not str or fold not in (0, 1) or type(fold) is not int:
        raise ValueError("a malformed text or fold")
    tz = zone_from_json(zone)
    naive = clock.fromisoformat(text)
    if naive.tzinfo is not None:
        raise ValueError("a zone in the text")
    return naive.replace(tzinfo=tz, fold=fold)


def _date_from_json(payload: Any) -> date:
    if type(payload) is not str:
        raise TypeError("not a string")
    return date.fromisoformat(payload)


def _timedelta_to_json(value: timedelta) -> list[int]:
    return [value.days, value.seconds, value.microseconds]


def _timedelta_from_json(payload: Any) -> timedelta:
    if type(payload) is not list or len(payload) != 3:
        raise ValueError("not [days, seconds, microseconds]")
    if not all(type(part) is int for part in payload):
        raise TypeError("not integers")
    days, seconds, microseconds = payload
    return timedelta(days=days, seconds=seconds, microseconds=microseconds)


TIME_ENCODERS: dict[type, tuple[str, Callable[[Any], Any]]] = {
    datetime: ("datetime", _clock_to_json),
    date: ("date", date.isoformat),
    time: ("time", _clock_to_json),
    timedelta: ("timedelta", _timedelta_to_json),
}
TIME_DECODERS: dict[str, Callable[[Any], Any]] = {
    "datetime": partial(_clock_from_json, clock=datetime),
    "date": _date_from_json,
    "time": partial(_clock_from_json, clock=time),
    "timedelta": _timedelta_from_json,
}
