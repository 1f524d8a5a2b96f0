"""Audio from a Timeline: the built-in voices (pyo tables mixed with numpy) or FluidSynth.

Both engines render the very timeline the MIDI file is written from: the built-in engine turns
every Note into a RenderNote at its exact time (``seconds(tick)``), with its pitch in Hz from the
tuning and its place in the hang (x east, y north) for placement in the courtyard; FluidSynth
plays the MIDI file itself (pitch bends carry the tuning, CC 10 and CC 7 the layout) through
the user's SoundFont.

What the timeline does not say, the render decides from the note itself, so that the same
timeline always gives the same bytes:

* which tone of a 編鐘 is struck: ``bell_strike`` (instruments.voice_models) by the note's
  degree — 宮 商 角 徵 羽 strike a bell's 正鼓, any other degree the 側鼓 of the bell a third
  below; the MIDI file says it by the pitch alone;
* each bell's fixed tuning error (``bell_detune``: "0", "5" cents or "excavated"), seeded by
  the bell;
* each stroke's variation (strike position, pitch, level), seeded by its instrument and tick.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
import zlib
from dataclasses import dataclass
from pathlib import Path

from cues.errors import UserError
from instruments.atomicfile import atomic_path
from instruments.audio_files import AudioReport, write_audio
from instruments.mixer import DEFAULT_SAMPLE_RATE, Mastering, Progress, RenderNote
from instruments.room import DEFAULT_ROOM
from instruments.tuning import cents_ratio
from instruments.voice_models import (
    BELL_DETUNE_CENTS,
    BELL_INTERVAL_SEMITONES,
    bell_strike,
)
from sequencer.events import Note, Timeline
from sequencer.smf import write_midi
from sequencer.timebase import seconds

DEFAULT_LOUDNESS_LUFS = -18.0
DEFAULT_BELL_DETUNE = "0"


def _seed(*parts: object) -> int:
    return zlib.crc32(" ".join(map(str, parts)).encode("utf-8"))


def bell_detune_cents(semitones: int, detune: str) -> float:
    """The fixed tuning error of the bell whose 正鼓 is ``semitones`` above 黃鍾 (seeded by
    the bell), within ±BELL_DETUNE_CENTS[detune]."""
    spread = BELL_DETUNE_CENTS[detune]
    return spread * (2.0 * (_seed("bell", semitones) % 10001) / 10000 - 1.0)


def _render_note(n: Note, bell_interval: str, detune: str) -> RenderNote:
    strike = "正鼓"
    hz = n.hz
    if n.instrument == "編鐘":
        strike = bell_strike(n.semitones)
        if n.semitones is not None and hz is not None:
            bell = n.semitones - (BELL_INTERVAL_SEMITONES[bell_interval]
                                  if strike == "側鼓" else 0)
            hz *= cents_ratio(bell_detune_cents(bell, detune))
    return RenderNote(
        start_s=float(seconds(n.tick)), instrument=n.instrument, freq_hz=hz,
        duration_s=float(seconds(n.duration)), velocity=n.velocity, x=n.x, y=n.y,
        stem=n.instrument, bell_interval=bell_interval, lyric=n.lyric, strike=strike,
        seed=_seed(n.instrument, n.tick),
    )

ENGINES = ("yuezheng", "fluidsynth")
SOUNDFONT_PATHS = (
    "/usr/share/sounds/sf2/FluidR3_GM.sf2",
    "/usr/share/sounds/sf2/default-GM.sf2",
    "/usr/share/soundfonts/FluidR3_GM.sf2",
)


def render_notes(timeline: Timeline, bell_interval: str = "minor",
                 bell_detune: str = DEFAULT_BELL_DETUNE) -> list[RenderNote]:
    """The timeline's notes as the mixer's RenderNotes (one stem per instrument)."""
    if bell_detune not in BELL_DETUNE_CENTS:
        raise UserError(f"bell detune must be one of {', '.join(BELL_DETUNE_CENTS)}, "
                        f"got {bell_detune!r}")
    return [_render_note(n, bell_interval, bell_detune) for n in timeline.notes]


def render_timeline(
    timeline: Timeline, path: str | Path, *, stems_dir: str | Path | None = None,
    bell_interval: str = "minor", bell_detune: str = DEFAULT_BELL_DETUNE,
    room: str = DEFAULT_ROOM, loudness: float | None = DEFAULT_LOUDNESS_LUFS,
    progress: Progress | None = None, whole: Timeline | None = None,
) -> AudioReport:
    """Render on the built-in voices: 48 kHz stereo, 24-bit WAV or FLAC, bounded memory, in
    ``room``, normalised to ``loudness`` LUFS (None: the catalog level).  ``timeline`` may be
    a part of ``whole`` (``--only``/``--except``): it is then heard as in the whole render —
    the same time zero in the courtyard, the loudness gain of the whole — so that the parts'
    renders add up to the whole's (below the limiter)."""
    notes = render_notes(timeline, bell_interval, bell_detune)
    if not notes:
        raise UserError("nothing to render: the selected cues play no notes")
    reference = None if whole is None else render_notes(whole, bell_interval, bell_detune)
    return write_audio(path, notes, stems_dir=stems_dir, progress=progress,
                       how=Mastering(room=room, loudness=loudness), reference=reference)


