"""The server's settings (``URLCHECK_SERVE_HOST`` and the others of docs/settings.md, with
``URLCHECK_BLOCK_PRIVATE_INPUT``), parsed once into
a frozen :class:`ServeConfig` that names a bad setting in its error. Reference: docs/settings.md
and docs/serve.md."""

from __future__ import annotations

import ipaddress
import secrets
import socket
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from urlcheck.config.reader import ConfigError, SettingsReader

if TYPE_CHECKING:
    from urlcheck.config.reader import Settings

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8080
DEFAULT_JOBS = Path(".urlcheck") / "jobs"  # where `urlcheck check` puts its jobs by default
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
# Settings of `urlcheck serve -s` that are the server's own and never reach a crawl.
SERVER_ONLY = ("REDIS_URL", "REDIS_PARAMS")
_MIB = 1024 * 1024


def is_loopback(host: str) -> bool:
    """True for an address or name that only this machine can reach."""
    host = host.strip("[]").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def read_token_file(path: Path) -> str:
    """The token in ``path`` (first line), refused when others may read the file."""
    try:
        info = path.stat()
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"setting URLCHECK_SERVE_TOKEN_FILE: cannot read it: {exc}") from None
    if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ConfigError(
            "setting URLCHECK_SERVE_TOKEN_FILE: the file may be read by others "
            f"(mode {stat.S_IMODE(info.st_mode):o}); chmod 600 it"
        )
    lines = text.splitlines()
    token = lines[0].strip() if lines else ""
    if len(token) < 16:
        raise ConfigError(
            "setting URLCHECK_SERVE_TOKEN_FILE: the token must be at least 16 characters"
        )
    return token


@dataclass(frozen=True, slots=True)
class ServeConfig:
    jobs_root: Path
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    # None: no token asked (loopback only). Beyond loopback a token is always set.
    token: str | None = None
    token_generated: bool = False  # made up at start (and printed), not read from a file
    allowed_hosts: tuple[str, ...] = LOOPBACK_NAMES
    max_upload_bytes: int = 64 * _MIB
    max_rows: int = 1_000_000
    max_running: int = 4
    block_private_input: bool = False
    recover_after: float = 15.0  # seconds a job is seen stuck or dead before it is recovered
    restart_delay: float = 10.0  # `urlcheck job run --restart-delay` for the crawls
    tick: float = 1.0  # how often the job manager looks at every job
    crawl_settings: tuple[str, ...] = ()  # `-s NAME=VALUE` of `urlcheck serve`, for every crawl
    config_file: Path | None = None  # the server's settings file (--config), for every crawl
    redis_url: str | None = None  # to show a distributed job's workers and steer them
    redis_params: Mapping[str, Any] = field(default_factory=dict)

    @property
    def loopback(self) -> bool:
        return is_loopback(self.host)

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        *,
        host: str | None = None,
        port: int | None = None,
        jobs: str | Path | None = None,
        crawl_settings: tuple[str, ...] = (),
        config_file: Path | None = None,
    ) -> ServeConfig:
        """The server's config; ``host``, ``port`` and ``jobs`` (command-line options) win over
        the settings of the same meaning."""
        read = SettingsReader(settings)
        host = (host or read.text("URLCHECK_SERVE_HOST", DEFAULT_HOST)).strip()
        port = port if port is not None else read.integer("URLCHECK_SERVE_PORT", DEFAULT_PORT)
        if not 0 <= port <= 65535:
            raise ConfigError(f"setting URLCHECK_SERVE_PORT: expected 0-65535, got {port}")
        root = Path(jobs or read.text("URLCHECK_SERVE_JOBS", str(DEFAULT_JOBS))).resolve()
        loopback = is_loopback(host)
        token_file = read.text("URLCHECK_SERVE_TOKEN_FILE", "")
        token = read_token_file(Path(token_file)) if token_file else None
        generated = token is None and not loopback
        if generated:
            token = secrets.token_urlsafe(32)
        allowed = [name.lower() for name in read.str_list("URLCHECK_SERVE_ALLOWED_HOSTS")]
        if host in ("0.0.0.0", "::"):  # noqa: S104 (a name for "any")
            # The address printed at start names the machine (server.address): it must open.
            allowed.append(socket.gethostname().lower())
        elif not loopback:
            allowed.append(host.lower())
        for name in allowed:
            if "/" in name or " " in name:
                raise ConfigError(
                    f"setting URLCHECK_SERVE_ALLOWED_HOSTS: {name!r} is not a host name"
                )
        redis_url = settings.get("REDIS_URL") or None
        params: dict[str, Any] = {}
        if redis_url:
            from urlcheck.cluster.config import redis_params

            params = redis_params(settings)
        return cls(
            jobs_root=root,
            host=host,
            port=port,
            token=token,
            token_generated=generated,
            allowed_hosts=tuple(dict.fromkeys([*LOOPBACK_NAMES, *allowed])),
            max_upload_bytes=read.integer("URLCHECK_SERVE_MAX_UPLOAD_BYTES", 64 * _MIB, minimum=1),
            max_rows=read.integer("URLCHECK_SERVE_MAX_ROWS", 1_000_000, minimum=1),
            max_running=read.integer("URLCHECK_SERVE_MAX_RUNNING", 4, minimum=0),
            # Beyond loopback the server is a door into its own network unless this is on.
            block_private_input=read.boolean("URLCHECK_BLOCK_PRIVATE_INPUT", not loopback),
            recover_after=read.number("URLCHECK_SERVE_RECOVER_AFTER", 15.0, minimum=0.0),
            restart_delay=read.number("URLCHECK_SERVE_RESTART_DELAY", 10.0, minimum=0.0),
            crawl_settings=tuple(
                item for item in crawl_settings if item.partition("=")[0] not in SERVER_ONLY
            ),
            redis_url=redis_url,
            redis_params=params,
            config_file=config_file,
        )
