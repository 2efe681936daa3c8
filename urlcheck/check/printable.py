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


def printable(value: object) -> str:
    """``str(value)`` with every control, format (bidi, zero-width) and unassigned character
    written as an escape: one line, shown as the characters it holds, in the order stored."""
    text = str(value)
    return text if text.isascii() and text.isprintable() else _SUSPECT.sub(_escape, text)
