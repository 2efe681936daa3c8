"""The Redis store: the shared state of `base.PoolStore` in Redis, for many crawler processes.

Every key is under one hash tag per pool, ``{urlcheck:pool:<name>}:...``, so that a pool lives
in one Redis Cluster slot: on a cluster, the store talks to the node that serves it, found and
followed through the nodes' MOVED answers. Each primitive is one round trip: a Lua script from
``lua/`` (loaded once, run with EVALSHA, reloaded on NOSCRIPT) or a MULTI transaction. Scripts
take the time from the server's ``TIME`` (the caller's clock only when the pool runs on an
injected clock, as tests do) and hold no policy: they check states, benches and caps that
Python decided.

Keys (hash tag omitted): ``meta`` (gen, reg, lease_seq), ``proxies`` (id -> spec JSON, with
its credentials: the store is as private as the proxy list), ``states`` (id -> state, until),
``out`` (ids out of service), ``caps``, ``active`` (lease counts), ``benches``
((site, id) -> until), ``leases`` (sorted by expiry), ``sessions`` and ``session_exp``,
``probe:<id>`` (who probes it).
"""

from __future__ import annotations

import json
import logging
import math
import secrets
import threading
from importlib import resources
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import quote

import hiredis
import redis
from redis.backoff import NoBackoff
from redis.exceptions import (
    ConnectionError,
    MovedError,
    NoScriptError,
    RedisError,
    TimeoutError,
)
from redis.retry import Retry

from ..proxy import Proxy
from ..rules.health import IN_SERVICE, State
from .base import Acquired, Committed, PoolStore, Released, Shared, StoreUnavailable, cap_of

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from redis.connection import ConnectionInterface

    from ..config import PoolConfig
    from ..policy.choosing import Choice

__all__ = ["RedisStore", "key_prefix"]

logger = logging.getLogger(__name__)

SOCKET_TIMEOUT = 1.5  # seconds; a call that takes longer fails as StoreUnavailable
_RECLAIM_BATCH = 500
_SCRIPTS = ("acquire", "release", "reclaim", "commit", "claim")
_REPLY_SKIP = hiredis.pack_command(("CLIENT", "REPLY", "SKIP"))  # type: ignore[arg-type]
# What the store decides whatever `params` say (see __init__).
_OWN_OPTIONS = frozenset(
    {
        "protocol",
        "socket_timeout",
        "socket_connect_timeout",
        "retry",
        "retry_on_error",
        "retry_on_timeout",
        "decode_responses",
        "connection_pool",
        "single_connection_client",
    }
)


def key_prefix(name: str) -> str:
    """The hash-tagged prefix of every key of pool `name`."""
    return "{urlcheck:pool:" + name + "}:"


class _Script(NamedTuple):
    text: str
    sha: str


def _load_text(name: str) -> str:
    lua = resources.files(__package__).joinpath("lua")
    own = lua.joinpath(f"{name}.lua").read_text()
    # the release neither reads the clock nor reports the view, and is sent whole (EVAL)
    return own if name == "release" else lua.joinpath("_view.lua").read_text() + own


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


