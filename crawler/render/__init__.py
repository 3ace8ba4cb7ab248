"""Rendering pages that need JavaScript in headless Chromium (scrapy-playwright),
only where it finds what a static fetch does not (``RENDER_MODE``)."""
