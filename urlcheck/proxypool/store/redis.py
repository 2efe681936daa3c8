"""The Redis store: the shared state of `PoolStore` in Redis, for many crawler processes.

Every key is under one hash tag per pool, ``{urlcheck:pool:<name>}:...``, so that a pool lives
in one Redis Cluster slot: on a cluster, the store talks to the node that serves it, found and
followed through the nodes' MOVED answers. Each primitive is one round trip: a Lua script from
``lua/`` (loaded once, run with EVALSHA, reloaded on NOSCRIPT) or a MULTI transaction, on the
Redis layer (urlcheck.redis: the client's options, the link, the scripts, the boundary error).
Scripts take the time from the server's ``TIME`` (the caller's clock only when the pool runs on
an injected clock, as tests do) and hold no policy: they check states, benches and caps that
Python decided.

Keys (hash tag omitted): ``meta`` (gen, reg, lease_seq), ``proxies`` (id -> spec JSON, with
its credentials: the store is as private as the proxy list), ``states`` (id -> state, until),
``out`` (ids out of service), ``caps``, ``active`` (lease counts), ``benches``
((site, id) -> until), ``leases`` (sorted by expiry), ``sessions`` and ``session_exp``,
``probe:<id>`` (who probes it), ``log`` (the fleet's latest outcomes, for every process to
judge, one entry per batch a process told: ``meta``'s ``seen`` counts the entries ever
appended).

When Redis fails, every method raises `StoreUnavailable` (the boundary, urlcheck.redis.boundary):
the pool fails closed, and a request that needs a proxy waits for the store.
"""

from __future__ import annotations

import contextlib
import json
import math
import secrets
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from urlcheck.proxypool.proxy import Proxy
from urlcheck.proxypool.rules.health import IN_SERVICE, State
from urlcheck.proxypool.store.base import (
    Acquired,
    Committed,
    Heard,
    PoolStore,
    Reclaimed,
    Released,
    Report,
    Shared,
    StoreUnavailable,
    cap_of,
)
from urlcheck.redis.boundary import Boundary
from urlcheck.redis.client import make_client
from urlcheck.redis.link import Link
from urlcheck.redis.scripts import load_scripts

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from urlcheck.proxypool.config import PoolConfig
    from urlcheck.proxypool.policy.choosing import Choice

__all__ = ["RedisStore", "key_prefix"]

_RECLAIM_BATCH = 500
# Entries the log keeps: far more than the fleet appends in the second between two reads of a
# busy process (the maintenance call), so that nobody misses any.
_LOG_KEEP = 20_000
# A process tells the fleet its successes in batches: with its next failure (at once, in order),
# when it holds this many, when the oldest is a second old, at the maintenance call and when it
# closes. One entry for many outcomes costs the server one append and one reply item where it
# cost one per outcome: with 4 processes, 14% of Redis's instructions a pair (callgrind; README).
_BATCH = 32
_BATCH_AGE = 1.0


def key_prefix(name: str) -> str:
    """The hash-tagged prefix of every key of pool `name`."""
    return "{urlcheck:pool:" + name + "}:"


def spec_of(proxy: Proxy) -> str:
    """The proxy as JSON that `Proxy.parse` reads back, credentials included."""
    url = proxy.url
    if proxy.credentials is not None:
        user, password = proxy.credentials
        url = f"{proxy.scheme}://{quote(user, safe='')}:{quote(password, safe='')}@{proxy.display}"
    return json.dumps(
        {
            "url": url,
            "weight": proxy.weight,
            "tags": sorted(proxy.tags),
            "max_concurrent": proxy.max_concurrent,
            "id": proxy.id,
        }
    )


