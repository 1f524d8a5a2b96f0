"""Every limit on what yuezheng reads, in one table, and the bounded reading of an input file.

Every file a user names is read through ``read_limited`` (bytes) or ``read_text_limited``
(UTF-8 text): sheets, cited texts (a cue's ``source.file``), realizations, releases CSVs, MIDI
and show logs for ``check``, ``--resume`` logs, ``--web-token-file`` and ``--peer-key-file``.
Each is opened without blocking (a FIFO with no writer cannot hold it), checked to be a regular
file on the open descriptor (a device such as ``/dev/zero``, a FIFO or a directory is refused
before a byte is read) and read to at most its limit plus one byte.

Each limit has its value, what it counts and why it is where it is; a file or a value past a
limit is refused with a ``UserError`` (exit 2) naming the file and the limit, before any work
that would grow with it.  README's "Limits" section states the same table (a test keeps the
two in agreement).
"""

from __future__ import annotations

import json
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from cues.errors import UserError

KIB = 1024
MIB = 1024 * KIB


@dataclass(frozen=True)
class Limit:
    """A bound on an input: ``value`` ``unit`` of ``what`` at most, for ``reason``."""

    value: int
    unit: str
    what: str
    reason: str

    def describe(self) -> str:
        return f"{self.value:,} {self.unit}"


SHEET_BYTES = Limit(4 * MIB, "bytes", "a cue sheet file",
                    "the largest built-in sheet is 18 KB")
SHEET_VALUES = Limit(200_000, "values", "keys and array entries of one sheet, all tables together",
                     "the validator's work grows with them; the largest built-in has 826")
CUES = Limit(10_000, "cues", "cues in one sheet", "a rite has tens (the largest built-in: 21)")
ARRAY_ENTRIES = Limit(1_000, "entries", "entries of any other array of a sheet",
                      "positions, moves, performers, variants…: a hall holds a few dozen")
PIECES = Limit(100, "pieces", "pieces of one cue", "the built-in cues name at most 18")
OU = Limit(100, "耦", "pairs (耦) of one 射節 cue", "the built-in rites shoot at most 6")
ID_CHARS = Limit(100, "characters", "a cue id", "an id is a short name")
ERRORS_SHOWN = Limit(100, "problems", "problems the validator lists for one sheet",
                     "the rest are counted, not listed")
REALIZATION_BYTES = Limit(1 * MIB, "bytes", "a realization file (.mid, .musicxml, .mxl)",
                          "one piece's notes fit in tens of KB")
MXL_UNPACKED_BYTES = Limit(REALIZATION_BYTES.value, "bytes", "the score inside a .mxl, unpacked",
                           "as much as a plain MusicXML file; it is unpacked by streaming, so "
                           "a zip bomb is refused at once")
REALIZATION_NOTES = Limit(2_000, "notes", "notes of one realization file",
                          "one 終 of a 詩譜 song has fewer than 300; music21 reads 400 a second")
NOTE_SECONDS = Limit(3_600, "seconds", "one note of a realization file",
                     "the longest 終 of a lost piece (--lost-zhong-seconds) is an hour")
REALIZATION_SECONDS = Limit(3_600, "seconds", "one pass (終) of a realization file",
                            "as long as a lost piece's longest 終")
TIMELINE_SECONDS = Limit(86_400, "seconds", "a rite's timeline", "24 hours")
TIMELINE_NOTES = Limit(50_000, "notes", "notes of a rite's timeline",
                       "the largest built-in rite has 5,952; at this limit render took 19 s and "
                       "314 MB, plot 10 s (500,000 took render 159 s and 790 MB, plot 680 MB)")
CSV_BYTES = Limit(1 * MIB, "bytes", "a releases CSV for judge",
                  "a contest's releases fit in a few KB")
CSV_ROWS = Limit(10_000, "rows", "releases in a CSV for judge",
                 "100 耦 shooting 4 arrows each make 800")
NUMBER_CHARS = Limit(50, "characters", "a number written as text (a setting, --tempo)",
                     "an exact fraction of 1e-99999999 would take hours to build")
LOG_BYTES = Limit(16 * MIB, "bytes", "a show log for check",
                  "a 24-hour show logs about 10 MB; a line of numbers costs about 16 bytes of "
                  "memory a byte: at this limit check took 8 s and 347 MB (64 MB: 1,044 MB)")
LOG_LINES = Limit(500_000, "lines", "a show log for check or --resume",
                  "a 24-hour show logs about 100,000; at this limit (16 MB, 5,000 節) check took "
                  "7 s and 182 MB, --resume 4 s (a million 節 took check 288 s and 686 MB)")
