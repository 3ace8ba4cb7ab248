"""Content signals: what a site says about the use of its pages, read as it said it.

Pure. Two vocabularies state a site's preferences about the use of what it serves
(search, AI training, AI input); a page's are recorded per source (``SOURCES``), each
as a mapping of key to value, with the keys a vocabulary does not define kept as
given (vocabularies grow; a reader of the records decides what they mean):

- Cloudflare's Content Signals Policy (https://contentsignals.org;
  draft-romm-aipref-contentsignals-00): ``Content-Signal: search=yes, ai-input=yes,
  ai-train=no`` in a robots.txt group, optionally led by a path (``Content-Signal:
  /blog/ ai-train=no``), and the same value in a ``Content-Signal`` response header.
  Comma-separated ``key=value`` pairs of letters, digits and ``-_.*``, read without
  regard to case (lower-cased) like robots.txt's own keys; a pair that is not one is
  skipped and counted.
- The IETF AI Preferences vocabulary (draft-ietf-aipref-vocab-08, section 6: an RFC
  9651 Dictionary such as ``train-ai=n, search=y``) as draft-ietf-aipref-attach-05
  attaches it: the ``Content-Usage`` response header (section 2) and ``Content-Usage:
  <path> <preferences>`` rules in robots.txt groups (section 3). Parsed as bytes with
  http-sf (RFC 9651 section 4.2), so case-sensitive; a Dictionary that does not parse
  states nothing (vocab 6.5) and is counted as skipped. Each member is kept as its
  RFC 9651 text without parameters (vocab 6.5: parameters carry no preference):
  ``y``/``n`` Tokens as such, a String as ``"n"``, a bare key as ``?1``, so a value
  the vocabulary reads as "unknown" is never mistaken for ``n``.

Where several statements of one source apply alike (two robots.txt rules of the same
path, a key given twice in a Content-Signal), the disallowing value wins (vocab 7.1:
the most restrictive preference applies); otherwise the later one. Sizes are bounded
(``MAX_*``): what is over is skipped and counted, never kept unbounded.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, NamedTuple

from http_sf import parse, ser

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

# A page's signals: source -> key -> value (each value as the site gave it).
Signals = dict[str, dict[str, str]]

ROBOTS_CONTENT_SIGNAL = "robots:content-signal"
ROBOTS_CONTENT_USAGE = "robots:content-usage"
HEADER_CONTENT_SIGNAL = "header:content-signal"
HEADER_CONTENT_USAGE = "header:content-usage"
SOURCES = (
    ROBOTS_CONTENT_SIGNAL,
    ROBOTS_CONTENT_USAGE,
    HEADER_CONTENT_SIGNAL,
    HEADER_CONTENT_USAGE,
)
# The value that disallows a use, per vocabulary (vocab 6.2; contentsignals.org).
USAGE_DISALLOW = "n"
SIGNAL_DISALLOW = "no"

# One expression (a header's combined lines, a robots.txt line's value) longer than
# this is skipped: 8 KiB, the field size HTTP servers commonly accept.
MAX_EXPRESSION_BYTES = 8192
# Keys kept from one expression; longer values than MAX_VALUE_CHARS are skipped.
MAX_KEYS = 32
MAX_VALUE_CHARS = 128
# A Content-Signal key or value: RFC 9651 key characters (vocab 6.1), lower case.
_SIGNAL_WORD = re.compile(r"[a-z0-9_.*-]+")


class Expression(NamedTuple):
    """What one expression states (key -> value), and how many of its parts (or
    itself whole) were skipped as unreadable or over the limits."""

    values: dict[str, str]
    skipped: int


def parse_content_usage(data: bytes) -> Expression:
    """The preferences of an aipref Dictionary (``train-ai=n, search=y``)."""
    if len(data) > MAX_EXPRESSION_BYTES:
        return Expression({}, 1)
    try:
        parsed = parse(data, tltype="dictionary")
    except ValueError:  # http_sf's StructuredFieldError, a ValueError
        return Expression({}, 1)
    if not isinstance(parsed, dict):  # a dictionary was asked for
        return Expression({}, 1)
    values: dict[str, str] = {}
    skipped = 0
    for key, member in parsed.items():
        value = member[0] if isinstance(member, tuple) else member  # (value, params)
        text = _member_text(key, value)
        if text is None or len(text) > MAX_VALUE_CHARS or len(values) >= MAX_KEYS:
            skipped += 1
            continue
        values[key] = text
    return Expression(values, skipped)


def _member_text(key: str, value: object) -> str | None:
    """A Dictionary member's value as RFC 9651 text, without its parameters (``?1``
    for a bare key, whose value is the boolean true); None if it cannot be written."""
    try:
        text = ser({key: (value, {})})  # type: ignore[dict-item]
    except (TypeError, ValueError):
        return None
    return "?1" if text == key else text.removeprefix(f"{key}=")


def parse_content_signal(text: str) -> Expression:
    """The signals of a Content-Signal value (``search=yes, ai-train=no``)."""
    if (
        len(text) * 4 > MAX_EXPRESSION_BYTES
        and len(text.encode()) > MAX_EXPRESSION_BYTES
    ):
        return Expression({}, 1)
    values: dict[str, str] = {}
    skipped = 0
    for part in text.split(","):
        if not part.strip(" \t"):
            continue  # "a=yes,,b=no", a trailing comma: nothing was meant
        key, equals, value = (word.strip(" \t").lower() for word in part.partition("="))
        readable = equals and _is_word(key) and _is_word(value)
        if not readable or (key not in values and len(values) >= MAX_KEYS):
            skipped += 1
            continue
        values[key] = _stronger(values.get(key), value, SIGNAL_DISALLOW)
    return Expression(values, skipped)


def _is_word(text: str) -> bool:
    return len(text) <= MAX_VALUE_CHARS and _SIGNAL_WORD.fullmatch(text) is not None


def _stronger(old: str | None, new: str, disallow: str) -> str:
    """Of two values for one key: the disallowing one, else the later one."""
    return disallow if old == disallow else new


def combined(expressions: Iterable[Mapping[str, str]], disallow: str) -> dict[str, str]:
    """Statements of one source that apply alike, as one: for each key, the
    disallowing value if any gives it, else the last one's (vocab 7.1)."""
    values: dict[str, str] = {}
    for expression in expressions:
        for key, value in expression.items():
            values[key] = _stronger(values.get(key), value, disallow)
    return values


