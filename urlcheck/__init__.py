"""urlcheck: a polite, resumable bulk URL and redirect checker built on Scrapy."""

__version__ = "0.1.0"