class RedisStore(PoolStore):
    """URI: ``redis://host:port/db`` (or ``rediss://``); `name` picks the pool within it.

    `server_time`: take the time from Redis ``TIME`` (default). A pool on an injected clock (a
    test's `ManualClock`) sets it False, and the pool's clock is sent with each call.
    """

    shared_by_processes = True

    def __init__(
        self,
        url: str,
        name: str = "default",
        *,
        server_time: bool = True,
        params: Mapping[str, Any] | None = None,
    ) -> None:
        # Explicit: RESP2, a short socket timeout, and no retries (redis-py's default retries
        # sleep inside the call, which would stall the reactor). hiredis parses when installed.
        # `params`: more redis-py options (password, username, ssl_*, ...); these choices win.
        options = {k: v for k, v in (params or {}).items() if k not in _OWN_OPTIONS}
        self._client = redis.Redis.from_url(
            url,
            **options,
            protocol=2,
            socket_timeout=SOCKET_TIMEOUT,
            socket_connect_timeout=SOCKET_TIMEOUT,
            retry=Retry(NoBackoff(), 0),
            retry_on_error=[],
            decode_responses=True,
        )
        self._where = url.rpartition("@")[2]  # no password in messages
        given = self._client.connection_pool.connection_kwargs
        # the node given in the URL (None: a Unix socket), and whether the store turned from it
        # to another node of a Redis Cluster (see `_unavailable`)
        self._seed = (str(given["host"]), int(given["port"])) if "host" in given else None
        self._away = False
        self.name = name
        self.server_time = server_time
        self._token = secrets.token_hex(6)  # tells this process's leases from others'
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
            ],
            "release": [k["leases"], k["active"]],
            "reclaim": [*view, k["leases"], k["active"], k["sessions"], k["session_exp"]],
            "commit": [*view, k["out"]],
        }
        self._scripts = {
            name: _Script(text, sha)
            for name in _SCRIPTS
            for text in [_load_text(name)]
            for sha in [_sha1(text)]
        }
        self.round_trips = 0
        self.commands = 0
        self._lock = threading.Lock()
        self._conn: ConnectionInterface | None = None
        self._owed = 0  # answers to `_send` not read yet
        self._unanswered = b""  # CLIENT REPLY SKIP, when the server knows it (see `open`)
        self._sent_unseen = False  # a `_send` since the last answer on the own connection

    def open(self, config: PoolConfig) -> None:
        super().open(config)
        # Loaded up front, so that no pool call pays for a NOSCRIPT (one after a restart does).
        # And asked whether it knows CLIENT REPLY (Redis 3.2+; a proxy or a look-alike server may
        # not), in the same round trip: a release is then sent without an answer to read. On a
        # Redis Cluster, the node given may not serve the pool's slot: its MOVED names the one
        # that does, and the store talks to that node (every key is in the one slot).
        for _ in range(3):
            try:
                with self._client.pipeline(transaction=False) as pipe:
                    pipe.exists(self._k["meta"])
                    for script in self._scripts.values():
                        pipe.script_load(script.text)
                    pipe.client_reply("ON")
                    self.round_trips += 1
                    here, *loaded, reply_on = pipe.execute(raise_on_error=False)
            except RedisError as exc:
                raise StoreUnavailable(f"proxy store at {self._where}: {exc}") from exc
            if not isinstance(here, MovedError):
                break
            self._turn_to(here.host, here.port)
        for answer in [here, *loaded]:
            if isinstance(answer, Exception):
                raise StoreUnavailable(f"proxy store at {self._where}: {answer}")
        self._unanswered = b"" if isinstance(reply_on, Exception) else _REPLY_SKIP

    def __repr__(self) -> str:
        return f"RedisStore(pool {self.name!r})"

    # ---------------------------------------------------------------- plumbing

    def _now(self, now: float) -> str:
        return "" if self.server_time else repr(now)

    def _run(self, script: str, keys: Sequence[str], args: Sequence[str | float]) -> Any:
        entry = self._scripts[script]
        try:
            try:
                return self._call("EVALSHA", entry.sha, len(keys), *keys, *args)
            except NoScriptError:  # a restarted or flushed server, a new node: load it, once
                self._call("SCRIPT", "LOAD", entry.text)
                return self._call("EVALSHA", entry.sha, len(keys), *keys, *args)
        except (RedisError, OSError) as exc:
            raise self._unavailable(script, exc) from exc

    def _unavailable(self, what: str, exc: Exception) -> StoreUnavailable:
        """Redis's failure as the boundary's one error. A MOVED answer says a Redis Cluster
        serves the pool's slot from another node now (resharded, or failed over): the store
        turns to that node, and the pool retries the call as after an outage. When a node it
        was turned to stops answering (it failed, and a replica took its slots), the store
        asks the node it was given again, whose MOVED names the slot's new node."""
        if isinstance(exc, MovedError):
            self._turn_to(exc.host, exc.port)
            return StoreUnavailable(f"proxy store {what}: {exc} (now asking that node)")
        if self._away and self._seed and isinstance(exc, (ConnectionError, TimeoutError)):
            host, port = self._seed
            self._turn_to(host, port)
            return StoreUnavailable(f"proxy store {what}: {exc} (asking {host}:{port} again)")
        return StoreUnavailable(f"proxy store {what}: {exc}")

    def _turn_to(self, host: str, port: int) -> None:
        """Talk to `host`:`port` from now on, with the same client options."""
        pool = self._client.connection_pool
        options = {**pool.connection_kwargs, "host": host, "port": port}
        self.close()
        self._conn, self._owed = None, 0
        self._client = redis.Redis(
            connection_pool=redis.ConnectionPool(connection_class=pool.connection_class, **options)
        )
        self._where = f"{host}:{port}"
        self._away = (host, port) != self._seed

    def _call(self, *command: str | float) -> Any:
        """One command on this store's own connection, and its answer. The scripts are the hot
        path: this skips redis-py's per-command machinery (pool checkout, hooks, its packer),
        which cost about as much CPU as the round trip itself; replies are parsed by hiredis.
        Answers still owed to `_send` are read first: they share this call's round trip."""
        self.round_trips += 1
        with self._lock:
            conn = self._send_locked(command)
            try:
                self._read_owed(conn)
                answer = conn.read_response()
            except (ConnectionError, TimeoutError, OSError):
                conn.disconnect()  # type: ignore[no-untyped-call]  # the next call reconnects
                raise
            self._sent_unseen = False
            return answer

    def _send(self, *command: str | float) -> None:
        """Send a command whose answer nothing waits for (a release): the server runs it now,
        so it costs no round trip of its own. Behind CLIENT REPLY SKIP, in the same write, the
        server sends no answer at all: with many processes on one Redis that saves the server a
        write and each client a read per pair (4 processes on 2 CPUs: about +6% pairs/s). Without
        it, the answer is read with the next call's."""
        with self._lock:
            self._send_locked(command, self._unanswered)
            self._sent_unseen = True
            if not self._unanswered:
                self._owed += 1

    def _others(self) -> redis.Redis:
        """The client for the calls off the hot path (MULTI transactions, pipelines), on
        another connection. A release sent on the store's own connection may not have run
        yet when a command on another one arrives: a PING on the own one first (one round
        trip, only after a release) makes sure it has, so a snapshot never counts it."""
        if self._sent_unseen:
            self._call("PING")
        return self._client

    def _send_locked(
        self, command: tuple[str | float, ...], before: bytes = b""
    ) -> ConnectionInterface:
        self.commands += 2 if before else 1
        conn = self._conn
        if conn is None:
            conn = self._client.connection_pool.make_connection()
            self._conn = conn
        try:
            # hiredis packs in C, 4x faster than redis-py's packer around it (measured)
            packed = hiredis.pack_command(command)  # type: ignore[arg-type]  # stub: 1-tuple
            conn.send_packed_command([before + packed], check_health=False)  # type: ignore[no-untyped-call]
        except (ConnectionError, TimeoutError, OSError):
            self._owed = 0  # lost with the connection
            conn.disconnect()  # type: ignore[no-untyped-call]
            raise
        return conn

    def _read_owed(self, conn: ConnectionInterface) -> None:
        while self._owed:
            self._owed -= 1
            try:
                conn.read_response()
            except (ConnectionError, TimeoutError, OSError):
                self._owed = 0
                raise
            except RedisError as exc:  # not expected (a script error): the lease expires
                logger.warning("proxy store refused a release (%s); its lease expires", exc)

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
        try:
            with self._others().pipeline(transaction=True) as pipe:
                pipe.hset(k["proxies"], proxy.id, spec_of(proxy))
                pipe.hset(k["caps"], proxy.id, cap_of(proxy, self.config))
                pipe.hsetnx(k["states"], proxy.id, f"{State.HEALTHY.value}\t0")
                pipe.hsetnx(k["active"], proxy.id, 0)
                pipe.hincrby(k["meta"], "reg", 1)
                pipe.hincrby(k["meta"], "gen", 1)
                self.round_trips += 1
                new, _, _, _, reg, gen = pipe.execute()
        except RedisError as exc:
            raise self._unavailable("add", exc) from exc
        if int(reg) == int(self._reg) + 1:
            self._reg = str(reg)
        return bool(new), int(gen)

    def remove_proxy(self, proxy_id: str) -> tuple[bool, int]:
        k = self._k
        try:
            with self._others().pipeline(transaction=True) as pipe:
                pipe.hdel(k["proxies"], proxy_id)
                for part in ("states", "caps", "active"):
                    pipe.hdel(k[part], proxy_id)
                pipe.srem(k["out"], proxy_id)
                pipe.hincrby(k["meta"], "reg", 1)
                pipe.hincrby(k["meta"], "gen", 1)
                self.round_trips += 1
                removed, *_, reg, gen = pipe.execute()
        except RedisError as exc:
            raise self._unavailable("remove", exc) from exc
        if int(reg) == int(self._reg) + 1:
            self._reg = str(reg)
        return bool(removed), int(gen)

    def load(self, now: float) -> Shared:
        k = self._k
        try:
            with self._others().pipeline(transaction=True) as pipe:
                pipe.hmget(k["meta"], "gen", "reg")
                pipe.hgetall(k["states"])
                pipe.hgetall(k["benches"])
                pipe.hgetall(k["proxies"])
                self.round_trips += 1
                (gen, reg), states, benches, proxies = pipe.execute()
        except RedisError as exc:
            raise self._unavailable("load", exc) from exc
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
        if not reply[1] and order:
            order, forced = choose(True)
            if forced is not None:
                reply = self._acquire(site, key, order, forced, now, gen)
        lease, proxy_id, lost, fallback, view, capped = reply
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
        return self._run(
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
                *order,
            ],
        )

    def release(self, lease_id: int, proxy_id: str, now: float, gen: int) -> Released:
        # Sent, not waited for (see `_send`): whether the lease was still there the pool's books
        # know, and the next call's answer carries the shared state. That is what makes a pair
        # one round trip. EVAL with the script's text (7 lines), not EVALSHA: nobody reads an
        # answer that could say NOSCRIPT after a restart, so it must run all the same.
        member = f"{lease_id}:{self._token}:{proxy_id}"
        keys = self._keys["release"]
        try:
            self._send("EVAL", self._scripts["release"].text, len(keys), *keys, member, proxy_id)
        except (RedisError, OSError) as exc:
            raise self._unavailable("release", exc) from exc
        return None

    def reclaim(self, now: float) -> Sequence[tuple[int, str]]:
        expired = self._run("reclaim", self._keys["reclaim"], [self._now(now), _RECLAIM_BATCH])
        mine = []
        for member in expired:
            lease, token, proxy_id = member.split(":", 2)
            if token == self._token:
                mine.append((int(lease), proxy_id))
        return mine

    def end_session(self, key: str) -> bool:
        try:
            with self._others().pipeline(transaction=True) as pipe:
                pipe.hdel(self._k["sessions"], key)
                pipe.zrem(self._k["session_exp"], key)
                self.round_trips += 1
                ended, _ = pipe.execute()
        except RedisError as exc:
            raise self._unavailable("end_session", exc) from exc
        return bool(ended)

    def usage(self, now: float) -> tuple[int, int]:
        at = repr(now) if not self.server_time else None
        try:
            with self._others().pipeline(transaction=False) as pipe:
                if at is None:
                    pipe.time()
                pipe.zrange(self._k["leases"], 0, -1, withscores=True)
                pipe.zrange(self._k["session_exp"], 0, -1, withscores=True)
                self.round_trips += 1
                replies = pipe.execute()
        except RedisError as exc:
            raise self._unavailable("usage", exc) from exc
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
        try:
            self.round_trips += 1
            self._others().delete(f"{self._tag}probe:{proxy_id}")
        except RedisError as exc:
            raise self._unavailable("end_probe", exc) from exc

    def close(self) -> None:
        if self._conn is not None:
            self._conn.disconnect()  # type: ignore[no-untyped-call]
        self._client.close()


def _sha1(text: str) -> str:
    import hashlib

    return hashlib.sha1(text.encode(), usedforsecurity=False).hexdigest()


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
