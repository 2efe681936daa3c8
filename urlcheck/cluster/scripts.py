"""The frontier's Lua scripts (package files under ``lua/``, on urlcheck.redis's loader) and the
keys each is given.

Each script is ``lua/_prelude.lua`` followed by its own file. Its KEYS are the job's fixed keys
it touches (`SCRIPT_KEYS`), then the queue and state keys of the hosts the caller names; the
prelude reads each key's name from the key itself, so a script is given only the keys it uses.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from urlcheck.cluster.keys import FIXED, JobKeys
from urlcheck.redis.scripts import load_scripts

if TYPE_CHECKING:
    from urlcheck.redis.link import Arg, Link

_CLAIM = (
    "clock",
    "meta",
    "ready",
    "inflight",
    "leases",
    "done",
    "paused",
    "seq",
    "reaps",
    "strikes",
    "down",
)
# The fixed keys each script touches, its own and those of the prelude's functions it calls.
SCRIPT_KEYS: dict[str, tuple[str, ...]] = {
    "push": ("clock", "meta", "done", "fed", "inflight", "ready"),
    "claim": _CLAIM,
    "complete": (*_CLAIM, "results", "backed", "fast"),
    "renew": ("clock", "meta", "inflight", "leases", "workers", "beats"),
    "open": ("clock", "meta", "results"),
    "finish": FIXED,  # all of them expire
    "control": ("meta",),
    "status": ("clock", "meta", "ready", "inflight", "paused", "workers", "beats"),
    "giveup": ("clock", "down", "strikes", "backed", "paused", "ready"),
    "hosts": ("down", "fast", "backed"),
}


class JobScripts:
    """The scripts of one job, run over `link`."""

    def __init__(self, link: Link, keys: JobKeys) -> None:
        self.link = link
        self.keys = keys
        self._scripts = load_scripts("urlcheck.cluster")
        self._fixed = {
            name: [keys.key(key) for key in names] for name, names in SCRIPT_KEYS.items()
        }

    def run(self, name: str, *args: Arg, hosts: Iterable[str] = ()) -> Any:
        """Run script `name` with `args` as ARGV; `hosts`: those whose keys it touches."""
        keys = self._fixed[name]
        own = [key for host in dict.fromkeys(hosts) if host for key in self.keys.of_host(host)]
        return self.link.run(self._scripts[name], [*keys, *own] if own else keys, args)


def text(value: bytes | str | int) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8")
    return str(value)


def pairs(flat: Sequence[Any]) -> list[tuple[Any, Any]]:
    return [(flat[i], flat[i + 1]) for i in range(0, len(flat) - 1, 2)]
