"""Hostile text made safe to print: what a CSV, a site or a job file says reaches a terminal
only as visible characters.

A URL from a client's CSV or a ``Location`` a site chose can hold ESC sequences (a terminal
obeys them: a new window title, a cleared screen, a forged line) and bidirectional controls
(U+202E shows ``moc.elpmaxe`` for ``example.com``'s reversed text). Everything urlcheck prints
(``scrapy job diff`` and ``status``, the summary, the progress line, the Markdown report) passes
the site's and the file's text through :func:`printable`, which writes each such character as
a visible escape (``\\x1b``, ``\\u202e``) and leaves every other character as it is.
"""

from __future__ import annotations

import logging
import re
import unicodedata

# Written as escapes: controls (C0, DEL, C1: category Cc), format characters (Cf: the
# bidirectional controls U+202A..E and U+2066..9, LRM/RLM, zero-width joiners, the BOM...),
# the line and paragraph separators (Zl, Zp) some terminals break lines on, lone surrogates (Cs,
# from undecodable bytes; a terminal's encoder would fail on them) and unassigned code points
# (Cn: one may be a control of a later Unicode version). Private-use characters are glyphs.
HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Cn"})
_SUSPECT = re.compile("[^\x20-\x7e]")
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def hidden(char: str) -> bool:
    """Whether a terminal would obey ``char`` or show nothing for it."""
    return unicodedata.category(char) in HIDDEN_CATEGORIES


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if not hidden(char):
        return char
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def printable(value: object, *, keep: str = "") -> str:
    """``str(value)`` with every control, format (bidi, zero-width) and unassigned character
    written as an escape: one line, shown as the characters it holds, in the order stored.
    ``keep``: characters left as they are (``"\n"`` for a block of lines of our own)."""
    text = str(value)
    if text.isascii() and text.isprintable():
        return text
    if not keep:
        return _SUSPECT.sub(_escape, text)
    return _SUSPECT.sub(lambda m: m.group() if m.group() in keep else _escape(m), text)


def _json_escape(match: re.Match[str]) -> str:
    char = match.group()
    if char == "\n" or not hidden(char):  # a newline of the layout: JSON strings hold none
        return char
    units = char.encode("utf-16-be", "surrogatepass")
    return "".join(
        f"\\u{int.from_bytes(units[i : i + 2], 'big'):04x}" for i in range(0, len(units), 2)
    )


def printable_json(text: str) -> str:
    """JSON text (``json.dumps(..., ensure_ascii=False)``) with every hidden character written
    as a JSON ``\\uXXXX`` escape: the same JSON, safe for a terminal."""
    return text if text.isascii() and text.isprintable() else _SUSPECT.sub(_json_escape, text)


class PrintableRecords(logging.Filter):
    """A handler's filter: every record it emits is :func:`printable` (newlines kept: urlcheck's
    own messages may be blocks of lines), its traceback too. Installed on the crawl's log
    handlers (``urlcheck.extensions.printablelogs``) and the supervisor's."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a broken record is the handler's to report
            return True
        shown = printable(message, keep="\n")
        if shown != message:
            record.msg, record.args = shown, None
        if record.exc_info and not record.exc_text:
            record.exc_text = printable(
                logging.Formatter().formatException(record.exc_info), keep="\n"
            )
        return True


def install(handlers: list[logging.Handler]) -> None:
    """Add :class:`PrintableRecords` to each of ``handlers`` that has none yet."""
    for handler in handlers:
        if not any(isinstance(f, PrintableRecords) for f in handler.filters):
            handler.addFilter(PrintableRecords())


def printable_lines(text: str) -> str:
    """``text`` made :func:`printable`, its line breaks kept (log blocks, tracebacks)."""
    return printable(text, keep="\n")
