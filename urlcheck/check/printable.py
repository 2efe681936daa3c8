"""Hostile text made safe to print: a URL from a CSV or a ``Location`` a site chose reaches a
terminal only as visible characters.

ESC sequences would be obeyed by the terminal (a new window title, a cleared screen, a forged
line) and bidirectional controls reorder what is shown (U+202E). :func:`printable` writes each
such character as a visible escape (``\\x1b``, ``\\u202e``) and leaves every other one as it is.
"""

from __future__ import annotations

import re
import unicodedata

# Controls (Cc), format characters (Cf: bidi controls, zero-width joiners, the BOM), line and
# paragraph separators (Zl, Zp), lone surrogates (Cs) and unassigned code points (Cn).
HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Cn"})
_SUSPECT = re.compile("[^\x20-\x7e]")
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if unicodedata.category(char) not in HIDDEN_CATEGORIES:
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
    written as an escape: one line, shown as the characters it holds."""
    text = str(value)
    return text if text.isascii() and text.isprintable() else _SUSPECT.sub(_escape, text)


def printable_lines(text: str) -> str:
    """Each line of ``text`` made :func:`printable`, the line breaks kept (log blocks,
    tracebacks)."""
    return "\n".join(printable(line) for line in text.split("\n"))
