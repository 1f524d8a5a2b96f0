"""The live player over the memory output (no JACK): driven through its typed commands, what
it sends is read back from the recording (``instruments.ports.memory``).

Each scheduled message is recorded with its deadline, which the sending process computes
exactly (the cue's start plus the message's time, plus the time held), so the tests compare
times to 1 µs; messages sent at once (note-offs at a hold, a stop or a panic, pitch wheels set
back to the centre when a cue ends) are told apart from the schedule by their bytes and times.
"""

from __future__ import annotations

import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from cues.sheet.loader import parse_sheet
from instruments.midi import (
    SoundingNotes,
    all_off_messages,
    channel_of,
    is_all_off,
    is_note_off,
    is_pitch_bend,
    is_tuning_restore,
)
from instruments.ports.memory import read_memory_record
from sequencer.live.player.plan import plan_show
from sequencer.live.player.player import Player
from sequencer.live.protocol import (
    Back,
    CueEnded,
    Go,
    Hold,
    OutputHeld,
    OutputPanicked,
    OutputResumed,
    Panic,
    Quit,
    Resume,
    Skip,
    Stop,
)
from sequencer.timeline.compiler import make_settings, select_cues
from tests.timing import on_time, timing_flaky

pytestmark = pytest.mark.live

# a: 1 s (go), b: 1 s (follows a), c: a 射節 of 5 節 of 0.1 s (go), d: 《鹿鳴》 at 600 syllables
# a minute, a rest point every 0.1 s, looping until stopped (樂闋)
SHEET = textwrap.dedent('''\
    [rite]
    id = "t"
    title = "試"
    work = "test"
    hang = "特縣"

    [[cue]]
    id = "a"
    kind = "笙"
    at = "笙入"
    pieces = ["南陔"]
    zhong = 1
    source = { work = "w", quote = "q" }

    [[cue]]
    id = "b"
    kind = "笙"
    at = "笙又"
    trigger = "follow"
    pieces = ["白華"]
    zhong = 1
    source = { work = "w", quote = "q" }

    [[cue]]
    id = "c"
    kind = "射節"
    at = "奏騶虞"
    song = "騶虞"
    jie = 5
    listen = 1
    ou = ["上耦"]
    source = { work = "w", quote = "q" }

    [[cue]]
    id = "d"
    kind = "升歌"
    at = "工歌"
    pieces = ["鹿鳴"]
    zhong = 1
    stop = { event = "樂闋", at = "遂出" }
    source = { work = "w", quote = "q" }
    ''')
SETTINGS = make_settings({}, {"tempo_bpm": 600, "jie_seconds": "0.1", "lost_zhong_seconds": 1})
EXACT = 1e-6  # deadlines are computed, not measured


def _player(tmp_path: Path, first: str, last: str) -> tuple[Player, Path]:
    rite = select_cues(parse_sheet(SHEET), first, last)
    out = tmp_path / "sent.jsonl"
    return Player(plan_show(rite, SETTINGS), f"memory:{out}", client_name="yztest"), out


def _step_until(player: Player, done: Callable[[], bool], timeout: float = 15.0) -> None:
    deadline = time.perf_counter() + timeout
    while not done():
        assert time.perf_counter() < deadline, "timed out"
        player.step(0.01)


def _step_for(player: Player, seconds: float) -> None:
    end = time.perf_counter() + seconds
    _step_until(player, lambda: time.perf_counter() >= end)


def _ended(player: Player, key: str, times: int = 1) -> Callable[[], bool]:
    return lambda: sum(isinstance(e, CueEnded) and e.key == key
                       for e in player.sender.events()) >= times


def _event(player: Player, kind: type, nth: int = 0):
    return [e for e in player.sender.events() if isinstance(e, kind)][nth]


def _scheduled(player: Player, cue: str) -> list[tuple[float, bytes]]:
    sched = player.schedules[cue]
    return list(zip(sched.times, sched.messages, strict=True))