def header_signals(
    content_usage: Iterable[bytes], content_signal: Iterable[bytes]
) -> tuple[Signals, int]:
    """The signals of a response's ``Content-Usage`` and ``Content-Signal`` field
    lines, and how many parts were skipped. A field's lines are one value joined
    with commas (RFC 9110 5.3, RFC 9651 4.2)."""
    found: dict[str, Expression] = {}
    usage_lines = list(content_usage)
    if usage_lines:
        found[HEADER_CONTENT_USAGE] = parse_content_usage(b", ".join(usage_lines))
    signal_lines = [line.decode("latin-1") for line in content_signal]
    if signal_lines:
        found[HEADER_CONTENT_SIGNAL] = parse_content_signal(", ".join(signal_lines))
    signals = {
        source: stated.values for source, stated in found.items() if stated.values
    }
    return signals, sum(stated.skipped for stated in found.values())


def checked(value: object) -> Signals | None:
    """*value* if it is signals (source -> key -> text, some given), else None:
    what a request's meta holds is not trusted to be JSON-ready."""
    if not isinstance(value, dict) or not value:
        return None
    for source, values in value.items():
        if not isinstance(source, str) or not isinstance(values, dict):
            return None
        if not all(
            isinstance(k, str) and isinstance(v, str) for k, v in values.items()
        ):
            return None
    return value


def signals_json(signals: Signals | None) -> str | None:
    """*signals* as the records database keeps them: compact JSON, keys sorted."""
    if not signals:
        return None
    return json.dumps(
        signals, sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )


def signals_of_json(text: str) -> Signals | None:
    """The signals a ``content_signals`` column holds; None if *text* is not
    signals as JSON (a value the crawler did not write)."""
    try:
        return checked(json.loads(text))
    except (ValueError, RecursionError):  # not JSON; nested past the stack
        return None


def signals_text(signals: Mapping[str, Mapping[str, str]]) -> str:
    """*signals* on one line for people: ``robots:content-signal search=yes,ai-train=no;
    header:content-usage train-ai=n``."""
    return "; ".join(
        f"{source} " + ",".join(f"{key}={value}" for key, value in values.items())
        for source, values in signals.items()
    )
