from __future__ import annotations

import json
from pathlib import Path

import pytest

from urlcheck.jobs.counts import Counts
from urlcheck.jobs.errors import JobFileError
from urlcheck.jobs.files import (
    CONTROL_FILE,
    META_FILE,
    BackoffHost,
    Control,
    ControlAction,
    JobMeta,
    JobState,
    atomic_write_json,
    read_json,
    write_control,
)


def test_atomic_write_replaces_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    target = tmp_path / "meta.json"
    atomic_write_json(target, {"a": 1})
    atomic_write_json(target, {"a": 2, "text": "é"})
    assert read_json(target) == {"a": 2, "text": "é"}
    assert [p.name for p in tmp_path.iterdir()] == ["meta.json"]


def test_a_failed_write_keeps_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "meta.json"
    atomic_write_json(target, {"a": 1})
    with pytest.raises(TypeError):
        atomic_write_json(target, {"a": object()})
    assert read_json(target) == {"a": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["meta.json"]


def test_read_json_missing_and_broken(tmp_path: Path) -> None:
    assert read_json(tmp_path / "nope.json") is None
    broken = tmp_path / "broken.json"
    broken.write_text('{"a": ', encoding="utf-8")
    with pytest.raises(JobFileError, match=r"broken\.json is not valid JSON"):
        read_json(broken)


def full_meta() -> JobMeta:
    counts = Counts()
    counts.add(301, 200, "pass")
    counts.add(None, None, "fail")
    return JobMeta(
        state=JobState.PROCESSING,
        total_rows=10,
        done_rows=2,
        counts=counts,
        created_at="2025-01-01T00:00:00.000Z",
        started_at="2025-01-01T00:00:01.000Z",
        updated_at="2025-01-01T00:00:02.000Z",
        last_activity_at="2025-01-01T00:00:02.000Z",
        input_path="/data/in.csv",
        input_sha256="ab" * 32,
        user_agent="urlcheck/0.1",
        settings={"URLCHECK_METHOD": "GET", "URLCHECK_MAX_HOPS": 10},
        results_path="/jobs/a/results.jsonl",
        rate=12.5,
        backoff_hosts=[BackoffHost("a.example", 2, 41.5)],
    )


def test_meta_round_trip(tmp_path: Path) -> None:
    meta = full_meta()
    meta.save(tmp_path)
    data = json.loads((tmp_path / META_FILE).read_text(encoding="utf-8"))
    assert data["state"] == "processing"
    assert data["counts"]["status"]["2xx"] == 1 and data["counts"]["verdict"]["fail"] == 1
    assert data["backoff_hosts"] == [{"host": "a.example", "attempt": 2, "seconds_left": 41.5}]
    assert data["version"] == 1
    assert JobMeta.load(tmp_path) == meta


def test_meta_missing_is_none_and_unknown_keys_are_ignored(tmp_path: Path) -> None:
    assert JobMeta.load(tmp_path) is None
    (tmp_path / META_FILE).write_text('{"state": "paused", "future_field": 1}', encoding="utf-8")
    meta = JobMeta.load(tmp_path)
    assert meta is not None
    assert meta.state is JobState.PAUSED
    assert meta.total_rows == 0 and meta.counts == Counts()


@pytest.mark.parametrize(
    "data",
    [
        '{"state": "running"}',
        '{"done_rows": -1}',
        '{"counts": {"status": {"2xx": "x"}}}',
        "[]",
        '{"rate": "fast"}',
    ],
)
def test_meta_with_wrong_values_is_a_job_file_error(tmp_path: Path, data: str) -> None:
    (tmp_path / META_FILE).write_text(data, encoding="utf-8")
    with pytest.raises(JobFileError, match=r"meta\.json is not a urlcheck job file"):
        JobMeta.load(tmp_path)


def test_states_that_end_a_job() -> None:
    assert {s for s in JobState if s.terminal} == {JobState.DONE, JobState.CANCELLED}


def test_control_sequence(tmp_path: Path) -> None:
    assert Control.load(tmp_path) is None
    first = write_control(tmp_path, ControlAction.PAUSE, clock=lambda: 0.0)
    second = write_control(tmp_path, ControlAction.RESUME, clock=lambda: 1.5)
    assert first == Control(ControlAction.PAUSE, "1970-01-01T00:00:00.000Z", 1)
    assert second == Control(ControlAction.RESUME, "1970-01-01T00:00:01.500Z", 2)
    assert Control.load(tmp_path) == second
    assert json.loads((tmp_path / CONTROL_FILE).read_text(encoding="utf-8")) == {
        "action": "resume",
        "at": "1970-01-01T00:00:01.500Z",
        "seq": 2,
    }


def test_broken_control_file(tmp_path: Path) -> None:
    (tmp_path / CONTROL_FILE).write_text(
        '{"action": "explode", "at": "x", "seq": 4}', encoding="utf-8"
    )
    with pytest.raises(JobFileError, match=r"control\.json is not a urlcheck control file"):
        Control.load(tmp_path)
    # the commands replace a broken file rather than failing
    assert write_control(tmp_path, ControlAction.CANCEL, clock=lambda: 0.0).seq == 1


_WRITER = """
import sys
from pathlib import Path
from urlcheck.jobs.files import ControlAction, write_control
jobdir, count = Path(sys.argv[1]), int(sys.argv[2])
sys.stdin.readline()  # start together
for i in range(count):
    write_control(jobdir, ControlAction.PAUSE if i % 2 else ControlAction.RESUME)
"""


def test_control_writes_from_two_processes_are_all_applied(tmp_path: Path) -> None:
    """Issue 22 point 10: two processes writing 200 requests each end at seq 400, not ~205."""
    import subprocess
    import sys

    writers = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(tmp_path), "200"], stdin=subprocess.PIPE
        )
        for _ in range(2)
    ]
    for writer in writers:
        assert writer.stdin is not None
        writer.stdin.write(b"go\n")
        writer.stdin.close()
    assert [writer.wait(120) for writer in writers] == [0, 0]
    control = Control.load(tmp_path)
    assert control is not None and control.seq == 400


def test_control_writes_from_threads_each_get_their_own_seq(tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(8) as pool:
        seqs = list(pool.map(lambda _: write_control(tmp_path, ControlAction.PAUSE).seq, range(80)))
    assert sorted(seqs) == list(range(1, 81))