def _match(records: list[tuple[float, bytes]], schedule: list[tuple[float, bytes]],
           t0: float, moved: Callable[[float], float] = lambda t: 0.0
           ) -> tuple[list[int], list[tuple[float, bytes]]]:
    """Walk the records against the schedule started at ``t0`` (``moved(t)``: how far a
    deadline t moved, by holds): the record index of each scheduled message matched, in order,
    and the records that are not the schedule's."""
    matched: list[int] = []
    extra: list[tuple[float, bytes]] = []
    i = 0
    for n, (at, data) in enumerate(records):
        if i < len(schedule):
            due = t0 + schedule[i][0]
            if data == schedule[i][1] and abs(at - (due + moved(due))) < EXACT:
                matched.append(n)
                i += 1
                continue
        extra.append((at, data))
    return matched, extra


def _closed_by_the_net(records: list[tuple[float, bytes]]) -> bool:
    """Every channel the records used ends with CC 123 (the safety net of a cue's end)."""
    last: dict[int, bytes] = {}
    for _, data in records:
        if data[0] < 0xF0:
            last[channel_of(data)] = data
    return bool(last) and all(data == all_off_messages([ch], sound_off=False)[0]
                              for ch, data in last.items())


def _silent(records: list[tuple[float, bytes]]) -> bool:
    notes = SoundingNotes()
    for _, data in records:
        notes.track(data)
    return not notes


def test_nothing_sounds_before_go(tmp_path: Path) -> None:
    player, out = _player(tmp_path, "a", "a")
    with player:
        _step_for(player, 0.3)
        assert player.machine.standby is not None and player.machine.standby.id == "a"
    assert read_memory_record(out) == []


def test_go_plays_the_cue_and_its_follow_cue_joins_without_a_gap(tmp_path: Path) -> None:
    player, out = _player(tmp_path, "a", "b")
    with player:
        player.put(Go())
        _step_until(player, _ended(player, "b"))
    records = read_memory_record(out)
    a, b = _scheduled(player, "a"), _scheduled(player, "b")
    t0 = records[0][0] - a[0][0]
    matched, extra = _match(records, a + [(player.schedules["a"].length_s + t, m) for t, m in b],
                            t0)
    assert len(matched) == len(a) + len(b)  # every message, in order, each on its deadline
    # only pitch wheels centred, the safety net (CC 123 on each channel the cue used) and, at
    # the port's close, the keys the show tuned back to equal temperament
    assert all(is_pitch_bend(data) or is_all_off(data) or is_tuning_restore(data)
               for _, data in extra)
    assert _closed_by_the_net(records)
    assert _silent(records)
    starts = [r for r in player.log.records if r["event"] == "start"]
    assert [r["cue"] for r in starts] == ["a", "b"]
    assert starts[1]["t"] - starts[0]["t"] == pytest.approx(player.schedules["a"].length_s,
                                                            abs=EXACT)


def test_hold_sends_nothing_and_resume_keeps_the_intervals(tmp_path: Path) -> None:
    player, out = _player(tmp_path, "d", "d")
    with player:
        player.put(Go())
        _step_for(player, 0.55)
        hold_asked = time.perf_counter()
        player.put(Hold())
        _step_for(player, 0.5)
        resume_asked = time.perf_counter()
        player.put(Resume())
        _step_for(player, 0.5)
        player.put(Stop())
        _step_until(player, _ended(player, "d"))
        held, resumed = _event(player, OutputHeld), _event(player, OutputResumed)
    records = read_memory_record(out)
    assert resumed.shift == pytest.approx(resumed.t - held.t, abs=1e-3)
    # held and resumed by the sending process after they were asked (not within the test's
    # sleeps: a busy machine reads a command late), so it covers the time between
    assert hold_asked <= held.t < resume_asked <= resumed.t
    assert resumed.shift >= resume_asked - held.t
    assert not [at for at, _ in records if held.t < at < resumed.t]  # nothing while held
    d = _scheduled(player, "d")
    t0 = records[0][0] - d[0][0]
    matched, extra = _match(records, d, t0, lambda due: resumed.shift if due > held.t else 0.0)
    # the schedule from its start to the stop, in order, on its deadlines: those after the
    # hold all moved by the time held, so every interval but the one across the hold is kept
    after = [records[n][0] for n in matched if records[n][0] > resumed.t]
    assert len(after) > 10 and len(matched) >= len(after) + 10
    at_hold = [data for at, data in extra if abs(at - held.t) < 0.05]
    assert at_hold and all(is_note_off(data) for data in at_hold)  # the hold released notes
    assert _silent([r for r in records if r[0] <= held.t])
    assert _silent(records)


