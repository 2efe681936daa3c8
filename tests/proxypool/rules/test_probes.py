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


def test_a_url_failing_through_3_proxies_since_it_last_worked_is_broken() -> None:
    stats = ControlUrlStats("http://127.0.0.2/ok")
    stats.push("p1", True, 3, 1.0)
    assert stats.push("q0", False, 3, 2.0) is None
    assert stats.worked_through_other("q0")  # it worked through p1 since: q0's failure counts
    assert stats.push("q1", False, 3, 3.0) is None
    # failed through two proxies in a row: in doubt, nobody's failure counts
    assert not stats.worked_through_other("q0")
    assert not stats.worked_through_other("q1")
    assert stats.push("q2", False, 3, 4.0) == "failed through 3 proxies and worked through none"
    assert stats.broken
    assert stats.push("p1", True, 3, 5.0) == ""  # one success: trusted again
    assert not stats.broken
