"""Settings: urlcheck's ``URLCHECK_*`` settings parsed once into typed, validated configs.

``reader`` is core (it imports nothing of Scrapy, Twisted or urlcheck); ``crawlconfig`` gathers
every package's config for one crawl and may import any core package. This ``__init__`` stays
empty so that a component can import ``reader`` without the whole config.
"""