class RedisStore(PoolStore, Boundary):
    """URI: ``redis://host:port/db`` (or ``rediss://``, ``unix://``); `name` picks the pool
    within it. `params`: more redis-py options (password, username, ssl_*, ...), as
    ``REDIS_PARAMS`` gives them; urlcheck.redis.client's forced options win.

    `server_time`: take the time from Redis ``TIME`` (default). A pool on an injected clock (a
    test's `ManualClock`) sets it False, and the pool's clock is sent with each call.
    """

    shared_by_processes = True
    unavailable_error = refused_error = StoreUnavailable
    subject = "proxy store"

    def __init__(
        self,
        url: str,
        name: str = "default",
        *,
        server_time: bool = True,
        params: Mapping[str, Any] | None = None,
    ) -> None:
        self.link = Link(make_client(url, params, decode_responses=True), owns_client=True)
        self.name = name
        self.server_time = server_time
        self._token = secrets.token_hex(6)  # tells this process's leases from others'
        self._seen = -1  # the fleet's log entries read so far (-1: none yet, start from now)
        self._untold: list[Heard] = []  # our outcomes not yet in the log (`_BATCH`)
        self._reg = "-1"
        tag = key_prefix(name)
        self._tag = tag
        k = {
            part: tag + part
            for part in (
                "meta",
                "states",
                "benches",
                "proxies",
                "out",
                "caps",
                "active",
                "leases",
                "sessions",
                "session_exp",
                "log",
            )
        }
        self._k = k
        view = [k["meta"], k["states"], k["benches"], k["proxies"]]
        self._keys = {
            "acquire": [
                *view,
                k["out"],
                k["caps"],
                k["active"],
                k["leases"],
                k["sessions"],
                k["session_exp"],
                k["log"],
            ],
            "release": [k["leases"], k["active"], k["meta"], k["log"]],
            "reclaim": [
                *view,
                k["leases"],
                k["active"],
                k["sessions"],
                k["session_exp"],
                k["log"],
            ],
            "commit": [*view, k["out"]],
        }
        # the release is sent whole with each call (`release`): no prelude
        self._scripts = load_scripts("urlcheck.proxypool.store", frozenset({"release"}))

    @property
    def round_trips(self) -> int:
        return self.link.round_trips

    @property
    def commands(self) -> int:
        return self.link.commands

    def open(self, config: PoolConfig) -> None:
        super().open(config)
        self._ends_lost = config.session_loss == "end"
        # The scripts loaded up front, and the node that serves the pool's slot found.
        self.link.open(self._scripts.values(), probe=self._k["meta"])

    def __repr__(self) -> str:
        return f"RedisStore(pool {self.name!r})"

    # ---------------------------------------------------------------- plumbing

    def _now(self, now: float) -> str:
        return "" if self.server_time else repr(now)

    def _run(self, script: str, keys: Sequence[str], args: Sequence[str | float]) -> Any:
        return self.link.run(self._scripts[script], keys, args)

    def _hear(self, reply: Sequence[Any]) -> None:
        """Take a script's news reply: other processes' outcomes into the inbox. An entry is
        the teller's token, then one outcome a line (`_told`)."""
        self._seen = int(reply[0])
        if len(reply) == 1:
            return
        mine, inbox = self._token, self.inbox
        for entry in reply[1]:
            teller, _, lines = entry.partition("\n")
            if teller == mine:
                continue  # our own, judged when released (with one process, every entry)
            for line in lines.split("\n"):
                try:
                    proxy_id, site, code, latency, at = line.split("\t")
                    inbox.append(
                        (proxy_id, site, int(code), float(latency) if latency else None, float(at))
                    )
                except ValueError:
                    continue  # not an outcome: nothing to judge (the log is ours alone)

    def _told(self) -> str:
        """The outcomes held back, as one log entry (and no longer held): tab-separated lines,
        as a site (a host name) holds neither tab nor newline. JSON cost the clients 3% more
        instructions a pair (callgrind, 4 processes): floats are most of either's work."""
        lines = [self._token]
        for proxy_id, site, code, latency, at in self._untold:
            seconds = "" if latency is None else repr(latency)
            lines.append(f"{proxy_id}\t{site}\t{code}\t{seconds}\t{at!r}")
        self._untold = []
        return "\n".join(lines)

    def _tell(self) -> None:
        """Send the outcomes held back, if any, with no lease to end (the release script, its
        member empty): no round trip of its own."""
        if not self._untold:
            return
        self.link.send_script(
            self._scripts["release"], self._keys["release"], ["", "", self._told(), _LOG_KEEP]
        )

    def _shared(self, view: Sequence[Any]) -> Shared | None:
        """Parse a script's view reply: None when the caller was up to date."""
        if len(view) == 2:
            return None
        gen, reg, raw_states, raw_benches, raw_proxies = view
        proxies: dict[str, Proxy] | None = None
        reset = False
        if reg != self._reg:
            proxies = {}
            for i in range(0, len(raw_proxies), 2):
                proxies[raw_proxies[i]] = Proxy.parse(json.loads(raw_proxies[i + 1]))
            # the registry counter only grows: lower means the keys were lost
            reset = int(reg) < int(self._reg)
            self._reg = reg
        return Shared(int(gen), _states(raw_states), _benches(raw_benches), proxies, reset)

    # ---------------------------------------------------------------- registry

    def add_proxy(self, proxy: Proxy) -> tuple[bool, int]:
        k = self._k
        with self.link.pipeline(transaction=True) as pipe:
            pipe.hset(k["proxies"], proxy.id, spec_of(proxy))
            pipe.hset(k["caps"], proxy.id, cap_of(proxy, self.config))
            pipe.hsetnx(k["states"], proxy.id, f"{State.HEALTHY.value}\t0")
            pipe.hsetnx(k["active"], proxy.id, 0)
            pipe.hincrby(k["meta"], "reg", 1)
            pipe.hincrby(k["meta"], "gen", 1)
            new, _, _, _, reg, gen = pipe.execute()
        if int(reg) == int(self._reg) + 1:
            self._reg = str(reg)
        return bool(new), int(gen)

    def remove_proxy(self, proxy_id: str) -> tuple[bool, int]:
        k = self._k
        with self.link.pipeline(transaction=True) as pipe:
            pipe.hdel(k["proxies"], proxy_id)
            for part in ("states", "caps", "active"):
                pipe.hdel(k[part], proxy_id)
            pipe.srem(k["out"], proxy_id)
            pipe.hincrby(k["meta"], "reg", 1)
            pipe.hincrby(k["meta"], "gen", 1)
            removed, *_, reg, gen = pipe.execute()
        if int(reg) == int(self._reg) + 1:
            self._reg = str(reg)
        return bool(removed), int(gen)

    def load(self, now: float) -> Shared:
        k = self._k
        with self.link.pipeline(transaction=True) as pipe:
            pipe.hmget(k["meta"], "gen", "reg", "seen")
            pipe.hgetall(k["states"])
            pipe.hgetall(k["benches"])
            pipe.hgetall(k["proxies"])
            (gen, reg, seen), states, benches, proxies = pipe.execute()
        if self._seen < 0:  # the news from now on
            self._seen = int(seen or 0)
        reset = int(reg or 0) < int(self._reg)
        self._reg = reg or "0"
        flat_states = [x for item in states.items() for x in item]
        flat_benches = [x for item in benches.items() for x in item]
        shared_benches = {
            key: until for key, until in _benches(flat_benches).items() if until > now
        }
        return Shared(
            int(gen or 0),
            _states(flat_states),
            shared_benches,
            {pid: Proxy.parse(json.loads(spec)) for pid, spec in proxies.items()},
            reset,
        )

    # ---------------------------------------------------------------- leases and sessions

    def acquire(
        self, site: str, key: str | None, choose: Callable[[bool], Choice], now: float, gen: int
    ) -> Acquired:
        order, forced = choose(False)
        reply = self._acquire(site, key, order, forced, now, gen)
        # nothing usable in the choice: ask for the fallback (not for a session that waits for
        # its proxy's cap, nor for one that ended)
        if not reply[1] and order and not reply[5] and not (reply[2] and self._ends_lost):
            order, forced = choose(True)
            if forced is not None:
                reply = self._acquire(site, key, order, forced, now, gen)
        lease, proxy_id, lost, fallback, view, capped, _ = reply
        return (
            int(lease),
            proxy_id or None,
            bool(lost),
            bool(fallback),
            self._shared(view),
            bool(capped),
        )

    def _acquire(  # noqa: PLR0917
        self,
        site: str,
        key: str | None,
        order: Sequence[str],
        forced: str | None,
        now: float,
        gen: int,
    ) -> Any:
        cfg = self.config
        reply = self._run(
            "acquire",
            self._keys["acquire"],
            [
                self._now(now),
                cfg.lease_ttl,
                cfg.session_ttl,
                site,
                key or "",
                self._token,
                gen,
                self._reg,
                forced or "",
                "1" if cfg.hard_lease_cap else "0",
                "1" if cfg.session_loss == "end" else "0",
                self._seen,
                *order,
            ],
        )
        self._hear(reply[6])
        return reply

    def release(
        self, lease_id: int, proxy_id: str, now: float, gen: int, report: Report | None = None
    ) -> Released:
        # Sent, not waited for (`Link.send`): whether the lease was still there the pool's books
        # know, and the next call's answer carries the shared state. That is what makes a pair
        # one round trip. Sent whole (7 lines, no prelude): nobody reads an answer that could
        # say NOSCRIPT after a restart, so it must run all the same. The outcome, stamped with
        # the pool's clock, goes with it for the other processes to judge: a failure at once,
        # with the successes held back before it; successes in batches (`_BATCH`).
        member = f"{lease_id}:{self._token}:{proxy_id}"
        entry = ""
        if report is not None:
            site, code, latency = report
            untold = self._untold
            untold.append((proxy_id, site, code, latency, now))
            if code or len(untold) >= _BATCH or now - untold[0][4] >= _BATCH_AGE:
                entry = self._told()
        self.link.send_script(
            self._scripts["release"], self._keys["release"], [member, proxy_id, entry, _LOG_KEEP]
        )
        return None

    def reclaim(self, now: float, gen: int) -> Reclaimed:
        self._tell()  # sent before the call: ours are in the log before we read it
        expired, heard, active, view = self._run(
            "reclaim",
            self._keys["reclaim"],
            [self._now(now), _RECLAIM_BATCH, self._seen, gen, self._reg],
        )
        self._hear(heard)
        self.fleet_active = {
            active[i]: max(0, int(active[i + 1])) for i in range(0, len(active), 2)
        }
        mine = []
        for member in expired:
            lease, token, proxy_id = member.split(":", 2)
            if token == self._token:
                mine.append((int(lease), proxy_id))
        return mine, self._shared(view)

    def end_session(self, key: str) -> bool:
        with self.link.pipeline(transaction=True) as pipe:
            pipe.hdel(self._k["sessions"], key)
            pipe.zrem(self._k["session_exp"], key)
            ended, _ = pipe.execute()
        return bool(ended)

    def usage(self, now: float) -> tuple[int, int]:
        at = repr(now) if not self.server_time else None
        with self.link.pipeline(transaction=False) as pipe:
            if at is None:
                pipe.time()
            pipe.zrange(self._k["leases"], 0, -1, withscores=True)
            pipe.zrange(self._k["session_exp"], 0, -1, withscores=True)
            replies = pipe.execute()
        if at is None:
            seconds, micros = replies.pop(0)
            when = seconds + micros / 1e6
        else:
            when = now
        leases, sessions = replies
        return (
            sum(1 for _, expires in leases if expires > when),
            sum(1 for _, expires in sessions if expires > when),
        )

    # ---------------------------------------------------------------- states

    def commit(
        self,
        gen: int,
        states: dict[str, tuple[State, float]],
        benches: Sequence[tuple[str, str, float]],
        now: float,
    ) -> Committed:
        args: list[str | float] = [gen, self._reg, self._now(now), len(states)]
        for proxy_id, (state, until) in states.items():
            args += [proxy_id, state.value, repr(until), "1" if state in IN_SERVICE else "0"]
        for site, proxy_id, until in benches:
            args += [f"{site}\t{proxy_id}", repr(until)]
        ok, reply = self._run("commit", self._keys["commit"], args)
        if ok:
            return Committed(True, int(reply), None)
        shared = self._shared(reply)
        assert shared is not None  # a conflict means the generation moved
        return Committed(False, shared.gen, shared)

    def claim_probes(self, proxy_ids: Sequence[str], now: float, ttl: float) -> list[str]:
        keys = [f"{self._tag}probe:{pid}" for pid in proxy_ids]
        claimed = self._run("claim", keys, [self._now(now), ttl, self._token])
        return [proxy_ids[i - 1] for i in claimed]

    def end_probe(self, proxy_id: str) -> None:
        self.link.call("DEL", f"{self._tag}probe:{proxy_id}")

    def flush(self) -> None:
        self._tell()

    def close(self) -> None:
        # lost with Redis: the fleet misses this process's last successes, nothing else
        with contextlib.suppress(*self.link.lost):
            self._tell()
        self.link.close()


def _states(flat: Sequence[str]) -> dict[str, tuple[State, float]]:
    states = {}
    for i in range(0, len(flat), 2):
        state, _, until = flat[i + 1].partition("\t")
        states[flat[i]] = (State(state), float(until or 0.0))
    return states


def _benches(flat: Sequence[str]) -> dict[tuple[str, str], float]:
    benches = {}
    for i in range(0, len(flat), 2):
        site, _, proxy_id = flat[i].partition("\t")
        until = float(flat[i + 1])
        if math.isfinite(until):
            benches[site, proxy_id] = until
    return benches
