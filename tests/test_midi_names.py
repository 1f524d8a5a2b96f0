"""MIDI track names read back right: in ASCII, so that mido's default (latin-1) and DAWs that
read meta text as latin-1 or their code page show them as written; the Chinese name in each
track's instrument-name event and the markers and lyrics in UTF-8 (DESIGN: text meta events
are UTF-8)."""

from __future__ import annotations

import io

import mido

from cues.catalog import get_instrument
from cues.sheet.loader import load_rite
from sequencer.outputs.smf import ascii_track_name, build_midi_bytes
from sequencer.timeline.compiler import compile_rite, make_settings
from sequencer.timeline.realization import named_instrument


def _midi_bytes() -> bytes:
    rite = load_rite("da-she")
    return build_midi_bytes(compile_rite(rite, make_settings(rite.settings)), title="大射")


def test_track_names_read_back_the_same_in_mido_default_and_utf8() -> None:
    data = _midi_bytes()
    default = mido.MidiFile(file=io.BytesIO(data))  # mido's default charset: latin-1
    utf8 = mido.MidiFile(file=io.BytesIO(data), charset="utf-8")
    names = [[m.name for m in t if m.type == "track_name"] for t in default.tracks]
    assert names == [[m.name for m in t if m.type == "track_name"] for t in utf8.tracks]
    assert all(len(n) == 1 and n[0].isascii() and n[0] for n in names)
    assert names[0] == ["da-she"]
    for track_default, track_utf8 in zip(default.tracks[1:], utf8.tracks[1:], strict=True):
        name = next(m.name for m in track_default if m.type == "track_name")
        chinese = next(m.name for m in track_utf8 if m.type == "instrument_name")
        assert named_instrument(name) == chinese == get_instrument(chinese).name, name
    assert "bianzhong, graded bronze bells" in [n[0] for n in names]
    markers = [m.text for m in utf8.tracks[0] if m.type == "marker"]
    assert markers[0].startswith("si-xia-bin") and any("節" in m for m in markers)


def test_a_name_with_chinese_in_it_keeps_only_its_ascii() -> None:
    assert ascii_track_name("guan", "guan, paired bamboo pipes (簜)") == \
        "guan, paired bamboo pipes"
    assert ascii_track_name("ge", "the 工's singing voice") == "ge"
    assert ascii_track_name("gu", "gu, drum (large)") == "gu, drum (large)"
    assert named_instrument("鼓 (gu, drum)") == "鼓"  # a file from before still reads
