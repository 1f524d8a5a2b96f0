"""A rig for hearing the drum over JACK, run in a process of its own (a process's libjack keeps
to one server: the tests give it theirs through ``JACK_DEFAULT_SERVER``).

    python tests/hear_rig.py detect FILE.wav OUT.json [LEAD_IN_S]
        plays FILE (mono mix, after LEAD_IN_S of silence) into a JACK audio port that the
        hearing process (``sequencer.live.hearing.hearer.Hearer``) hears, and writes what it
        reported, the frame of the file's first sample, every period the player wrote and the
        xruns each client saw (their frames);
    python tests/hear_rig.py live FILE.wav OUT.json -- LIVE-ARGS...
        runs ``yuezheng live LIVE-ARGS --hear jack:<player> --output jack:<receiver>`` and plays
        FILE into the player once the show's first note-on has arrived (a drummer who comes in
        with the program), and writes the receiver's messages (JACK frames) and the same.

Everything is in JACK frames (the audio's own clock): a stroke at the file's sample ``i`` went
out at frame ``first_frame + i``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import soundfile as sf

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from instruments.ports.jackaudio import JackAudioPlayer  # noqa: E402
from instruments.ports.jacklib import JackMidiInput  # noqa: E402


def _signal(path: str, lead_in_s: float) -> tuple[np.ndarray, int]:
    x, rate = sf.read(path, always_2d=True)
    return np.concatenate([np.zeros(round(lead_in_s * rate)), x.mean(axis=1)]), int(rate)


def _player_record(player: JackAudioPlayer) -> dict:
    return {"first_frame": player.first_frame, "written": list(player.written),
            "player_xruns": list(player.xrun_frames)}


def detect(path: str, out: str, lead_in_s: float = 0.5) -> None:
    from sequencer.live.hearing.hearer import Hearer
    from sequencer.live.hearing.source import HearSpec
    from sequencer.live.protocol import HearingStatus, InputGap, StrokeHeard

    signal, rate = _signal(path, lead_in_s)
    pid = os.getpid()
    player = JackAudioPlayer(f"yzplay{pid}", signal).open()
    hearer = Hearer(HearSpec("jack", player.own_name), client_name=f"yzhear{pid}",
                    refractory_s=0.125).open()
    events: list = []
    try:
        time.sleep(0.3)
        player.play()
        while not player.done:
            time.sleep(0.05)
            events += hearer.new_events()
        time.sleep(0.3)
        events += hearer.new_events()
    finally:
        hearer.close()
        events += hearer.new_events()
        player.close()
    ready = hearer.ready
    assert ready is not None
    record = {
        "rate": rate, "period": ready.period, "input_latency": ready.input_latency,
        "lead_in": round(lead_in_s * rate), **_player_record(player),
        "strokes": [[e.frame, e.t, e.latency_s, e.strength_db] for e in events
                    if isinstance(e, StrokeHeard)],
        "gaps": [[e.frame, e.frames] for e in events if isinstance(e, InputGap)],
        "hearer_xruns": [f for e in events if isinstance(e, HearingStatus)
                         for f in e.xrun_frames],
    }
    Path(out).write_text(json.dumps(record), encoding="utf-8")


def live(path: str, out: str, args: list[str]) -> None:
    signal, rate = _signal(path, 0.0)
    pid = os.getpid()
    player = JackAudioPlayer(f"yzplay{pid}", signal).open()
    receiver = JackMidiInput(f"yzrx{pid}").open()
    try:
        proc = subprocess.Popen(
            [sys.executable, str(ROOT / "cli.py"), "live", *args,
             "--hear", f"jack:{player.own_name}", "--output", f"jack:{receiver.own_name}"],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        waited = time.perf_counter() + 60
        while (not any(m[1][0] & 0xF0 == 0x90 for m in list(receiver.messages))
               and time.perf_counter() < waited and proc.poll() is None):
            time.sleep(0.0005)
        player.play()
        stdout, stderr = proc.communicate(timeout=180)
        time.sleep(0.2)
    finally:
        receiver.close()
        player.close()
    record = {"rate": rate, "code": proc.returncode, "stdout": stdout, "stderr": stderr,
              **_player_record(player),
              "received": [[frame, data.hex()] for frame, data, _, _ in receiver.messages]}
    Path(out).write_text(json.dumps(record), encoding="utf-8")


if __name__ == "__main__":
    mode, wav, target = sys.argv[1:4]
    if mode == "detect":
        detect(wav, target, *(float(a) for a in sys.argv[4:5]))
    else:
        live(wav, target, sys.argv[sys.argv.index("--") + 1:])
