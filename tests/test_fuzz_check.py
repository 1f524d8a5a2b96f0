"""Property tests over hostile input to ``yuezheng check`` (issue 15): audio files, show logs and
MIDI files, each mutated from a real one, given to the CLI in a child process; every case must end in exit
0, 2 or 4 with no traceback, within bounded memory and time (as in ``test_fuzz.py``).

Audio starts from a real render of a 射節 (an excerpt) or a click track that passes, written in
each format libsndfile writes (8/16/24/32-bit PCM, float, double; WAV, FLAC, OGG, AIFF), then
mutated: NaN and infinite samples, many channels, no frames, header fields (channels, rate, bit
depth, a data size larger than the file), cuts, flipped bytes, random bytes.  Show logs start
from a real log of `live --auto` and are mutated line by line: deep nesting, huge integers,
wrong types, missing fields, duplicated and reordered records, non-UTF-8 bytes, very long lines,
NaN and Infinity.  MIDI files are yuezheng's own, with 節 markers renumbered, header fields
changed, bytes flipped and cut.  Several files go to one child (``cli.main`` for each in turn), so that a
hundred cases cost seconds.  ``YUEZHENG_FUZZ_SCALE=N`` runs N times as many.
"""

from __future__ import annotations

import io
import json
import struct
from pathlib import Path

import numpy as np
import pytest
import soundfile
from hypothesis import given
from hypothesis import strategies as st

from tests.bounded_run import run_cli, run_cli_each
from tests.fuzzing import BATCH, OUTCOMES, fuzz, report_outcomes  # noqa: F401 (a fixture)

pytestmark = pytest.mark.fuzz

RITE_SPAN = ["--rite", "xiang-she", "--from", "she-jie", "--until", "she-jie",
             "--jie-seconds", "0.5"]


def _check_each(tmp: Path, kind: str, files: dict[str, list[str]]) -> None:
    """``check`` each file (with its extra arguments) in one child; tally the exit codes."""
    run, codes = run_cli_each([["check", name, *extra] for name, extra in files.items()],
                              cwd=tmp)
    run.assert_clean((0,))
    assert len(codes) == len(files), run.err[-2000:]
    for code in codes:
        assert code in (0, 2, 4), run.err[-2000:]
        OUTCOMES[f"{kind} exit {code}"] += 1


# ── audio ────────────────────────────────────────────────────────────────────────────────────

FORMATS = [("WAV", "PCM_U8", ".wav"), ("WAV", "PCM_16", ".wav"), ("WAV", "PCM_24", ".wav"),
           ("WAV", "PCM_32", ".wav"), ("WAV", "FLOAT", ".wav"), ("WAV", "DOUBLE", ".wav"),
           ("FLAC", "PCM_16", ".flac"), ("FLAC", "PCM_24", ".flac"), ("OGG", "VORBIS", ".ogg"),
           ("AIFF", "PCM_16", ".aiff"), ("AIFF", "FLOAT", ".aif")]
HOSTILE_FIELD = st.sampled_from([0, 1, 2, 3, 7, 17, 255, 0xFFFF, 0x7FFFFFFF, 0xFFFFFFFF,
                                 2 ** 31, 96_000 * 100, 8, 24, 33])


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> np.ndarray:
    """A real render of 鄉射禮's 射節 (節 of 0.5 s), 48 kHz stereo."""
    path = tmp_path_factory.mktemp("render") / "sj.wav"
    run_cli("render", "xiang-she", "--from", "she-jie", "--until", "she-jie",
            "--jie-seconds", "0.5", "-o", str(path)).assert_clean((0,))
    return soundfile.read(str(path), dtype="float64", always_2d=True)[0]


