"""Revisits: the URL library (``library``, ``entries``) and the feeder that moves due URLs into the frontier (``feeder``)."""
