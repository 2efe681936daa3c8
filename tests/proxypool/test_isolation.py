import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]


def test_pool_loads_without_scrapy_or_twisted() -> None:
    code = (
        "import sys, urlcheck.proxypool, urlcheck.proxypool.store.memory,"
        " urlcheck.proxypool.store.redis, urlcheck.proxypool.outage;"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('scrapy', 'twisted')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout.strip() == "[]"
