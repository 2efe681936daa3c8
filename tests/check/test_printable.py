from __future__ import annotations

import sys

import pytest

from urlcheck.check.printable import hidden, printable

ESCAPED = [
    ("\x1b]0;owned\x07", "\\x1b]0;owned\\x07"),  # a window title
    ("\x1b[2J\x1b[H", "\\x1b[2J\\x1b[H"),  # clear the screen
    ("a\tb\nc\rd", "a\\tb\\nc\\rd"),
    ("\x00\x7f\x85\x9b", "\\x00\\x7f\\x85\\x9b"),  # NUL, DEL, NEL, CSI (C1)
    ("http://example.com/\u202egpj.exe", "http://example.com/\\u202egpj.exe"),
    (
        "\u2066\u2067\u2068\u2069\u202a\u202b\u202c\u202d",
        "\\u2066\\u2067\\u2068\\u2069\\u202a\\u202b\\u202c\\u202d",
    ),
    ("\u200e\u200f\u061c", "\\u200e\\u200f\\u061c"),
    ("a\u200bb\ufeff", "a\\u200bb\\ufeff"),  # invisible
    ("x\u2028y\u2029z", "x\\u2028y\\u2029z"),
]


@pytest.mark.parametrize(("raw", "shown"), ESCAPED)
def test_controls_and_bidi_are_escaped(raw, shown):
    assert printable(raw) == shown


@pytest.mark.parametrize(
    "text",
    ["http://example.com/a?b=c#d", "https://bücher.example/straße", "日本語", "emoji 😀", "a\\x1b"],
)
def test_printable_text_is_kept(text):
    assert printable(text) is text or printable(text) == text


def test_no_hidden_character_is_left_anywhere_in_unicode():
    shown = printable("".join(map(chr, range(sys.maxunicode + 1))))
    assert not [hex(ord(ch)) for ch in set(shown) if hidden(ch)]
    assert shown.encode("utf-8")  # no lone surrogate left for a terminal's encoder to choke on


def test_lone_surrogates_and_astral_format_characters():
    assert printable("a\udcff") == "a\\udcff"
    assert printable("\U000e0001") == "\\U000e0001"  # LANGUAGE TAG, a format character


def test_non_strings_are_shown_as_str():
    assert printable(None) == "None"
    assert printable(301) == "301"