def _clicks(rate: int, channels: int, seconds: float) -> np.ndarray:
    """Clicks every 0.5 s (5 ms of decaying noise): a track `check` passes."""
    x = np.zeros((max(0, round(seconds * rate)), channels))
    burst = np.random.default_rng(0).uniform(-0.8, 0.8, max(1, rate // 200))
    burst *= np.linspace(1.0, 0.0, burst.size)
    for t in np.arange(0.25, seconds - 0.1, 0.5):
        at = round(t * rate)
        x[at:at + burst.size] += burst[: x.shape[0] - at, None]
    return x


def _samples(draw: st.DrawFn, rendered: np.ndarray) -> tuple[np.ndarray, int]:
    """(frames × channels samples, rate): a render excerpt, clicks, or many channels of them."""
    source = draw(st.sampled_from(["clicks", "render", "clicks", "channels", "empty"]))
    if source == "render":
        start = draw(st.integers(0, rendered.shape[0] - 240_000))
        return rendered[start:start + draw(st.sampled_from([144_000, 240_000, 48_000]))], 48_000
    rate = draw(st.sampled_from([8_000, 22_050, 44_100, 48_000, 96_000]))
    if source == "channels":  # more channels than check reads
        return _clicks(8_000, draw(st.sampled_from([3, 16, 17, 64])), 2.2), 8_000
    if source == "empty":
        return np.zeros((0, draw(st.sampled_from([1, 2])))), rate
    return _clicks(rate, draw(st.sampled_from([1, 2])), draw(st.sampled_from([3.0, 3.0, 1.0]))), rate


def _hostile_values(draw: st.DrawFn, x: np.ndarray) -> np.ndarray:
    """Samples made NaN, infinite, huge or constant in places."""
    how = draw(st.sampled_from(["none"] * 6 + ["nan", "inf", "huge", "dc"]))
    if how == "none" or not x.size:
        return x
    x = x.copy()
    at = draw(st.integers(0, x.shape[0] - 1))
    span = draw(st.sampled_from([1, 100, x.shape[0]]))
    value = {"nan": np.nan, "inf": draw(st.sampled_from([np.inf, -np.inf])), "huge": 1e30,
             "dc": 1.0}[how]
    x[at:at + span] = value
    return x


def _wav_fields(data: bytes) -> dict[str, tuple[int, str]]:
    """Offsets and struct formats of a RIFF/WAVE header's fields."""
    fields = {"riff size": (4, "<I")}
    at = 12
    while at + 8 <= len(data):
        chunk, size = data[at:at + 4], struct.unpack_from("<I", data, at + 4)[0]
        if chunk == b"fmt ":
            fields |= {"format": (at + 8, "<H"), "channels": (at + 10, "<H"),
                       "rate": (at + 12, "<I"), "byte rate": (at + 16, "<I"),
                       "block align": (at + 20, "<H"), "bits": (at + 22, "<H")}
        elif chunk == b"data":
            fields["data size"] = (at + 4, "<I")
            break
        at += 8 + size + (size & 1)
    return fields


def _mutated(draw: st.DrawFn, data: bytes, container: str) -> bytes:
    """The file's bytes with header fields set to hostile values, cut, flipped or extended."""
    data = bytearray(data)
    fields = _wav_fields(bytes(data)) if container == "WAV" else {}
    for _ in range(draw(st.sampled_from([0] * 4 + [1, 2]) if fields else st.just(0))):
        wanted = [f for f in ("channels", "rate", "data size") if f in fields]  # favoured
        at, form = fields[draw(st.sampled_from(sorted(fields) + wanted * 2))]
        limit = 0xFFFF if form == "<H" else 0xFFFFFFFF
        struct.pack_into(form, data, at, min(draw(HOSTILE_FIELD), limit))
    for _ in range(draw(st.sampled_from([0] * 4 + [1, 5]))):
        if data:
            data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
    ending = draw(st.sampled_from(["whole"] * 8 + ["cut", "cut header", "junk"]))
    if ending == "cut":
        del data[len(data) - draw(st.integers(0, len(data))):]
    elif ending == "cut header":
        del data[draw(st.integers(0, min(len(data), 64))):]
    elif ending == "junk":
        data += draw(st.binary(max_size=64))
    return bytes(data)


def _encoded(x: np.ndarray, rate: int, container: str, subtype: str) -> bytes:
    buf = io.BytesIO()
    with np.errstate(all="ignore"):
        soundfile.write(buf, x, rate, subtype=subtype, format=container)
    return buf.getvalue()


@st.composite
def audio_files(draw: st.DrawFn, rendered: np.ndarray) -> tuple[bytes, str, bool]:
    """(the file's bytes, its extension, whether it holds the render)."""
    if draw(st.integers(0, 9)) == 9:  # not audio at all (hypothesis favours 0: mostly audio)
        prefix = draw(st.sampled_from([b"", b"RIFF", b"RIFF\xff\xff\xff\xffWAVEfmt ", b"fLaC",
                                       b"OggS", b"FORM"]))
        return prefix + draw(st.binary(max_size=200)), draw(st.sampled_from(FORMATS))[2], False
    container, subtype, ext = draw(st.sampled_from(FORMATS))
    x, rate = _samples(draw, rendered)
    if container == "OGG" and not x.size:
        x = np.zeros((1, x.shape[1]))  # libvorbis writes no empty stream
    x = _hostile_values(draw, x)
    try:
        data = _encoded(x, rate, container, subtype)
    except (soundfile.LibsndfileError, AssertionError):  # FLAC past 8 channels, Vorbis of NaN
        container, subtype, ext = "WAV", "FLOAT", ".wav"
        data = _encoded(x, rate, container, subtype)
    data = _mutated(draw, data, container)
    if draw(st.integers(0, 7)) == 7:  # the wrong audio extension for its content
        ext = draw(st.sampled_from([".wav", ".flac", ".ogg", ".aiff"]))
    return data, ext, x.shape[0] > 100_000


@fuzz(6)
@given(st.data())
def test_audio_for_check(tmp_path_factory, rendered: np.ndarray, data: st.DataObject) -> None:
    tmp = tmp_path_factory.mktemp("audio")
    files: dict[str, list[str]] = {}
    for i in range(BATCH):
        content, ext, long_render = data.draw(audio_files(rendered))
        (tmp / f"a{i}{ext}").write_bytes(content)
        extra = data.draw(st.sampled_from([[], [], ["--json"], ["--verbose"]]))
        if long_render and data.draw(st.booleans()):
            extra = RITE_SPAN + extra  # checked against the timeline's stroke grid
        files[f"a{i}{ext}"] = extra
    _check_each(tmp, "audio", files)


# ── show logs ────────────────────────────────────────────────────────────────────────────────

@pytest.fixture(scope="module")
def show_log(tmp_path_factory) -> list[dict]:
    """The records of a real show log: `live --auto` through 鄉射禮's 射節 (節 of 0.1 s)."""
    path = tmp_path_factory.mktemp("log") / "show.jsonl"
    run_cli("live", "xiang-she", "--from", "she-jie", "--until", "she-jie", "--auto",
            "--jie-seconds", "0.1", "--output", "memory:", "--plain",
            "--log", str(path)).assert_clean((0, 1))  # 1: a loaded machine sent late
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert sum(r["event"] == "jie" for r in records) >= 20
    return records


RAW = "@@raw@@"  # a value replaced by raw text after the record is written
RAW_TEXT = st.sampled_from([
    "NaN", "Infinity", "-Infinity", "1e999", "-0", "1" + "0" * 99, "1" + "0" * 100,
    "9" * 5000, "[" * 100 + "]" * 100, "[" * 101 + "]" * 101, "[" * 100_000, "{" * 5000,
    '"\\ud800"', '"\\u001b[2J"', "tru", '"' + "x" * 2_000_000 + '"', "1.5e-999999",
])
HOSTILE_VALUE = st.sampled_from([
    None, True, False, "", "x", "\x1b[31m", "\n", "節 1/5", 0, -1, 1, 2, 5, 10 ** 9, 2 ** 63,
    -2 ** 63, 0.5, 1e308, -1e308, [], {}, [1, 2], {"t": 1}, list(range(300)), RAW,
]) | st.integers() | st.floats() | st.text(max_size=10)
KEYS = st.sampled_from(["event", "t", "k", "n", "cue", "cycle", "times", "late", "missed",
                        "lost", "worst_ms", "rite", "cues"])
EVENTS = st.sampled_from(["jie", "output-lost", "output-regained", "late", "start", "show"])


def _mutate_records(draw: st.DrawFn, records: list[dict]) -> list[dict]:
    """The log's records with fields changed or removed, records added, repeated, reordered."""
    records = [dict(r) for r in records]
    for _ in range(draw(st.integers(0, 4))):
        how = draw(st.sampled_from(["set", "set", "delete", "add", "repeat", "reorder", "drop"]))
        at = draw(st.integers(0, len(records) - 1)) if records else 0
        if how == "add" or not records:
            records.insert(at, {"event": draw(EVENTS), "t": draw(HOSTILE_VALUE),
                                draw(KEYS): draw(HOSTILE_VALUE)})
        elif how == "set":
            records[at][draw(KEYS)] = draw(HOSTILE_VALUE)
        elif how == "delete":
            records[at].pop(draw(KEYS), None)
        elif how == "repeat":
            span = draw(st.integers(1, 12))
            records[at:at] = records[at:at + span] * draw(st.sampled_from([2, 100, 5_000]))
        elif how == "reorder":
            records[at:] = draw(st.permutations(records[at:at + 10])) + records[at + 10:]
        else:
            del records[at:at + draw(st.integers(1, 20))]
    return records


@st.composite
def log_files(draw: st.DrawFn, base: list[dict]) -> bytes:
    """A show log from ``base`` (a real one): records mutated, then its lines as bytes, some
    with raw JSON text (deep nesting, huge numbers, NaN), cut, or not UTF-8."""
    records = _mutate_records(draw, base)
    lines = [json.dumps(r, ensure_ascii=draw(st.booleans())) for r in records]
    raw = [i for i, line in enumerate(lines) if f'"{RAW}"' in line]
    for i in draw(st.lists(st.sampled_from(raw), max_size=2)) if raw else []:
        lines[i] = lines[i].replace(f'"{RAW}"', draw(RAW_TEXT), 1)
    if draw(st.integers(0, 5)) == 5:  # a line of raw text
        lines.insert(draw(st.integers(0, len(lines))), draw(RAW_TEXT))
    text = "\n".join(lines).replace(f'"{RAW}"', "null")
    if draw(st.integers(0, 3)) == 3:
        text = draw(st.sampled_from(["\ufeff", "\n\n", ""])) + text.replace(
            "\n", draw(st.sampled_from(["\n", "\r\n", "\n\n", "\r"])))
    data = bytearray(text.encode("utf-8", "surrogatepass"))
    for _ in range(draw(st.sampled_from([0] * 5 + [1, 3]))):  # bytes that are not UTF-8
        if data:
            data[draw(st.integers(0, len(data) - 1))] = draw(st.sampled_from([0xFF, 0x80, 0xC0]))
    if draw(st.integers(0, 5)) == 5:  # a crash cut the last line short
        del data[len(data) - draw(st.integers(0, 200)):]
    return bytes(data)


@fuzz(8)
@given(st.data())
def test_show_logs_for_check(tmp_path_factory, show_log: list[dict],
                             data: st.DataObject) -> None:
    tmp = tmp_path_factory.mktemp("logs")
    files: dict[str, list[str]] = {}
    for i in range(BATCH):
        name = f"l{i}{data.draw(st.sampled_from(['.jsonl', '.jsonl', '.ndjson']))}"
        (tmp / name).write_bytes(data.draw(log_files(show_log)))
        files[name] = data.draw(st.sampled_from([[], ["--json"], ["--verbose"]]))
    _check_each(tmp, "show log", files)


# ── MIDI files ───────────────────────────────────────────────────────────────────────────────

@pytest.fixture(scope="module")
def midi_file(tmp_path_factory) -> bytes:
    """yuezheng's own MIDI file of 鄉射禮's 射節 (節 of 0.5 s): markers, notes, pitch bends."""
    path = tmp_path_factory.mktemp("midi") / "sj.mid"
    run_cli("midi", "xiang-she", "--from", "she-jie", "--until", "she-jie",
            "--jie-seconds", "0.5", "-o", str(path)).assert_clean((0,))
    return path.read_bytes()


JIE_MARKER = "節 1/5".encode()


@st.composite
def midi_files(draw: st.DrawFn, base: bytes) -> bytes:
    """The file with 節 markers renumbered, header fields changed, bytes flipped, cut."""
    data = bytearray(base)
    markers = [i for i in range(len(data)) if data.startswith(JIE_MARKER[:4], i)]
    for _ in range(draw(st.sampled_from([0, 1, 3]))):  # "節 k/5" → "節 K/N", the same length
        at = draw(st.sampled_from(markers)) + len(JIE_MARKER) - 3
        data[at:at + 3] = draw(st.sampled_from([b"0/5", b"9/5", b"1/0", b"5/1", b"1/9", b"x/5",
                                                b"1/\xff", b"2/5", b"1/1"]))
    for field in draw(st.lists(st.sampled_from([(8, ">H"), (10, ">H"), (12, ">H")]),
                               max_size=2)):  # type, tracks, ticks per beat
        struct.pack_into(field[1], data, field[0], draw(st.sampled_from([0, 1, 2, 3, 0x7FFF,
                                                                         0xE728, 0xFFFF])))
    for _ in range(draw(st.sampled_from([0] * 4 + [1, 10]))):
        data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
    if draw(st.integers(0, 4)) == 4:
        del data[len(data) - draw(st.integers(0, len(data))):]
    return bytes(data)


@fuzz(3)
@given(st.data())
def test_midi_for_check(tmp_path_factory, midi_file: bytes, data: st.DataObject) -> None:
    tmp = tmp_path_factory.mktemp("midi")
    files: dict[str, list[str]] = {}
    for i in range(BATCH):
        (tmp / f"m{i}.mid").write_bytes(data.draw(midi_files(midi_file)))
        files[f"m{i}.mid"] = data.draw(st.sampled_from([[], ["--verbose"], ["--channel", "10"],
                                                        RITE_SPAN]))
    _check_each(tmp, "MIDI", files)
