"""A line-by-line Python port of Google's reference matcher (google/robotstxt,
robots.cc: RobotsTxtParser, RobotsMatcher::OneAgentAllowedByRobots), used as an
oracle: tests/unit/test_robots_reference.py checks it against robots_test.cc, then
our decision against it on generated files. It follows robots.cc's state machine,
not our group-based reading, so the two can disagree.
"""

from __future__ import annotations

import re

_WHITE = " \t\n\v\f\r"
_HEX = "0123456789abcdefABCDEF"
_MAX_LINE = 2083 * 8 - 1
_BOM = b"\xef\xbb\xbf"


def _lines(body: bytes) -> list[bytes]:
    """Parse(): BOM bytes skipped, lines at CR, LF, CRLF, cut at 16663 bytes."""
    skip = 0
    while skip < 3 and skip < len(body) and body[skip] == _BOM[skip]:
        skip += 1
    lines = re.split(rb"\r\n|\r|\n", body[skip:])
    return [line[:_MAX_LINE] for line in lines]


def _key_value(line: str) -> tuple[str, str] | None:
    """GetKeyAndValueFrom()."""
    line = line.split("#", 1)[0].strip(_WHITE)
    if not line:
        return None
    sep = line.find(":")
    if sep < 0:
        white = re.search(r"[ \t]", line)
        if white is None:
            return None
        sep = white.start()
        if re.search(r"[ \t]", line[sep:].lstrip(" \t")):
            return None  # more than two words
    key = line[:sep].strip(_WHITE)
    if not key:
        return None
    return key, line[sep + 1 :].strip(_WHITE)


def _kind(key: str) -> str:
    """GetKeyType(), typos included."""
    key = key.lower()
    if key.startswith(("user-agent", "useragent", "user agent")):
        return "user-agent"
    if key.startswith("allow"):
        return "allow"
    typos = ("disallow", "dissallow", "dissalow", "disalow", "diasllow", "disallaw")
    if key.startswith(typos):
        return "disallow"
    return "other"


def _escape(pattern: str) -> str:
    """MaybeEscapePattern(): escapes to upper case, non-ASCII octets escaped."""
    data = pattern.encode("utf-8", errors="surrogatepass")
    out, i = [], 0
    while i < len(data):
        hexes = data[i + 1 : i + 3].decode("latin-1")
        if data[i] == 0x25 and len(hexes) == 2 and all(h in _HEX for h in hexes):
            out.append("%" + hexes.upper())
            i += 3
            continue
        out.append(f"%{data[i]:02X}" if data[i] & 0x80 else chr(data[i]))
        i += 1
    return "".join(out)


def _matches(path: str, pattern: str) -> bool:
    """RobotsMatchStrategy::Matches()."""
    positions = [0]
    for i, char in enumerate(pattern):
        if char == "$" and i == len(pattern) - 1:
            return positions[-1] == len(path)
        if char == "*":
            positions = list(range(positions[0], len(path) + 1))
        else:
            positions = [p + 1 for p in positions if p < len(path) and path[p] == char]
            if not positions:
                return False
    return True


def path_params_query(url: str) -> str:
    """GetPathParamsQuery()."""
    start = 2 if url.startswith("//") else 0
    early = min((i for i in (url.find(c, start) for c in "/?;") if i >= 0), default=-1)
    protocol_end = url.find("://", start)
    if protocol_end < 0 or (0 <= early < protocol_end):
        protocol_end = start
    else:
        protocol_end += 3
    found = [i for i in (url.find(c, protocol_end) for c in "/?;") if i >= 0]
    if not found:
        return "/"
    path_start = min(found)
    hash_pos = url.find("#", start)
    if 0 <= hash_pos < path_start:
        return "/"
    path = url[path_start : hash_pos if hash_pos >= 0 else len(url)]
    return path if path.startswith("/") else "/" + path


def _handle_rule(best: list[int], slot: int, kind: str, value: str, path: str) -> None:
    """HandleAllow() / HandleDisallow(): keep the longest match of the group."""
    value = _escape(value)
    candidates = [value]
    slash = value.rfind("/")
    if kind == "allow" and slash >= 0 and value[slash:].startswith("/index.htm"):
        candidates.append(value[: slash + 1] + "$")
    for candidate in candidates:
        if _matches(path, candidate):
            best[slot] = max(best[slot], len(candidate))
            return


def allowed(robotstxt: bytes, agent: str, url: str) -> bool:
    """OneAgentAllowedByRobots(robotstxt, agent, url)."""
    path = path_params_query(url)
    best = {"allow": [-1, -1], "disallow": [-1, -1]}  # [specific, global] priority
    global_agent = specific_agent = ever_specific = separator = False
    for raw in _lines(robotstxt):
        found = _key_value(raw.decode("utf-8", errors="replace"))
        if found is None:
            continue
        kind, value = _kind(found[0]), found[1]
        if kind == "user-agent":
            if separator:
                specific_agent = global_agent = separator = False
            if value[:1] == "*" and (len(value) == 1 or value[1].isspace()):
                global_agent = True
            else:
                token = re.match(r"[A-Za-z_-]*", value)
                if token is not None and token[0].lower() == agent.lower():
                    ever_specific = specific_agent = True
        elif kind in ("allow", "disallow") and (global_agent or specific_agent):
            separator = True
            _handle_rule(best[kind], 0 if specific_agent else 1, kind, value, path)
    allow, disallow = best["allow"], best["disallow"]
    if allow[0] > 0 or disallow[0] > 0:
        return disallow[0] <= allow[0]
    if ever_specific:
        return True
    if allow[1] > 0 or disallow[1] > 0:
        return disallow[1] <= allow[1]
    return True
