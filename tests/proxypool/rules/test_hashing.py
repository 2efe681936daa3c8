import subprocess
import sys
from collections import Counter
from pathlib import Path

from urlcheck.proxypool.rules.hashing import rendezvous_pick, stable_hash

NODES = [(f"n{i}", stable_hash(f"n{i}"), 1.0) for i in range(20)]


def test_stable_across_processes() -> None:
    code = "from urlcheck.proxypool.rules.hashing import stable_hash; print(stable_hash('key-1'))"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).parents[2],
    )
    assert int(out.stdout) == stable_hash("key-1")


def test_spread_is_even() -> None:
    counts = Counter(rendezvous_pick(f"key{i}", NODES) for i in range(20_000))
    assert len(counts) == 20
    assert min(counts.values()) > 800  # 1000 each on average
    assert max(counts.values()) < 1200


def test_removing_a_node_moves_only_its_keys() -> None:
    keys = [f"key{i}" for i in range(5000)]
    before = {k: rendezvous_pick(k, NODES) for k in keys}
    without = [n for n in NODES if n[0] != "n3"]
    after = {k: rendezvous_pick(k, without) for k in keys}
    moved = {k for k in keys if before[k] != after[k]}
    assert moved == {k for k in keys if before[k] == "n3"}


def test_adding_a_node_takes_about_one_in_n() -> None:
    keys = [f"key{i}" for i in range(5000)]
    before = {k: rendezvous_pick(k, NODES) for k in keys}
    grown = [*NODES, ("new", stable_hash("new"), 1.0)]
    after = {k: rendezvous_pick(k, grown) for k in keys}
    moved = [k for k in keys if before[k] != after[k]]
    assert all(after[k] == "new" for k in moved)
    assert 5000 / 21 * 0.7 < len(moved) < 5000 / 21 * 1.3


def test_weights_shift_share() -> None:
    weighted = [(n, h, 3.0 if n == "n0" else 1.0) for n, h, _ in NODES]
    counts = Counter(rendezvous_pick(f"key{i}", weighted) for i in range(20_000))
    assert 2.4 < counts["n0"] / (20_000 / 22) < 3.6
