"""JUnit XML for CI: one testcase per row that names an expected target; a fail verdict or an
error is a failure carrying the reasons. Written as a stream: testcases are spooled to a
temporary file so the counts the root element needs are known without holding the rows."""

from __future__ import annotations

import re
import tempfile
from typing import IO, Any
from xml.sax.saxutils import escape, quoteattr

from urlcheck.check.urls import host_key
from urlcheck.reports.aggregate import failed_checks
from urlcheck.reports.chaintext import chain_text

# XML 1.0 has no way to write these, not even escaped.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _text(value: object) -> str:
    return _NOT_XML.sub("\ufffd", str(value))


def _attr(value: object) -> str:
    return quoteattr(_text(value), {"\n": "&#10;", "\r": "&#13;", "\t": "&#9;"})


class JUnitWriter:
    def __init__(
        self, out: IO[bytes], *, suite: str = "urlcheck", many_to_one: frozenset[int] = frozenset()
    ) -> None:
        self.out = out
        self.suite = suite
        self.many_to_one = many_to_one  # rows flagged many_to_one (computed over all rows)
        self.tests = 0
        self.failures = 0
        self.seconds = 0.0
        self._cases = tempfile.TemporaryFile(mode="w+", encoding="utf-8")  # noqa: SIM115

    def add(self, result: dict[str, Any]) -> bool:
        """Write the row's testcase; False when the row names no target (not a test)."""
        expected = result.get("expected")
        if not expected:
            return False
        url = str(result.get("url") or "")
        seconds = (
            sum((hop.get("ms") or 0) for hop in result.get("chain") or () if isinstance(hop, dict))
            / 1000.0
        )
        self.tests += 1
        self.seconds += seconds
        host = host_key(str(result.get("requested_url") or url)) or "invalid"
        self._cases.write(
            f"    <testcase classname={_attr(self.suite + '.' + host)} "
            f'name={_attr("row " + str(result.get("row")) + ": " + url)} time="{seconds:.3f}"'
        )
        error = result.get("error")
        # The checks that only warn: in the testcase's output, the test still passes.
        warnings = [str(w) for w in result.get("warnings") or ()]
        if result.get("row") in self.many_to_one:
            warnings.append("many_to_one")
        out = (
            f"      <system-out>{escape(_text('warnings: ' + ', '.join(warnings)))}</system-out>\n"
            if warnings
            else ""
        )
        if result.get("verdict") == "fail" or error or result.get("loop"):
            self.failures += 1
            message = ", ".join(failed_checks(result, detail=False)) or "fail"
            detail = [
                f"reasons: {message}",
                f"expected: {expected}",
                f"final: {result.get('final_status') or '-'} {result.get('final_url') or '-'}",
                f"chain: {chain_text(result.get('chain') or [])}",
            ]
            if result.get("error_message"):
                detail.append(f"error: {result['error_message']}")
            self._cases.write(
                f">\n      <failure message={_attr(message)} "
                f"type={_attr(error or 'fail')}>{escape(_text(chr(10).join(detail)))}</failure>\n"
                f"{out}    </testcase>\n"
            )
        elif out:
            self._cases.write(f">\n{out}    </testcase>\n")
        else:
            self._cases.write("/>\n")
        return True

    def close(self) -> None:
        counts = (
            f'tests="{self.tests}" failures="{self.failures}" errors="0" time="{self.seconds:.3f}"'
        )
        head = (
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            f"<testsuites name={_attr(self.suite)} {counts}>\n"
            f'  <testsuite name={_attr(self.suite)} {counts} skipped="0">\n'
        )
        self.out.write(head.encode("utf-8"))
        self._cases.seek(0)
        with self._cases:
            while chunk := self._cases.read(1 << 16):
                self.out.write(chunk.encode("utf-8"))
        self.out.write(b"  </testsuite>\n</testsuites>\n")
