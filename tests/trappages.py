"""The HTML of the trap site's pages (tests/trapsite.py): each real page's text is
several hundred words drawn for that host and path alone, so no two real pages are
near-duplicates, while a trap's copies repeat their page's text exactly.

The time and the randomness a page shows (a timestamp, a session id, an advert)
come from the caller, so a page is a function of its arguments.
"""

from __future__ import annotations

import datetime
import functools
import html
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tests.traplinks import links
from tests.traproutes import kind_of, route, tree

if TYPE_CHECKING:
    from collections.abc import Sequence

VOCABULARY_SIZE = 4000
WORDS_PER_PAGE = (320, 480)
WORDS_PER_SENTENCE = (8, 16)
SENTENCES_PER_PARAGRAPH = 5
TEXT_CACHE_SIZE = 4096
ADVERTS = (
    "Try Zephyr Tea: calm in every cup.",
    "Orbit Bikes: ride further, spend less.",
    "Quill Notebooks, made to be written in.",
    "Harbor Bank: savings that stay put.",
    "Lumen Lamps: brighter evenings at home.",
)
_CONSONANTS = "bcdfghjklmnprstvz"
_VOWELS = "aeiou"


@dataclass(frozen=True)
class Served:
    """A page's status and HTML."""

    status: int
    html: str


@functools.cache
def vocabulary() -> tuple[str, ...]:
    """Made-up words, drawn once: a large vocabulary keeps pages apart."""
    rng = random.Random("trapsite-vocabulary")
    words: set[str] = set()
    while len(words) < VOCABULARY_SIZE:
        syllables = rng.randint(1, 4)
        words.add(
            "".join(
                rng.choice(_CONSONANTS) + rng.choice(_VOWELS) for _ in range(syllables)
            )
        )
    return tuple(sorted(words))


@functools.lru_cache(maxsize=TEXT_CACHE_SIZE)
def page_text(host_index: int, path: str) -> tuple[str, ...]:
    """The paragraphs of the page at *path*: drawn from the host and path only."""
    rng = random.Random(f"trapsite:{host_index}:{path}")
    words = rng.choices(vocabulary(), k=rng.randint(*WORDS_PER_PAGE))
    sentences: list[str] = []
    while words:
        size = rng.randint(*WORDS_PER_SENTENCE)
        sentence, words = words[:size], words[size:]
        sentences.append(" ".join(sentence).capitalize() + ".")
    step = SENTENCES_PER_PARAGRAPH
    return tuple(
        " ".join(sentences[i : i + step]) for i in range(0, len(sentences), step)
    )


# The ways the sessions host writes a session id: three names crawlers know, and
# one no list has (told from the page's links: crawler/policy/sessionids.py).
SESSION_SPELLINGS = (";jsessionid={}", "?PHPSESSID={}", "?sid={}", "?visit={}")


def serve(host_index: int, target: str, now: float, rng: random.Random) -> Served:
    """What host *host_index* answers for *target* at *now* (seconds since the
    epoch); *rng* draws session ids and adverts."""
    found = route(host_index, target)
    today = datetime.datetime.fromtimestamp(now, datetime.UTC).date()
    hrefs = links(host_index, target, today)
    if kind_of(host_index) == "sessions":
        spelling = _session_spelling(host_index, found.page or target)
        hrefs = [_with_session(href, spelling, rng) for href in hrefs]
    if found.variant == "soft404":
        path = html.escape(target.partition("?")[0])
        note = f"Sorry, the page {path} was not found. {_stamp(now)}"
        return Served(200, _html(host_index, "Not found", [note], hrefs))
    if found.kind == "dead":
        return Served(404, _html(host_index, "Not found", ["Not found."], []))
    page = found.page or target.partition("?")[0]
    title, extra = _title_and_extra(found.variant, page, target, now, rng)
    return Served(
        200, _html(host_index, title, [*extra, *page_text(host_index, page)], hrefs)
    )


def _title_and_extra(
    variant: str, page: str, target: str, now: float, rng: random.Random
) -> tuple[str, list[str]]:
    """A variant's title and the lines it shows above *page*'s text."""
    path, _, query = target.partition("?")
    if variant == "print":
        return "Print version", ["Printed from the site; links may be out of date."]
    if variant == "facet":
        return "Shop", [f"Filtered by {html.escape(query)}."]
    if path == "/ticking.html":
        return "Ticking", [_stamp(now)]
    if path == "/advert.html":
        return "Advert", [f'<aside class="advert">{rng.choice(ADVERTS)}</aside>']
    return html.escape(page), []


def _stamp(now: float) -> str:
    moment = datetime.datetime.fromtimestamp(now, datetime.UTC).isoformat()
    return f'<span class="time">Generated at {moment}</span>'


def _session_spelling(host_index: int, page: str) -> int:
    """How a page writes its links' session ids: SESSION_SPELLINGS in turn over
    the host's tree, one spelling a page, as one server writes them."""
    pages = tree(host_index)
    return pages.index(page) % len(SESSION_SPELLINGS) if page in pages else 0


def _with_session(href: str, spelling: int, rng: random.Random) -> str:
    """*href* with a fresh session id, written the *spelling*-th way."""
    token = f"{rng.getrandbits(64):016x}"
    return href + SESSION_SPELLINGS[spelling].format(token)


def _html(
    host_index: int, title: str, paragraphs: Sequence[str], hrefs: Sequence[str]
) -> str:
    items = "".join(
        f'<li><a href="{html.escape(href)}">link {k}</a></li>\n'
        for k, href in enumerate(hrefs)
    )
    text = "".join(f"<p>{paragraph}</p>\n" for paragraph in paragraphs)
    return (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{title}</title>'
        f"</head>\n<body><h1>{kind_of(host_index)}: {title}</h1>\n{text}"
        f"<ul>\n{items}</ul>\n</body></html>\n"
    )
