"""The Scrapy glue that is neither a spider, a middleware nor an extension: one crawl's runtime,
the scheduler and its queue, the download handler, request meta keys, hop failures, feed
exporters, and the one module that touches Scrapy's private attributes.

Core packages MUST NOT import this package.
"""
