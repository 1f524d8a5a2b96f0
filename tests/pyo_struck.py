"""The reference for the struck voices: a ``StruckNote`` rendered the old way, by a pyo graph on
an offline pyo server booted for the note (the graph the voices used before they were computed
in closed form by ``instruments.voices.modal``): a ``Trig`` per strike into one ``ComplexRes`` per mode
(a unit impulse rings as 0.01·e^(−t/decay)·sin(2πft)), the drum's glide as a ``Linseg``/``Pow``
envelope added to the frequency, the strike noise as ``Noise`` under an exponential envelope
through ``ButLP`` / ``ButBP``.  Used by tests/test_voices_struck_numpy.py and
benchmarks/struck_voices.py (the old path's time)."""

from __future__ import annotations

import math
import os
import tempfile
from typing import Any

import numpy as np

from instruments.voices.struck_models import NOISE_CUT_TIME_CONSTANTS, NoiseBurst, StruckNote

_RES_GAIN = 100.0  # ComplexRes's impulse response is 0.01·e^(−t/decay)·sin(2πft)


def _decay(P: Any, tau: float, amp: float, keep: list[Any], attack: float) -> Any:
    """amp · (linear attack) · exp(−t/τ), cut after 12 τ."""
    active = attack + NOISE_CUT_TIME_CONSTANTS * tau
    att = P.Linseg([(0.0, 0.0), (attack, amp), (active, amp)])
    ramp = P.Linseg([(0.0, 0.0), (active, -active / tau)])
    env = P.Pow(math.e, ramp, mul=att)
    for obj in (att, ramp, env):
        obj.play(dur=active)
    keep += [att, ramp, env]
    return env, active


def _noise(P: Any, burst: NoiseBurst, keep: list[Any]) -> Any:
    env, active = _decay(P, burst.tau_s, burst.amp, keep, burst.attack_s)
    noise = P.Noise(mul=env).play(dur=active)
    keep.append(noise)
    if burst.bandpass is not None:
        return P.ButBP(noise, freq=burst.bandpass[0], q=burst.bandpass[1])
    return P.ButLP(noise, freq=burst.lowpass_hz)


def _graph(P: Any, note: StruckNote, keep: list[Any], modes: bool, noise: bool,
           raw_noise: bool) -> list[Any]:
    parts = []
    for group in note.groups if modes else ():
        trigs = []
        for t, strength in group.strikes:
            trig = P.Trig()
            trig.play(delay=t) if t > 0 else trig.play()
            trigs.append(trig * strength)
            keep += [trig, trigs[-1]]
        strike = P.Mix(trigs, voices=1)
        glide: Any = 1.0
        if group.glide is not None:
            depth, tau = group.glide
            drop, _ = _decay(P, tau, depth, keep, attack=0.0001)
            glide = drop + 1.0
        for m in group.modes:
            freq = glide * m.hz
            res = P.ComplexRes(strike, freq=freq, decay=m.tau_s, mul=m.amp * _RES_GAIN)
            keep += [freq, res]
            parts.append(res)
        keep += [strike, glide]
    if noise and note.noise is not None:
        parts.append(_noise(P, note.noise, keep))
    if raw_noise:  # the noise generator alone, as the burst's Noise draws it
        parts.append(P.Noise())
    return parts


def render_pyo(note: StruckNote, n: int, sr: int, *, modes: bool = True, noise: bool = True,
               seed: int = 1, buffersize: int = 256, raw_noise: bool = False) -> np.ndarray:
    """``n`` samples of ``note`` rendered by pyo (float64).  pyo starts a delayed object at a
    block boundary: a buffersize dividing every strike's sample makes the strikes exact.
    ``raw_noise`` (with modes and noise off): the seed's noise sequence itself."""
    os.environ.setdefault("PYO_GUI_WX", "0")
    import pyo

    length_s = n / sr
    with tempfile.TemporaryDirectory(prefix="st2-pyo-") as tmp:
        server = pyo.Server(sr=sr, nchnls=1, duplex=0, audio="offline", buffersize=buffersize)
        server.setVerbosity(0)
        server.boot()
        try:
            server.setGlobalSeed(seed)
            server.recordOptions(dur=length_s + 2048 / sr, filename=os.path.join(tmp, "o.wav"),
                                 fileformat=0, sampletype=3)
            table = pyo.NewTable(length=length_s + 1024 / sr, chnls=1)
            keep: list[Any] = []
            mix = pyo.Mix(_graph(pyo, note, keep, modes, noise, raw_noise) or [pyo.Sig(0)], voices=1)
            rec = pyo.TableRec(mix, table=table).play()
            keep += [mix, rec]
            server.start()
            data = np.array(memoryview(table.getBuffer()), dtype=np.float64)
        finally:
            server.stop()
            server.shutdown()
    out = np.zeros(n)
    out[:min(n, data.size)] = data[:n]
    return out
