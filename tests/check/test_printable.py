from __future__ import annotations

import io
import json
import logging
import sys

import pytest

from urlcheck.check.printable import hidden, install, printable, printable_json

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


def test_kept_characters_stay_and_the_result_is_idempotent():
    assert printable("a\nb\x1b", keep="\n") == "a\nb\\x1b"
    once = printable("\x1b[2J\u202e")
    assert printable(once) == once


def test_json_stays_the_same_json():
    data = {"url": "http://a/\x1b[2J\u202egpj.exe", "tag": "\U000e0001", "name": "bücher"}
    text = json.dumps(data, ensure_ascii=False, indent=2)
    shown = printable_json(text)
    assert json.loads(shown) == data
    assert "bücher" in shown and not [c for c in shown if hidden(c) and c != "\n"]
    assert shown.count("\n") == text.count("\n")


def test_a_log_handler_with_the_filter_prints_every_record_printable():
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    install([handler])
    install([handler])  # once only
    assert len(handler.filters) == 1
    log = logging.getLogger("tests.printable")
    log.addHandler(handler)
    try:
        log.warning("%s: 3 rows\n  next line", "client\u202evsc.txt\x1b]0;x\x07")
        try:
            raise ValueError("bad \x1b[2J value")
        except ValueError:
            log.exception("failed on %s", "\u202e")
    finally:
        log.removeHandler(handler)
    text = stream.getvalue()
    assert "client\\u202evsc.txt\\x1b]0;x\\x07: 3 rows\n  next line" in text
    assert "bad \\x1b[2J value" in text and "failed on \\u202e" in text
    assert not [c for c in text if hidden(c) and c != "\n"]
