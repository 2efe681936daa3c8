"""Lua scripts as package data, read once per process and run by SHA1 (`Link.run`).

The convention of both script folders (urlcheck/proxypool/store/lua/, urlcheck/cluster/lua/): one
file per script, named after it, and ``_prelude.lua``, the functions the folder's scripts share,
put before each script's own text unless the script is loaded bare (one sent whole with every
call, which must stay short). A script's first lines say its KEYS and ARGV. Every key a script is
given is in KEYS, under one hash tag, so that a script's keys are in one Redis Cluster slot; none
is found with KEYS or SCAN. Time comes from the caller or from the server's TIME, never from
the clocks of the processes.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cache
from importlib import resources
from types import MappingProxyType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping

PRELUDE = "_prelude.lua"


@dataclass(frozen=True, slots=True)
class Script:
    name: str
    text: str  # the prelude's text and the script's own
    sha: str  # what EVALSHA runs it by


@cache
def load_scripts(package: str, bare: frozenset[str] = frozenset()) -> Mapping[str, Script]:
    """Every script of `package`'s ``lua/`` folder by name, each after the folder's prelude
    unless its name is in `bare` (sent whole with every call: stripped of its comments and
    indentation, which the server would otherwise read and hash each time)."""
    folder = resources.files(package).joinpath("lua")
    prelude = folder.joinpath(PRELUDE)
    shared = prelude.read_text("utf-8") if prelude.is_file() else ""
    scripts = {}
    for file in sorted(folder.iterdir(), key=lambda f: f.name):
        if not file.name.endswith(".lua") or file.name.startswith("_"):
            continue
        name = file.name.removesuffix(".lua")
        own = file.read_text("utf-8")
        text = _stripped(own) if name in bare else shared + own
        sha = hashlib.sha1(text.encode("utf-8"), usedforsecurity=False).hexdigest()
        scripts[name] = Script(name, text, sha)
    return MappingProxyType(scripts)


def _stripped(text: str) -> str:
    """A script's text without its comment lines, indentation and blank lines (a line that
    only starts with ``--`` is a comment; nothing else is touched)."""
    lines = (line.strip() for line in text.splitlines())
    return "\n".join(line for line in lines if line and not line.startswith("--")) + "\n"
