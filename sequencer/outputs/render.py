"""Audio from a Timeline: the built-in voices (numpy, mixed by ``instruments.mix``) or FluidSynth.

Both engines render the very timeline the MIDI file is written from: the built-in engine turns
every Note into a RenderNote at its exact time (``seconds(tick)``), with its pitch in Hz from the
tuning and its place in the hang (x east, y north) for placement in the courtyard; FluidSynth
plays the MIDI file itself (the keys' MIDI Tuning Standard tuning carries the 三分損益, CC 10
and CC 7 the layout) through the user's SoundFont.

What the timeline does not say, the render decides from the note itself, so that the same
timeline always gives the same bytes:

* which tone of a 編鐘 is struck: ``bell_strike`` (instruments.voices.models) by the note's
  degree — 宮 商 角 徵 羽 strike a bell's 正鼓, any other degree the 側鼓 of the bell a third
  below; the MIDI file says it by the pitch alone;
* each bell's fixed tuning error (``bell_detune``: "0", "5" cents or "excavated"), seeded by
  the bell;
* each stroke's variation: a drum stroke's own (strike point, force, pitch, damping, slap,
  click) by its number in the drum's part, a bell's or stone's (strike point, level) seeded
  by its instrument and tick.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cues.errors import UserError
from instruments.files.atomic import atomic_path
from instruments.mix.mixer import DEFAULT_SAMPLE_RATE, Mastering, Progress, RenderNote
from instruments.mix.render_files import AudioReport, audio_suffix, write_audio
from instruments.mix.room import DEFAULT_ROOM
from instruments.tuning import cents_ratio
from instruments.voices.models import (
    BELL_DETUNE_CENTS,
    BELL_INTERVAL_SEMITONES,
    DRUMS,
    bell_strike,
)
from sequencer.outputs.provenance import Provenance
from sequencer.outputs.smf import write_midi
from sequencer.timeline.events import Note, Timeline
from sequencer.timeline.timebase import seconds

DEFAULT_LOUDNESS_LUFS = -23.0
DEFAULT_BELL_DETUNE = "0"


def _seed(*parts: object) -> int:
    return zlib.crc32(" ".join(map(str, parts)).encode("utf-8"))


def bell_detune_cents(semitones: int, detune: str) -> float:
    """The fixed tuning error of the bell whose 正鼓 is ``semitones`` above 黃鍾 (seeded by
    the bell), within ±BELL_DETUNE_CENTS[detune]."""
    spread = BELL_DETUNE_CENTS[detune]
    return spread * (2.0 * (_seed("bell", semitones) % 10001) / 10000 - 1.0)


def _render_note(n: Note, bell_interval: str, detune: str, seed: int) -> RenderNote:
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
        seed=seed,
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
    strokes: dict[str, int] = {}
    out = []
    for n in timeline.notes:
        if n.instrument in DRUMS:  # a drum's strokes are numbered: each its own stroke
            seed = strokes[n.instrument] = strokes.get(n.instrument, -1) + 1
        else:
            seed = _seed(n.instrument, n.tick)
        out.append(_render_note(n, bell_interval, bell_detune, seed))
    return out


def render_timeline(
    timeline: Timeline, path: str | Path, *, stems_dir: str | Path | None = None,
    bell_interval: str = "minor", bell_detune: str = DEFAULT_BELL_DETUNE,
    room: str = DEFAULT_ROOM, loudness: float | None = DEFAULT_LOUDNESS_LUFS,
    progress: Progress | None = None, whole: Timeline | None = None,
    provenance: Provenance | None = None,
) -> AudioReport:
    """Render on the built-in voices: 48 kHz stereo, 24-bit WAV or FLAC, bounded memory, in
    ``room``, normalised to ``loudness`` LUFS (None: the catalog level), carrying its
    ``provenance`` (the file's tags).  ``timeline`` may be
    a part of ``whole`` (``--only``/``--except``): it is then heard as in the whole render —
    the same time zero in the courtyard, the loudness gain of the whole — so that the parts'
    renders add up to the whole's (below the limiter)."""
    notes = render_notes(timeline, bell_interval, bell_detune)
    if not notes:
        raise UserError("nothing to render: the selected cues play no notes")
    reference = None if whole is None else render_notes(whole, bell_interval, bell_detune)
    return write_audio(path, notes, stems_dir=stems_dir, progress=progress,
                       how=Mastering(room=room, loudness=loudness), reference=reference,
                       tags=provenance.tags() if provenance else None,
                       stem_tags=provenance.stem_tags if provenance else None)


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
    sample_rate: int = DEFAULT_SAMPLE_RATE, provenance: Provenance | None = None,
    loudness: float | None = DEFAULT_LOUDNESS_LUFS,
) -> FluidReport:
    """Render the timeline's MIDI file through FluidSynth (WAV or FLAC by extension, carrying
    its ``provenance``), normalised to ``loudness`` LUFS as the built-in engine's renders are
    (``instruments.mix.file_mastering``: the limited file's integrated loudness, true peak
    under −1 dBTP, no DC; None: FluidSynth's own level, untouched)."""
    exe = shutil.which("fluidsynth")
    if exe is None:
        raise UserError("the fluidsynth engine needs the fluidsynth program "
                        "(Debian: apt-get install fluidsynth)")
    sf2 = find_soundfont(soundfont)
    out = Path(path)
    suffix = audio_suffix(out)
    if not out.parent.exists():
        raise UserError(f"{out}: directory {out.parent} does not exist")
    with tempfile.TemporaryDirectory(prefix="yuezheng-") as tmp:
        mid = Path(tmp) / "rite.mid"
        write_midi(timeline, mid, title, provenance=provenance.text() if provenance else None)
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
        tags = provenance.tags() if provenance else {}
        gain = None
        if loudness is not None:
            from instruments.mix.file_mastering import file_gain

            gain = file_gain(lambda: _blocks(raw), info.samplerate, loudness)
        with atomic_path(out) as temp:
            if suffix == ".wav" and not tags and gain is None:
                shutil.move(str(raw), temp)
            else:
                _tagged_copy(raw, Path(temp), tags, suffix, gain)
    return FluidReport(str(out), info.frames / info.samplerate, compute, str(sf2))


