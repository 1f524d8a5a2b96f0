"""Property tests over hostile input (issue 15): sheets (built-ins mutated, and generated),
realization files (MIDI, MusicXML and .mxl bytes) and the judge's CSV, each given to the CLI in
a child process, which must exit 0, 2 or 4 with no traceback, within bounded memory and time.

Several files go to one ``validate`` run (it reports each in turn), so a few hundred cases cost
about two minutes.  ``YUEZHENG_FUZZ_SCALE=N`` runs N times as many.  The number of cases run
and their exit codes are printed at the end.  The files `check` reads (audio, show logs, MIDI)
are fuzzed in ``test_fuzz_check.py``; the settings and the tally are shared (``fuzzing.py``).
"""

from __future__ import annotations

import io
import json
import math
import os
import stat
import struct
import zipfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from mido.midifiles.midifiles import encode_variable_int

from cues.builtin import BUILTIN_RITES, builtin_text
from cues.sheet.cue_table import CUE_KEYS
from cues.sheet.loader import SETTING_KEYS
from tests.bounded_run import run_cli, run_cli_each
from tests.fuzzing import BATCH, OUTCOMES, fuzz, report_outcomes  # noqa: F401 (a fixture)

pytestmark = pytest.mark.fuzz


def _validate_batch(tmp: Path, kind: str, files: list[str]) -> None:
    run = run_cli("validate", *files, cwd=tmp)
    run.assert_clean((0, 2))
    valid = run.out.count(": ok — ")
    OUTCOMES[f"{kind} ok"] += valid
    OUTCOMES[f"{kind} refused (exit 2)"] += len(files) - valid


# ── values a sheet may hold ──────────────────────────────────────────────────────────────────

HOSTILE_TEXT = st.sampled_from([
    "\x1b[31m", "\n", "\u202e", "a b", "a/b", "", " ", "《》", "騶虞", "南陔", "9" * 400,
    "after:c0", "follow", "signal:x", "go", "1e-99999999", "nan", "射節", "\x00", "遷樂",
]) | st.text(max_size=20)
HOSTILE_NUMBER = st.sampled_from([
    0, -1, 1, 5, 9, 99, 100, 128, 129, 86_400, 86_401, 2 ** 63 - 1, -(2 ** 63), 0.5, 1e308,
    -1e308, math.inf, -math.inf, math.nan, 1e-300,
]) | st.integers(-10, 1000) | st.floats(allow_nan=True, allow_infinity=True)
SCALAR = HOSTILE_TEXT | HOSTILE_NUMBER | st.booleans()
NESTED_KEYS = st.sampled_from(["name", "count", "title", "by", "x", "y", "work", "quote",
                               "file", "realization"])


def _nested(inner: st.SearchStrategy) -> st.SearchStrategy:
    """Arrays and inline tables of ``inner``."""
    return st.one_of(st.lists(inner, max_size=4),
                     st.dictionaries(NESTED_KEYS, inner, max_size=3))


VALUE = st.recursive(SCALAR, _nested, max_leaves=8)


