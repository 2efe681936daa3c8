"""The one Redis layer, under both users of Redis: the proxy pool's Redis store and distributed
mode's frontier (docs/distributed.md, "The Redis layer").

- :mod:`.client`: the redis-py client's options, forced in one place (RESP2, short socket
  timeouts, no retries), so that no Redis call can stall the crawl's event loop.
- :mod:`.link`: a process's line to a Redis server: commands packed by hiredis on a connection
  of its own, answers read late or not at all, a Redis Cluster's MOVED followed.
- :mod:`.scripts`: Lua files as package data, loaded once, run by SHA1, loaded again on NOSCRIPT.
- :mod:`.boundary`: whatever Redis does wrong becomes the caller's own error, raised the same way
  by every public method of a store.

redis-py is imported only when a client is made (limits' ``LazyDependency``): importing this
package, the proxy pool or distributed mode's core loads none of it.
This package MUST NOT import Scrapy, Twisted, or the adapters (``crawl``, ``spiders``,
``middlewares``, ``extensions``, ``commands``, ``config.crawlconfig``); it serves both stores and
imports neither.
"""