def test_panic_in_two_stages_leaves_nothing_sounding(tmp_path: Path) -> None:
    player, out = _player(tmp_path, "d", "d")
    with player:
        player.put(Go())
        _step_for(player, 0.5)
        player.put(Panic())
        _step_for(player, 0.3)
        assert player.machine.panic_stage == 1 and not player.machine.running()
        first = _event(player, OutputPanicked)
        player.put(Panic())
        _step_until(player, lambda: len([e for e in player.sender.events()
                                         if isinstance(e, OutputPanicked)]) == 2)
        assert player.machine.panic_stage == 2
        player.put(Quit())
        player.step(0.01)
    records = read_memory_record(out)
    stage_one = [r for r in records if r[0] <= first.t]
    assert stage_one and _silent(stage_one)  # stage 1: note-offs, every note closed
    assert not any(data in all_off_messages() for _, data in stage_one)
    # stage 2: CC 123 and 120 on every channel, and nothing else after stage 1 but, at the
    # port's close, the keys the cue tuned back to equal temperament (a tuning is not a note)
    after = [data for at, data in records if at > first.t]
    assert after[:-1] == all_off_messages() and is_tuning_restore(after[-1])
    assert [r["stage"] for r in player.log.records if r["event"] == "panic"] == [1, 2]


def test_back_restarts_the_previous_cue(tmp_path: Path) -> None:
    player, out = _player(tmp_path, "c", "d")
    with player:
        player.put(Go())
        _step_until(player, _ended(player, "c"))
        assert player.machine.standby is not None and player.machine.standby.id == "d"
        player.put(Back())
        player.step(0.01)
        assert player.machine.standby.id == "c"
        _step_for(player, 1.0)  # the GO guard: 1 s between GOs
        player.put(Go())
        _step_until(player, _ended(player, "c", 2))
        player.put(Quit())
        player.step(0.01)
    records = read_memory_record(out)
    c = [(t, m) for t, m in _scheduled(player, "c") if m]  # marks are not sent
    first, _ = _match(records, c, records[0][0] - c[0][0])
    assert len(first) == len(c)
    rest = records[first[-1] + 1:]
    again = next(n for n, (_, data) in enumerate(rest) if data == c[0][1])
    second, _ = _match(rest, c, rest[again][0] - c[0][0])
    assert len(second) == len(c)  # the whole cue again, on its deadlines
    assert [r["cue"] for r in player.log.records if r["event"] == "start"] == ["c", "c"]
    # and its 節 went out twice: 5 of them each time
    assert [r["k"] for r in player.log.records if r["event"] == "jie"] == [1, 2, 3, 4, 5] * 2


def test_skip_moves_the_standby_past_a_cue(tmp_path: Path) -> None:
    player, out = _player(tmp_path, "c", "d")
    with player:
        player.put(Skip())
        player.step(0.01)
        assert player.machine.standby is not None and player.machine.standby.id == "d"
        player.put(Go())
        _step_for(player, 0.3)
        assert player.machine.running() == ["d"]
        player.put(Stop())
        _step_until(player, _ended(player, "d"))
    records = read_memory_record(out)
    d = _scheduled(player, "d")
    matched, _ = _match(records, d, records[0][0] - d[0][0])
    assert matched[:3] == [0, 1, 2]  # d from its first message: c never played
    assert [r["cue"] for r in player.log.records if r["event"] == "start"] == ["d"]


