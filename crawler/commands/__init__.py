"""Project commands for ``scrapy`` (COMMANDS_MODULE)."""
