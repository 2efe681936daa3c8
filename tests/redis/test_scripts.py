"""Both Lua trees follow one convention (urlcheck/redis/scripts.py): package data, the folder's
``_prelude.lua`` before each script but the bare ones, every key given in KEYS, and no key found
by KEYS or SCAN; each frontier script is given exactly the job keys it touches."""

from __future__ import annotations

import hashlib
import re
from importlib import resources

import pytest

from urlcheck.cluster.keys import FIXED
from urlcheck.cluster.scripts import SCRIPT_KEYS
from urlcheck.redis.scripts import PRELUDE, load_scripts

TREES = {"urlcheck.proxypool.store": frozenset({"release"}), "urlcheck.cluster": frozenset()}


@pytest.mark.parametrize(("package", "bare"), TREES.items())
def test_each_script_is_its_file_after_the_prelude_run_by_its_sha1(
    package: str, bare: frozenset[str]
) -> None:
    folder = resources.files(package).joinpath("lua")
    scripts = load_scripts(package, bare)
    assert load_scripts(package, bare) is scripts  # read once per process
    files = sorted(p.name for p in folder.iterdir() if p.name.endswith(".lua"))
    assert files == sorted([PRELUDE, *(f"{name}.lua" for name in scripts)])
    prelude = folder.joinpath(PRELUDE).read_text()
    for name, script in scripts.items():
        own = folder.joinpath(f"{name}.lua").read_text()
        if name in bare:  # sent whole with each call: the file's code lines, trimmed, in order
            code = [line.strip() for line in own.splitlines()]
            code = [line for line in code if line and not line.startswith("--")]
            assert script.text == "\n".join(code) + "\n", name
            assert len(script.text) < len(own), name
        else:
            assert script.text == prelude + own, name
        assert script.sha == hashlib.sha1(script.text.encode()).hexdigest()
        assert "'KEYS'" not in script.text and "SCAN" not in script.text, name


def _prelude_functions(prelude: str) -> dict[str, str]:
    """Each function's text, up to the next function."""
    parts = re.split(r"^local function (\w+)\(", prelude, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def _keys_used(text: str, functions: dict[str, str], seen: set[str]) -> set[str]:
    used = set(re.findall(r"\bK\.(\w+)", text))
    for name, body in functions.items():
        if name not in seen and re.search(rf"\b{name}\(", text):
            seen.add(name)
            used |= _keys_used(body, functions, seen)
    return used


def test_each_frontier_script_is_given_the_job_keys_it_touches_and_no_other() -> None:
    folder = resources.files("urlcheck.cluster").joinpath("lua")
    functions = _prelude_functions(folder.joinpath(PRELUDE).read_text())
    assert {"now_ms", "make_ready", "set_next", "pace_step", "claim"} <= set(functions)
    scripts = load_scripts("urlcheck.cluster")
    assert set(SCRIPT_KEYS) == set(scripts)
    for name, given in SCRIPT_KEYS.items():
        own = folder.joinpath(f"{name}.lua").read_text()
        used = _keys_used(own, functions, set())
        assert used <= set(FIXED), name
        assert used <= set(given), f"{name} touches {sorted(used - set(given))} not given"
        if name != "finish":  # finish lets every key it is given expire
            assert set(given) <= used, f"{name} is given {sorted(set(given) - used)} unused"
