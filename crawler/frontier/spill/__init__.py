"""FRONTIER_SPILL: queues past their head wait in a database, not in Redis.

``table`` is the database's table, ``spill`` moves one shard's entries out and
back (``Spill``), ``worker`` runs it on a thread of its own for the node's shards.
The Redis side is the push and pop scripts' (``crawler.frontier.store.scripthelpers``)
and ``crawler.frontier.store.spillscripts``.
"""
