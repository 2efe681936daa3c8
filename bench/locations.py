"""Location resolution benchmark (issue 14).

Prints:
  1. agreement with the WHATWG URL Standard on its conformance cases that a redirect can meet
     (tests/check/whatwg_cases.py: http(s) base, http(s) or failing result, fragments ignored);
  2. cost per call of resolve_location() and normalise_input() on typical values, in µs and as
     a ratio to urllib.parse.urljoin() timed in the same run;
  3. with --crawl: URLs/s with politeness relaxed by settings, the figure 5b of
     bench/politeness.py (6,000 rows over 50 hosts, delay 0, 64 in flight, 8 per host), and
     the crawl process's CPU time per URL (steadier than URLs/s on a shared machine).

The script also runs on a tree from before issue 14 (where resolve_location returned a str),
to measure "before" on the same machine.

Usage: python bench/locations.py [--crawl]
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path
from timeit import Timer
from urllib.parse import urljoin

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.check.whatwg_cases import CASES  # noqa: E402
from urlcheck.check.urls import InvalidURL, normalise_input, resolve_location  # noqa: E402

_C0_SPACE = "".join(map(chr, range(0x21)))

# What redirects of a site migration look like: (page, Location).
TYPICAL = [
    ("http://example.com/old/page", "https://example.com/old/page"),
    ("https://example.com/old/page", "https://www.example.com/new/page"),
    ("https://www.example.com/a/b?x=1", "/new/path?x=1&utm_source=mail"),
    ("https://www.example.com/a/b", "c/d.html"),
    ("https://shop.example.se/produkt/123", "https://butik.example.se/produkter/123/"),
    ("http://127.0.0.2:8000/chain/3", "http://127.0.0.2:8000/chain/2"),
    ("https://example.com/x", "//cdn.example.com/x"),
    ("https://example.org/search?q=1", "https://example.org/s%C3%B6k?q=%C3%A4"),
]
INPUTS = [
    "https://www.example.com/some/path?x=1",
    "example.com/old/page",
    "http://127.0.0.2:8000/ok?i=17",
    "  https://shop.example.se/produkt/123  ",
    "https://bücher.example/straße",
]


def resolved_url(base: str, location: str) -> str | None:
    """The URL resolve_location() gives, or None when it refuses (before and after issue 14)."""
    try:
        result = resolve_location(base, location)
    except InvalidURL as exc:
        if not location.strip(_C0_SPACE) and "a browser would request" in str(exc):
            return str(exc).rpartition("request ")[2].removesuffix(" again")
        return None
    return result.url


def agreement() -> str:
    agree = sum(resolved_url(base, location) == expected for location, base, expected in CASES)
    return f"1. WHATWG conformance cases: {agree} of {len(CASES)} resolved as the standard says"


def per_call(statement: str, namespace: dict[str, object], calls: int) -> float:
    """Best of 5 runs, in µs per call."""
    timer = Timer(statement, globals=namespace)
    return min(timer.repeat(5, 1)) / calls * 1e6


def cost() -> str:
    pairs = TYPICAL * 500
    urls = INPUTS * 800
    conformance = [(base, location) for location, base, _ in CASES] * 20
    namespace: dict[str, object] = {
        "pairs": pairs,
        "urls": urls,
        "conformance": conformance,
        "resolve": resolved_url,
        "normalise_input": normalise_input,
        "InvalidURL": InvalidURL,
        "urljoin": urljoin,
    }
    yardstick = per_call("for b, loc in pairs: urljoin(b, loc)", namespace, len(pairs))
    typical = per_call("for b, loc in pairs: resolve(b, loc)", namespace, len(pairs))
    odd = per_call("for b, loc in conformance: resolve(b, loc)", namespace, len(conformance))
    rows = per_call("for u in urls: normalise_input(u)", namespace, len(urls))
    return (
        f"2. cost per call: resolve_location {typical:.2f} µs on typical Locations "
        f"({typical / yardstick:.2f}x urljoin's {yardstick:.2f} µs), {odd:.2f} µs on the "
        f"conformance cases; normalise_input {rows:.2f} µs per input URL "
        f"({rows / yardstick:.2f}x urljoin)"
    )


def relaxed_crawl() -> str:
    from bench.politeness import MANY, crawl, run_log, span
    from urlcheck.demo.launcher import SiteServer

    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        with SiteServer(MANY, log_path=tmp / "many.jsonl") as site:
            csv = tmp / "relaxed.csv"
            with csv.open("w") as f:
                f.write("url\n")
                for i in range(6000):
                    f.write(f"http://{MANY[i % len(MANY)]}:{site.port}/ok?run=relaxed&i={i}\n")
            start = time.monotonic()
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            crawl(
                csv,
                tmp / "relaxed.jsonl",
                "DOWNLOAD_DELAY=0",
                "CONCURRENT_REQUESTS=64",
                "CONCURRENT_REQUESTS_PER_DOMAIN=8",
                "AUTOTHROTTLE_ENABLED=False",
            )
            wall = time.monotonic() - start
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            log = run_log(site, "relaxed")
    # CPU time of the crawl process: what the code costs, whatever else the machine is running.
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return (
        f"3. relaxed politeness (delay 0, 64 in flight, 8 per host): "
        f"{len(log) / span(log):6.1f} URLs/s at the server, "
        f"{6000 / wall:6.1f} URLs/s including start-up ({wall:.1f} s for 6000); "
        f"crawl CPU {cpu:.1f} s = {cpu / 6000 * 1e6:.0f} µs per URL, "
        f"{6000 / cpu:.0f} URLs per CPU-second"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--crawl", action="store_true", help="also run the relaxed crawl")
    opts = parser.parse_args()
    figures = [agreement(), cost()]
    if opts.crawl:
        figures.append(relaxed_crawl())
    print("\n".join(["urlcheck Location benchmark", *figures]))


if __name__ == "__main__":
    main()
