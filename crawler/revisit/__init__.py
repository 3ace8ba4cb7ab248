"""Revisits: the feeder that moves due URLs from the URL library
(``crawler.records.library``) into the frontier, and what is due (``duestatus``)."""