JSON_DEPTH = Limit(100, "levels", "nesting of one show-log line",
                   "a log record is one flat object; Python's parser recurses per level")
INTEGER_DIGITS = Limit(100, "digits", "an integer in a show-log line",
                       "a 節 count or a time has a handful; a 5,000-digit one costs seconds")
MIDI_BYTES = Limit(1 * MIB, "bytes", "a MIDI file for check",
                  "the largest built-in rite writes 93 KB; mido reads about 35,000 events a "
                  "second: 1 MB of notes took check 22 s and 280 MB (2 MB: 30 s, 444 MB)")
JIE_RECORDS = Limit(5_000, "節", "節 records of a show log, or 節 markers of a MIDI file, for "
                    "check", "a rite has at most 42 (大射); each block of them is tested as a grid "
                    "in about 2 ms")
AUDIO_CHANNELS = Limit(16, "channels", "an audio file for check",
                       "a mix is stereo; it is read in blocks whose size grows with them")
AUDIO_SECONDS = Limit(7_200, "seconds", "an audio file for check",
                      "a recording of a rite lasts 1 to 2 hours; check reads 48 kHz mono at "
                      "about 450× real time (2 hours: 16 s, 200 MB on 2 cores; 24 hours, the "
                      "limit before, would take 13–20 minutes)")
AUDIO_RATE = Limit(96_000, "Hz", "the sample rate of an audio file for check",
                   "resample it to 96 kHz or less: the onsets are timed to the sample either "
                   "way, and the analysis's windows grow with the rate (a quarter hour at "
                   "768 kHz took 35 s)")
AUDIO_SAMPLES = Limit(691_200_000, "samples", "an audio file for check (frames × channels)",
                      "2 hours of 48 kHz stereo or of 96 kHz mono: each sample is read and each "
                      "frame analysed (2 hours of 96 kHz mono took 28 s, a quarter hour of 16 "
                      "channels 13 s)")
SHEET_KEY_TOKENS = Limit(300_000, "marks", "the '=', '[' and '.' marks of a sheet's text, "
                        "counted before the TOML parser sees it",
                        "an upper bound on its keys, tables and dotted key parts; the largest "
                        "built-in has 985, and tomllib holds every prefix of every dotted key: "
                        "at this limit validate takes under 400 MB and 15 s")
KEY_PARTS = Limit(100, "parts", "one dotted TOML key or table name (a.b.c…)",
                  "a sheet's keys have 1 to 3; the parser's work grows with the square of "
                  "them (20,000 parts took 2.3 GB)")
SOURCE_TEXT_BYTES = Limit(4 * MIB, "bytes", "a text a cue cites (source.file)",
                          "the largest bundled source text is 150 KB")
SECRET_BYTES = Limit(4 * KIB, "bytes", "a --web-token-file or --peer-key-file",
                     "a token or a key is one line of at most a few hundred bytes")
COMBINATIONS = Limit(256, "combinations", "variant and reading combinations validate compiles "
                    "one by one", "counted, never listed; past it, each variant and each reading "
                    "value alone, all variants together and a seeded sample up to the limit; "
                    "the built-in 燕禮 has 192")

LIMITS: dict[str, Limit] = {
    name: value for name, value in globals().items() if isinstance(value, Limit)
}


