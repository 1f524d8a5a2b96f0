"""Controls that say what they did (issue 29): every command answers with what it did, or that
it did nothing and why, and the show log's ``operator`` record says the same with ``acted``;
the 無算樂's next piece chosen live (the state machine on a virtual clock, the sending process
over the memory output); the judge's delay taken off a live mark. The tests that run a show are
in the ``live`` tier, the others ``unit``.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest

from cues.sheet.loader import parse_sheet
from instruments.ports.memory import read_memory_record
from sequencer.judge.tally import Decision, Release
from sequencer.live.cuelist import CueInfo, CueList
from sequencer.live.player.judging import Judging
from sequencer.live.player.plan import plan_show
from sequencer.live.player.player import Player
from sequencer.live.protocol import (
    Back,
    EndCueAt,
    Go,
    Hold,
    JumpCue,
    MarkRelease,
    Panic,
    PickPiece,
    Resume,
    Skip,
    StartCue,
    Stop,
)
from sequencer.timeline.compiler import make_settings, select_cues
from tests.test_live_player import (
    EXACT,
    SETTINGS,
    SHEET,
    _ended,
    _silent,
    _step_for,
    _step_until,
)
from tests.timing import delivered, timing_flaky

ROOT = Path(__file__).resolve().parent.parent
# e: a 無算樂 of three lost 笙 pieces of 1 s each (at --lost-zhong-seconds 1), until stopped
WU_SUAN = SHEET + '''
[[cue]]
id = "e"
kind = "無算樂"
at = "無算爵"
pieces = [{ title = "南陔", by = "笙" }, { title = "白華", by = "笙" }, { title = "華黍", by = "笙" }]
instruments = [{ name = "笙", count = 1 }]
operator_ends = true
source = { work = "w", quote = "q" }
'''
PROGRAM = bytes.fromhex("c414")  # the 笙's program change: only at the start of a pass


def _player(tmp_path: Path, first: str, last: str, **kw) -> tuple[Player, Path]:
    rite = select_cues(parse_sheet(WU_SUAN), first, last)
    out = tmp_path / "sent.jsonl"
    return Player(plan_show(rite, SETTINGS), f"memory:{out}", client_name="yztest", **kw), out


def _answers(player: Player) -> list[tuple[str, str, bool]]:
    return [(r["action"], r["result"], r["acted"]) for r in player.log.records
            if r["event"] == "operator"]


def _do(player: Player, command: object) -> str:
    """Give ``command`` and return the console's message after it."""
    player.put(command, origin="key")  # type: ignore[arg-type]
    player.step(0.01)
    return player.status.message


@pytest.mark.live
def test_hold_resume_stop_skip_back_say_when_they_did_nothing(tmp_path: Path) -> None:
    player, _ = _player(tmp_path, "c", "d")
    with player:
        assert _do(player, Hold()) == ("key hold: nothing to hold: no cue is running or "
                                       "waiting")
        assert _do(player, Resume()) == "key resume: nothing to resume: the show is not held"
        assert _do(player, Stop()) == "key stop: nothing to stop: no cue is running"
        assert _do(player, Back()) == "key back: nothing to go back to: c is the first cue"
        assert _do(player, Skip()) == "key skip: skipped c; standby d"
        assert _do(player, Skip()) == "key skip: skipped d; standby end of the show"
        assert _do(player, Skip()) == ("key skip: nothing to skip: the end of the show is at "
                                       "standby")
        assert _do(player, PickPiece(step=1)) == ("key piece next: no piece to choose: no 無算樂 "
                                                  "runs until stopped")
        seq = player.status.seq
        _do(player, Stop())
        assert player.status.seq == seq + 1  # the same words again are news again
    assert [acted for _, _, acted in _answers(player)] == [False, False, False, False, True,
                                                           True, False, False, False]
    assert not [r for r in player.log.records if r["event"] in ("hold", "resume", "stop")]


