"""The MIDI file carries the layout: pan (CC 10) and volume (CC 7) at each track's start."""

from __future__ import annotations

import io

import mido

from cues.sheet.loader import load_rite
from sequencer.outputs.smf import build_midi_bytes
from sequencer.timeline.compiler import compile_rite, make_settings


def test_tracks_start_with_pan_and_volume_from_the_layout() -> None:
    rite = load_rite("da-she")
    timeline = compile_rite(rite, make_settings(rite.settings))
    midi = mido.MidiFile(file=io.BytesIO(build_midi_bytes(timeline)))
    pans: dict[int, int] = {}
    drum_tracks_with_controls = 0
    for track in midi.tracks[1:]:
        head = []
        for msg in track:
            if msg.type == "note_on":
                break
            head.append(msg)
        channel = next(m.channel for m in track if m.type == "note_on")
        controls = {m.control: m.value for m in head if m.type == "control_change"}
        if channel == 9:  # GM drums share a channel: the first drum track sets it
            drum_tracks_with_controls += 7 in controls
            continue
        assert 7 in controls and 10 in controls, channel
        assert 1 <= controls[7] <= 127
        pans[channel] = controls[10]
    assert drum_tracks_with_controls == 1
    # the 歌 (channel 7) and 瑟 (channel 3) stand together with the 工; markers are untouched
    assert pans[7] == pans[3]
    assert any(m.type == "marker" for m in midi.tracks[0])


def test_east_and_west_drums_pan_to_their_sides() -> None:
    rite = load_rite("da-she")
    timeline = compile_rite(rite, make_settings(rite.settings))
    midi = mido.MidiFile(file=io.BytesIO(build_midi_bytes(timeline)))
    drum_pans = [m.value for t in midi.tracks[1:] for m in t
                 if m.type == "control_change" and m.control == 10 and m.channel == 9]
    assert len(drum_pans) == 1  # once for the shared channel
