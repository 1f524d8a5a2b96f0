"""Run the CLI on inputs built at each documented limit; print its time and peak memory.

Issue 27, item 8: every limit of ``cues/limits.py`` that bounds work is to be chosen so that the
work at the limit stays within 500 MB (peak RSS) and 30 s on a 2-core machine.  Each case here
builds an input *at* a limit in a temporary directory (a sheet of realizations making
``TIMELINE_NOTES`` notes, a MIDI file of ``MIDI_BYTES`` bytes and ``JIE_RECORDS`` 節 markers, a
show log of ``LOG_LINES`` lines, ``LOG_BYTES`` bytes and ``JIE_RECORDS`` 節, a WAV of
``AUDIO_SECONDS`` seconds as a sparse file — mono, at ``AUDIO_RATE``, in stereo, and of
``AUDIO_CHANNELS`` up to ``AUDIO_SAMPLES`` —, a sheet of ``CUES`` cues, ``SHEET_VALUES`` values
and ``SHEET_BYTES`` bytes), runs ``python cli.py ...`` on
it in a fresh child process, one at a time, and prints the child's wall time and peak RSS
(``os.wait4``'s ``ru_maxrss`` of that child) against the budget.  A case whose command does not
end by ``--timeout`` is killed and shown as over budget.

    python benchmarks/limits.py [CASE ...] [--list] [--timeout S] [--notes N]
                                [--audio-seconds S] [--json]

``--notes`` measures the notes-* cases below ``TIMELINE_NOTES`` (to choose a limit);
``--audio-seconds`` checks a shorter WAV than ``AUDIO_SECONDS`` (the time grows with its
length: the figure at the limit is then the measured one scaled, and the table says so).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mido.midifiles.midifiles import encode_variable_int  # noqa: E402

from cues.limits import (  # noqa: E402
    AUDIO_CHANNELS,
    AUDIO_RATE,
    AUDIO_SAMPLES,
    AUDIO_SECONDS,
    CUES,
    JIE_RECORDS,
    KEY_PARTS,
    LOG_BYTES,
    LOG_LINES,
    MIDI_BYTES,
    REALIZATION_NOTES,
    SHEET_BYTES,
    SHEET_VALUES,
    TIMELINE_NOTES,
    Limit,
)

BUDGET_MB = 500
BUDGET_S = 30.0

CUE = ('[[cue]]\nid = "{id}"\nkind = "笙"\nat = "a"\ntrigger = "{trigger}"\npieces = [{piece}]\n'
       'source = {{ work = "w", quote = "{quote}" }}\n{extra}\n')
HEAD = '[rite]\nid = "x"\ntitle = "t"\n'
PENTATONIC = (60, 62, 64, 67, 69)


def _vlq(value: int) -> bytes:
    return bytes(encode_variable_int(value))  # mido's: the file read back by another's code


def _smf(track: bytes, division: int = 480) -> bytes:
    track += b"\x00\xff\x2f\x00"
    return (b"MThd" + struct.pack(">IHHH", 6, 0, 1, division) + b"MTrk"
            + struct.pack(">I", len(track)) + track)


def realization(notes: int, step: int) -> bytes:
    """A MIDI realization of ``notes`` notes one after another, ``step`` ticks each (480 a
    beat), walking a pentatonic scale."""
    track = bytearray()
    for i in range(notes):
        key = PENTATONIC[i % len(PENTATONIC)]
        track += b"\x00\x90" + bytes((key, 64)) + _vlq(step) + b"\x80" + bytes((key, 0))
    return _smf(bytes(track))


def timeline_sheet(tmp: Path, notes: int = TIMELINE_NOTES.value, step: int = 6) -> Path:
    """A sheet whose timeline has exactly ``notes`` notes: cues of one realization of
    REALIZATION_NOTES notes, each cue repeating it up to 50 終."""
    per = REALIZATION_NOTES.value
    (tmp / "r.mid").write_bytes(realization(per, step))
    piece = '{ title = "由庚", by = "笙", realization = "r.mid" }'
    passes, body, k = notes // per, [], 0
    assert passes * per == notes
    while passes:
        zhong = min(50, passes)
        body.append(CUE.format(id=f"c{k}", trigger="go", piece=piece, quote="q",
                               extra=f"zhong = {zhong}"))
        passes -= zhong
        k += 1
    sheet = tmp / "notes.toml"
    sheet.write_text(HEAD + "".join(body), encoding="utf-8")
    return sheet


def midi_file(tmp: Path, size: int = MIDI_BYTES.value, markers: int = 0) -> Path:
    """A MIDI file of ``size`` bytes (to within two): ``markers`` 節 markers in blocks of 3
    a tick apart, then note events in running status (3 bytes an event: the most events a
    byte), a note every tick."""
    head = b"".join(b"\x01\xff\x06" + _vlq(len(text)) + text
                    for text in (f"節 {i % 3 + 1}/3".encode() for i in range(markers)))
    head += b"\x00\x90\x3c\x40"
    room = size - 22 - len(head) - 4  # 14 header + 8 track header, the end of track
    body = bytearray(head)
    for i in range(room // 3):
        body += bytes((1, 0x3C + (i % 12), 0 if i % 2 else 64))
    path = tmp / "big.mid"
    path.write_bytes(_smf(bytes(body)))
    return path


def log_file(tmp: Path, kind: str) -> Path:
    """A show log: ``empty``, LOG_LINES lines ``{}``; ``late``, one block of 節 and one line
    of late deadlines filling LOG_BYTES (the most numbers a byte); ``jie``, LOG_LINES lines:
    JIE_RECORDS 節 records in blocks of 3 (the most blocks a grid is fitted to; every seventh
    節 20 ms late, so blocks fail), then ``start`` records padded so the file is LOG_BYTES
    bytes."""
    path = tmp / f"{kind}.jsonl"
    lines = LOG_LINES.value
    with open(path, "w", encoding="utf-8") as f:
        if kind == "empty":
            f.write("{}\n" * lines)
            return path
        if kind == "late":  # one 節 block, then one record of late deadlines filling the bytes
            f.write("".join(json.dumps({"event": "jie", "t": k * 0.5, "k": k + 1, "n": 3}) + "\n"
                            for k in range(3)))
            head = ('{"event": "late", "cue": "c", "t": 1.0, "late": 1, "missed": 0, "lost": 0, '
                    '"worst_ms": 12.5, "times": [')
            room = LOG_BYTES.value - f.tell() - len(head) - 3
            f.write(head + ",".join(f"{i * 1e-6:.6f}" for i in range(room // 9)) + "]}\n")
            return path
        jie = "".join(json.dumps({"event": "jie", "cue": "c", "k": i % 3 + 1, "n": 3,
                                  "t": i * 0.5 + (0.02 if i % 7 == 0 else 0)},
                                 separators=(",", ":")) + "\n"
                      for i in range(JIE_RECORDS.value))
        f.write(jie)
        rest = lines - JIE_RECORDS.value
        per = (LOG_BYTES.value - len(jie.encode())) // rest
        f.write(('{"event":"start","pad":"' + "x" * (per - 27) + '"}\n') * rest)
    return path


def wav_file(tmp: Path, seconds: float, rate: int = 48_000, channels: int = 1) -> Path:
    """A 16-bit WAV of ``seconds`` of silence as a sparse file (no disk used)."""
    frames = round(seconds * rate)
    path = tmp / "long.wav"
    data_bytes = 2 * frames * channels
    with open(path, "wb") as f:
        f.write(b"RIFF" + struct.pack("<I", min(36 + data_bytes, 2 ** 32 - 1)) + b"WAVEfmt "
                + struct.pack("<IHHIIHH", 16, 1, channels, rate, 2 * rate * channels,
                              2 * channels, 16)
                + b"data" + struct.pack("<I", min(data_bytes, 2 ** 32 - 1)))
        f.truncate(44 + data_bytes)
    return path


def cues_sheet(tmp: Path) -> Path:
    """CUES cues (a first 笙 cue, the rest 獻 cues following it), as tests/test_limits.py's
    largest sheet."""
    first = CUE.format(id="c0", trigger="go", piece='"南陔"', quote="q", extra="")
    rest = "".join(CUE.format(id=f"c{i}", trigger="follow", piece='"陔"', quote="q", extra="")
                   .replace("笙", "獻").replace('pieces = ["陔"]\n', "")
                   for i in range(1, CUES.value))
    sheet = tmp / "cues.toml"
    sheet.write_text(HEAD + first + rest, encoding="utf-8")
    return sheet


def values_sheet(tmp: Path) -> Path:
    """A sheet of SHEET_VALUES values and SHEET_BYTES bytes (at most): CUES 獻 cues, each with
    padding arrays of positions' names to make up the values, its quote long to make up the
    bytes."""
    per_cue = SHEET_VALUES.value // CUES.value  # values per cue, its own keys included
    own = 7  # id kind at trigger source{work quote}: counted as keys (and the table itself)
    names = per_cue - own - 2  # the first cue's fewer: the rite's keys, its pieces
    cues = []
    for i in range(CUES.value):
        perf = ", ".join(f'"p{j}"' for j in range(names - (6 if i == 0 else 0)))
        cues.append(CUE.format(id=f"c{i}", trigger="go" if i == 0 else "follow",
                               piece='"南陔"', quote="{quote}",
                               extra=f"performers = [{perf}]")
                    .replace("笙", "獻" if i else "笙")
                    .replace('pieces = ["南陔"]\n', "" if i else 'pieces = ["南陔"]\n'))
    text = HEAD + "".join(cues)
    pad = (SHEET_BYTES.value - len(text.replace("{quote}", "").encode())) // CUES.value
    sheet = tmp / "values.toml"
    sheet.write_text(text.replace("{quote}", "q" * max(pad, 1)), encoding="utf-8")
    return sheet


def keys_sheet(tmp: Path) -> Path:
    """A sheet of SHEET_BYTES of dotted keys of KEY_PARTS - 1 long parts (600 characters): the
    long-key search tries each part of a key as its start and reads the rest of the key."""
    chain = ".".join(f"k{j}" + "a" * 598 for j in range(KEY_PARTS.value - 2))
    lines, size = [], len(HEAD) + 11
    while size + len(chain) + 16 < SHEET_BYTES.value:
        lines.append(f"{chain}.z{len(lines)} = 1\n")
        size += len(lines[-1])
    sheet = tmp / "keys.toml"
    sheet.write_text(HEAD + "[settings]\n" + "".join(lines), encoding="utf-8")
    return sheet


@dataclass(frozen=True)
class Case:
    name: str
    limits: tuple[Limit, ...]
    value: str  # the input's size at the limit, in words
    build: Callable[[Path, argparse.Namespace], list[str]]  # the CLI's arguments


def _notes(command: Callable[[Path, Path], list[str]]) -> Callable[[Path, argparse.Namespace],
                                                                  list[str]]:
    def build(tmp: Path, args: argparse.Namespace) -> list[str]:
        return command(timeline_sheet(tmp, args.notes), tmp)
    return build


CASES = (
    Case("notes-validate", (TIMELINE_NOTES,), f"{TIMELINE_NOTES.value:,} notes",
         _notes(lambda s, t: ["validate", str(s)])),
    Case("notes-show", (TIMELINE_NOTES,), f"{TIMELINE_NOTES.value:,} notes",
         _notes(lambda s, t: ["show", "--json", str(s)])),
    Case("notes-midi", (TIMELINE_NOTES,), f"{TIMELINE_NOTES.value:,} notes",
         _notes(lambda s, t: ["midi", str(s), "-o", str(t / "out.mid")])),
    Case("notes-plot", (TIMELINE_NOTES,), f"{TIMELINE_NOTES.value:,} notes",
         _notes(lambda s, t: ["plot", str(s), "-o", str(t / "out.png")])),
    Case("notes-render", (TIMELINE_NOTES,), f"{TIMELINE_NOTES.value:,} notes",
         _notes(lambda s, t: ["render", str(s), "-o", str(t / "out.flac")])),
    Case("midi-check", (MIDI_BYTES,), f"{MIDI_BYTES.value:,} bytes",
         lambda t, a: ["check", str(midi_file(t))]),
    Case("midi-jie-check", (MIDI_BYTES, JIE_RECORDS),
         f"{MIDI_BYTES.value:,} bytes, {JIE_RECORDS.value:,} 節",
         lambda t, a: ["check", str(midi_file(t, markers=JIE_RECORDS.value))]),
    Case("log-empty-check", (LOG_LINES,), f"{LOG_LINES.value:,} lines of {{}}",
         lambda t, a: ["check", str(log_file(t, "empty"))]),
    Case("log-jie-check", (LOG_LINES, LOG_BYTES, JIE_RECORDS),
         f"{LOG_LINES.value:,} lines, {JIE_RECORDS.value:,} 節, {LOG_BYTES.value:,} B",
         lambda t, a: ["check", str(log_file(t, "jie"))]),
    Case("log-late-check", (LOG_BYTES,), f"{LOG_BYTES.value:,} bytes in one line",
         lambda t, a: ["check", str(log_file(t, "late"))]),
    Case("log-late-resume", (LOG_BYTES,), f"{LOG_BYTES.value:,} bytes in one line",
         lambda t, a: ["live", "xiang-she", "--output", "memory:", "--plain", "--resume",
                       str(log_file(t, "late"))]),
    Case("log-empty-resume", (LOG_LINES,), f"{LOG_LINES.value:,} lines of {{}}",
         lambda t, a: ["live", "xiang-she", "--output", "memory:", "--plain", "--resume",
                       str(log_file(t, "empty"))]),
    Case("log-jie-resume", (LOG_LINES, LOG_BYTES),
         f"{LOG_LINES.value:,} lines, {JIE_RECORDS.value:,} 節, {LOG_BYTES.value:,} B",
         lambda t, a: ["live", "xiang-she", "--output", "memory:", "--plain", "--resume",
                       str(log_file(t, "jie"))]),
    Case("audio-check", (AUDIO_SECONDS,), "", lambda t, a: ["check", str(wav_file(
        t, a.audio_seconds))]),
    Case("audio-rate-check", (AUDIO_SECONDS, AUDIO_RATE, AUDIO_SAMPLES),
         f"{AUDIO_SECONDS.value:,} s at {AUDIO_RATE.value:,} Hz, mono",
         lambda t, a: ["check", str(wav_file(t, AUDIO_SECONDS.value, AUDIO_RATE.value))]),
    Case("audio-stereo-check", (AUDIO_SECONDS, AUDIO_SAMPLES),
         f"{AUDIO_SECONDS.value:,} s at 48,000 Hz, stereo",
         lambda t, a: ["check", str(wav_file(t, AUDIO_SECONDS.value, 48_000, 2))]),
    Case("audio-channels-check", (AUDIO_CHANNELS, AUDIO_SAMPLES),
         f"{AUDIO_SAMPLES.value // AUDIO_CHANNELS.value // 48_000:,} s at 48,000 Hz, "
         f"{AUDIO_CHANNELS.value} channels",
         lambda t, a: ["check", str(wav_file(t, AUDIO_SAMPLES.value // AUDIO_CHANNELS.value
                                             / 48_000, 48_000, AUDIO_CHANNELS.value))]),
    Case("cues-validate", (CUES,), f"{CUES.value:,} cues",
         lambda t, a: ["validate", str(cues_sheet(t))]),
    Case("keys-validate", (SHEET_BYTES, KEY_PARTS),
         f"{SHEET_BYTES.value:,} bytes of {KEY_PARTS.value - 1}-part keys",
         lambda t, a: ["validate", str(keys_sheet(t))]),
    Case("values-validate", (SHEET_VALUES, SHEET_BYTES, CUES),
         f"{SHEET_VALUES.value:,} values, {SHEET_BYTES.value:,} bytes",
         lambda t, a: ["validate", str(values_sheet(t))]),
)


@dataclass(frozen=True)
class Result:
    case: str
    limits: str
    value: str
    command: str
    code: int
    seconds: float
    mb: float
    scale: float = 1.0  # the time at the limit is ``seconds * scale`` (audio shorter than it)

    @property
    def within(self) -> bool:
        return self.mb <= BUDGET_MB and self.seconds * self.scale <= BUDGET_S and self.code >= 0


def run_case(case: Case, args: argparse.Namespace) -> Result:
    """Build the case's input in a temporary directory, run the CLI on it, measure the child."""
    with tempfile.TemporaryDirectory(prefix="yuezheng-limits-") as tmp:
        argv = case.build(Path(tmp), args)
        started = time.perf_counter()
        proc = subprocess.Popen([sys.executable, str(ROOT / "cli.py"), *argv], cwd=tmp,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                start_new_session=True)
        timer = _killer(proc.pid, args.timeout)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - started
        timer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
        err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
        if proc.stderr:
            proc.stderr.close()
        if proc.returncode not in (0, 2, 4) and args.verbose:
            print(err[-2000:], file=sys.stderr)
        shown = [a if not a.startswith(tmp) else Path(a).name for a in argv]
        value = case.value
        scale = 1.0
        if case.name.startswith("notes-"):
            value = f"{args.notes:,} notes"
        if case.name == "audio-check":
            value = f"{args.audio_seconds:,} s (48 kHz mono)"
            scale = AUDIO_SECONDS.value / args.audio_seconds
        return Result(case.name, " + ".join(_name(limit) for limit in case.limits), value,
                      " ".join(shown[:4]), proc.returncode, seconds, usage.ru_maxrss / 1024,
                      scale)


