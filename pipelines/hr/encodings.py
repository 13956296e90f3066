"""A CSV file's encoding, proven from its bytes rather than guessed.

**A BOM decides.** A file that starts with a byte order mark is read in the encoding the mark names
(UTF-8, UTF-16 or UTF-32, either byte order), whatever the setting: spreadsheets write one, and so does
this tool's error report. Otherwise the setting (``--encoding``, ``[csv] encoding``) is used.

**What proves an encoding wrong.** Bytes that do not decode; NUL in the text; control characters C1
(U+0080 to U+009F) read with a single-byte encoding, which no HR system types and which only a wrong
reading makes (cp1252's right quote, byte 0x92, read as latin-1 is U+0092); and a file set as a
single-byte encoding whose bytes are valid UTF-8 with letters beyond ASCII (read as cp1252 ``José``
would be ``JosÃ©``). Each refuses the file with one ``encoding`` problem (NUL: ``unreadable``) naming
the line.

**The advice.** The problem names the first encoding of `CANDIDATES` that decodes the file without any
such control character (cp1252 before latin-1: latin-1 decodes every byte, turning cp1252's quotes into
C1 characters); a file with NUL bytes is tried as UTF-16 and UTF-32 without BOM. Following the advice
therefore never stores a control character.
"""

from __future__ import annotations

import codecs
import re

from models.errors import AuthoritySyncError
from pipelines.hr.problems import Problem

BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
"""Byte order marks and the codec that reads (and drops) each; UTF-32's first, as UTF-32 LE's mark
starts with UTF-16 LE's."""
CANDIDATES = ("utf-8", "cp1252", "latin-1")
"""Encodings the advice may name for a file without NUL bytes, in order."""
WIDE_CANDIDATES = ("utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be")
"""Encodings the advice may name for a file with NUL bytes (UTF-16 or UTF-32 written without a BOM)."""
_UNTYPED = re.compile("[\x00\x80-\x9f]")
"""Characters no HR system types: NUL and the C1 controls, made by reading bytes wrongly."""
_NUL = re.compile("\x00")
"""What proves a UTF reading wrong: a C1 character read as UTF is what the file holds (a cell's own
content, refused as such by the row checks), but NUL is no text."""
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


class EncodingRefusedError(AuthoritySyncError, ValueError):
    """The file is not text in the encoding it was read with; ``problem`` says where and what to do."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(problem.message)
        self.problem = problem


def decode(path: str, data: bytes, encoding: str) -> str:
    """``data`` as text: by its BOM if it has one, else in ``encoding``; `EncodingRefusedError` when the bytes
    prove that reading wrong (see the module docstring)."""
    used = next((codec for bom, codec in BOMS if data.startswith(bom)), None)
    setting = codecs.lookup(encoding).name
    codec = used or ("utf-8-sig" if setting == "utf-8" else encoding)
    try:
        text = data.decode(codec)
    except UnicodeDecodeError as error:
        line = len(_LINE_BREAK.findall(data[: error.start].decode("latin-1"))) + 1
        message = f"line {line} is not {_name(codec)} ({error.reason} at byte {error.start}); {_advice(data)}"
        raise EncodingRefusedError(Problem(path, line, "", "encoding", message)) from None
    untyped = (_NUL if codecs.lookup(codec).name.startswith("utf") else _UNTYPED).search(text)
    if untyped is not None:
        raise EncodingRefusedError(_untyped_problem(path, text, untyped.start(), codec, data))
    if used is None and not setting.startswith("utf") and not data.isascii() and _utf8(data):
        message = (
            f"is set as {encoding}, but its bytes are UTF-8 (read as {encoding}, its letters beyond ASCII "
            "would be garbled): read it as UTF-8 (--encoding utf-8, [csv] encoding)"
        )
        raise EncodingRefusedError(Problem(path, 0, "", "encoding", message))
    return text


def _untyped_problem(path: str, text: str, index: int, codec: str, data: bytes) -> Problem:
    line = len(_LINE_BREAK.findall(text[:index])) + 1
    if text[index] == "\0":
        # A binary file (an old .xls workbook, a PDF) decodes as latin-1 or cp1252 all the same.
        message = f"holds NUL characters (line {line}): not a text file in {_name(codec)}; {_advice(data)}"
        return Problem(path, line, "", "unreadable", message)
    message = (
        f"line {line} holds the control character U+{ord(text[index]):04X} when read as {_name(codec)}, "
        f"which no HR system writes; {_advice(data)}"
    )
    return Problem(path, line, "", "encoding", message)


def proven_encoding(data: bytes) -> str | None:
    """The first candidate encoding that decodes ``data`` without a character of `_UNTYPED`; None when
    none does."""
    for candidate in WIDE_CANDIDATES if b"\0" in data else CANDIDATES:
        try:
            text = data.decode(candidate)
        except UnicodeDecodeError:
            continue
        # Binary bytes may pair into characters: a CSV read rightly holds line breaks too.
        if _UNTYPED.search(text) is None and (candidate in CANDIDATES or "\n" in text or "\r" in text):
            return candidate
    return None


def _advice(data: bytes) -> str:
    proven = proven_encoding(data)
    if proven is None:
        return "no encoding reads it as text without control characters (save a workbook as .xlsx or CSV)"
    return f"it reads as {proven} without control characters: --encoding {proven} (or [csv] encoding)"


def _utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _name(codec: str) -> str:
    return "utf-8" if codec == "utf-8-sig" else codec
