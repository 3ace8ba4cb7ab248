"""Revisits: the URL library's schedule, read and written beside the page records."""
