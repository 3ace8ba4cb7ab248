"""Defaults of near-duplicate detection (``NEARDUP_*``): SimHash distance and a
host's budget rule, read by crawler/policy/simhash.py."""

# Most SimHash bits (of 64) two pages' texts differ in and still count as
# near-duplicates. 0 turns near-duplicate detection off.
NEARDUP_MAX_DISTANCE = 6
# A host's most recent pages its share of near-duplicates is counted over.
NEARDUP_HOST_WINDOW = 50
# Share of near-duplicates among a host's recent pages (at least 20 of them) at which
# its budget is lowered.
NEARDUP_HOST_SHARE = 0.8
