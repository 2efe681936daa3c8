"""Scrapy extensions of urlcheck."""
