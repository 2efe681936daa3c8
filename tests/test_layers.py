"""The layering of the tree: the core packages (Scrapy-free rules by stage of the flow) import no
Scrapy, no Twisted and nothing of the adapters; each says so in its docstring. Read from every
import in the source (functions and ``TYPE_CHECKING`` blocks too), and proved in a fresh process.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import urlcheck

PACKAGE = Path(urlcheck.__file__).resolve().parent
# The core: what runs without Scrapy. cluster/crawl/ is the cluster's Scrapy adapter.
CORE = [
    "input",
    "check",
    "politeness",
    "jobs",
    "reports",
    "proxypool",
    "cluster",
    "redis",
    "config.reader",
    "config.access",
    "config.file",
]
NOT_CORE = ["cluster.crawl"]
# redis-py is loaded when a Redis client is made (urlcheck.redis.client), never by an import:
# not even by the Redis layer, the proxy pool's Redis store or the cluster's core.
WITHOUT_REDIS = CORE
FORBIDDEN_THIRD_PARTY = ("scrapy", "twisted", "scrapy_redis")
# What the core may not import of urlcheck: the Scrapy side of the house.
ADAPTERS = (
    "urlcheck.crawl",
    "urlcheck.spiders",
    "urlcheck.middlewares",
    "urlcheck.extensions",
    "urlcheck.commands",
    "urlcheck.pipelines",
    "urlcheck.settings",
    "urlcheck.cli",
    "urlcheck.config.crawlconfig",
    "urlcheck.cluster.crawl",
)


def _modules(name: str) -> list[tuple[str, Path]]:
    path = PACKAGE.joinpath(*name.split("."))
    if path.with_suffix(".py").is_file():
        return [(f"urlcheck.{name}", path.with_suffix(".py"))]
    found = []
    for file in sorted(path.rglob("*.py")):
        dotted = "urlcheck." + ".".join(file.relative_to(PACKAGE).with_suffix("").parts)
        dotted = dotted.removesuffix(".__init__")
        if not any(dotted.startswith(f"urlcheck.{skip}") for skip in NOT_CORE):
            found.append((dotted, file))
    return found


def _imports(module: str, file: Path) -> set[str]:
    names: set[str] = set()
    package = module if file.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parent = ".".join(parts[: len(parts) - node.level + 1])
                base = f"{parent}.{base}" if base else parent
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def _breaks(name: str) -> bool:
    top = name.split(".", maxsplit=1)[0]
    if top in FORBIDDEN_THIRD_PARTY:
        return True
    return any(name == adapter or name.startswith(adapter + ".") for adapter in ADAPTERS)


@pytest.mark.parametrize("package", CORE)
def test_a_core_package_imports_nothing_of_scrapy_twisted_or_the_adapters(package):
    broken = {
        module: sorted(name for name in _imports(module, file) if _breaks(name))
        for module, file in _modules(package)
    }
    assert {module: names for module, names in broken.items() if names} == {}


@pytest.mark.parametrize("package", [p for p in CORE if "." not in p])
def test_a_core_package_says_what_it_may_not_import(package):
    doc = ast.get_docstring(ast.parse((PACKAGE / package / "__init__.py").read_text()))
    assert doc is not None
    assert "MUST NOT import" in doc


def _loaded_after_importing(packages: list[str]) -> set[str]:
    modules = [module for package in packages for module, _ in _modules(package)]
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "print(' '.join(sorted({m.split('.')[0] for m in sys.modules})))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=PACKAGE.parent
    )
    return set(done.stdout.split())


def test_the_core_loads_without_scrapy_or_twisted_in_a_fresh_process():
    assert _loaded_after_importing(CORE) & {"scrapy", "twisted"} == set()


def test_the_core_loads_without_redis_py():
    assert _loaded_after_importing(WITHOUT_REDIS) & {"redis", "hiredis"} == set()
