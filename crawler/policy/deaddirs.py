"""Dead directories: a folder of a host whose every page fetched so far was missing.

A site that moved a section (``/old/...``) or a template that writes a broken link on
every page sends a crawl to one missing page after another, each a fetch and a
politeness delay, and a host that answers them with 200 (a soft 404) must be fetched
to be caught. Once ``TRAPS_DEAD_DIRECTORY_PAGES`` pages of one directory (the URL's
path up to its last ``/``; a subfolder is a directory of its own) were missing (404 or
410, soft 404s included) and none of it was found, its other queued pages are not
fetched. One page found there (a 200) makes the directory live for good. A host's
root directory is never dead: its home page lives there.

Pure: the caller records what its fetches gave and asks before the next one.
"""

from __future__ import annotations

from collections import OrderedDict

MISSING = frozenset({404, 410})
LIVE = -1  # a directory's count once a page was found in it


class DeadDirectories:
    """Missing pages a directory, the least recently used directory forgotten first
    (*memory* directories kept); *pages* 0 turns it off."""

    def __init__(self, pages: int, memory: int = 10_000) -> None:
        self.pages = pages
        self.memory = memory
        self._missing: OrderedDict[str, int] = OrderedDict()

    def record(self, url: str, status: int) -> bool:
        """Count *url*'s answer; whether this answer made its directory dead."""
        directory = directory_of(url)
        if not self.pages or directory is None:
            return False
        count = self._missing.get(directory, 0)
        if 200 <= status < 300:
            count = LIVE
        elif status in MISSING and count != LIVE:
            count += 1
        self._missing[directory] = count
        self._missing.move_to_end(directory)
        if len(self._missing) > self.memory:
            self._missing.popitem(last=False)
        return count == self.pages and status in MISSING

    def is_dead(self, url: str) -> bool:
        """Whether *url*'s directory has had ``pages`` missing pages and no page."""
        directory = directory_of(url)
        return bool(self.pages) and self._missing.get(directory or "", 0) >= self.pages


def directory_of(url: str) -> str | None:
    """*url* without its query, fragment and last path segment (``http://h/a/b/``),
    or None for a host's root directory and what is no absolute URL."""
    base = url.split("#", 1)[0].split("?", 1)[0]
    scheme, sep, rest = base.partition("://")
    if not sep or not scheme:
        return None
    host, slash, path = rest.partition("/")
    if not host or not slash:
        return None
    folder = path.rpartition("/")[0]
    return f"{scheme}://{host}/{folder}/" if folder else None
