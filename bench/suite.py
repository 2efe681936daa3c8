"""Suite benchmark (issue 27, point 4): how long the README's test command takes.

Runs the test step of the README's test command (the block between its ``test-command``
markers, as .ci/run finds it; the part after its last ``&&``: the venv and the install are
left out) from the checkout, in its own venv, and prints its wall time against the bound of
5 minutes, with the tests' outcome. Beside it, before and after, a CPU probe: a fixed pure
Python loop, whose time says how fast this machine runs at the moment (on the 2-core machine
the bound was set on, 0.74-0.84 s quiet; 1.0-1.3 s when the machine itself was slowed), so a
figure taken on a busy machine can be told from the code's.

Usage: python bench/suite.py [--bound SECONDS]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BOUND = 300.0  # seconds: "at most 5 min for the README's test command on this machine, quiet"
PROBE_LOOPS = 20_000_000


def test_step() -> str:
    """The README's test command, from its markers, without the venv and install steps."""
    text = (REPO / "README.md").read_text("utf-8")
    block = re.search(r"<!-- test-command -->\s*```sh\n(.*?)\n```", text, re.DOTALL)
    if block is None:
        sys.exit("README.md has no test-command block")
    return block[1].strip().split("&&")[-1].strip()


# Run as a fresh interpreter's top-level code (global variables: slower than a function's).
_PROBE = f"""import time
t = time.perf_counter()
i = 0
while i < {PROBE_LOOPS}:
    i += 1
print(time.perf_counter() - t)
"""


def probe() -> float:
    """Seconds for a fixed pure Python loop: this machine's speed right now."""
    done = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True
    )
    return float(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bound", type=float, default=BOUND, help="seconds (default 300)")
    args = parser.parse_args()
    command = test_step()
    if not (REPO / ".venv" / "bin" / "python").exists():
        sys.exit(f"no .venv in {REPO}: install it as the README says first")
    before = probe()
    started = time.perf_counter()
    done = subprocess.run(
        ["bash", "-c", command], cwd=REPO, capture_output=True, text=True, check=False
    )
    seconds = time.perf_counter() - started
    after = probe()
    lines = done.stdout.strip().splitlines()
    outcome = re.sub(r"=+", "", lines[-1]).strip() if lines else done.stderr.strip()[-300:]
    print("urlcheck suite benchmark")
    print(f"command (cwd {REPO}): {command}")
    for line in lines:
        if line.startswith(("FAILED ", "ERROR ")):
            print(f"  {line}")
    print(
        f"the test step: {seconds:.1f} s / {args.bound:.0f} s bound = {seconds / args.bound:.3f} "
        f"(target <= 1); exit code {done.returncode}: {outcome}"
    )
    print(
        f"CPU probe ({PROBE_LOOPS:,} loops): {before:.2f} s before, {after:.2f} s after; "
        f"load average {os.getloadavg()[0]:.1f} ({os.cpu_count()} CPUs)"
    )
    print(
        json.dumps(
            {
                "suite_seconds": round(seconds, 1),
                "suite_of_bound": round(seconds / args.bound, 3),
                "exit_code": done.returncode,
                "probe_seconds": [round(before, 2), round(after, 2)],
                "load_average": round(os.getloadavg()[0], 1),
            }
        )
    )


if __name__ == "__main__":
    main()
