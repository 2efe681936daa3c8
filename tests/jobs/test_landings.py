"""many_to_one over a results file, compactly (urlcheck.jobs.landings), judged as the reports'
LandingTally judges it, and its meta.json field."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from urlcheck.check.hops import RowTask, hop
from urlcheck.check.manytoone import LandingTally
from urlcheck.check.result import build_result
from urlcheck.check.verdict import VerdictRules
from urlcheck.jobs.files import JobMeta, JobState
from urlcheck.jobs.landings import LandingHashes, ManyToOneSeen


def line(row: int, url: str, to: str | None, expected: str | None = None) -> bytes:
    """Row ``row``: ``url`` redirected once to ``to`` (None: no redirect, a 200)."""
    task = RowTask(row, url, url, expected, {})
    if to is None:
        chain = [hop(url, status=200)]
    else:
        chain = [hop(url, status=301, location=to), hop(to, status=200)]
    return build_result(task, chain, rules=VerdictRules()).to_json_line()


def tally_of(lines: list[bytes], rows: int, share: float) -> list[tuple[str, int]]:
    tally = LandingTally(rows, share)
    for data in lines:
        tally.add_line(json.loads(data))
    return [(x.url, len(x.rows)) for x in tally.result().landings]


def test_flags_what_the_reports_flag(tmp_path: Path) -> None:
    lines: list[bytes] = []
    # a.test: 12 rows to one catch-all (the rows rule), 8 to their own pages
    for i in range(1, 21):
        to = "https://new.test/all" if i <= 12 else f"https://new.test/p{i}"
        lines.append(line(len(lines) + 1, f"https://a.test/{i}", to))
    # b.test: 3 of its 4 redirected rows on one page (the share rule), and rows not redirected
    for i in range(4):
        to = "https://new.test/b" if i < 3 else "https://new.test/b-own"
        lines.append(line(len(lines) + 1, f"https://b.test/{i}", to))
        lines.append(line(len(lines) + 1, f"https://b.test/plain{i}", None))
    # c.test: 11 rows sent where their sheet says: asked for, not flagged
    for i in range(11):
        lines.append(
            line(len(lines) + 1, f"https://c.test/{i}", "https://new.test/c", "https://new.test/c")
        )
    path = tmp_path / "results.jsonl"
    path.write_bytes(b"".join(lines))

    hashes = LandingHashes(10, 50.0)
    assert hashes.feed(path) == len(lines)
    seen = hashes.result(path)
    assert seen.urls == [("https://new.test/all", 12), ("https://new.test/b", 3)]
    assert seen.urls == tally_of(lines, 10, 50.0)
    assert (seen.landings, seen.rows, seen.read_rows) == (2, 15, len(lines))
    assert len(hashes.finals) == 20 + 4 + 11  # the redirected rows only


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_agrees_with_the_tally_on_random_jobs(tmp_path: Path, seed: int) -> None:
    rnd = random.Random(seed)
    lines: list[bytes] = []
    for row in range(1, 400):
        host = f"h{rnd.randrange(12)}.test"
        roll = rnd.random()
        to = None if roll < 0.2 else f"https://n.test/{rnd.randrange(60 if roll < 0.9 else 3)}"
        lines.append(line(row, f"https://{host}/{row}", to))
    path = tmp_path / "results.jsonl"
    path.write_bytes(b"".join(lines))
    hashes = LandingHashes(4, 40.0)
    hashes.feed(path)
    expected = tally_of(lines, 4, 40.0)
    assert expected  # the case is a real one
    assert hashes.result(path, limit=1000).urls == expected


def test_feeds_by_parts_and_leaves_a_line_being_written(tmp_path: Path) -> None:
    lines = [line(i, f"https://a{i}.test/", "https://new.test/") for i in range(1, 13)]
    path = tmp_path / "results.jsonl"
    path.write_bytes(b"".join(lines[:5]) + lines[5][:20])
    hashes = LandingHashes(10, 50.0)
    assert hashes.feed(path, max_bytes=1) == 1  # at least a line a call
    assert hashes.feed(path) == 4  # the torn line waits
    assert hashes.result(path).urls == []
    path.write_bytes(b"".join(lines))
    assert hashes.feed(path) == 7
    assert hashes.result(path).urls == [("https://new.test/", 12)]


def test_meta_json_round_trip() -> None:
    seen = ManyToOneSeen([("https://new.test/all", 12), ("https://new.test/b", 3)], 2, 15, 35)
    meta = JobMeta(state=JobState.DONE, many_to_one=seen)
    back = JobMeta.from_dict(json.loads(json.dumps(meta.to_dict())))
    assert back.many_to_one == seen
    # A meta.json that does not have it (off, or an older urlcheck) reads as unknown.
    data = meta.to_dict()
    del data["many_to_one"]
    assert JobMeta.from_dict(data).many_to_one is None
    # A hand-edited one is refused with its key named.
    data["many_to_one"] = {"urls": [{"url": "x", "rows": -1}]}
    with pytest.raises(ValueError, match=r"many_to_one\.urls\.rows"):
        JobMeta.from_dict(data)


def test_a_resumed_run_keeps_the_last_judgement_until_it_has_read_as_far(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from scrapy.utils.test import get_crawler

    from urlcheck.config.crawlconfig import JobControlConfig
    from urlcheck.extensions import jobcontrol
    from urlcheck.jobs.context import JobContext

    lines = [line(i, f"https://a{i}.test/", "https://new.test/") for i in range(1, 13)]
    path = tmp_path / "results.jsonl"
    path.write_bytes(b"".join(lines))
    monkeypatch.setattr(jobcontrol, "FEED_BUDGET", 1)  # a line a write
    monkeypatch.setattr(jobcontrol, "JUDGE_EVERY", 0.0)
    clock = iter(range(1000))
    ext = jobcontrol.JobControl(
        get_crawler(),
        tmp_path,
        JobControlConfig(),
        monotonic=lambda: float(next(clock)),
        many_to_one=(10, 50.0),
    )
    ext.context = JobContext(tmp_path, path, tmp_path / "in.csv", "", 12, 12)
    last = ManyToOneSeen([("https://old.test/", 11)], 1, 11, 11)  # the last run's, 11 rows
    ext.meta = JobMeta(many_to_one=last)
    ext._landings = LandingHashes(10, 50.0)
    for n in range(1, 11):
        assert not ext._judge_landings(float(n))
        assert ext.meta.many_to_one is last, n
    assert ext._judge_landings(11.0)  # as far as the last run: its own judgement now
    assert ext.meta.many_to_one == ManyToOneSeen([("https://new.test/", 11)], 1, 11, 11)
    assert ext._judge_landings(12.0, closing=True)
    assert ext.meta.many_to_one == ManyToOneSeen([("https://new.test/", 12)], 1, 12, 12)


def test_keeps_the_first_urls_and_counts_them_all(tmp_path: Path) -> None:
    # 30 hosts, each sending its 3 redirected rows to a page of its own: 30 landings flagged.
    lines = [
        line(3 * h + i + 1, f"https://h{h}.test/{i}", f"https://new.test/h{h}")
        for h in range(30)
        for i in range(3)
    ]
    path = tmp_path / "results.jsonl"
    path.write_bytes(b"".join(lines))
    hashes = LandingHashes(10, 50.0)
    hashes.feed(path)
    seen = hashes.result(path)
    assert (seen.landings, seen.rows, len(seen.urls)) == (30, 90, 20)
    assert seen.urls == tally_of(lines, 10, 50.0)[:20]
