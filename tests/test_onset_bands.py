"""The onset detector's band powers (``sequencer/check/onsets.py``): each band a run of FFT bins,
summed in chunks that threads may share — the same numbers as summing each bin of the band, and
the same curves with or without the threads."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from itertools import pairwise

import numpy as np
import pytest
from numpy.lib.stride_tricks import sliding_window_view

from sequencer.check.onsets import _BAND_EDGES_HZ, _StrengthStream


@pytest.mark.parametrize("rate", [1000, 8000, 22050, 44100, 48000, 96000])
def test_each_band_sums_its_own_bins(rate: int) -> None:
    stream = _StrengthStream(rate)
    rng = np.random.default_rng(rate)
    x = rng.standard_normal(stream.n_fft * 4).astype(np.float32)
    windows = sliding_window_view(x, stream.n_fft)[:: stream.hop]
    got = stream._band_power(windows)
    # by definition: every bin at or over 30 Hz, in the band whose edges hold its frequency
    power = np.abs(np.fft.rfft(windows.astype(np.float64) * stream.window, axis=1)) ** 2
    freqs = np.fft.rfftfreq(stream.n_fft, 1.0 / rate)
    edges = [e for e in _BAND_EDGES_HZ if e < rate / 2] + [rate / 2 + 1.0]
    want = np.stack([power[:, (freqs >= lo) & (freqs < hi)].sum(axis=1)
                     for lo, hi in pairwise(edges)], axis=1)
    assert got.shape == want.shape
    assert np.all(want > 0)  # no band is empty
    np.testing.assert_allclose(got, want, rtol=1e-4)


def test_threads_give_the_same_curves() -> None:
    rng = np.random.default_rng(7)
    signal = rng.standard_normal(48000 * 13) * 0.1  # over a block of 11 s, and a chunk's end
    signal[48000 * 3: 48000 * 3 + 200] += 0.9  # a stroke

    def curves(pool: ThreadPoolExecutor | None) -> tuple[np.ndarray, np.ndarray]:
        stream = _StrengthStream(48000, pool)
        parts = [stream.feed(signal[i:i + 300_000]) for i in range(0, signal.size, 300_000)]
        return (np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]))

    alone = curves(None)
    with ThreadPoolExecutor(2) as pool:
        shared = curves(pool)
    assert alone[0].size > 2000
    assert np.array_equal(alone[0], shared[0]) and np.array_equal(alone[1], shared[1])
    assert alone[0].max() > 14.0  # the stroke is there to find
