"""A private redis-server for tests: its own free port, no persistence, restartable on that port.

Tests that flush or restart Redis use this, never the shared server on 6379.
"""

from __future__ import annotations

import random
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import redis

__all__ = ["RedisClusterServers", "RedisServer"]


def _free_port() -> int:
    """A free port below the kernel's ephemeral range (32768-60999 here), which the kernel never
    hands to another socket on its own: a server stopped for a restart finds its port still
    free, where an ephemeral one may meanwhile be another test's listener or local port."""
    while True:
        port = random.randint(20000, 32000)
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port


class RedisServer:
    """``with RedisServer() as server: server.url``; `stop()` and `start()` keep the port.

    `password`: the server requires it (``--requirepass``); `url` does not carry it.
    `unix_socket`: it listens on that socket too (`unix_url`). `options`: more of its command
    line (``("--rename-command", "CLIENT", "")``: a server that lacks a command)."""

    def __init__(
        self,
        password: str | None = None,
        unix_socket: str | None = None,
        options: Sequence[str] = (),
    ) -> None:
        if shutil.which("redis-server") is None:
            pytest.skip("redis-server is not installed")
        self.port = _free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.unix_url = f"unix://{unix_socket}" if unix_socket else None
        self.unix_socket = unix_socket
        self.password = password
        self.options = tuple(options)
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Start it on its port. A restart may find the port taken for a moment (a client
        socket of another test can hold it as its local port): it tries again for 10 s."""
        deadline = time.monotonic() + 10
        while not self._start_once():
            if time.monotonic() > deadline:
                raise RuntimeError(f"redis-server did not start on port {self.port}")
            time.sleep(0.1)

    def _start_once(self) -> bool:
        self._proc = subprocess.Popen(
            [
                "redis-server",
                "--port", str(self.port),
                "--bind", "127.0.0.1",
                "--save", "",
                "--appendonly", "no",
                *(["--requirepass", self.password] if self.password else []),
                *(["--unixsocket", self.unix_socket] if self.unix_socket else []),
                *self.options,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        client = self.client()
        try:
            for _ in range(400):
                try:
                    pid = client.info("server")["process_id"]
                except redis.ConnectionError:
                    if self._proc.poll() is not None:  # exited: the port was taken
                        return False
                    time.sleep(0.025)
                    continue
                if pid == self._proc.pid:
                    return True
                break  # another server answers on the port
            self.stop()
            return False
        finally:
            client.close()

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.terminate()
            self._proc.wait(10)
            self._proc = None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def restart(self) -> None:
        """Stop it and start it again, empty, on the same port (a Redis without AOF)."""
        self.stop()
        self.start()

    def freeze(self) -> None:
        """SIGSTOP: connections stay open and nothing answers (a hung or overloaded Redis)."""
        assert self._proc is not None
        self._proc.send_signal(signal.SIGSTOP)

    def thaw(self) -> None:
        assert self._proc is not None
        self._proc.send_signal(signal.SIGCONT)

    def client(self, **options: Any) -> redis.Redis:
        """A plain client of this server (with its password)."""
        return redis.Redis(port=self.port, password=self.password, socket_timeout=1.0, **options)

    def flush(self) -> None:
        client = self.client()
        client.flushall()
        client.close()

    def __enter__(self) -> RedisServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class RedisClusterServers:
    """``with RedisClusterServers(tmp_dir) as cluster:`` three redis-servers on free loopback
    ports joined into one Redis Cluster (masters only, the 16384 slots split evenly), as
    ``redis-cli --cluster create`` makes it. `nodes` are RedisServers; `move_slot` reshards."""

    def __init__(self, folder: Path, size: int = 3, options: Sequence[str] = ()) -> None:
        if shutil.which("redis-cli") is None:
            pytest.skip("redis-cli is not installed")
        self.nodes = [
            RedisServer(options=(*_cluster_node(folder / f"nodes-{i}.conf"), *options))
            for i in range(size)
        ]

    def __enter__(self) -> RedisClusterServers:
        try:
            return self._create()
        except BaseException:
            self.__exit__()  # no server left behind when the cluster does not come up
            raise

    def _create(self) -> RedisClusterServers:
        for node in self.nodes:
            node.start()
        addresses = [f"127.0.0.1:{node.port}" for node in self.nodes]
        subprocess.run(
            ["redis-cli", "--cluster", "create", *addresses, "--cluster-yes"],
            check=True,
            capture_output=True,
            timeout=60,
        )
        clients = [node.client() for node in self.nodes]
        try:
            for _ in range(400):  # the nodes agree on the slots a moment later
                if all(
                    b"cluster_state:ok" in client.execute_command("CLUSTER", "INFO")
                    for client in clients
                ):
                    return self
                time.sleep(0.025)
        finally:
            for client in clients:
                client.close()
        raise RuntimeError("the Redis Cluster did not come up")

    def __exit__(self, *exc: object) -> None:
        for node in self.nodes:
            node.stop()

    def owner(self, key: str) -> RedisServer:
        """The node that serves `key`'s slot."""
        client = self.nodes[0].client()
        try:
            slot = client.execute_command("CLUSTER", "KEYSLOT", key)
            for first, last, (_, port, *_) in client.execute_command("CLUSTER", "SLOTS"):
                if first <= slot <= last:
                    return next(node for node in self.nodes if node.port == port)
        finally:
            client.close()
        raise LookupError(key)

    def move_slot(self, key: str, target: RedisServer) -> None:
        """Reshard `key`'s slot, keys and all, to `target`, as ``redis-cli --cluster reshard``
        does: IMPORTING and MIGRATING, MIGRATE in batches, then every node learns the owner."""
        source = self.owner(key)
        src, dst = source.client(), target.client()
        try:
            slot = src.execute_command("CLUSTER", "KEYSLOT", key)
            src_id = src.execute_command("CLUSTER", "MYID").decode()
            dst_id = dst.execute_command("CLUSTER", "MYID").decode()
            dst.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", src_id)
            src.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", dst_id)
            while keys := src.execute_command("CLUSTER", "GETKEYSINSLOT", slot, 100):
                src.execute_command("MIGRATE", "127.0.0.1", target.port, "", 0, 5000, "KEYS", *keys)
            for node in self.nodes:
                client = node.client()
                client.execute_command("CLUSTER", "SETSLOT", slot, "NODE", dst_id)
                client.close()
        finally:
            src.close()
            dst.close()


def _cluster_node(config_file: Path) -> tuple[str, ...]:
    # Its bus port too below the ephemeral range (the default, port + 10000, is inside it).
    return (
        "--cluster-enabled", "yes",
        "--cluster-config-file", str(config_file),
        "--cluster-port", str(_free_port()),
    )  # fmt: skip
