"""Defaults of the timeout tiers (``TIMEOUTS_*``): the download timeout of each tier,
when a host is slow or dead, read by crawler/policy/tiers.py and
crawler/middlewares/timeouts.py."""

# download_timeout of each tier, in seconds: a request that times out on tier k goes
# back to the frontier on tier k+1 (after tier k's requests of its depth); a timeout
# on the last tier gives it up.
TIMEOUTS_TIERS = [10, 30, 90]
# Escalations of one host within TIMEOUTS_SLOW_WINDOW that mark it slow (its requests
# then start on tier 1).
TIMEOUTS_SLOW_AFTER = 3
# Seconds over which a host's escalations are counted.
TIMEOUTS_SLOW_WINDOW = 3600
# Answers on tier 0 or 1 that make a slow host normal again.
TIMEOUTS_SLOW_RECOVER_AFTER = 10
# Requests of one host in a row that timed out on every tier before it is paused.
TIMEOUTS_HOST_DEAD_AFTER = 3
# Seconds a dead host is paused (its requests wait in the frontier, nothing is lost).
TIMEOUTS_HOST_PAUSE = 600
# Domain suffixes of far-away hosts, whose requests start on tier 1; or the import
# path of a function host -> bool.
TIMEOUTS_FAR_HOSTS: list[str] | str = []
