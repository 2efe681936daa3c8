"""Input: the rows a job checks, read from the user's file, and the order they are fed in.

This package MUST NOT import Scrapy, Twisted, or anything of urlcheck outside the core packages
(``crawl``, ``spiders``, ``middlewares``, ``extensions``, ``commands``, ``config.crawlconfig``).
"""