@pytest.mark.live
def test_stop_hold_resume_and_panic_say_what_they_did(tmp_path: Path) -> None:
    player, _ = _player(tmp_path, "d", "d")
    with player:
        _do(player, Go())
        _step_for(player, 0.3)
        asked = time.perf_counter()
        assert _do(player, Hold()) == "key hold: held: d (r resumes)"
        held = time.perf_counter()
        assert _do(player, Hold()) == "key hold: already held (r resumes)"
        _step_for(player, 0.2)
        resuming = time.perf_counter()
        said = _do(player, Resume())
        resumed = time.perf_counter()
        words = re.fullmatch(r"key resume: resumed after (\d+\.\d) s held: d.*", said)
        assert words, said
        # the time held, said to 0.1 s: between what the test saw of it at least and at most
        # (its own steps take time on a busy machine, so not a fixed "0.2 s")
        assert resuming - held - 0.051 <= float(words[1]) <= resumed - asked + 0.051, said
        message = _do(player, Stop())
        assert message.startswith("key stop: d ends at its next rest point, in 0.")
        assert message.endswith(" s (樂闋)")
        assert _do(player, Stop()) == "key stop: d cut at once"
        _step_until(player, _ended(player, "d"))
        assert _do(player, Panic()) == ("key panic: panic 1: nothing was running; notes released "
                                        "(p again: all off on every channel)")
        assert _do(player, Panic()) == ("key panic: panic 2: all notes off and all sound off "
                                        "(CC 123, 120) on all 16 channels")
    answers = _answers(player)
    assert [a for a, _, acted in answers if not acted] == ["hold"]
    assert answers[0] == ("GO", "start d", True)
    first = player.log.records[0]
    assert first["event"] == "show"
    assert datetime.fromisoformat(first["date"]).tzinfo is not None  # a wall-clock date


def test_the_state_machine_plays_the_piece_chosen_next() -> None:
    """Exact times: three pieces of 1 s, chosen at 0.3 s of the first: the third follows it."""
    sections = (("南陔", 0.0, 1.0), ("白華", 1.0, 2.0), ("華黍", 2.0, 3.0))
    m = CueList([CueInfo("e", 3.0, "go", loops=True, rest_points=(1.0, 2.0, 3.0),
                         sections=sections)])
    assert m.go(10.0) == [StartCue("e", 10.0)]
    m.tick(10.3)
    assert m.choosing() == "e"
    assert m.piece("e", 10.3) == (0, pytest.approx(0.3), 1, False)
    assert m.pick("e", 2, 10.3) == [JumpCue("e", 11.0, 2.0)]
    assert m.piece("e", 10.5)[2:] == (2, True)
    m.tick(11.5)
    assert m.piece("e", 11.5) == (2, pytest.approx(0.5), 0, False)  # then on in order
    assert m.position("e", 2.2) == pytest.approx(0.2)  # the third piece ended a pass early
    assert m.stop(11.6) == [EndCueAt("e", pytest.approx(12.0))]  # its next rest: its end
    # a choice within the stop lead of a piece's end waits for the next end
    m2 = CueList([CueInfo("e", 3.0, "go", loops=True, rest_points=(1.0, 2.0, 3.0),
                          sections=sections)])
    m2.go(0.0)
    assert m2.pick("e", 0, 0.98) == [JumpCue("e", pytest.approx(2.0), 0.0)]
    # choosing what comes next anyway asks for no jump
    assert m2.pick("e", 2, 1.2) == [JumpCue("e", pytest.approx(2.0), None)]


@pytest.mark.live
def test_the_sender_goes_on_with_the_piece_chosen(tmp_path: Path) -> None:
    player, out = _player(tmp_path, "e", "e")
    with player:
        _do(player, Go())
        _step_for(player, 0.3)
        message = _do(player, PickPiece(index=3))
        assert message.startswith("key piece 3: e: after 《南陔》 (in 0.")
        assert message.endswith("), 《華黍》 (3/3)")
        _step_for(player, 2.2)  # past the jump, and past the pass it shortened
        _do(player, Stop())
        _step_until(player, _ended(player, "e"))
    records = read_memory_record(out)
    start = next(r["t"] for r in player.log.records if r["event"] == "start")
    end = next(r["t"] for r in player.log.records if r["event"] == "end")
    passes = [at - start for at, data in records if data == PROGRAM]
    # 南陔 (1 s), then 華黍 (1 s): the next pass begins 2 s in, not 3 s
    assert passes == [pytest.approx(0.0, abs=EXACT), pytest.approx(2.0, abs=EXACT)]
    notes = [at - start for at, data in records if data[0] & 0xF0 == 0x90 and data[2]]
    assert notes[:4] == [pytest.approx(t, abs=EXACT) for t in (0, 0, 1, 1)]  # no gap
    assert end - start == pytest.approx(3.0, abs=EXACT)  # the stop at the next rest point
    assert _silent(records)


def _judging(delay_s: float) -> tuple[Judging, str]:
    rite = select_cues(parse_sheet(SHEET), "c", "c")
    settings = make_settings({}, {"tempo_bpm": 600, "jie_seconds": "1"})
    return Judging(plan_show(rite, settings), mark_delay_s=delay_s), "c"


