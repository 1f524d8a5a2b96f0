"""The onset detector's fine stage: where, to the sample, a stroke found on a strength curve
starts (the method: :mod:`sequencer.check.onsets`, stage 3).

The signal around a stroke is high-passed at each corner of ``FINE_HIGHPASS_HZ`` (the low tails
of earlier strokes stay out); :func:`clearest_band` picks the band where the stroke stands
highest over the level just before it, and :func:`first_crossing` finds where its fine envelope
first rises 15 % of the way from that level to the stroke's peak.
"""

from __future__ import annotations

import numpy as np
from scipy import signal

__all__ = ["FINE_WINDOW_S", "PREROLL_S", "clearest_band", "fine_bands", "first_crossing"]

# the fine stage listens above the low tails of earlier strokes, in the band where the stroke
# stands out most: above 1 kHz unless a higher one is clearer (a ringing string, a drum's ring)
FINE_HIGHPASS_HZ = (1000.0, 2000.0, 4000.0, 8000.0)
_FINE_RATIO_CAP = 1000.0  # peak over pre-level counts up to this (a stroke out of silence)
PREROLL_S = 0.2  # the high-pass settles over this much audio before a fine window
FINE_WINDOW_S = 0.00025  # fine RMS window
_RISE_FRACTION = 0.15  # where on the way from pre-level to peak the onset is placed
_PRE_PERCENTILE = 99.0  # the level before a stroke: nearly the top of its envelope over the
# pre-window (the tail of an earlier stroke swings)


def fine_bands(x: np.ndarray, start: int, stop: int, rate: int) -> np.ndarray:
    """Samples [start, stop) of ``x`` high-passed for the fine stage, one row per corner of
    ``FINE_HIGHPASS_HZ`` below a quarter of the rate (unfiltered if none is), the filters
    settled on up to 0.2 s before."""
    pre = max(0, start - round(PREROLL_S * rate))
    seg = x[pre:stop]
    corners = [hz for hz in FINE_HIGHPASS_HZ if rate > 4 * hz] if seg.size else []
    if not corners:
        return seg[None, start - pre:]
    seg = seg - seg[: max(1, start - pre)].mean()
    return np.array([signal.sosfilt(signal.butter(2, hz, btype="highpass", fs=rate,
                                                  output="sos"), seg)[start - pre:]
                     for hz in corners])


def _envelope(seg: np.ndarray, w: int) -> np.ndarray:
    """The fine envelope of ``seg``: its RMS over a centred window of ``w`` samples."""
    return np.sqrt(np.convolve(seg * seg, np.ones(w) / w, mode="same"))


def clearest_band(bands: np.ndarray, a: int, b: int, pre: int, w: int) -> int:
    """The row of ``bands`` whose peak in ``[a, b)`` stands highest over its level in
    ``[pre, a)`` (the lowest of equals: a stroke out of silence stands out in every band)."""
    if b - a < 1 or a <= pre:
        return 0
    ratios = []
    for seg in bands:
        env = _envelope(seg, w)
        peak = float(np.max(env[a:b]))
        pre_level = float(np.percentile(env[pre:a], _PRE_PERCENTILE))
        ratios.append(peak / max(pre_level, peak / _FINE_RATIO_CAP) if peak > 0 else 0.0)
    return int(np.argmax(ratios))


def first_crossing(seg: np.ndarray, a: int, b: int, pre: int, w: int, fallback: float) -> float:
    """Where the fine envelope of ``seg`` first crosses the rise threshold in ``[a, b)``."""
    if b - a < 2:
        return fallback
    env = _envelope(seg, w)
    pre_level = float(np.percentile(env[pre:a], _PRE_PERCENTILE)) if a > pre else 0.0
    peak_at = a + int(np.argmax(env[a:b]))
    peak = float(env[peak_at])
    if peak <= pre_level * 1.5 or peak <= 0.0:
        return fallback
    threshold = pre_level + _RISE_FRACTION * (peak - pre_level)
    # the first crossing after a, not the last one before the peak: a low drum's envelope
    # swings with its waveform, dipping below the threshold between cycles after the stroke
    above = np.nonzero(env[a : peak_at + 1] >= threshold)[0]
    if above.size and above[0] == 0 and peak_at > a and a > pre:
        # already above at a: an earlier stroke still rings (none can at the signal's first
        # sample: a stroke there starts there). The stroke starts after the
        # quietest moment (2 ms RMS) before its peak; measure the rise from there
        smooth = _envelope(seg, 8 * w)
        a = a + int(np.argmin(smooth[a:peak_at]))
        threshold = float(smooth[a]) + _RISE_FRACTION * (peak - float(smooth[a]))
        above = np.nonzero(env[a : peak_at + 1] >= threshold)[0]
    if above.size == 0 or above[0] == 0:  # still above threshold at a: the best is a
        return float(a)
    j = a + int(above[0]) - 1  # the last sample below threshold before the first crossing
    e0, e1 = float(env[j]), float(env[j + 1])
    frac = (threshold - e0) / (e1 - e0) if e1 > e0 else 0.0
    return j + min(max(frac, 0.0), 1.0)
