"""Credentials never reach any output: reprs, logs, snapshots, errors."""

import base64
import json
import logging
import random

import pytest

from urlcheck.proxypool import (
    ManualClock,
    NoProxyAvailableError,
    Outcome,
    PoolConfig,
    Proxy,
    ProxyPool,
    ProxySpecError,
)

from .sim import CONTROL_URLS, OK, TIMEOUT, Sim

USER = "zorro_account"
PASSWORD = "Sup3r-S3cret"
SECRETS = [
    USER,
    PASSWORD,
    base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode(),
    base64.b64encode(f"{USER}-1:{PASSWORD}1".encode()).decode(),
]


def leaks(text: str) -> list[str]:
    return [secret for secret in SECRETS if secret in text]


def test_credentials_never_in_any_output(caplog: pytest.LogCaptureFixture) -> None:
    specs = [f"http://{USER}-{i}:{PASSWORD}{i}@10.0.0.{i + 1}:3128" for i in range(8)]
    specs.append(f"http://{USER}:{PASSWORD}@gate.example:7000 tags=us")
    config = PoolConfig(control_urls=CONTROL_URLS, max_concurrent=2, lease_ttl=30.0)
    clock = ManualClock()
    pool = ProxyPool(specs, config, clock=clock, seed=1)
    assert all(p.credentials is not None for p in pool.proxies)
    outputs: list[str] = []
    ids = [p.id for p in pool.proxies]

    def behave(proxy_id: str, site: str, now: float, rng: random.Random) -> Outcome:
        if proxy_id == ids[0]:
            return TIMEOUT  # quarantined
        if proxy_id == ids[1]:
            return Outcome(status=407)  # dead
        if site == "down.example":
            return TIMEOUT  # a site at fault
        return OK

    def probe(proxy_id: str, url: str, now: float, rng: random.Random) -> bool:
        return proxy_id != ids[0]

    with caplog.at_level(logging.DEBUG):
        sim = Sim(pool, behave, ["a.example", "down.example"], probe=probe, keys=["s1", "s2", "s3"])
        sim.run(3000)
        # keyless traffic too: three sticky keys need not land on the 407 proxy
        Sim(pool, behave, ["a.example", "down.example"], probe=probe).run(500)
        leases = [pool.acquire("a.example", f"k{i}") for i in range(3)]  # left to expire
        outputs.extend(repr(lease) for lease in leases)
        outputs.extend(str(lease) for lease in leases)
        clock.advance(120)
        pool.acquire("a.example", "k0")
        pool.remove(ids[2])
        outputs.extend(repr(task) for task in pool.due_probes())
        pool.release(leases[0], OK)
        pool.release(leases[0], OK)  # twice: a warning
    outputs.append(json.dumps(pool.snapshot()))
    outputs.extend(repr(p) for p in pool.proxies)
    outputs.extend(str(p) for p in pool.proxies)
    outputs.extend(repr(p.credentials) for p in pool.proxies)
    outputs.append(repr(pool.proxies))
    outputs.extend(r.getMessage() for r in caplog.records)
    outputs.append(caplog.text)
    for bad in (
        f"http://{USER}:{PASSWORD}/x@h:1",  # a password with an unescaped "/"
        f"http://{USER}:{PASSWORD}@h:1/p@th",
        f"socks5://{USER}:{PASSWORD}@h:1",
        f"http://{USER}:{PASSWORD}@h:notaport",
        f"http://{USER}:{PASSWORD}@h:1/path",
        f"http://{USER}:{PASSWORD}@h:1 weight=x",
        f"http://{USER}:{PASSWORD}@h:1 foo=bar",
    ):
        with pytest.raises(ProxySpecError) as info:
            Proxy.parse(bad)
        outputs.append(str(info.value))
        outputs.append(repr(info.value))
    empty = ProxyPool(clock=ManualClock())
    with pytest.raises(NoProxyAvailableError) as no_proxy:
        empty.acquire("a.example")
    outputs.append(str(no_proxy.value))
    # the run did go through the interesting paths
    text = caplog.text
    assert "-> quarantined" in text
    assert "-> dead" in text
    assert "is at fault" in text
    assert "leases were never released" in text
    assert "released twice" in text
    found = {secret for output in outputs for secret in leaks(output)}
    assert found == set()
    # the secrets are still there for the caller who asks
    proxy = pool.get(ids[-1])
    assert proxy is not None
    assert proxy.credentials is not None
    assert tuple(proxy.credentials) == (USER, PASSWORD)
    assert leaks(proxy.auth_header or "")  # and the check above would have seen them