def test_a_mark_is_judged_at_the_release_and_its_verdict_fits() -> None:
    """節 of 1 s, 5 to a cycle, the first to listen; the 上射 looses on the 節, the 下射 half a
    節 later (the half rule)."""
    judging, cue = _judging(0.25)
    assert judging.setup(cue).windows_s[:2] == (1.0, 1.5)
    decision, tally = judging.mark(cue, Release(1.03, "右", True))
    verdict = judging.verdict(cue, decision)
    assert verdict == "右 hit · 上耦 節 2 · +30 ms from the drum → 釋"
    assert len(verdict) < 60  # one line of an 80-column console
    late = judging.verdict(cue, judging.mark(cue, Release(1.24, "右", True))[0])
    assert late == "右 hit · 上耦 節 2 · +240 ms from the drum (beyond ±150) → 不釋"
    listening = judging.verdict(cue, judging.mark(cue, Release(0.5, "左", True))[0])
    assert listening.endswith("節 1 · in the listening 節 (先以聽) → 不釋")
    miss = judging.verdict(cue, Decision(Release(1.5, "左", False), False, "miss"))
    assert miss.endswith("→ miss")
    assert judging.drift(cue) == "marks +30 ms from the drum (median of 1; delay 250 ms)"


@pytest.mark.live
def test_a_live_mark_takes_the_judges_delay_off_the_press(tmp_path: Path) -> None:
    """A key pressed after a 節 is judged at the press less the judge's delay: the release's
    time in the log lies between (before − delay) and (after − delay) of the press, anchored
    on the last 節 the sending process reached."""
    for delay in (0.0, 0.25):
        player, _ = _player(tmp_path, "c", "c", mark_delay_s=delay)
        with player:
            _do(player, Go())
            _step_until(player, lambda p=player: "c" in p.marks.sent)
            mark, at = player.marks.sent["c"]
            before = time.perf_counter()
            player.put(MarkRelease("右", True), origin="key")
            player.step(0.01)
            after = time.perf_counter()
        record = next(r for r in player.log.records if r["event"] == "release")
        anchor = mark.t  # the 節's time in the cue (no nudge: factor 1)
        assert record["delay_ms"] == delay * 1000
        assert anchor + (before - delay - at) - 1e-4 <= record["t"]
        assert record["t"] <= anchor + (after - delay - at) + 1e-4


@pytest.mark.live
def test_osc_answers_a_wrong_case_and_a_refused_quit(tmp_path: Path) -> None:
    from tests.test_osc_hostile import Remote, _free_port, _live

    port, log = _free_port(), tmp_path / "show.jsonl"
    proc = _live("xiang-she", "--from", "gai", "--until", "gai", "--output", "memory:",
                 "--control", f"osc://127.0.0.1:{port}", "--log", str(log))
    remote = Remote(port)
    try:
        remote.wait_up()
        wrong = remote.ask("/Go")
        assert wrong == {"message": "unknown address '/Go' (addresses are lower case: /go)",
                         "acted": False}
        quit_ = remote.ask("/quit")
        assert quit_["acted"] is False and "--remote-quit" in quit_["message"]
        hold = remote.ask("/hold")
        assert hold["acted"] is False and hold["message"] == ("nothing to hold: no cue is "
                                                              "running or waiting")
        go = remote.ask("/go")
        assert go["acted"] is True and go["message"] == "start gai" and go["running"] == ["gai"]
        stop = remote.ask("/stop")
        assert stop["acted"] is True and stop["message"].startswith("gai ends at its next rest")
        assert proc.poll() is None
        proc.terminate()
        proc.communicate(timeout=20)
    finally:
        remote.close()
        if proc.poll() is None:
            proc.kill()
    records = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    operator = [(r["action"], r["origin"], r["acted"]) for r in records
                if r["event"] == "operator"]
    assert operator[0] == ("GO none", "osc", False)  # the probe: no such cue
    assert operator[1:] == [("quit", "osc", False), ("hold", "osc", False), ("GO", "osc", True),
                        ("stop", "osc", True)]


@pytest.mark.live
@timing_flaky
def test_plain_answers_an_unknown_command(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "cli.py"), "live", "xiang-she", "--from", "gai", "--until",
         "gai", "--plain", "--output", "memory:"], cwd=ROOT, input="sing\nhold\nquit\n",
        capture_output=True, text=True, timeout=60)
    delivered(proc.returncode, proc.stdout + proc.stderr)
    lines = proc.stdout.splitlines()
    assert any(line.startswith("not a command: 'sing'; type go, stop,") for line in lines)
    assert "key hold: nothing to hold: no cue is running or waiting" in lines


