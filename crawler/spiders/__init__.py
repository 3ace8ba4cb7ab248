"""The project's spiders, and the spider middleware that records the pages of any
spider's responses (``responserecords``)."""