def _killer(pid: int, timeout: float):  # -> threading.Timer
    import threading

    def kill() -> None:
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    timer = threading.Timer(timeout, kill)
    timer.daemon = True
    timer.start()
    return timer


def _name(limit: Limit) -> str:
    from cues.limits import LIMITS

    return next(name for name, value in LIMITS.items() if value is limit)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="*", metavar="CASE", help="cases to run (default: all)")
    parser.add_argument("--list", action="store_true", help="list the cases and stop")
    parser.add_argument("--timeout", type=float, default=300.0,
                        help="kill a command still running after this many seconds")
    parser.add_argument("--audio-seconds", type=int, default=AUDIO_SECONDS.value,
                        help="length of the WAV for audio-check (default: the limit)")
    parser.add_argument("--notes", type=int, default=TIMELINE_NOTES.value,
                        help="notes of the timeline for the notes-* cases (default: the limit; "
                        f"a multiple of {REALIZATION_NOTES.value:,})")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("-v", "--verbose", action="store_true", help="show a failed run's stderr")
    args = parser.parse_args()
    by_name = {case.name: case for case in CASES}
    if args.list:
        for case in CASES:
            print(case.name)
        return 0
    unknown = [name for name in args.cases if name not in by_name]
    if unknown:
        parser.error(f"no such case: {', '.join(unknown)} (--list lists them)")
    results = []
    for name in args.cases or list(by_name):
        result = run_case(by_name[name], args)
        results.append(result)
        if not args.json:
            _row(result)
    if args.json:
        print(json.dumps([dict(r.__dict__, within=r.within) for r in results], indent=2,
                         ensure_ascii=False))
    return 0


def _row(r: Result) -> None:
    at_limit = f" (×{r.scale:g}: {r.seconds * r.scale:.0f} s)" if r.scale != 1 else ""
    killed = " killed" if r.code < 0 else f" exit {r.code}"
    print(f"{r.limits:<34} {r.value:<36} {r.command:<34} {r.seconds:7.1f} s{at_limit} "
          f"{r.mb:7.0f} MB{killed}  within budget: {'yes' if r.within else 'NO'}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
