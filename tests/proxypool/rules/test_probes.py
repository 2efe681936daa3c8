from urlcheck.proxypool.rules.probes import ControlUrlStats


def test_control_url_breaks_when_it_fails_through_every_proxy() -> None:
    stats = ControlUrlStats("http://127.0.0.2/ok")
    assert stats.push("p1", False, 3, 1.0) is None
    assert stats.push("p2", False, 3, 2.0) is None
    reason = stats.push("p3", False, 3, 3.0)
    assert reason is not None
    assert stats.broken
    assert stats.push("p4", False, 3, 4.0) is None  # already broken: reported once
    assert stats.push("p1", True, 3, 5.0) == ""  # works again
    assert not stats.broken
    assert stats.last_ok_at == 5.0


def test_one_success_keeps_a_url_trusted() -> None:
    stats = ControlUrlStats("http://127.0.0.2/ok")
    stats.push("p1", True, 3, 1.0)
    for i in range(5):
        assert stats.push(f"q{i}", False, 3, 2.0 + i) is None
    assert not stats.broken
    assert stats.worked_through_other("q0")
    assert not stats.worked_through_other("p1")
