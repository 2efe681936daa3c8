"""A process's line to one Redis server, shared by the proxy store and the frontier.

Scripts and single commands (``call``) go over the link's own connection: this skips redis-py's
per-command machinery (pool checkout, hooks, its packer), which costs about as much CPU as the
round trip itself; commands are packed by hiredis and answers parsed by it. A command whose
answer nobody waits for (``send``, the proxy store's release) costs no round trip of its own:
behind ``CLIENT REPLY SKIP`` the server sends no answer at all, else the answer is read with the
next call's. Everything else (MULTI transactions, pipelines, SCAN) goes through redis-py on
other connections of the same client (``pipeline``, ``others``).

On a Redis Cluster the node given may not serve the caller's keys (one hash tag: one slot): its
MOVED answer names the node that does, and the link turns to it; when a node it turned to stops
answering (it failed, and a replica took its slots), it asks the node it was given again, whose
MOVED names the slot's new node. Either way the call fails, and the caller retries it as after
an outage.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import redis
    from redis.client import Pipeline
    from redis.connection import ConnectionInterface

    from urlcheck.redis.scripts import Script

logger = logging.getLogger(__name__)

Arg = str | bytes | int | float


class Link:
    """Over `client` (see urlcheck.redis.client). `owns_client`: `close` closes it, and so does
    turning to another node (which makes a client of the link's own)."""

    def __init__(self, client: redis.Redis, *, owns_client: bool = False) -> None:
        import hiredis
        from redis import exceptions

        self.client = client
        self._owns_client = owns_client
        given = client.connection_pool.connection_kwargs
        # the node given (None: a Unix socket), and whether the link turned from it
        self.seed = (str(given["host"]), int(given["port"])) if "host" in given else None
        self.where = f"{given['host']}:{given['port']}" if self.seed else str(given.get("path"))
        self.away = False
        self.round_trips = 0  # calls that waited for an answer
        self.commands = 0  # commands sent, answered at once or with a later call
        # hiredis packs in C, 4x faster than redis-py's packer around it (measured)
        self._pack: Callable[[tuple[Arg, ...]], bytes] = hiredis.pack_command  # type: ignore[assignment]
        # what a lost connection raises
        self.lost = (exceptions.ConnectionError, exceptions.TimeoutError, OSError)
        self._no_script = exceptions.NoScriptError
        self._refused = exceptions.RedisError
        self._lock = threading.Lock()
        self._conn: ConnectionInterface | None = None
        self._owed = 0  # answers to `send` not read yet
        self._unanswered = b""  # CLIENT REPLY SKIP, when the server knows it (see `open`)
        self._sent_unseen = False  # a `send` since the last answer on the own connection

    def open(self, scripts: Iterable[Script], probe: str) -> None:
        """Load `scripts` up front, so that no call pays for a NOSCRIPT (one after a restart
        or a flush does), and ask whether the server knows CLIENT REPLY (Redis 3.2+; a proxy or
        a look-alike server may not): `send` then reads no answer. One round trip, on the node
        that serves `probe`'s slot (on a Redis Cluster the node given may not)."""
        from redis.exceptions import MovedError

        texts = [script.text for script in scripts]
        for _ in range(3):
            with self.client.pipeline(transaction=False) as pipe:
                pipe.exists(probe)
                for text in texts:
                    pipe.script_load(text)
                pipe.client_reply("ON")
                self.round_trips += 1
                here, *loaded, reply_on = pipe.execute(raise_on_error=False)
            if not isinstance(here, MovedError):
                break
            self.turn_to(here.host, here.port)
        for answer in [here, *loaded]:
            if isinstance(answer, Exception):
                raise answer
        self._unanswered = b"" if isinstance(reply_on, Exception) else self._pack(_REPLY_SKIP)

    # ---------------------------------------------------------------- the own connection

    def call(self, *command: Arg) -> Any:
        """One command and its answer. Answers still owed to `send` are read first: they
        share this call's round trip."""
        self.round_trips += 1
        with self._lock:
            conn = self._send_locked(command)
            try:
                self._read_owed(conn)
                answer = conn.read_response()
            except self.lost:
                conn.disconnect()  # type: ignore[no-untyped-call]  # the next call reconnects
                raise
            self._sent_unseen = False
            return answer

    def send(self, *command: Arg) -> None:
        """Send a command whose answer nothing waits for: the server runs it now, so it costs
        no round trip of its own. Behind CLIENT REPLY SKIP, in the same write, the server sends
        no answer at all: with many processes on one Redis that saves the server a write and
        each client a read per command (4 processes on 2 CPUs: about +6% pairs/s). Without it,
        the answer is read with the next call's."""
        with self._lock:
            self._send_locked(command, self._unanswered)
            self._sent_unseen = True
            if not self._unanswered:
                self._owed += 1

    def run(self, script: Script, keys: Sequence[str], args: Sequence[Arg]) -> Any:
        """Run a script by its SHA1; after a NOSCRIPT (a restarted or flushed server, a new
        node) load it and run it again, once."""
        try:
            return self.call("EVALSHA", script.sha, len(keys), *keys, *args)
        except self._no_script:
            self.call("SCRIPT", "LOAD", script.text)
            return self.call("EVALSHA", script.sha, len(keys), *keys, *args)

    def send_script(self, script: Script, keys: Sequence[str], args: Sequence[Arg]) -> None:
        """Run a script whose answer nobody reads (`send`): EVAL with its text, not EVALSHA,
        since an answer that says NOSCRIPT would never be read; keep such a script short."""
        self.send("EVAL", script.text, len(keys), *keys, *args)

    # ---------------------------------------------------------------- other connections

    def others(self) -> redis.Redis:
        """The client for the calls off the hot path, on other connections. A command sent on
        the own connection may not have run yet when one on another connection arrives: a PING
        on the own one first (one round trip, only after a `send`) makes sure it has."""
        if self._sent_unseen:
            self.call("PING")
        return self.client

    def pipeline(self, *, transaction: bool) -> Pipeline:
        """A redis-py pipeline (MULTI/EXEC with `transaction`): one round trip, counted now."""
        client = self.others()
        self.round_trips += 1
        return client.pipeline(transaction=transaction)

    # ---------------------------------------------------------------- failures

    def failed(self, exc: BaseException) -> str:
        """What a failed call tells the link: after MOVED it turns to the node named, after a
        lost node it had turned to, back to the node it was given. Returns a note for the
        caller's error message ("" when nothing changed)."""
        from redis.exceptions import ConnectionError, MovedError, TimeoutError

        if isinstance(exc, MovedError):
            self.turn_to(exc.host, exc.port)
            return " (now asking that node)"
        if self.away and self.seed and isinstance(exc, ConnectionError | TimeoutError):
            host, port = self.seed
            self.turn_to(host, port)
            return f" (asking {host}:{port} again)"
        return ""

    def turn_to(self, host: str, port: int) -> None:
        """Talk to `host`:`port` from now on, with the same client options."""
        from redis import ConnectionPool, Redis

        pool = self.client.connection_pool
        options = {**pool.connection_kwargs, "host": host, "port": port}
        self.close()
        self._conn, self._owed, self._sent_unseen = None, 0, False
        self.client = Redis(
            connection_pool=ConnectionPool(connection_class=pool.connection_class, **options)
        )
        self.client.auto_close_connection_pool = True
        self._owns_client = True
        self.where = f"{host}:{port}"
        self.away = (host, port) != self.seed

    def close(self) -> None:
        if self._conn is not None:
            self._conn.disconnect()  # type: ignore[no-untyped-call]
        if self._owns_client:
            self.client.close()

    # ---------------------------------------------------------------- plumbing

    def _send_locked(self, command: tuple[Arg, ...], before: bytes = b"") -> ConnectionInterface:
        self.commands += 2 if before else 1
        conn = self._conn
        if conn is None:
            conn = self.client.connection_pool.make_connection()
            self._conn = conn
        try:
            conn.send_packed_command([before + self._pack(command)], check_health=False)  # type: ignore[no-untyped-call]
        except self.lost:
            self._owed = 0  # lost with the connection
            conn.disconnect()  # type: ignore[no-untyped-call]
            raise
        return conn

    def _read_owed(self, conn: ConnectionInterface) -> None:
        while self._owed:
            self._owed -= 1
            try:
                conn.read_response()
            except self.lost:
                self._owed = 0
                raise
            except self._refused as exc:  # not expected (a script error): nobody waits for it
                logger.warning("Redis refused a command sent without waiting (%s)", exc)


_REPLY_SKIP = ("CLIENT", "REPLY", "SKIP")