def _blocks(raw: Path) -> Iterator[np.ndarray]:
    """The WAV ``raw``'s samples as (n, channels) float64 blocks of 2¹⁶ frames."""
    import soundfile as sf

    with sf.SoundFile(str(raw)) as src:
        yield from src.blocks(blocksize=1 << 16, dtype="float64", always_2d=True)


def _tagged_copy(raw: Path, out: Path, tags: dict[str, str], suffix: str,
                 gain: float | None = None) -> None:
    """FluidSynth's 24-bit WAV ``raw`` as ``out`` (WAV or FLAC by extension) with ``tags``,
    streamed in blocks: the samples unchanged (24-bit read as floats n/2²³ are packed back
    to n), or with a ``gain`` mastered as a render is (``file_mastering.mastered``)."""
    import soundfile as sf

    from instruments.files.riff_info import info_chunk
    from instruments.files.wav24 import Wav24Writer
    from instruments.mix.file_mastering import mastered
    from instruments.mix.render_files import AUDIO_SUBTYPE, set_tags

    with sf.SoundFile(str(raw)) as src, open(out, "wb") as f:
        if gain is not None:
            blocks: Iterable[np.ndarray] = mastered(lambda: _blocks(raw), src.samplerate, gain)
        else:
            blocks = src.blocks(blocksize=1 << 16, dtype="float64", always_2d=True)
        if suffix == ".wav":
            with Wav24Writer(f, src.samplerate, src.channels, info=info_chunk(tags)) as w:
                for block in blocks:
                    w.write(block)
            return
        with sf.SoundFile(f, "w", samplerate=src.samplerate, channels=src.channels,
                          subtype=AUDIO_SUBTYPE, format="FLAC") as dst:
            set_tags(dst, tags)
            for block in blocks:
                dst.write(block)