@pytest.mark.live
@timing_flaky
def test_a_resumed_show_says_so(tmp_path: Path) -> None:
    """``--resume LOG``: the notice on standard error (headless), and the log's show record."""
    log, again = tmp_path / "first.jsonl", tmp_path / "again.jsonl"
    log.write_text(json.dumps({"event": "show", "rite": "xiang-she", "t": 1.0}) + "\n" +
                   json.dumps({"event": "start", "cue": "she-jie", "t": 2.0}) + "\n",
                   encoding="utf-8")  # a show that crashed in its 射節
    resumed = subprocess.run(
        [sys.executable, str(ROOT / "cli.py"), "live", "xiang-she", "--until", "she-jie",
         "--jie-seconds", "0.3", "--auto", "--output", "memory:", "--resume", str(log),
         "--log", str(again)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    delivered(resumed.returncode, resumed.stdout + resumed.stderr)
    assert f"RESUMED from {log} at she-jie (the last cue it started)" in resumed.stderr
    records = [json.loads(line) for line in again.read_text(encoding="utf-8").splitlines()]
    assert records[0]["resumed"] == {"log": str(log), "cue": "she-jie"}
    assert datetime.fromisoformat(records[0]["date"]).tzinfo is not None
    assert [r["cue"] for r in records if r["event"] == "start"] == ["she-jie"]


def test_a_piece_chosen_reaches_the_backup() -> None:
    """The hot-standby link carries a choice of piece as the OSC control does."""
    from sequencer.live.control.osc import piece_command
    from sequencer.live.standby.packets import address_command, command_address

    for command in (PickPiece(index=3), PickPiece(step=1), PickPiece(step=-1)):
        address, args = command_address(command)
        assert address_command(address, tuple(args)) == command
    assert piece_command((2,)) == PickPiece(index=2)
    assert [piece_command(bad) for bad in ((0,), (1.5,), ("2",), (True,), (float("nan"),),
                                           ())] == [None] * 6


def test_reaction_reports_the_median_and_the_option() -> None:
    from sequencer.live.screens.reaction import Reaction

    reaction = Reaction((0.21, 0.25, 0.23, 0.6, 0.24), early=1)
    assert reaction.median_ms == pytest.approx(240)
    assert reaction.report() == [
        "your delay: median 240 ms (the middle half 230–250 ms) over 5 presses",
        "not counted: 1 too early, 0 not pressed (each done again)",
        "mark releases with it: yuezheng live … --mark-delay 240"]


@pytest.mark.live
def test_reaction_measures_a_press_in_a_terminal(tmp_path: Path) -> None:
    """In tmux: each block answered 0.2 s after it shows; the median is 0.2 s and the time it
    takes tmux to show it and pass the key on (tens of ms)."""
    from tests.tmux_session import Tmux

    tmux = Tmux(f"yzreact{time.perf_counter_ns()}", 80, 24,
                f"{sys.executable} {ROOT / 'cli.py'} reaction --trials 3; sleep 30")
    try:
        answered = 0
        deadline = time.perf_counter() + 60
        while answered < 3:
            assert time.perf_counter() < deadline, tmux.screen()
            if "████" in tmux.screen():
                time.sleep(0.2)
                tmux.keys("Space", pause=0.4)
                answered += 1
            time.sleep(0.01)
        shown = tmux.wait("--mark-delay")
    finally:
        tmux.close()
    line = next(line for line in shown.splitlines() if line.startswith("your delay: median "))
    median = float(line.split()[3])
    assert 200 <= median < 600, line
    assert f"yuezheng live … --mark-delay {median:.0f}" in shown


def test_a_second_mark_corrects_the_outcome_of_the_first() -> None:
    """The judge presses at the loose (右 hit) and, the arrow missing, 右 miss soon after: the
    mark keeps its time and becomes a miss; later, or for the other side, a mark is a new
    release."""
    judging, cue = _judging(0.25)
    decision, _ = judging.mark(cue, Release(1.03, "右", True))
    judging.pressed(cue, "右", 100.0)
    assert judging.correct(cue, "左", False, 100.2) is None  # no 左 mark to correct
    assert judging.correct(cue, "右", True, 100.2) is None  # the same outcome: nothing
    corrected = judging.correct(cue, "右", False, 100.3)
    assert corrected is not None
    decision, tally = corrected
    assert decision.release == Release(1.03, "右", False) and tally.right == 0
    assert len(judging.releases[cue]) == 1
    judging.mark(cue, Release(2.03, "右", True))
    judging.pressed(cue, "右", 101.0)
    assert judging.correct(cue, "右", False, 101.6) is None  # past half a 節 (0.5 s)
