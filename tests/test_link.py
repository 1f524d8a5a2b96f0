"""Ableton Link (``live --link`` / ``--link-follow``): the grid and the exact retime as data, and
two real Link peers — yuezheng and a plain aalink peer — inside a private network namespace
(``tests/netns.py``; Link never runs on the host network). No skip: without ``unshare`` the
namespace tests fail."""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

import pytest

from benchmarks.link_phase import SHEET, N, measure_follow, run_peer
from cues.sheet.loader import parse_sheet
from sequencer.live.cuelist import CueInfo, CueList
from sequencer.live.link.session import followed_jie_s, jie_grid, phase_error_beats
from sequencer.live.player.snapshot import Snapshot
from sequencer.live.protocol import StartCue
from sequencer.live.screens.console import screen
from sequencer.outputs.cue_schedule import cue_schedules, retimed
from sequencer.timeline.compiler import compile_rite
from sequencer.timeline.settings import make_settings
from tests.netns import netns_command, run_in_netns
from tests.timing import late_run, on_time, timing_flaky


# the grid and the retime, as data -------------------------------------------------------------
def test_grid_tempo_is_60_over_the_jie_and_the_quantum_a_cycle() -> None:
    grid = jie_grid(Fraction(1, 2), 5)
    assert (grid.beats_per_jie, grid.tempo, grid.quantum) == (1, 120.0, 5)
    assert [grid.beat(i) for i in range(6)] == [0, 1, 2, 3, 4, 5]  # beat 5: phase 0, 節 1


def test_a_long_jie_is_cut_into_beats_within_links_tempo_range() -> None:
    grid = jie_grid(Fraction(20), 5)  # 3 bpm is below Link's 20: 8 beats of 2.5 s
    assert (grid.beats_per_jie, grid.tempo, grid.quantum) == (8, 24.0, 40)
    assert jie_grid(Fraction(3), 5).beats_per_jie == 1  # exactly 20 bpm


def test_a_followed_tempo_gives_an_exact_jie() -> None:
    assert followed_jie_s(75.0, 1) == Fraction(4, 5)
    assert followed_jie_s(97.5, 1) == Fraction(8, 13)
    assert followed_jie_s(24.0, 8) == Fraction(20)


def test_phase_error_wraps_around_the_quantum() -> None:
    assert phase_error_beats(10.001, 5, 5) == pytest.approx(0.001)
    assert phase_error_beats(9.999, 5, 5) == pytest.approx(-0.001)
    assert phase_error_beats(-0.002, 5, 5) == pytest.approx(-0.002)
    assert phase_error_beats(-0.002, 3, 5) == pytest.approx(1.998)  # 3 is 2 beats ahead


def test_retimed_schedule_is_exact_from_the_ticks() -> None:
    settings = make_settings({}, {"jie_seconds": "0.25"})
    timeline = compile_rite(parse_sheet(SHEET), settings)
    sched = cue_schedules(timeline)["she"]
    factor = followed_jie_s(75.0, 1) / Fraction(1, 4)
    new = retimed(sched, factor)
    assert [j.t for j in new.jie] == [float(Fraction(4, 5) * i) for i in range(6 * N)]
    assert new.times == tuple(float(Fraction(t, 960) * factor) for t in sched.ticks)
    assert new.length_s == float(Fraction(4, 5) * 6 * N) and new.cycle_s == 4.0
    assert new.messages == sched.messages and new.scale == factor


def test_the_planner_moves_and_stretches_a_cue_as_it_is_scheduled() -> None:
    cue = CueInfo("she", length_s=2.5, cycle_s=1.25, rest_points=(1.25, 2.5))
    machine = CueList([cue, CueInfo("next", length_s=1.0, trigger="follow")])
    machine.planner = lambda info, t0: (t0 + 0.3, 2.0) if info.id == "she" else (t0, 1.0)
    actions = machine.go(10.0)
    assert actions[0] == StartCue("she", 10.3)
    run = machine.runs["she"]
    assert (run.end, run.rests, run.bounds) == (15.3, [2.5, 5.0], [2.5, 5.0])
    assert StartCue("next", 15.3) in actions  # what follows moves with it


def test_the_console_shows_the_link_line() -> None:
    snap = Snapshot("試", (), None, "", "", (), None, False, 0, "", False, "",
                    link="Link lead: 1 peer(s), 120.000 bpm, phase error +0.012 ms")
    assert "Link lead: 1 peer(s), 120.000 bpm, phase error +0.012 ms" in screen(snap)


def test_link_and_link_follow_exclude_each_other(capsys) -> None:
    import cli

    assert cli.main(["live", "xiang-she", "--output", "memory:", "--auto", "--link",
                     "--link-follow"]) == 2
    assert "not allowed with" in capsys.readouterr().err


# real peers in a private network namespace ----------------------------------------------------
@pytest.mark.net
def test_the_namespace_has_only_loopback() -> None:
    assert netns_command(["true"])[:2] == ["unshare", "-n"]
    done = run_in_netns(["ip", "-o", "link"], timeout=30)
    assert done.returncode == 0, done.stderr
    names = [line.split(":")[1].strip() for line in done.stdout.splitlines()]
    assert names == ["lo"]


def _late_is_timing(run: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """``run()``; a show that failed only by being late is a timing failure."""
    try:
        return run()
    except RuntimeError as exc:
        late_run(str(exc))
        raise


@pytest.mark.net
@timing_flaky
def test_a_plain_peer_hears_the_jie_on_its_beat() -> None:
    """yuezheng leads (--link) a 射節 of 30 節 of 0.25 s; a plain aalink peer's beat at each
    節's event time is within 1 ms of the 節's beat (p99), phase 0 on 節 1."""
    result = _late_is_timing(lambda: run_peer("lead", "0.25"))
    assert result["jie"] == 30 and result["peers"] >= 1
    assert result["session_tempo"] == 240.0
    on_time(result["peer_phase_error_ms"]["p99"] <= 1.0, f"{result}")
    # yuezheng's own reading, logged per 節, agrees with the plain peer's
    on_time(result["own_phase_error_ms"]["p99"] <= 1.0, f"{result}")


@pytest.mark.net
@timing_flaky
def test_follow_takes_the_session_tempo_for_the_next_shejie() -> None:
    """A plain peer sets 75 bpm; yuezheng (--link-follow, compiled at 0.25 s a 節) plays the
    射節 at 60/75 = 0.8 s a 節, starting on the session's phase 0."""
    result = _late_is_timing(lambda: measure_follow(75.0))
    sent = result["jie_deadlines"]
    assert len(sent) == 30 and result["peers"] >= 1
    spacing = [b - a for a, b in zip(sent, sent[1:], strict=False)]
    assert all(abs(s - 0.8) < 1e-9 for s in spacing), spacing
    on_time(abs(result["peer_errors_ms"][0]) <= 1.0, f"節 1 off the phase: {result}")
    on_time(result["peer_phase_error_ms"]["p99"] <= 1.0, f"{result}")
