"""Setting names a crawl would ignore: a misspelling of one of ours, a scrapy-redis
leftover. Pure: the caller gives the names set, the names known and the prefixes
that are ours (crawler/context/settingscheck.py derives them from crawler/defaults/).
"""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Collection, Iterable, Mapping

# How alike a name must be to a known one to be offered as "did you mean"
# (difflib's ratio: POLITENESS_DAY_DELEY to POLITENESS_DAY_DELAY is 0.95).
NEAREST_CUTOFF = 0.75


def prefix_of(name: str) -> str:
    """A setting's prefix, its first word with the ``_``: ``POLITENESS_``."""
    return name.split("_", 1)[0] + "_"


def setting_prefixes(names: Iterable[str]) -> frozenset[str]:
    """The prefixes of *names*, those with more than one word."""
    return frozenset(prefix_of(name) for name in names if "_" in name.strip("_"))


def nearest_name(name: str, known: Collection[str]) -> str | None:
    """The known name most like *name*, if one is alike enough."""
    found = difflib.get_close_matches(name, known, n=1, cutoff=NEAREST_CUTOFF)
    return found[0] if found else None


def unknown_setting_notes(
    given: Iterable[str], known: Collection[str], prefixes: Collection[str]
) -> list[str]:
    """One line for each name of *given* with one of *prefixes* that no known
    setting has, with the nearest known name when there is one; sorted."""
    notes = []
    for name in sorted(set(given)):
        if name in known or prefix_of(name) not in prefixes:
            continue
        nearest = nearest_name(name, known)
        hint = f" (did you mean {nearest}?)" if nearest else ""
        notes.append(f"Unknown setting {name}{hint}: ignored")
    return notes


def leftover_notes(given: Iterable[str], replacements: Mapping[str, str]) -> list[str]:
    """One line for each name of *given* that is a key of *replacements* (a
    setting of another tool this crawler ignores), saying what replaces it; sorted."""
    return [
        f"{name} is a scrapy-redis setting, ignored here; instead: "
        f"{_plain(replacements[name])}"
        for name in sorted(set(given))
        if name in replacements
    ]


def _plain(markdown: str) -> str:
    """*markdown* without its code and bold marks, for a log line."""
    return markdown.replace("`", "").replace("**", "")