@dataclass(frozen=True)
class FluidReport:
    """What ``render_fluidsynth`` wrote and how fast."""

    path: str
    duration_s: float
    compute_s: float
    soundfont: str

    @property
    def realtime_factor(self) -> float:
        return self.duration_s / self.compute_s if self.compute_s > 0 else float("inf")


def find_soundfont(explicit: str | None) -> Path:
    """The SoundFont given, or the first of ``SOUNDFONT_PATHS`` that exists."""
    if explicit:
        p = Path(explicit)
        if not p.is_file():
            raise UserError(f"--soundfont {explicit}: no such file")
        with p.open("rb") as f:
            head = f.read(12)
        if len(head) < 12 or head[:4] != b"RIFF" or head[8:12] != b"sfbk":
            raise UserError(f"--soundfont {explicit}: not a SoundFont 2 file (a RIFF 'sfbk' "
                            "file, .sf2)")
        return p
    for candidate in SOUNDFONT_PATHS:
        if Path(candidate).is_file():
            return Path(candidate)
    raise UserError("no SoundFont found: give --soundfont FILE.sf2 (Debian: fluid-soundfont-gm)")


def render_fluidsynth(
    timeline: Timeline, path: str | Path, soundfont: str | None = None, title: str = "",
    sample_rate: int = DEFAULT_SAMPLE_RATE,
) -> FluidReport:
    """Render the timeline's MIDI file through FluidSynth (WAV or FLAC by extension)."""
    exe = shutil.which("fluidsynth")
    if exe is None:
        raise UserError("the fluidsynth engine needs the fluidsynth program "
                        "(Debian: apt-get install fluidsynth)")
    sf2 = find_soundfont(soundfont)
    out = Path(path)
    if out.suffix.lower() not in (".wav", ".flac"):
        raise UserError(f"{out}: expected a .wav or .flac file")
    if not out.parent.exists():
        raise UserError(f"{out}: directory {out.parent} does not exist")
    with tempfile.TemporaryDirectory(prefix="yuezheng-") as tmp:
        mid = Path(tmp) / "rite.mid"
        write_midi(timeline, mid, title)
        raw = Path(tmp) / "out.wav"
        t0 = time.perf_counter()
        proc = subprocess.run(
            [exe, "-ni", "-q", "-F", str(raw), "-r", str(sample_rate), "-O", "s24",
             str(sf2), str(mid)],
            capture_output=True, text=True, check=False,
        )
        compute = time.perf_counter() - t0
        if proc.returncode != 0 or not raw.exists():
            raise UserError(f"fluidsynth failed ({proc.returncode}): "
                            f"{(proc.stderr or proc.stdout).strip()[:500]}")
        import soundfile as sf

        info = sf.info(str(raw))
        with atomic_path(out) as temp:
            if out.suffix.lower() == ".wav":
                shutil.move(str(raw), temp)
            else:
                data, rate = sf.read(str(raw), dtype="int32")
                sf.write(str(temp), data, rate, subtype="PCM_24", format="FLAC")
    return FluidReport(str(out), info.frames / info.samplerate, compute, str(sf2))
