"""In-links a spider saw but did not yield again, for importance order to count.

A page links to ~100 URLs, nearly all yielded before; the ``bfs`` spider does not
make a request of each one again (crawler/spiders/follow.py), yet in
``FRONTIER_ORDER = importance`` each of those links is an in-link that raises the
URL's importance while it waits. The spider adds them here with the credit each
passes (``crawler.policy.importance.link_credit``); the frontier takes them with its
next round trip, as credit-only records.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from crawler.policy.importance import LinkCredit


class LinkCredits:
    """In-links waiting for the frontier's next round trip: (URL, credit) pairs."""

    def __init__(self) -> None:
        self._links: list[tuple[str, LinkCredit]] = []

    def __len__(self) -> int:
        return len(self._links)

    def add(self, url: str, credit: LinkCredit) -> None:
        self._links.append((url, credit))

    def take(self) -> list[tuple[str, LinkCredit]]:
        """Every link added since the last call, in order."""
        links, self._links = self._links, []
        return links
