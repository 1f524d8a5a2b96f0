"""Tests of the equal-interval grid test (issue 6): the robust fit, violations, merging."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cues.errors import UserError
from sequencer.check.grid import check_grid, merge_onsets


def grid_times(n: int = 12, interval: float = 0.5, start: float = 0.25) -> list[float]:
    return [start + interval * i for i in range(n)]



def test_exact_grid_holds() -> None:
    report = check_grid([1.0, 1.5, 2.0, 2.5, 3.0], 1.0, "five")
    assert report.ok and report.violations == ()
    assert report.count == 5
    assert report.mean_interval_s == pytest.approx(0.5)
    assert report.cv == pytest.approx(0.0, abs=1e-12)
    assert report.max_deviation_ms == pytest.approx(0.0, abs=1e-9)
    assert report.label == "five"


def test_one_displaced_beat_is_one_violation() -> None:
    times = [0.5 * i for i in range(8)]
    times[3] += 0.020
    report = check_grid(times, 1.0, "displaced")
    assert not report.ok
    assert [v.index for v in report.violations] == [3]
    assert report.violations[0].deviation_ms == pytest.approx(20.0, abs=1e-6)
    assert report.violations[0].time_s == pytest.approx(1.52)
    assert report.max_deviation_ms == pytest.approx(20.0, abs=1e-6)
    assert report.cv > 0


def test_displaced_first_beat_is_found_where_least_squares_would_blame_others() -> None:
    times = [0.0, 1.0, 2.0, 3.0]
    times[0] -= 0.010
    report = check_grid(times, 2.0, "first early")
    assert [(v.index, round(v.deviation_ms, 6)) for v in report.violations] == [(0, -10.0)]


def test_grid_indices_allow_a_gap() -> None:
    report = check_grid([0.0, 1.0, 3.0, 4.0], 1.0, "gap", indices=[0, 1, 3, 4])
    assert report.ok
    assert report.mean_interval_s == pytest.approx(1.0)


def test_drift_is_reported_against_the_fitted_grid() -> None:
    # a steady accelerando: intervals shrink by 5 ms each, both ends leave the grid
    times = np.cumsum([0.0] + [0.6 - 0.005 * i for i in range(10)]).tolist()
    report = check_grid(times, 1.0, "accelerando")
    assert not report.ok
    assert {0, 10} <= {v.index for v in report.violations}


@pytest.mark.parametrize("onsets", [[], [1.0], [1.0, 2.0]])
def test_fewer_than_three_onsets_is_bad_input(onsets: list[float]) -> None:
    with pytest.raises(UserError, match="at least 3"):
        check_grid(onsets, 1.0, "short")


def test_onsets_that_do_not_advance_are_bad_input() -> None:
    with pytest.raises(UserError, match="do not advance"):
        check_grid([1.0, 1.0, 1.0], 1.0, "stuck")


@settings(max_examples=150, deadline=None)
@given(
    n=st.integers(min_value=3, max_value=60),
    bpm=st.floats(min_value=20.0, max_value=300.0),
    start=st.floats(min_value=0.0, max_value=600.0),
    tol_ms=st.floats(min_value=0.1, max_value=20.0),
)
def test_property_exact_grid_always_holds(n: int, bpm: float, start: float, tol_ms: float) -> None:
    interval = 60.0 / bpm
    report = check_grid([start + interval * i for i in range(n)], tol_ms, "grid")
    assert report.ok
    assert report.max_deviation_ms < 1e-6
    assert report.mean_interval_s == pytest.approx(interval, rel=1e-9)


@settings(max_examples=200, deadline=None)
@given(
    data=st.data(),
    n=st.integers(min_value=4, max_value=60),
    bpm=st.floats(min_value=20.0, max_value=300.0),
    start=st.floats(min_value=0.0, max_value=600.0),
    tol_ms=st.floats(min_value=0.1, max_value=20.0),
)
def test_property_single_displacement_is_found_at_its_index(
    data: st.DataObject, n: int, bpm: float, start: float, tol_ms: float
) -> None:
    interval = 60.0 / bpm
    limit_ms = 0.4 * interval * 1000.0  # stays between its neighbours
    if limit_ms <= tol_ms * 1.01:
        return
    index = data.draw(st.integers(min_value=0, max_value=n - 1), label="index")
    size_ms = data.draw(st.floats(min_value=tol_ms * 1.01, max_value=limit_ms), label="size")
    sign = data.draw(st.sampled_from([-1.0, 1.0]), label="sign")
    times = [start + interval * i for i in range(n)]
    times[index] += sign * size_ms / 1000.0
    report = check_grid(times, tol_ms, "displaced")
    assert [v.index for v in report.violations] == [index]
    assert report.violations[0].deviation_ms == pytest.approx(sign * size_ms, abs=1e-6)


def test_merge_onsets_merges_chords_within_the_window() -> None:
    assert merge_onsets([1.0, 0.0, 0.010, 0.5, 0.529, 0.531]) == [0.0, 0.5, 0.531, 1.0]
    assert merge_onsets([0.0, 0.02, 0.04, 0.06]) == [0.0, 0.04]  # groups do not chain
    assert merge_onsets([]) == []
