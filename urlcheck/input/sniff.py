"""What a CSV file is, guessed once from its first 64 KiB: encoding, binary or text, delimiter,
header and columns.

Every guess here is a pure function of bytes or lines; :class:`~urlcheck.input.csvfile.CsvSource`
reads the sample and keeps the answers. A file it cannot use raises :class:`InputError` with the
file's name and a one-line reason.
"""

from __future__ import annotations

import codecs
import csv
import re
from collections import Counter
from collections.abc import Callable

from urlcheck.input.errors import InputError

# With "_url" too: "Source URL,Destination URL" and "URL,Expected URL" are redirect maps' own
# headers, which without them gave every row no verdict.
URL_NAMES = ("url", "address", "source", "from", "old", "old_url", "source_url", "from_url")
EXPECTED_NAMES = (
    *("expected", "target", "to", "destination", "new", "new_url", "redirect"),
    *("expected_url", "target_url", "destination_url", "to_url"),
)
DELIMITERS = (",", ";", "\t", "|")

SAMPLE_BYTES = 64 * 1024  # what the encoding and delimiter are guessed from
SAMPLE_LINES = 500
WHITESPACE = " \t\r\n\x0b\x0c"

_BOMS_UTF32 = (b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")
_MAGIC = (
    (b"PK\x03\x04", "a ZIP archive (an .xlsx or .ods workbook?)"),
    (b"\xd0\xcf\x11\xe0", "an old Excel .xls workbook"),
    (b"\x89PNG", "a PNG image"),
    (b"GIF8", "a GIF image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"%PDF", "a PDF document"),
    (b"\x1f\x8b", "a gzip archive"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"),
)
# C0 controls other than tab, LF, VT, FF, CR and the DOS end-of-file mark (0x1A).
_CONTROL_BYTES = bytes([*range(1, 9), 0x0E, 0x0F, *range(0x10, 0x1A), *range(0x1B, 0x20)])
_CONTROL_CHARS = re.compile("[\x00-\x08\x0e-\x19\x1b-\x1f]")
_SPACES_THEN_QUOTE = re.compile(' +"')
_NAME_SEPARATORS = re.compile(r"[\s\-]+")
_LOOKS_LIKE_URL = re.compile(
    r"""\s*(?:
        [a-z][a-z0-9+.\-]*://                                # scheme://
        | (?:mailto|javascript|data|tel|file):               # schemes without //
        | //                                                 # protocol-relative
        | (?:[^\W_][\w\-]*\.)+[^\W\d_][\w\-]+\.?(?::\d+)?(?:[/?\#]|\s*$)   # host.tld[/...]
        | \d{1,3}(?:\.\d{1,3}){3}(?::\d+)?(?:[/?\#]|\s*$)   # IPv4
    )""",
    re.IGNORECASE | re.VERBOSE,
)


# --- encoding -------------------------------------------------------------------------------------


def _latin1_for_undefined(exc: UnicodeError) -> tuple[str, int]:
    # cp1252 leaves 0x81, 0x8D, 0x8F, 0x90, 0x9D undefined; latin-1 (as browsers do) maps them.
    assert isinstance(exc, UnicodeDecodeError)
    return exc.object[exc.start : exc.end].decode("latin-1"), exc.end


codecs.register_error("urlcheck-latin1", _latin1_for_undefined)


def _decode_8bit(raw: bytes) -> str:
    # Line by line, so a file that is UTF-8 except for a few pasted cp1252 lines reads right.
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("cp1252", "urlcheck-latin1")


def _decode_transcoded(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogatepass")


def transcoded(encoding: str) -> str:
    """The codec a file's lines are read through and re-encoded as UTF-8 (see
    :func:`~urlcheck.input.lines.text_lines`), or ``""`` for a file read as bytes."""
    return encoding if encoding.startswith("utf-16") else ""


def line_decoder(encoding: str) -> Callable[[bytes], str]:
    """How one physical line, as :func:`~urlcheck.input.lines.physical_lines` gives it, becomes
    text."""
    return _decode_transcoded if transcoded(encoding) else _decode_8bit


def unsupported(name: str, what: str) -> InputError:
    return InputError(f"{name}: unreadable text encoding ({what}); save the file as UTF-8 CSV")


def sniff_encoding(head: bytes, name: str) -> tuple[str, int]:
    """Return (encoding, byte offset after the byte-order mark) of the file ``name`` starting
    with ``head``."""
    if head.startswith(_BOMS_UTF32):
        raise unsupported(name, "UTF-32 text")
    if head.startswith(codecs.BOM_UTF8):
        reject_binary(head[3:], name)
        return "utf-8-sig", 3
    for bom, codec in ((codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be")):
        if head.startswith(bom):
            body = head[2:]
            try:
                codecs.getincrementaldecoder(codec)().decode(body, len(head) < SAMPLE_BYTES)
            except UnicodeDecodeError as exc:
                raise unsupported(
                    name, f"not valid UTF-16: {exc.reason} at byte {exc.start + 2}"
                ) from None
            return codec, 2
    reject_binary(head, name)
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, len(head) < SAMPLE_BYTES)
    except UnicodeDecodeError:
        return "cp1252", 0
    return "utf-8", 0


def check_text(sample: list[str], encoding: str, name: str) -> None:
    """Raise when the decoded sample is not the text the encoding promised."""
    text = "".join(sample)[:SAMPLE_BYTES]
    wide = bool(transcoded(encoding))
    if wide and _CONTROL_CHARS.search(text) is not None:
        # UTF-16 that decodes to control characters was not UTF-16 to begin with.
        raise unsupported(name, f"not {encoding.upper()} text despite its byte-order mark")
    if encoding in ("utf-8", "utf-8-sig"):
        return
    visible = [c for c in text if not c.isspace()]
    in_ascii = sum(1 for c in visible if c.isascii())
    # URLs are ASCII whatever the language of the other columns. Text read in the wrong
    # encoding (EBCDIC, UTF-8 behind a UTF-16 byte-order mark) has next to no ASCII left;
    # UTF-16 may hold long CJK columns, so only single-byte text must be mostly ASCII.
    if visible and in_ascii < (0.01 if wide else 0.5) * len(visible):
        raise unsupported(name, "not UTF-8, UTF-16 or Windows-1252 text")


# --- binary ---------------------------------------------------------------------------------------


def reject_binary(head: bytes, name: str) -> None:
    """Raise for a workbook, an image, an archive, or text in an encoding urlcheck won't read."""
    for magic, what in _MAGIC:
        if head.startswith(magic):
            raise InputError(f"{name}: not a CSV text file, it looks like {what}")
    if b"\x00" in head:
        # Mostly-ASCII text in UTF-32 or UTF-16 has NULs in fixed byte positions.
        quad = head[: len(head) // 4 * 4][:4096]
        s0, s1, s2, s3 = (_nul_share(quad[i::4]) for i in range(4))
        if len(quad) >= 8 and (
            (s0 < 0.1 and s2 > 0.9 and s3 > 0.9) or (s3 < 0.1 and s0 > 0.9 and s1 > 0.9)
        ):
            raise unsupported(name, "UTF-32 text")
        pairs = head[: len(head) // 2 * 2][:4096]
        low, high = sorted((_nul_share(pairs[0::2]), _nul_share(pairs[1::2])))
        if len(pairs) >= 4 and low < 0.02 and high > 0.3:
            raise unsupported(name, "UTF-16 without a byte-order mark")
        raise InputError(f"{name}: not a CSV text file, it contains binary data")
    if len(head.translate(None, _CONTROL_BYTES)) < len(head) * 0.95:
        raise InputError(f"{name}: not a CSV text file, it contains binary data")


def _nul_share(data: bytes) -> float:
    return data.count(0) / len(data) if data else 0.0


# --- columns and header ---------------------------------------------------------------------------


def name_key(cell: str) -> str:
    """A header cell as the names are matched: lower case, trimmed, spaces and hyphens as ``_``."""
    return _NAME_SEPARATORS.sub("_", cell.strip(WHITESPACE + "\ufeff").lower())


def find(keys: list[str], names: tuple[str, ...]) -> int | None:
    """The leftmost key among ``names``."""
    for i, key in enumerate(keys):
        if key in names:
            return i
    return None


def header_names(first: list[str]) -> list[str]:
    """The column names of a header record: a blank cell is ``col<N>``, a repeated name gets
    ``.1``, ``.2``... (as pandas does)."""
    names: list[str] = []
    seen: set[str] = set()
    for i, cell in enumerate(first):
        name = cell or f"col{i + 1}"
        k = 1
        while name in seen:
            name = f"{cell or f'col{i + 1}'}.{k}"
            k += 1
        seen.add(name)
        names.append(name)
    return names


def looks_like_url(cell: str) -> bool:
    return _LOOKS_LIKE_URL.match(cell) is not None


def is_header(first: list[str], rows: list[list[str]]) -> bool:
    """Whether the first record names the columns rather than holding a URL."""
    keys = [name_key(cell) for cell in first]
    url_index = find(keys, URL_NAMES)
    if url_index is not None or find(keys, EXPECTED_NAMES) is not None:
        # A known name where a URL would be is a header; "https://a/,new" is a data row.
        return not looks_like_url(first[url_index or 0])
    if looks_like_url(first[0]):
        return False
    # Unknown names: a header if the first column holds URLs below its first cell.
    votes = [looks_like_url(cells[0]) for cells in rows if cells]
    return bool(votes) and 2 * sum(votes) > len(votes)


# --- delimiter ------------------------------------------------------------------------------------


def spaces_before_quotes(lines: list[str], delimiter: str) -> bool:
    """Whether quoted cells follow the delimiter after a space, as in ``a, "b,c"``."""
    # Only hand-written files do this: a CSV writer quotes any cell holding a quote, so an
    # unquoted cell never starts with spaces and a quote otherwise.
    try:
        for cells in csv.reader(lines, delimiter=delimiter, quotechar='"', strict=False):
            if any(_SPACES_THEN_QUOTE.match(cell) for cell in cells):
                return True
    except csv.Error:
        pass
    return False


def sniff_delimiter(lines: list[str], *, prefer_tab: bool) -> tuple[str, int]:
    """The delimiter and the usual number of cells per row in the sample."""
    order = ("\t", ",", ";", "|") if prefer_tab else DELIMITERS
    best, best_score, best_width = ",", 0.0, 1
    for delimiter in order:
        rows: list[list[str]] = []
        try:
            for cells in csv.reader(lines, delimiter=delimiter, quotechar='"', strict=False):
                if any(cell.strip(WHITESPACE) for cell in cells):
                    rows.append(cells)
        except csv.Error:
            pass
        if not rows:
            continue
        width, count = Counter(len(cells) for cells in rows).most_common(1)[0]
        if width < 2:
            continue
        score = count / len(rows)
        keys = [name_key(cell) for cell in rows[0]]
        if find(keys, URL_NAMES) is not None or find(keys, EXPECTED_NAMES) is not None:
            score += 1.0  # the header splits into names we know
        if score > best_score:
            best, best_score, best_width = delimiter, score, width
    return best, best_width
