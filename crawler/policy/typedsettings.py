"""Typed reads of settings that fail in one line naming the setting and its value.

Every config's ``from_settings`` reads its numbers, switches, choices and lists of
names here, so one spelling rule holds for every setting (``-s`` gives strings, a
project's settings.py gives Python values) and a bad value stops start-up with the
same kind of message wherever it is read:

- ``NAME must be a number, got 'soon'`` / ``... a finite number ...`` / ``... an
  integer ...`` when the value is not one at all (shown as given);
- ``NAME must be > 0 seconds, got 0.0`` when it is out of range (shown as read).

Pure: no I/O. Settings are anything with ``get`` (Scrapy's ``BaseSettings``, a dict).
"""

from __future__ import annotations

import json
import math
import re
from typing import TYPE_CHECKING, Protocol, TypedDict, TypeVar

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Unpack

_Choice = TypeVar("_Choice", bound=str)
# An integer as text: ASCII digits, an optional minus. int() alone would also take
# "1_0", "+5" or "٣" (an Arabic-Indic three), each more likely a typo.
_INTEGER = re.compile(r"-?[0-9]+")
# What a string setting says for "not set" (-s cannot give None).
_UNSET = frozenset({"", "none"})
_TRUE, _FALSE = frozenset({"1", "true"}), frozenset({"0", "false"})


class SupportsGet(Protocol):
    """Anything settings can be read from: Scrapy ``Settings``, a dict."""

    def get(self, name: str, /) -> object: ...


class Range(TypedDict, total=False):
    """The range a number must be in (at most one lower and one upper bound), and
    words said after it in the message: a unit ("seconds") or a note."""

    above: float
    at_least: float
    below: float
    at_most: float
    note: str


def as_float(value: object, name: str, **bounds: Unpack[Range]) -> float:
    """*value* as a finite number within *bounds*; ``ValueError`` names *name*.

    A bool, None or a list is never a number (``True`` seconds is a mistake), and
    NaN and infinity are refused because every range check is False for NaN and an
    infinite duration or size is never meant.
    """
    try:
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise TypeError
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(number):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return _within(number, name, bounds)


def as_int(value: object, name: str, **bounds: Unpack[Range]) -> int:
    """*value* as an integer within *bounds*; ``ValueError`` names *name*.

    An int, a float without a fraction (2.0 from a computed setting) or a string of
    ASCII digits: 2.5 pages or ``"1e3"`` is a mistake, not 2 or 1000.
    """
    number: int | None = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    elif isinstance(value, str) and _INTEGER.fullmatch(text := value.strip()):
        try:
            number = int(text)
        except ValueError:  # beyond int()'s digit limit
            number = None
    if number is None:
        raise ValueError(f"{name} must be an integer, got {value!r}")
    return _within(number, name, bounds)


def get_float(settings: SupportsGet, name: str, **bounds: Unpack[Range]) -> float:
    """The finite number *name* within *bounds* (see ``as_float``)."""
    return as_float(settings.get(name), name, **bounds)


def get_int(settings: SupportsGet, name: str, **bounds: Unpack[Range]) -> int:
    """The integer *name* within *bounds* (see ``as_int``).

    Scrapy's ``getint`` raises ``int()``'s own message, which does not say which
    setting was bad; an operator then has to guess among dozens of ``-s`` options.
    """
    return as_int(settings.get(name), name, **bounds)


def get_optional_float(
    settings: SupportsGet, name: str, **bounds: Unpack[Range]
) -> float | None:
    """``get_float``, or None when *name* is unset (None, empty or "none")."""
    value = settings.get(name)
    return None if _unset(value) else as_float(value, name, **bounds)


def get_optional_int(
    settings: SupportsGet, name: str, **bounds: Unpack[Range]
) -> int | None:
    """``get_int``, or None when *name* is unset (None, empty or "none")."""
    value = settings.get(name)
    return None if _unset(value) else as_int(value, name, **bounds)


