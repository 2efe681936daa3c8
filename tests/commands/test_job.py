"""``scrapy job``'s module stays thin: the cluster (and redis-py) and the reports load only when an
action needs them, so ``--help`` and a one-process job's status or pause never import them."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import urlcheck
from urlcheck.jobs.files import JobMeta, JobState


def _loaded(script: str, *args: str) -> set[str]:
    run = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script), *args],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        cwd=Path(urlcheck.__file__).parents[1],
    )
    return set(run.stdout.split())


def _heavy(modules: set[str]) -> set[str]:
    return {
        name
        for name in modules
        if name == "redis" or name.startswith(("redis.", "urlcheck.cluster", "urlcheck.reports"))
    }


def test_the_command_module_loads_no_cluster_no_redis_and_no_reports() -> None:
    loaded = _loaded(
        """
        import sys
        import urlcheck.commands.job
        print(" ".join(sys.modules))
        """
    )
    assert "urlcheck.commands.job" in loaded
    assert _heavy(loaded) == set()


def test_steering_a_one_process_job_loads_no_cluster_and_no_redis(tmp_path: Path) -> None:
    JobMeta(state=JobState.PAUSED, total_rows=3).save(tmp_path)
    loaded = _loaded(
        """
        import io, sys
        from pathlib import Path
        from urlcheck.commands.job import _fleet_for
        from urlcheck.jobs.steer import steer
        out = io.StringIO()
        for action in ("status", "cancel"):
            code = steer(action, Path(sys.argv[1]), out=out, fleet_for=_fleet_for(None, None))
            assert code == 0, out.getvalue()
        assert "cancelled (no crawl was running)" in out.getvalue(), out.getvalue()
        print(" ".join(sys.modules))
        """,
        str(tmp_path),
    )
    assert "urlcheck.jobs.steer" in loaded
    assert _heavy(loaded) == set()
    meta = JobMeta.load(tmp_path)
    assert meta is not None and meta.state is JobState.CANCELLED