class InputFileError(UserError):
    """An input file that cannot be read, or is past a limit: ``problem`` says which."""

    def __init__(self, path: str | Path, problem: str) -> None:
        self.path = str(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")


def over_limit(limit: Limit, got: int) -> str:
    """The message for ``got`` past ``limit``: what, how much, the limit and why."""
    return (f"{got:,} {limit.unit}, over the limit for {limit.what} ({limit.describe()}: "
            f"{limit.reason})")


def read_limited(path: str | Path, limit: Limit, expected: str) -> bytes:
    """The bytes of regular file ``path``, refused (InputFileError) past ``limit``.

    A directory, a device (``/dev/zero``) or a FIFO is refused before it is read — checked
    before it is opened and again on the descriptor, opened without blocking — so nothing
    blocks or grows; ``expected`` names the file wanted ("a .toml cue sheet").
    """
    size = regular_file_size(path, expected)
    if size > limit.value:
        raise InputFileError(path, f"the file is {over_limit(limit, size)}")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        raise InputFileError(path, f"cannot read: {exc.strerror or exc}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # swapped for something else since stat
            raise InputFileError(path, "is not a regular file (a device, a FIFO or a socket): "
                                 f"expected {expected}")
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read(limit.value + 1)
    except OSError as exc:
        raise InputFileError(path, f"cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if len(data) > limit.value:  # it grew since stat
        raise InputFileError(path, f"the file is {over_limit(limit, len(data))}")
    return data


def read_text_limited(path: str | Path, limit: Limit, expected: str,
                      encoding: str = "utf-8-sig") -> str:
    """The text of regular file ``path`` (``read_limited``, then decoded; InputFileError when
    it is not ``encoding`` text)."""
    data = read_limited(path, limit, expected)
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise InputFileError(path, f"is not UTF-8 text (byte {exc.start}): expected "
                             f"{expected}") from None


def regular_file_size(path: str | Path, expected: str) -> int:
    """The size of ``path`` if it is a regular file; else InputFileError saying what it is."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise InputFileError(path, "no such file") from None
    except OSError as exc:
        raise InputFileError(path, f"cannot read: {exc.strerror or exc}") from None
    if stat.S_ISDIR(info.st_mode):
        raise InputFileError(path, f"is a directory: expected {expected}")
    if not stat.S_ISREG(info.st_mode):
        raise InputFileError(path, "is not a regular file (a device, a FIFO or a socket): "
                             f"expected {expected}")
    return info.st_size


_KEY_PART = r"""(?:[A-Za-z0-9_-]+|"[^"\\\n]*"|'[^'\n]*')"""
# A first bare part starts where a run of key characters does (the lookbehind): a key found
# from inside a run is found, longer by the run's head, from its start — the same dots, line
# and leftmost match — and the run is tried once, not once a character (a 40 KB string of
# letters took the search 57 s; its work grew with the square of the run).
_LONG_KEY = re.compile(rf"""(?:(?<![A-Za-z0-9_-])[A-Za-z0-9_-]+|"[^"\\\n]*"|'[^'\n]*')"""
                       rf"(?:[ \t]*\.[ \t]*{_KEY_PART}){{{KEY_PARTS.value},}}")


def toml_text_problem(text: str) -> tuple[str, int] | None:
    """Why TOML ``text`` may not be given to the parser, and the line (None when it may): too
    many keys, tables and dotted parts (``SHEET_KEY_TOKENS``, counted by their marks — dots in
    strings too, an upper bound), or one key of too many parts (``KEY_PARTS``)."""
    marks = text.count("=") + text.count("[") + text.count(".")
    if marks > SHEET_KEY_TOKENS.value:
        return f"the sheet has {over_limit(SHEET_KEY_TOKENS, marks)}", 1
    long_key = _LONG_KEY.search(text)
    if long_key is not None:
        parts = long_key.group().count(".") + 1  # at least (a dot in a quoted part counts)
        line = text.count("\n", 0, long_key.start()) + 1
        return f"a key of {over_limit(KEY_PARTS, parts)}", line
    return None


_DIGITS = re.compile(rf"\d{{{INTEGER_DIGITS.value + 1},}}")


def lines_within(path: str | Path, text: str, limit: Limit = LOG_LINES) -> str:
    """``text`` (of file ``path``), refused (InputFileError) past ``limit`` lines."""
    lines = text.count("\n") + (not text.endswith("\n"))
    if lines > limit.value:
        raise InputFileError(path, f"the file has {over_limit(limit, lines)}")
    return text


def json_line(line: str, where: str) -> object:
    """One line of JSON, parsed within ``JSON_DEPTH`` and ``INTEGER_DIGITS`` (UserError naming
    ``where`` and the limit otherwise, or when it is not JSON)."""
    depth = deepest = 0
    if line.count("[") + line.count("{") > JSON_DEPTH.value:  # else it cannot be too deep
        for ch in line:  # an upper bound: brackets inside strings count too, harmlessly
            if ch in "[{":
                depth += 1
                deepest = max(deepest, depth)
            elif ch in "]}":
                depth -= 1
    if deepest > JSON_DEPTH.value:
        raise UserError(f"{where}: {over_limit(JSON_DEPTH, deepest)}")
    digits = _DIGITS.search(line)
    if digits is not None:
        raise UserError(f"{where}: {over_limit(INTEGER_DIGITS, len(digits.group()))}")
    try:
        return json.loads(line)
    except json.JSONDecodeError as exc:
        raise UserError(f"{where}: not JSON ({exc.msg}, column {exc.colno})") from None
    except (RecursionError, ValueError) as exc:
        raise UserError(f"{where}: not JSON that can be read ({exc})") from None
