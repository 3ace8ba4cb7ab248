"""Pure decisions of the crawler: no I/O, no clock, no randomness of their own."""