def test_stop_ends_a_looping_cue_at_its_next_rest_point(tmp_path: Path) -> None:
    player, out = _player(tmp_path, "d", "d")
    with player:
        player.put(Go())
        _step_for(player, 0.45)
        player.put(Stop())
        _step_until(player, _ended(player, "d"))
    records = read_memory_record(out)
    log = player.log.records
    start = next(r["t"] for r in log if r["event"] == "start")
    end = next(r["t"] for r in log if r["event"] == "end")
    stop = next(r["t"] for r in log if r["event"] == "stop")
    sched = player.schedules["d"]
    # the first rest point at least 0.05 s after the stop: no note is cut
    ahead = [p for p in sched.rest_points if start + p >= stop + 0.05 - EXACT]
    assert end - start == pytest.approx(ahead[0], abs=EXACT)
    d = _scheduled(player, "d")
    matched, extra = _match(records, d, start)
    assert matched == list(range(len(matched)))  # the schedule up to the end, nothing else
    assert all(at < end - EXACT for at, _ in records[:len(matched)])
    assert [d[i][0] for i in range(len(matched))][-1] < ahead[0]
    assert all(is_note_off(data) or is_pitch_bend(data) or is_all_off(data)
               or is_tuning_restore(data) for _, data in extra)
    assert _closed_by_the_net(records)
    assert _silent(records)


def test_midi_input_and_keys_ask_for_typed_commands() -> None:
    from sequencer.live.control.midi_in import midi_command, parse_trigger
    from sequencer.live.protocol import MarkRelease, Nudge
    from sequencer.live.screens.console import KEYS

    mapping = {parse_trigger("note:60"): Go(), parse_trigger("cc:64"): Stop()}
    assert midi_command(b"\x90\x3c\x64", mapping) == Go()
    assert midi_command(b"\x90\x3c\x00", mapping) is None  # a note-on at 0 is a note-off
    assert midi_command(b"\xb3\x40\x7f", mapping) == Stop()
    assert midi_command(b"\xb3\x40\x00", mapping) is None
    # MIDI Show Control: GO, STOP (hold), RESUME
    assert [midi_command(bytes((0xF0, 0x7F, 0x01, 0x02, 0x01, cmd, 0xF7)), mapping)
            for cmd in (1, 2, 3, 4)] == [Go(), Hold(), Resume(), None]
    assert KEYS[" "] == Go() and KEYS["+"] == Nudge(faster=True)
    assert KEYS["2"] == MarkRelease("右", False)


@timing_flaky
def test_a_second_stop_ends_at_once_with_note_offs(tmp_path: Path) -> None:
    player, out = _player(tmp_path, "d", "d")
    with player:
        player.put(Go())
        _step_for(player, 0.45)
        player.put(Stop())
        player.put(Stop())
        _step_until(player, _ended(player, "d"))
        ended = _event(player, CueEnded)
        _step_for(player, 0.2)
        player.put(Quit())
        player.step(0.01)
    records = read_memory_record(out)
    stop = next(r["t"] for r in player.log.records if r["event"] == "stop")
    # not at the next rest point: at once (when the sending process read the stop: the machine's)
    on_time(ended.t - stop < 0.05, f"the cue ended {ended.t - stop:.3f} s after the stop")
    # the cue's own note-offs (sent just after ``ended.t``) close what it sounded
    until_end = [r for r in records if r[0] <= ended.t + 0.02]
    assert any(is_note_off(data) for at, data in until_end if at > ended.t)
    assert _silent(until_end)
    # and nothing after but, at the port's close, the keys tuned back to equal temperament
    assert all(is_tuning_restore(data) for _, data in records[len(until_end):])
    assert len(until_end) >= len(records) - 1
