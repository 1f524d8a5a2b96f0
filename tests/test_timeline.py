"""The timeline: exact ticks, 「間若一」, the 射節 engine, determinism, and MIDI files."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections import Counter
from fractions import Fraction
from pathlib import Path

import mido
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cli
from cues.sheet.loader import BUILTIN_RITES, load_rite, parse_sheet
from sequencer.outputs.smf import build_midi_bytes
from sequencer.timeline.compiler import compile_rite, make_settings
from sequencer.timeline.drums import PATTERNS, strokes
from sequencer.timeline.events import parse_jie_text
from sequencer.timeline.timebase import TICKS_PER_SECOND

SOUNDFONT = Path("/usr/share/sounds/sf2/FluidR3_GM.sf2")

SHEET = '''
[rite]
id = "p"
title = "property"
[[cue]]
id = "sing"
kind = "升歌"
at = "工入"
pieces = ["鹿鳴"]
source = {{ work = "w", quote = "q" }}
[[cue]]
id = "shoot"
kind = "射節"
at = "奏"
song = "{song}"
jie = {jie}
listen = {listen}
ou = [{ou}]
instruments = [{{ name = "歌", count = 2 }}, {{ name = "瑟", count = 2 }}, {{ name = "建鼓", count = 1 }}, {{ name = "鼙", count = 1 }}]
source = {{ work = "w", quote = "q" }}
'''


def shooting_rite(song: str, jie: int, pairs: int):
    ou = ", ".join(f'"耦{i}"' for i in range(pairs))
    return parse_sheet(SHEET.format(song=song, jie=jie, listen=jie - 4, ou=ou), "p.toml")


def midi_from(timeline) -> mido.MidiFile:
    import io

    return mido.MidiFile(file=io.BytesIO(build_midi_bytes(timeline)), charset="utf-8")


@settings(max_examples=60, deadline=None)
@given(
    song=st.sampled_from(["騶虞", "采蘋", "采蘩", "貍首"]),
    jie=st.sampled_from([5, 7, 9]),
    pairs=st.integers(1, 6),
    tempo=st.fractions(min_value=20, max_value=300, max_denominator=7),
    jie_seconds=st.none() | st.fractions(min_value=Fraction(1, 2), max_value=60,
                                         max_denominator=1000),
    pattern=st.sampled_from(PATTERNS),
    rule=st.sampled_from(["half", "quarters"]),
)
def test_jie_are_equal_to_the_tick(song, jie, pairs, tempo, jie_seconds, pattern, rule) -> None:
    rite = shooting_rite(song, jie, pairs)
    s = make_settings(rite.settings, {"tempo_bpm": tempo, "jie_seconds": jie_seconds,
                                      "drum_pattern": pattern, "release_rule": rule})
    tl = compile_rite(rite, s)
    span = tl.span("shoot")
    ticks = [m.tick for m in tl.markers if m.kind == "jie"]
    labels = [m.text for m in tl.markers if m.kind == "jie"]
    assert len(ticks) == jie * pairs
    assert labels[:jie] == [f"節 {k}/{jie}" for k in range(1, jie + 1)]
    # each 節 marker carries its number, count and 耦 cycle as data; a cue marker none of them
    jie_markers = [m for m in tl.markers if m.kind == "jie"]
    assert [(m.k, m.n, m.cycle) for m in jie_markers] == [
        (k, jie, c) for c in range(pairs) for k in range(1, jie + 1)]
    assert all(parse_jie_text(m.text) == (m.k, m.n) for m in jie_markers)
    assert all((m.k, m.n, m.cycle) == (None, None, None) for m in tl.markers if m.kind == "cue")
    gaps = {b - a for a, b in zip(ticks, ticks[1:], strict=False)}
    assert gaps == {span.jie_ticks}  # 「間若一」: every interval between 節 the same tick count
    if jie_seconds is not None:
        assert abs(Fraction(span.jie_ticks, TICKS_PER_SECOND) - jie_seconds) <= Fraction(
            1, 2 * TICKS_PER_SECOND)
    assert ticks[0] == span.start and span.end == ticks[-1] + span.jie_ticks
    # listening 節: no release accords with the drum before they are over
    assert len(span.release_ticks) == 2 * 4  # 乘矢: four arrows each, one 拾 per 節
    assert min(span.release_ticks) >= (jie - 4) * span.jie_ticks
    assert max(span.release_ticks) < jie * span.jie_ticks
    # the drum strokes of each 節: the pattern, evenly spread, the same in every 節
    drum_ticks = sorted(n.tick for n in tl.notes if n.cue == "shoot" and n.semitones is None)
    assert len(drum_ticks) == len(strokes(pattern)) * jie * pairs
    per_jie = len(strokes(pattern))
    first = [t - span.start for t in drum_ticks[:per_jie]]
    for j in range(1, jie * pairs):
        assert [t - span.start - j * span.jie_ticks for t in
                drum_ticks[j * per_jie:(j + 1) * per_jie]] == first
    # every note_on has its note_off, and a second compile is identical
    assert all(n.duration > 0 for n in tl.notes)
    assert compile_rite(rite, s) == tl


@pytest.mark.parametrize("rite_id", BUILTIN_RITES)
def test_midi_file_of_each_rite(rite_id: str, tmp_path: Path) -> None:
    # every variant but the alternative programs (下管 instead of the 笙; 鄭's programs by rank,
    # whose songs are lost: the first sung lyrics would be the marker's calls)
    rite = load_rite(rite_id, [v.id for v in load_rite(rite_id).variants
                               if v.id not in ("xia-guan", "zhu-hou")])
    tl = compile_rite(rite, make_settings(rite.settings))
    mid = midi_from(tl)
    assert mid.type == 1 and mid.ticks_per_beat == 960
    markers = [(t, m.text) for t, m in _absolute(mid.tracks[0]) if m.type == "marker"]
    cue_markers = [text for _, text in markers if not text.startswith("節 ")]
    assert [text.split(" ")[0] for text in cue_markers] == [c.id for c in rite.cues]
    # notes closed, per channel and key
    for track in mid.tracks[1:]:
        sounding: Counter = Counter()
        for _, msg in _absolute(track):
            if msg.type == "note_on" and msg.velocity > 0:
                sounding[msg.channel, msg.note] += 1
            elif msg.type in ("note_off", "note_on"):
                sounding[msg.channel, msg.note] -= 1
                assert sounding[msg.channel, msg.note] >= 0
        assert not +sounding
    # lyrics under the sung notes, UTF-8
    lyrics = [m.text for t in mid.tracks for _, m in _absolute(t) if m.type == "lyrics"]
    from cues.repertoire import get_piece

    first_sung = next(p for c in rite.cues for p in c.pieces
                      if p.by == "歌" and not get_piece(p.title).lost)
    assert lyrics[:8] == list(get_piece(first_sung.title).stanzas[0].lyric[:8])
    # the 節 markers of each cycle equally spaced to the tick
    jie = [(t, text) for t, text in markers if text.startswith("節 ")]
    if jie:
        blocks: list[list[int]] = []
        for t, text in jie:
            if text.startswith("節 1/"):
                blocks.append([])
            blocks[-1].append(t)
        spacing = {b - a for block in blocks for a, b in zip(block, block[1:], strict=False)}
        assert len(spacing) == 1


def _absolute(track):
    now = 0
    for msg in track:
        now += msg.time
        yield now, msg


@pytest.mark.render
@pytest.mark.fluidsynth
@pytest.mark.parametrize("rite_id", BUILTIN_RITES)
def test_midi_renders_in_fluidsynth(rite_id: str, tmp_path: Path, capsys) -> None:
    if not (shutil.which("fluidsynth") and SOUNDFONT.exists()):
        if os.environ.get("CI"):
            pytest.fail("CI must render with FluidSynth: install fluidsynth fluid-soundfont-gm")
        pytest.skip("fluidsynth or FluidR3_GM.sf2 missing")
    mid = tmp_path / f"{rite_id}.mid"
    assert cli.main(["midi", rite_id, "-o", str(mid), "--tempo", "300",
                     "--lost-zhong-seconds", "4", "--jie-seconds", "2", "--go-gap", "0.5"]) == 0
    wav = tmp_path / "out.wav"
    subprocess.run(["fluidsynth", "-ni", "-q", "-F", str(wav), "-r", "22050", str(SOUNDFONT),
                    str(mid)], check=True, capture_output=True, timeout=300)
    import soundfile as sf

    audio, rate = sf.read(str(wav))
    assert rate == 22050
    assert audio.shape[0] / rate > 0.9 * mido.MidiFile(str(mid)).length
    rms = float(np.sqrt(np.mean(audio.astype(np.float64) ** 2)))
    assert rms > 1e-3, rms  # not silent


def test_from_until_and_determinism(tmp_path: Path, capsys) -> None:
    a, b = tmp_path / "a.mid", tmp_path / "b.mid"
    for out in (a, b):
        assert cli.main(["midi", "xiang-she", "-o", str(out), "--from", "she-jie",
                         "--until", "gai"]) == 0
    assert a.read_bytes() == b.read_bytes()
    texts = [m.text for m in mido.MidiFile(str(a), charset="utf-8").tracks[0]
             if m.type == "marker" and not m.text.startswith("節")]
    assert [t.split()[0] for t in texts] == ["she-jie", "ji-wei", "wu-suan-yue", "gai"]
    assert cli.main(["midi", "xiang-she", "-o", str(a), "--from", "nope"]) == 2
    assert cli.main(["midi", "xiang-she", "-o", str(a), "--from", "gai", "--until",
                     "he-yue"]) == 2
    assert cli.main(["midi", "xiang-she", "-o", str(tmp_path / "no" / "x.mid")]) == 2


def test_tuning_in_midi_bends() -> None:
    rite = load_rite("xiang-yin-jiu")
    tl = compile_rite(rite, make_settings(rite.settings))
    taicu = next(n for n in tl.notes if n.instrument == "歌" and n.semitones == 2)
    assert taicu.bend == round(3.91 / 200 * 8192)  # 太蔟 9/8 is 3.91 cents above ET
    eq = compile_rite(rite, make_settings(rite.settings, {"tuning": "equal"}))
    assert all(n.bend == 0 for n in eq.notes)
    d = compile_rite(rite, make_settings(rite.settings, {"huangzhong_hz": 293.66}))
    # 鹿鳴 starts on 黃鍾清, sung an octave under the written 律 (the 工 were men)
    assert next(n for n in d.notes if n.instrument == "歌").key == 62 + 12 - 12


def test_lost_pieces_get_no_melody() -> None:
    tl = compile_rite(load_rite("da-she"))
    sung = {n.cue for n in tl.notes if n.instrument == "歌" and n.lyric != "獲"}  # (the 獲者)
    assert "she-jie" not in sung and "guan-xin-gong" not in sung  # 貍首, 新宮 are lost
    drone = {n.semitones for n in tl.notes if n.cue == "guan-xin-gong"}
    assert drone <= {0, 7, 12, 19}
    sixia = [n for n in tl.notes if n.cue == "si-xia-bin"]
    assert sixia[0].instrument == "鼗"  # 「賓至，搖之以奏樂也」
    order = [n.instrument for n in sixia if n.semitones is None][:4]
    assert order[:3] == ["鼗", "朔鼙", "應鼙"]  # 「先擊朔鼙，應鼙應之」, small before large
