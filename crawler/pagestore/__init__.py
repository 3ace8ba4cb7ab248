"""The page store: a mirror of each host's URL tree (docs/pagestore.md)."""
