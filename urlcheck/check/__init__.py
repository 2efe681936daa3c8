"""Checking one row: URLs and Locations, the chain rules, the verdict, detection, the address
guard, the ledger of rows, and the result record written to results.jsonl.

This package MUST NOT import Scrapy, Twisted, or anything of urlcheck outside the core packages
(``crawl``, ``spiders``, ``middlewares``, ``extensions``, ``commands``, ``config.crawlconfig``).
"""
