"""Browser contexts in turn: each renders ``RENDER_MAX_PAGES_PER_CONTEXT`` pages,
then is closed once its last page is, and a fresh one takes over.

A context keeps what its pages leave behind (cache, cookies, service workers,
leaked memory), so retiring it is what bounds the browser's memory over a long
crawl. Pure bookkeeping of names; the download handler opens and closes.
"""

from __future__ import annotations

from collections import Counter


class ContextRota:
    """Which context a new page goes to, and when a retired one may be closed."""

    def __init__(self, pages_per_context: int) -> None:
        if pages_per_context < 1:
            raise ValueError(f"pages_per_context must be >= 1: {pages_per_context}")
        self._limit = pages_per_context
        self._generation = 0
        self._given = 0  # pages given to the current context
        self._open: Counter[str] = Counter()

    @property
    def current(self) -> str:
        return f"render-{self._generation}"

    def take(self) -> tuple[str, list[str]]:
        """The context the next page opens in, and the retired contexts that have
        no page open and may be closed now."""
        retired: list[str] = []
        if self._given >= self._limit:
            if self._open[self.current] == 0:
                del self._open[self.current]
                retired.append(self.current)
            self._generation += 1
            self._given = 0
        self._given += 1
        self._open[self.current] += 1
        return self.current, retired

    def release(self, name: str) -> bool:
        """A page of context *name* is closed; True when the context is retired
        and this was its last page (close it)."""
        self._open[name] -= 1
        if self._open[name] > 0 or name == self.current:
            return False
        del self._open[name]
        return True

    def open_pages(self, name: str) -> int:
        return self._open[name]
