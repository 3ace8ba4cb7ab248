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
# Whether the links of a copy (a near-duplicate whose links, read from its own place,
# are its original's: the same page under another path) are followed. False drops
# them (the default): they lead to more copies (/docs/a/b/a/...), and the original's
# own links were followed already.
NEARDUP_COPY_LINKS = False
# Near-duplicate pairs at different paths needed before a host's links are rewritten
# by what they teach (one query pair or run of segments that leaves the page the
# same, such as ?print=1 or /print/); 0: nothing learnt.
NEARDUP_RULE_SUPPORT = 2
