"""The results writer shared by the pipeline and the coordinator, on real files. A write that
fails part-way is a real one: the process's file size limit (``RLIMIT_FSIZE``) makes the kernel
write the part of a line that fits, then refuse the rest (``EFBIG``), as a filling disk does."""

from __future__ import annotations

import contextlib
import errno
import json
import resource
import signal
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from urlcheck.cluster import ClusterJob, Frontier, ResultCollector
from urlcheck.jobs.inuse import ResultsInUseError, refuse_in_use
from urlcheck.jobs.nofollow import LinkedFileError
from urlcheck.jobs.resultswriter import ResultsWriter

if TYPE_CHECKING:
    from pathlib import Path

    import redis


def line(row: int, pad: int = 100) -> bytes:
    return json.dumps({"row": row, "pad": "x" * pad}).encode() + b"\n"


@contextlib.contextmanager
def file_size_limit(size: int) -> Iterator[None]:
    """Files of this process can't grow past ``size`` bytes (SIGXFSZ ignored: EFBIG instead)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, handler)


def test_lines_are_appended_whole_after_what_the_file_held(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "results.jsonl"
    writer = ResultsWriter.open(path)  # its directory is made
    writer.write(line(1))
    writer.sync()
    writer.close()
    writer = ResultsWriter.open(path)
    assert writer.size == writer.synced == len(line(1))
    writer.write(line(2))
    assert (writer.size, writer.synced) == (len(line(1)) * 2, len(line(1)))
    writer.sync()
    assert writer.synced == writer.size
    writer.close()
    assert path.read_bytes() == line(1) + line(2)


def test_a_file_another_writer_holds_is_refused_until_it_is_closed(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    first = ResultsWriter.open(path)
    with pytest.raises(OSError, match="another crawl is writing it") as refused:
        ResultsWriter.open(path)
    assert refused.value.errno == errno.EWOULDBLOCK
    with pytest.raises(ResultsInUseError):  # what a starting job's preflight sees
        refuse_in_use(path)
    first.close()
    refuse_in_use(path)
    ResultsWriter.open(path).close()


def test_a_link_is_never_written_through(tmp_path: Path) -> None:
    target = tmp_path / "private.txt"
    target.write_bytes(b"secret\n")
    (tmp_path / "results.jsonl").symlink_to(target)
    with pytest.raises(LinkedFileError):
        ResultsWriter.open(tmp_path / "results.jsonl")
    assert target.read_bytes() == b"secret\n"


def test_a_write_that_fails_part_way_leaves_no_torn_line(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    writer = ResultsWriter.open(path)
    whole = len(line(1)) * 2
    with file_size_limit(whole + 40), pytest.raises(OSError) as failed:
        writer.write(line(1))
        writer.write(line(2))
        writer.write(line(3))  # 40 bytes fit, the rest does not
    writer.close()
    assert failed.value.errno == errno.EFBIG
    assert writer.size == whole
    assert path.read_bytes() == line(1) + line(2)


def test_what_was_not_synced_can_be_dropped(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    writer = ResultsWriter.open(path)
    writer.write(line(1))
    writer.sync()
    writer.write(line(2))
    writer.drop_unsynced()
    assert writer.size == writer.synced == len(line(1))
    writer.write(line(3))  # appended where the dropped line was
    writer.close()
    assert path.read_bytes() == line(1) + line(3)


def test_the_coordinator_s_failed_step_is_handed_out_again_and_written_once(
    tmp_path: Path, client: redis.Redis
) -> None:
    """The collector's contract with the writer, on a real Redis: the step whose write failed
    is cut back to its last synced line and acknowledges nothing; after a restart, its entries
    come back and each row is written once."""
    job = ClusterJob(client, "w1")
    assert job.open("coordinator@test")
    frontier = Frontier(client, "w1", owner="w1")
    for row in range(1, 5):
        assert frontier.commit(row, line(row).decode().rstrip("\n"))
    path = tmp_path / "results.jsonl"
    writer = ResultsWriter.open(path)
    done: set[int] = set()

    def write(_row: int, text: str) -> None:
        writer.write(text.encode() + b"\n")

    collector = ResultCollector(job, done, write, writer.sync, batch=2)
    assert collector.step().written == [1, 2]  # synced; acknowledged with the next read
    with file_size_limit(writer.size + len(line(3)) + 40), pytest.raises(OSError):
        collector.step()  # row 3 is written, row 4 only in part
    writer.drop_unsynced()
    writer.close()
    assert path.read_bytes() == line(1) + line(2)

    # The next run: results.jsonl says rows 1 and 2 are done; rows 3 and 4 come back.
    writer = ResultsWriter.open(path)
    restarted = ResultCollector(job, {1, 2}, write, writer.sync, batch=2)
    written: list[int] = []
    while (step := restarted.step()).written or step.duplicates:
        written += step.written
    restarted.flush()
    writer.close()
    assert written == [3, 4]
    assert path.read_bytes() == b"".join(map(line, range(1, 5)))
    assert client.xlen("uc:{w1}:results") == 0  # every entry acknowledged, none twice
