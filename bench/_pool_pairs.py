"""One client of `bench/pool_instructions.sh`: `pairs` acquire+release pairs (weighted, 100
sites, every request a success) on a Redis pool, from a start time shared with the others.

Run: python bench/_pool_pairs.py REDIS_URL POOL_NAME PAIRS START_EPOCH (with PYTHONPATH set to
the checkout under measure)."""

from __future__ import annotations

import logging
import os
import sys
import time

from urlcheck.proxypool import Outcome, PoolConfig, ProxyPool, store_from_uri
from urlcheck.proxypool.store.redis import RedisStore

OK = Outcome(status=200, latency=0.3)


def main() -> None:
    url, name, pairs, start_at = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    logging.disable(logging.ERROR)
    specs = [f"http://user{i}:pw{i}@10.0.{i // 250}.{i % 250 + 1}:3128" for i in range(20)]
    store = store_from_uri(url, name)
    # A Redis under callgrind on a loaded machine may take seconds to answer: more than the
    # store allows a crawl (2 s), not a failure here. Set before the first connection.
    assert isinstance(store, RedisStore)
    store.link.client.connection_pool.connection_kwargs["socket_timeout"] = 300.0
    pool = ProxyPool(specs, PoolConfig(), store=store, seed=os.getpid())
    sites = [f"site{i}.example" for i in range(100)]
    # every client started (under valgrind, slowly); one sleep, whose instructions do not
    # depend on how long the start took
    time.sleep(max(0.0, start_at - time.time()))
    for index in range(pairs):
        pool.release(pool.acquire(sites[index % 100]), OK)
    pool.close()


if __name__ == "__main__":
    main()
