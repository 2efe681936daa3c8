import copy
import pickle

import pytest

from urlcheck.proxypool import Credentials, Proxy, ProxySpecError, parse_proxies


def test_parse_url_with_credentials() -> None:
    proxy = Proxy.parse("http://alice:s%40cret@proxy.example:3128")
    assert proxy.scheme == "http"
    assert proxy.host == "proxy.example"
    assert proxy.port == 3128
    assert proxy.url == "http://proxy.example:3128"
    assert proxy.display == "proxy.example:3128"
    assert proxy.credentials is not None
    user, password = proxy.credentials
    assert (user, password) == ("alice", "s@cret")
    assert proxy.auth_header == "Basic YWxpY2U6c0BjcmV0"


def test_parse_options_line() -> None:
    proxy = Proxy.parse("https://10.1.2.3:8443 weight=2.5 tags=us,dc max_concurrent=4 id=east")
    assert proxy.url == "https://10.1.2.3:8443"
    assert proxy.weight == 2.5
    assert proxy.tags == frozenset({"us", "dc"})
    assert proxy.max_concurrent == 4
    assert proxy.id == "east"
    assert proxy.credentials is None
    assert proxy.auth_header is None


def test_parse_mapping() -> None:
    proxy = Proxy.parse({"url": "http://h:1", "weight": 3, "tags": ["de"], "max_concurrent": 0})
    assert (proxy.weight, proxy.tags, proxy.max_concurrent) == (3.0, frozenset({"de"}), 0)


def test_default_ports_and_ipv6() -> None:
    assert Proxy.parse("http://h").port == 80
    assert Proxy.parse("https://h").port == 443
    v6 = Proxy.parse("http://[::1]:8080")
    assert v6.display == "[::1]:8080"
    assert v6.url == "http://[::1]:8080"


def test_id_tells_accounts_on_one_gateway_apart() -> None:
    a = Proxy.parse("http://cust-us:pw@gate.example:7000")
    b = Proxy.parse("http://cust-de:pw@gate.example:7000")
    assert a.display == b.display == "gate.example:7000"
    assert a.id != b.id
    assert a.id.startswith("gate.example:7000#")
    assert Proxy.parse("http://cust-us:pw@gate.example:7000").id == a.id  # stable
    assert Proxy.parse("http://gate.example:7000").id == "gate.example:7000"


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        ("socks5://u:topsecret@h:1080", "scheme"),
        ("http://u:topsecret@h:99999", "unparseable"),
        ("http://u:topsecret@h:1/path", "no path"),
        ("http://u:topsecret@h:1 weight=-1", "weight"),
        ("http://u:topsecret@h:1 weight=abc", "weight"),
        ("http://u:topsecret@h:1 colour=red", "unknown options"),
        ("http://u:topsecret@h:1 weight", "needs '='"),
        ("http://u:topsecret@:1", "no host"),
    ],
)
def test_bad_specs_never_echo_credentials(spec: str, problem: str) -> None:
    with pytest.raises(ProxySpecError) as info:
        Proxy.parse(spec)
    message = str(info.value)
    assert problem in message
    assert "topsecret" not in message
    # no chained exception that could carry the spec along
    assert info.value.__cause__ is None
    assert info.value.__context__ is None or info.value.__suppress_context__


def test_reprs_are_redacted() -> None:
    proxy = Proxy.parse("http://alice:hunter2@h.example:3128")
    for text in (repr(proxy), str(proxy), repr(proxy.credentials), str(proxy.credentials)):
        assert "hunter2" not in text
        assert "alice" not in text
    assert repr(proxy).startswith("Proxy('h.example:3128'")


def test_proxy_is_immutable_and_not_picklable() -> None:
    proxy = Proxy.parse("http://alice:hunter2@h.example:3128")
    with pytest.raises(AttributeError):
        proxy.weight = 2.0
    with pytest.raises(TypeError):
        pickle.dumps(proxy)
    with pytest.raises(TypeError):
        pickle.dumps(Credentials("a", "b"))
    assert copy.deepcopy(proxy) is proxy


def test_equality_and_hash() -> None:
    a = Proxy.parse("http://h:1 weight=2")
    assert a == Proxy.parse("http://h:1 weight=2")
    assert a != Proxy.parse("http://h:1 weight=3")
    assert len({a, Proxy.parse("http://h:1 weight=2")}) == 1


def test_parse_proxies_skips_comments() -> None:
    proxies = parse_proxies(["# list", "", "http://a:1", "  http://b:2 weight=2  "])
    assert [p.id for p in proxies] == ["a:1", "b:2"]


@pytest.mark.parametrize(
    "spec",
    [
        "http://<script>:80",
        "http://%3Cscript%3E:80",
        "http://exa_mple..com:80",
        "http://-dash.example:3128",
        "http://:80",
        "<script>:80",
        "a\tb:80",
        "[::1:3128",
        f"http://{'x' * 64}.example:3128",
    ],
)
def test_a_host_that_is_no_host_name_is_refused(spec: str) -> None:
    with pytest.raises(ProxySpecError, match=r"host|brackets|port"):
        Proxy.parse(spec)


def test_host_names_and_addresses_that_are_hosts() -> None:
    for spec, display in [
        ("http://proxy_1.internal:3128", "proxy_1.internal:3128"),
        ("http://bücher.example:3128", "bücher.example:3128"),
        ("http://[2001:db8::1]:3128", "[2001:db8::1]:3128"),
        ("http://gate.example.:3128", "gate.example.:3128"),
    ]:
        assert Proxy.parse(spec).display == display


def test_the_vendor_form() -> None:
    proxy = Proxy.parse("Gate.Vendor.example:7000:cust-us:pa:ss w0rd weight=2 id=us")
    assert (proxy.url, proxy.weight, proxy.id) == ("http://gate.vendor.example:7000", 2.0, "us")
    assert proxy.credentials is not None
    assert tuple(proxy.credentials) == ("cust-us", "pa:ss w0rd")  # as written: no %-decoding
    assert Proxy.parse("[::1]:3128").url == "http://[::1]:3128"
    assert Proxy.parse("10.0.0.1:3128:u:%41").credentials == Credentials("u", "%41")
    for bad, problem in [
        ("gate.example", "not a proxy"),
        ("gate.example:http:u:p", "port is not a number"),
        ("gate.example:3128:u", "user without a password"),
        ("gate.example:0:u:p", "port is out of range"),
    ]:
        with pytest.raises(ProxySpecError, match=problem) as info:
            Proxy.parse(bad)
        assert "gate" not in str(info.value)
