"""Signals one of our components sends and another receives, through Scrapy's
``crawler.signals``, named once (as Scrapy's own are, in ``scrapy.signals``).

A signal lets a component reach another of its layer, or one above, without
importing it: the sender does not know who listens.
"""

# A link of a host was cut as a spider trap, or a page of it was a soft 404 (kwargs:
# url, rule): the traffic counters show it in the host's ``traps``.
trap_cut = object()