def _toml(value: object) -> str:
    """``value`` as an inline TOML value (JSON's string escapes are TOML's)."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        return ("inf" if value > 0 else "-inf") if math.isinf(value) else repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    assert isinstance(value, dict)
    return "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + " }"


@st.composite
def generated_sheets(draw: st.DrawFn) -> str:
    """A sheet built from hostile values under the keys a sheet knows."""
    parts = [f"[rite]\nid = {_toml(draw(HOSTILE_TEXT))}\ntitle = {_toml(draw(HOSTILE_TEXT))}\n"]
    settings_ = draw(st.dictionaries(st.sampled_from(sorted(SETTING_KEYS)), SCALAR, max_size=3))
    parts.append("[settings]\n" + "".join(f"{k} = {_toml(v)}\n" for k, v in settings_.items()))
    for i in range(draw(st.integers(0, 4))):
        cue = {"id": f"c{i}", "kind": draw(st.sampled_from(["笙", "射節", "合樂", "停", "陔"])),
               "at": "a"}
        cue |= draw(st.dictionaries(st.sampled_from(sorted(CUE_KEYS)), VALUE, max_size=5))
        parts.append("[[cue]]\n" + "".join(f"{k} = {_toml(v)}\n" for k, v in cue.items()))
    return "".join(parts)


INSERTS = st.sampled_from([
    "\x1b[2J", "\n[[cue]]\nid = \"z\"\n", "]]", '"', " = 1e999", "nan", "\u202e", "9" * 300,
    "\n[settings]\ntempo_bpm = 0\n", "\npre_wait_s = 86400\n", "\nzhong = 99\n",
    "\nou = [" + ", ".join(['"o"'] * 200) + "]\n", "\njie = 36\nlisten = 32\n",
    "\nrealization = \"/dev/zero\"\n",
]) | st.text(max_size=30)


@st.composite
def mutated_sheets(draw: st.DrawFn) -> str:
    """A built-in sheet with spans deleted, duplicated or replaced by hostile text."""
    text = builtin_text(draw(st.sampled_from(BUILTIN_RITES)))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(text)))
        span = draw(st.integers(0, 200))
        how = draw(st.sampled_from(["delete", "insert", "duplicate", "replace"]))
        if how == "delete":
            text = text[:at] + text[at + span:]
        elif how == "duplicate":
            text = text[:at] + text[at:at + span] * draw(st.integers(2, 50)) + text[at:]
        else:
            cut = span if how == "replace" else 0
            text = text[:at] + draw(INSERTS) + text[at + cut:]
    return text


def _write_sheets(tmp: Path, texts: list[str]) -> list[str]:
    names = []
    for i, text in enumerate(texts):
        (tmp / f"s{i}.toml").write_text(text, encoding="utf-8", errors="surrogatepass")
        names.append(f"s{i}.toml")
    return names


@fuzz(8)
@given(st.lists(mutated_sheets(), min_size=BATCH, max_size=BATCH))
def test_mutated_builtin_sheets(tmp_path_factory, texts: list[str]) -> None:
    tmp = tmp_path_factory.mktemp("mutated")
    _validate_batch(tmp, "mutated sheet", _write_sheets(tmp, texts))


@fuzz(6)
@given(st.lists(generated_sheets(), min_size=BATCH, max_size=BATCH))
def test_generated_sheets(tmp_path_factory, texts: list[str]) -> None:
    tmp = tmp_path_factory.mktemp("generated")
    _validate_batch(tmp, "generated sheet", _write_sheets(tmp, texts))


# ── realization files ────────────────────────────────────────────────────────────────────────

REALIZED_SHEET = ('[rite]\nid = "r"\ntitle = "t"\n[[cue]]\nid = "c"\nkind = "笙"\nat = "a"\n'
                  'pieces = [{{ title = "由庚", by = "笙", realization = "{name}" }}]\n'
                  'source = {{ work = "w", quote = "q" }}\n')


def _vlq(value: int) -> bytes:
    return bytes(encode_variable_int(value))


@st.composite
def midi_files(draw: st.DrawFn) -> bytes:
    """A small MIDI file of hostile notes and tempi, then bytes flipped or cut."""
    track = b""
    for _ in range(draw(st.sampled_from([2, 4, 6, 0, 1]))):
        delta = draw(st.sampled_from([0, 1, 480, 0x0FFFFFFF]) | st.integers(0, 5000))
        if draw(st.booleans()):
            tempo = draw(st.sampled_from([1, 500_000, 0xFFFFFF]))
            track += _vlq(delta) + b"\xff\x51\x03" + tempo.to_bytes(3, "big")
        status = draw(st.sampled_from([0x90, 0x90, 0x80, 0x99]))
        key = draw(st.sampled_from([60, 62]) | st.integers(0, 127))  # mostly pairs that match
        velocity = draw(st.sampled_from([64]) | st.integers(0, 127))
        track += _vlq(delta) + bytes([status, key, velocity])
        if not draw(st.booleans()):  # mostly its note-off
            track += _vlq(draw(st.sampled_from([480]) | st.integers(0, 5000)))
            track += bytes([0x80 | status & 0x0F, key, 0])
    division = draw(st.sampled_from([96, 480, 1, 0x7FFF, 0xE728]))
    data = bytearray(b"MThd" + struct.pack(">IHHH", 6, draw(st.sampled_from([0, 1, 0, 1, 2])), 1,
                                           division) + b"MTrk"
                     + struct.pack(">I", len(track) + 4) + track + b"\x00\xff\x2f\x00")
    for _ in range(draw(st.sampled_from([0] * 6 + [1, 3]))):  # mostly well formed
        data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
    if draw(st.integers(0, 5)) == 5:  # hypothesis favours 0: keep the file whole
        del data[draw(st.integers(0, len(data))):]
    return bytes(data)


@st.composite
def musicxml_files(draw: st.DrawFn) -> bytes:
    """A one-part score with hostile octaves, durations, divisions and transpositions."""
    notes = "".join(
        f"<note><pitch><step>{draw(st.sampled_from('CDEFGAB'))}</step>"
        f"<alter>{draw(st.sampled_from([0, 1, -1, 50]))}</alter>"
        f"<octave>{draw(st.sampled_from([4, 5]) | st.integers(-12, 20))}</octave></pitch>"
        f"<duration>{draw(st.sampled_from([1, 0, -4, 10 ** 9]) | st.integers(1, 64))}</duration>"
        "</note>" for _ in range(draw(st.sampled_from([1, 2, 4, 0]))))
    shift = draw(st.sampled_from(["", "<transpose><diatonic>0</diatonic><chromatic>200"
                                  "</chromatic><octave-change>9</octave-change></transpose>"]))
    text = ('<?xml version="1.0"?><score-partwise version="3.1"><part-list><score-part id="P1">'
            '<part-name>x</part-name></score-part></part-list><part id="P1"><measure number="1">'
            f"<attributes><divisions>{draw(st.sampled_from([1, 0, 480, 10 ** 12]))}</divisions>"
            f"{shift}</attributes>{notes}</measure></part></score-partwise>").encode()
    cut = draw(st.integers(0, len(text)))
    return text[:cut] + draw(st.binary(max_size=10)) if draw(st.booleans()) else text


@st.composite
def mxl_files(draw: st.DrawFn) -> bytes:
    """A zip archive: a score, a container naming any member, zeros that unpack large."""
    buf = io.BytesIO()
    method = draw(st.sampled_from([zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2,
                                   zipfile.ZIP_LZMA]))
    with zipfile.ZipFile(buf, "w", method) as archive:
        if draw(st.booleans()):
            target = draw(st.sampled_from(["score.xml", "missing.xml", "../x", ""]))
            archive.writestr("META-INF/container.xml",
                             f'<container><rootfiles><rootfile full-path="{target}"/>'
                             "</rootfiles></container>")
        archive.writestr(draw(st.sampled_from(["score.xml", "a.musicxml", "x.bin"])),
                         b"\0" * draw(st.sampled_from([10, 2 * 1024 * 1024]))
                         if draw(st.booleans()) else draw(musicxml_files()))
    data = buf.getvalue()
    return data[:draw(st.integers(0, len(data)))] if draw(st.booleans()) else data


def _validate_realizations(tmp: Path, kind: str, suffix: str, files: list[bytes]) -> None:
    sheets = []
    for i, data in enumerate(files):
        (tmp / f"r{i}{suffix}").write_bytes(data)
        (tmp / f"s{i}.toml").write_text(REALIZED_SHEET.format(name=f"r{i}{suffix}"),
                                        encoding="utf-8")
        sheets.append(f"s{i}.toml")
    _validate_batch(tmp, kind, sheets)


@fuzz(4)
@given(st.lists(midi_files(), min_size=BATCH, max_size=BATCH))
def test_midi_realizations(tmp_path_factory, files: list[bytes]) -> None:
    _validate_realizations(tmp_path_factory.mktemp("mid"), "MIDI realization", ".mid", files)


@fuzz(2)
@given(st.lists(musicxml_files(), min_size=BATCH, max_size=BATCH))
def test_musicxml_realizations(tmp_path_factory, files: list[bytes]) -> None:
    _validate_realizations(tmp_path_factory.mktemp("xml"), "MusicXML realization", ".musicxml",
                           files)


@fuzz(2)
@given(st.lists(mxl_files(), min_size=BATCH, max_size=BATCH))
def test_mxl_realizations(tmp_path_factory, files: list[bytes]) -> None:
    _validate_realizations(tmp_path_factory.mktemp("mxl"), "MXL realization", ".mxl", files)


# ── the judge's CSV ──────────────────────────────────────────────────────────────────────────

CSV_CELL = st.sampled_from([
    "0", "1", "2", "右", "左", "right", "上射", "nan", "inf", "-1", "1e-99999999", "1e308",
    "9" * 5000, '"', "", "\x1b[31m", "x" * 200_000,
]) | st.text(max_size=8)


@st.composite
def release_csvs(draw: st.DrawFn) -> str:
    header = draw(st.sampled_from(["time_s,side,hit", "hit,time_s,side,extra", "a,b", ""]))
    rows = draw(st.lists(st.lists(CSV_CELL, min_size=0, max_size=4), max_size=6))
    return header + "\n" + "\n".join(",".join(row) for row in rows) + "\n"


@fuzz(30)
@given(release_csvs())
def test_judge_csv(tmp_path_factory, text: str) -> None:
    path = tmp_path_factory.mktemp("csv") / "r.csv"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    run = run_cli("judge", "xiang-she", "--releases", str(path))
    run.assert_clean()
    OUTCOMES[f"judge CSV exit {run.code}"] += 1


# ── files named that are no regular files; combination bombs (issue 27) ───────────────────────

NOT_FILES = ["dev-zero", "fifo", "fifo-link", "directory", "char-node"]
SOURCE_SHEET = ('[rite]\nid = "x"\ntitle = "t"\n[[cue]]\nid = "c"\nkind = "笙"\nat = "a"\n'
                'trigger = "go"\npieces = ["南陔"]\nsource = {{ work = "w", file = "{file}", '
                'quote = "q" }}\n')
LIVE = ("live", "xiang-she", "--output", "memory:", "--auto", "--plain")


def _not_a_file(tmp: Path, kind: str, name: str) -> str:
    """A path named ``name`` in ``tmp`` that is ``kind`` (/dev/zero through a symlink, a FIFO
    no one writes, a symlink to one, a directory, a character device node like /dev/zero)."""
    path = tmp / name
    if kind == "dev-zero":
        path.symlink_to("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "fifo-link":
        os.mkfifo(tmp / f"real-{name}")
        path.symlink_to(tmp / f"real-{name}")
    elif kind == "directory":
        path.mkdir()
    else:
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 5))  # /dev/zero's numbers
    return str(path)


@pytest.mark.parametrize("kind", NOT_FILES)
def test_every_named_input_refuses_what_is_no_regular_file(tmp_path: Path, kind: str) -> None:
    """Each file the user names — a sheet, a cue's source.file, a realization, a file for
    check, a releases CSV, a log to resume, a token file, a key file — refused with exit 2 at
    once, reading nothing, each within 100 MB (before: /dev/zero read to gigabytes, a FIFO
    blocked forever)."""
    def named(name: str) -> str:
        return _not_a_file(tmp_path, kind, name)

    source = tmp_path / "cites.toml"
    source.write_text(SOURCE_SHEET.format(file=named("text.txt")), encoding="utf-8")
    realized = tmp_path / "realized.toml"
    realized.write_text(REALIZED_SHEET.format(name=Path(named("r.mid")).name), encoding="utf-8")
    argvs = [
        ["validate", named("sheet.toml")],
        ["validate", str(source)],
        ["validate", str(realized)],
        ["check", named("take.mid")],
        ["check", named("show.jsonl")],
        ["judge", "xiang-she", "--releases", named("r.csv")],
        [*LIVE, "--resume", named("resume.jsonl")],
        [*LIVE, "--web", "0", "--web-token-file", named("token")],
        [*LIVE, "--role", "main", "--peer", "osc.udp://127.0.0.1:9", "--listen", "0",
         "--peer-key-file", named("key")],
    ]
    if kind in ("dev-zero", "fifo"):  # each in a child of its own, measured alone
        for argv in argvs:
            run = run_cli(*argv, cwd=tmp_path, timeout=30)
            run.assert_clean((2,))
            assert run.rss_mb < 100 and run.cpu_seconds < 5, (argv, run.rss_mb, run.cpu_seconds)
        OUTCOMES[f"{kind} as a named input: refused (exit 2)"] += len(argvs)
        return
    run, codes = run_cli_each(argvs, cwd=tmp_path, timeout=120)
    run.assert_clean((0,))
    assert codes == [2] * len(argvs), run.err[-3000:]
    OUTCOMES[f"{kind} as a named input: refused (exit 2)"] += len(codes)


def test_a_log_fifo_no_one_reads_does_not_block_the_show(tmp_path: Path) -> None:
    fifo = tmp_path / "show.jsonl"
    os.mkfifo(fifo)
    run = run_cli(*LIVE, "--from", "she-jie", "--until", "she-jie", "--jie-seconds", "0.1",
                  "--log", str(fifo), timeout=60)
    run.assert_clean((2,))
    assert "a FIFO that no one is reading" in run.err
    OUTCOMES["--log FIFO without a reader: refused (exit 2)"] += 1


def _bomb(variants: int, readings: int) -> str:
    """A sheet of ``variants`` [[variant]]s and ``readings`` two-value readings (2 KB to 8 KB)."""
    text = '[rite]\nid = "x"\ntitle = "t"\n'
    for i in range(variants):
        text += f'[[variant]]\nid = "v{i}"\ntitle = "t"\nsource = {{ work = "w", quote = "q" }}\n'
    for i in range(readings):
        text += f'[[reading]]\nname = "r{i}"\nvalue = "a"\nnote = "n"\n'
        for v in "ab":
            text += (f'[[reading.choice]]\nvalue = "{v}"\nsource = {{ work = "w", quote = "q" }}'
                     f'\ncues = {{ c = {{ at = "{v}{i}" }} }}\n')
    return text + ('[[cue]]\nid = "c"\nkind = "笙"\nat = "a"\ntrigger = "go"\npieces = ["南陔"]\n'
                   'source = { work = "w", quote = "q" }\n')


@pytest.mark.parametrize(("variants", "readings"), [(50, 0), (0, 30), (25, 15)])
def test_a_combination_bomb_validates_in_bounded_work(
        tmp_path: Path, variants: int, readings: int) -> None:
    """2^50 combinations are counted, not built (before: 19.7 GB in 60 s)."""
    sheet = tmp_path / "bomb.toml"
    sheet.write_text(_bomb(variants, readings), encoding="utf-8")
    run = run_cli("validate", str(sheet))
    run.assert_clean((0,))
    assert run.rss_mb < 200 and run.cpu_seconds < 10, (run.rss_mb, run.cpu_seconds)
    OUTCOMES[f"{variants} variants × {readings} readings: validated"] += 1
