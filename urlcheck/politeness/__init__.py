"""Politeness, the rules a host is asked by: back-off on 429/503, the learned pace, the circuit
that gives up on a host down for everyone (docs/politeness.md).

This package MUST NOT import Scrapy, Twisted, or anything of urlcheck outside the core packages
(``crawl``, ``spiders``, ``middlewares``, ``extensions``, ``commands``, ``config.crawlconfig``).
"""
