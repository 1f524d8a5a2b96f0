"""Benchmark: offline rendering speed of yuezheng's voices + mixer, and against FluidSynth.

Renders N minutes (default 10) of dense ensemble music — 24 voices (8 編鐘, 2 編磬, 1 鑮,
2 瑟, 3 笙, 1 和, 2 管, 3 歌, 建鼓, 朔鼙), each striking or singing a note every second on a
two-octave pentatonic with three dynamics, spread over the courtyard — to a 48 kHz 24-bit WAV,
twice: cold (empty note cache: every distinct note is synthesized) and warm (numpy mixing
only).  It prints the real-time factor (seconds of audio per second of compute) and the ms per
note.

If ``fluidsynth`` and ``/usr/share/sounds/sf2/FluidR3_GM.sf2`` exist it also writes the same
notes as a General MIDI file (mido; the catalog's GM programs and drum keys, nearest MIDI note)
and times ``fluidsynth -ni -r 48000 -F out.wav FluidR3_GM.sf2 file.mid`` in the same run, then
prints the ratio (goal: yuezheng ≥ 5× faster).

    python benchmarks/render_speed.py [--minutes 10] [--keep DIR]
"""

from __future__ import annotations

import argparse
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cues.catalog import GM_PERCUSSION_CHANNEL, get_instrument
from instruments.mix.mixer import RenderNote
from instruments.mix.render_files import write_audio
from instruments.tuning import DEFAULT_HUANGZHONG_HZ, Tuning, hz_midi_key
from instruments.voices import notes as voices

SOUNDFONT = Path("/usr/share/sounds/sf2/FluidR3_GM.sf2")
EQUAL = Tuning("equal", DEFAULT_HUANGZHONG_HZ)
PENTATONIC = (0, 2, 4, 7, 9)

# (instrument, voices of it, octave offset in semitones, x, y)
ENSEMBLE = (
    ("編鐘", 8, -12, 6.0, -4.0), ("編磬", 2, 0, -6.0, -4.0), ("鑮", 1, -24, 7.0, -7.0),
    ("瑟", 2, -12, -2.0, 2.0), ("笙", 3, 0, 0.0, -6.0), ("和", 1, 0, 0.5, -6.0),
    ("管", 2, 0, 0.0, -3.0), ("歌", 3, -12, 0.0, 2.0), ("建鼓", 1, 0, -1.5, -2.0),
    ("朔鼙", 1, 0, -5.0, -8.0),
)


def dense_notes(minutes: float, seed: int = 7) -> list[RenderNote]:
    rng = random.Random(seed)
    degrees = [o + p for o in (0, 12) for p in PENTATONIC]
    notes = []
    seconds = int(minutes * 60)
    voice_index = 0
    for name, count, octave, x, y in ENSEMBLE:
        inst = get_instrument(name)
        for v in range(count):
            phase = (voice_index * 0.137) % 1.0
            voice_index += 1
            for beat in range(seconds):
                start = beat + phase
                if start >= seconds:
                    break
                st = octave + rng.choice(degrees)
                freq = EQUAL.hz(st) if inst.pitched else None
                notes.append(RenderNote(start, name, freq, rng.choice((0.5, 0.9)),
                                        rng.choice((80, 100, 112)), x + 0.4 * v, y, name))
    notes.sort(key=lambda n: n.start_s)
    return notes


def write_midi(notes: list[RenderNote], path: Path) -> None:
    import mido

    tpb = 480
    tempo = 500_000  # 120 bpm: 960 ticks per second
    events: list[tuple[int, int, mido.Message]] = []
    programs: dict[int, int] = {}
    for n in notes:
        inst = get_instrument(n.instrument)
        if inst.is_drum:
            ch, key = GM_PERCUSSION_CHANNEL, int(inst.gm_key)  # type: ignore[arg-type]
        else:
            ch = inst.channel
            programs[ch] = int(inst.gm_program)  # type: ignore[arg-type]
            key = round(hz_midi_key(n.freq_hz))  # type: ignore[arg-type]
        on = round(n.start_s * 960)
        off = round((n.start_s + n.duration_s) * 960)
        events.append((on, 1, mido.Message("note_on", channel=ch, note=key, velocity=n.velocity)))
        events.append((off, 0, mido.Message("note_off", channel=ch, note=key, velocity=0)))
    events.sort(key=lambda e: (e[0], e[1]))
    track = mido.MidiTrack()
    track.append(mido.MetaMessage("set_tempo", tempo=tempo, time=0))
    for ch, prog in sorted(programs.items()):
        track.append(mido.Message("program_change", channel=ch, program=prog, time=0))
    now = 0
    for tick, _, msg in events:
        track.append(msg.copy(time=tick - now))
        now = tick
    mid = mido.MidiFile(ticks_per_beat=tpb)
    mid.tracks.append(track)
    mid.save(path)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--keep", metavar="DIR", help="keep the rendered files in DIR")
    args = ap.parse_args()

    notes = dense_notes(args.minutes)
    audio_s = args.minutes * 60
    unique = len({voices.note_key(n.instrument, n.freq_hz, n.duration_s, n.velocity)
                  for n in notes})
    print(f"{len(notes)} notes ({unique} distinct), {audio_s:.0f} s of music, 24 voices")
    tmp = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="yuezheng-bench-"))
    tmp.mkdir(parents=True, exist_ok=True)
    try:
        voices.clear_cache()
        t0 = time.perf_counter()
        cold = write_audio(tmp / "yuezheng.wav", notes)
        cold_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        warm = write_audio(tmp / "yuezheng_warm.wav", notes)
        warm_s = time.perf_counter() - t0
        print(f"yuezheng cold (synthesis of {unique} notes + numpy mix): {cold_s:.2f} s, "
              f"{cold.duration_s / cold_s:.0f}× real time, "
              f"{1000 * cold_s / len(notes):.3f} ms per note; peak {cold.peak:.3f}, "
              f"limiter active {cold.limited_s:.1f} s")
        print(f"yuezheng warm (numpy mix only): {warm_s:.2f} s, "
              f"{warm.duration_s / warm_s:.0f}× real time, "
              f"{1000 * warm_s / len(notes):.3f} ms per note")
        print(f"  synthesis alone ≈ {cold_s - warm_s:.2f} s, "
              f"{1000 * (cold_s - warm_s) / unique:.1f} ms per distinct note")
        fluid = shutil.which("fluidsynth")
        if fluid and SOUNDFONT.exists():
            mid = tmp / "bench.mid"
            write_midi(notes, mid)
            cmd = [fluid, "-ni", "-r", "48000", "-F", str(tmp / "fluidsynth.wav"),
                   str(SOUNDFONT), str(mid)]
            t0 = time.perf_counter()
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            fs_s = time.perf_counter() - t0
            print(f"fluidsynth ({' '.join(Path(c).name for c in cmd)}): {fs_s:.2f} s, "
                  f"{audio_s / fs_s:.0f}× real time")
            print(f"ratio: yuezheng cold is {fs_s / cold_s:.1f}× faster than FluidSynth "
                  f"(warm {fs_s / warm_s:.1f}×); goal ≥ 5×")
        else:
            print("fluidsynth or FluidR3_GM.sf2 not found: no comparison")
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