def get_bool(settings: SupportsGet, name: str) -> bool:
    """The switch *name*: True, False, 1, 0 or those as text in any case; unset
    (None) is False, as with Scrapy's ``getbool``.

    Scrapy's ``getbool`` takes 2 or ``"2"`` as True; a switch given a count is a
    mistake, so it is refused here.
    """
    value = settings.get(name)
    if value is None:
        return False
    if isinstance(value, bool | int) and value in (0, 1):
        return bool(value)
    text = value.strip().lower() if isinstance(value, str) else None
    if text not in _TRUE | _FALSE:
        raise ValueError(f"{name} must be true or false (1 or 0), got {value!r}")
    return text in _TRUE


def get_choice(
    settings: SupportsGet,
    name: str,
    choices: tuple[_Choice, ...],
    *,
    fold_case: bool = False,
    default: _Choice | None = None,
) -> _Choice:
    """*name* if it is one of *choices*; ``ValueError`` names them otherwise.

    *fold_case* strips and lowercases a string first, for settings documented as
    read in any case. A *default* is what an unset value (None or empty) means.
    """
    value = settings.get(name)
    if default is not None and (value is None or value == ""):
        return default
    found = value.strip().lower() if fold_case and isinstance(value, str) else value
    if found not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}, got {value!r}")
    return found


def get_names(
    settings: SupportsGet, name: str, *, allowed: Sequence[str] | None = None
) -> tuple[str, ...]:
    """The names listed in *name*, stripped, lowercased, blanks dropped: from a
    list, a JSON list or a comma-separated string (``-s NAME=a,b``); each one of
    *allowed* if given. Unset (None or empty) is no names."""
    value = settings.get(name)
    if isinstance(value, str) and value.lstrip().startswith("["):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError) as exc:
            raise ValueError(f"{name} is not a JSON list: {exc}") from None
    elif isinstance(value, str):
        value = value.split(",")
    elif value is None:
        value = []
    if not isinstance(value, list | tuple | set | frozenset):
        raise ValueError(  # noqa: TRY004 (a bad setting, like every other)
            f"{name} must be a list, got {value!r}"
        )
    names = tuple(text for item in value if (text := str(item).strip().lower()))
    unknown = sorted(set(names) - set(allowed)) if allowed is not None else []
    if unknown:
        raise ValueError(
            f"{name} may name {', '.join(allowed or ())}; "
            f"got {', '.join(map(repr, unknown))}"
        )
    return names


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


_Number = TypeVar("_Number", int, float)


def _within(number: _Number, name: str, bounds: Range) -> _Number:
    """*number* if it is within *bounds*; else ``ValueError`` naming the range."""
    above, at_least = bounds.get("above"), bounds.get("at_least")
    below, at_most = bounds.get("below"), bounds.get("at_most")
    if (
        (above is not None and not number > above)
        or (at_least is not None and not number >= at_least)
        or (below is not None and not number < below)
        or (at_most is not None and not number <= at_most)
    ):
        note = f" {bounds['note']}" if bounds.get("note") else ""
        raise ValueError(f"{name} must be {_phrase(bounds)}{note}, got {number!r}")
    return number


def _phrase(bounds: Range) -> str:
    """``> 0``, ``>= 1``, ``<= 64`` or, with both ends, ``in [1, 64]``/``in (0, 1)``."""
    lower = [f"> {bounds['above']}"] if "above" in bounds else []
    lower += [f">= {bounds['at_least']}"] if "at_least" in bounds else []
    upper = [f"< {bounds['below']}"] if "below" in bounds else []
    upper += [f"<= {bounds['at_most']}"] if "at_most" in bounds else []
    if not (lower and upper):
        return " and ".join(lower + upper)
    low = f"({bounds['above']}" if "above" in bounds else f"[{bounds['at_least']}"
    high = f"{bounds['below']})" if "below" in bounds else f"{bounds['at_most']}]"
    return f"in {low}, {high}"


def _unset(value: object) -> bool:
    """Whether *value* says "not set": None, or a blank or "none" string."""
    return value is None or (isinstance(value, str) and value.strip().lower() in _UNSET)
