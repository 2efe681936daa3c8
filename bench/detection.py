"""Block-page detection on hostile bodies: the bodies of tests/check/test_detection.py, built to
make a careless pattern backtrack, each classified as a 200 and as a 403. Prints the wall time of
the whole set against its bound (0.5 s: a crawl classifies every answer on its event loop).

Usage: python bench/detection.py [--runs N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.check.test_detection import HOSTILE_BODIES, URL  # noqa: E402
from urlcheck.check.detection import detect  # noqa: E402

BOUND = 0.5


def once() -> float:
    started = time.perf_counter()
    for body in HOSTILE_BODIES:
        for status in (200, 403):
            detect(status, {}, body, URL)
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    median = statistics.median(once() for _ in range(args.runs))
    print(f"hostile bodies: {median * 1000:.1f} ms / {BOUND * 1000:.0f} ms = {median / BOUND:.3f}")
    return 0 if median <= BOUND else 1


if __name__ == "__main__":
    sys.exit(main())
