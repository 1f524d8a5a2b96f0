"""The limiter's true-peak oversampling: scipy's ``resample_poly`` numbers, without scipy.signal."""

from __future__ import annotations

import numpy as np
from scipy.signal import firwin, resample_poly

from instruments.mix import limiter


def test_the_resampler_taps_are_scipys() -> None:
    designed = firwin(81, 0.25, window=("kaiser", 5.0)) * limiter.TRUE_PEAK_OVERSAMPLING
    taps = limiter._RESAMPLER_TAPS
    assert np.array_equal(np.array(taps + taps[-2::-1]), designed)


def test_oversampling_gives_resample_polys_numbers() -> None:
    """The same float64 numbers as ``resample_poly(x, 4, 1)`` over each chunk (its context
    read, zeros at the ends), for loud and quiet windows."""
    rng = np.random.default_rng(25)
    up, c, chunk = limiter.TRUE_PEAK_OVERSAMPLING, limiter._CONTEXT, limiter.LIMITER_CHUNK
    for trial in range(40):
        windows = np.zeros((2, int(rng.integers(1, 5)), chunk + 2 * c))
        windows[:] = (rng.standard_normal(windows.shape) * rng.uniform(0.01, 1.5)
                      ).astype(np.float32)
        if trial % 3 == 0:
            windows[:, :, :int(rng.integers(1, 40))] = 0.0
        expected = resample_poly(windows, up, 1, axis=2)[:, :, up * c:up * (c + chunk)]
        assert np.array_equal(limiter._oversampled(windows), expected)


def test_chunk_true_peaks_find_the_intersample_peak() -> None:
    n = np.arange(4 * limiter.LIMITER_CHUNK)
    x = (0.9 * np.sin(2 * np.pi * 0.25 * n + np.pi / 4)).astype(np.float32)  # samples ±0.636
    peaks = limiter.chunk_true_peaks(x, 0.8)
    assert np.all(peaks[1:-1] > 0.85)
    assert limiter.true_peak(x) > 0.85
