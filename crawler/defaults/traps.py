"""Defaults of the spider-trap settings (``TRAPS_*``, and the host page budget
``FRONTIER_HOST_MAX_PAGES``): the rules in crawler/policy/traps.py, each with a
setting that turns it off."""

# Queue each URL in its canonical form: session parameters dropped, query sorted,
# no fragment, escapes as w3lib writes them.
TRAPS_CANONICALIZE = True
# More query keys that name a session (any case), on top of the built-in
# jsessionid, phpsessid, sid, sessionid, session_id, aspsessionid*, cfid, cftoken,
# zenid and oscsid.
TRAPS_SESSION_PARAMS: list[str] = []
# Drop query keys that a page's links carry as a session id though no name says so
# (on nearly all its links to its own host, whatever the path, with token values:
# crawler/policy/sessionids.py).
TRAPS_SESSION_DETECT = True
# A path that repeats a run of 1 to 3 segments more times in a row than this, or
# one segment more than this + 1 times, is a trap; 0 turns the rule off.
TRAPS_MAX_PATH_REPEATS = 2
# A URL naming a date more than this many days ahead is a calendar trap; 0 turns
# the calendar rule off.
TRAPS_CALENDAR_HORIZON_DAYS = 366
# A URL naming a date in a year before this one is a calendar trap too.
TRAPS_CALENDAR_EARLIEST_YEAR = 1990
# A dated page's link to a date farther from today than the page's own and more
# than this many months from today is a calendar trap (a "previous month" or "next
# day" chain: months compared, or days when both name a day, 30 a month); 0: a
# dated page's links never walk away from today; None turns the rule off.
TRAPS_CALENDAR_NEAR_MONTHS: int | None = 0
# Distinct query strings one path may have queued; more are a trap; 0: no limit.
TRAPS_MAX_QUERY_VARIANTS = 50
# Most pages of one host in a crawl (an int >= 1); None: no budget.
FRONTIER_HOST_MAX_PAGES = None
# Probe each host with a page that cannot exist and skip its pages that look like
# the "not found" page it answered with 200 (a soft 404).
TRAPS_SOFT_404 = True
# A directory of a host with this many missing pages fetched (404, 410, soft 404s)
# and none found is dead: its other queued pages are not fetched; 0 turns it off.
TRAPS_DEAD_DIRECTORY_PAGES = 3
