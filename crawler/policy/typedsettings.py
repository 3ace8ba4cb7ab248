"""Typed reads of numeric settings that fail in one line naming the setting."""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings


def get_int(settings: BaseSettings, name: str) -> int:
    """The integer *name*; raises ``ValueError`` naming it, not Python's ``int()``.

    Scrapy's ``getint`` raises ``int()``'s own message, which does not say which
    setting was bad; an operator then has to guess among dozens of ``-s`` options.
    """
    try:
        return settings.getint(name)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(
            f"{name} must be an integer, got {settings.get(name)!r}"
        ) from None


def get_float(settings: BaseSettings, name: str) -> float:
    """The finite number *name*; raises ``ValueError`` naming it otherwise.

    NaN and infinity are rejected here because every later range check (``< 0``,
    ``<= 0``) is False for NaN, and an infinite duration or size is never meant.
    """
    try:
        value = settings.getfloat(name)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(
            f"{name} must be a number, got {settings.get(name)!r}"
        ) from None
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {settings.get(name)!r}")
    return value


def seconds_list(value: object) -> tuple[float, ...] | None:
    """A list of finite, non-negative seconds from a list, a JSON list or a
    comma-separated string (as ``-s NAME=30,300`` gives it); None if it is not one."""
    if isinstance(value, str):
        text = value.strip()
        try:
            value = json.loads(text) if text.startswith("[") else text.split(",")
        except (ValueError, RecursionError):
            return None
    if not isinstance(value, list | tuple) or any(isinstance(v, bool) for v in value):
        return None
    try:
        seconds = tuple(float(v) for v in value)
    except (TypeError, ValueError, OverflowError):
        return None
    if not all(math.isfinite(s) and s >= 0 for s in seconds):
        return None
    return seconds
