"""Revisits: the URL library (``library``, ``entries``), the feeder that moves due
URLs into the frontier (``feeder``), and what is due (``duestatus``)."""
