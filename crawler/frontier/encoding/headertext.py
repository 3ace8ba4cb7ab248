"""Request headers as JSON text and back: each byte one latin-1 character, exactly.

Scrapy holds header keys and values as bytes in the request's encoding (UTF-16
included); JSON holds text. Mapping each byte to the latin-1 character of the same
number keeps every byte, whatever the encoding.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scrapy import Request


def header_text(request: Request) -> dict[str, list[str]]:
    """The header bytes Scrapy holds, one latin-1 character a byte, for JSON.

    Read from the underlying dict: ``Headers.items()`` looks each key up again
    title-cased, which misses keys encoded in UTF-16.
    """
    return {
        key.decode("latin-1"): [value.decode("latin-1") for value in values]
        for key, values in dict.items(request.headers)
    }


def header_bytes(headers: dict[str, Any]) -> dict[bytes, list[bytes]]:
    """The header bytes ``header_text`` stored; ``ValueError`` for anything else."""
    if not all(
        isinstance(values, list) and all(isinstance(v, str) for v in values)
        for values in headers.values()
    ):
        raise ValueError("header values are not lists of strings")
    try:
        return {
            key.encode("latin-1"): [value.encode("latin-1") for value in values]
            for key, values in headers.items()
        }
    except UnicodeEncodeError:
        raise ValueError("header text is not latin-1") from None
