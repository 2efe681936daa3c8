"""The Scrapy glue that is neither a spider, a middleware nor an extension: one crawl's runtime,
the rows' requests, the scheduler and its queue, the download handler, request meta keys, hop
failures, feed exporters, the add-on of distributed mode, and the one module that touches
Scrapy's private attributes.

Core packages MUST NOT import this package.
"""
