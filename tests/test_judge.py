"""Tests of 「不鼓不釋」: which hits are tallied, and the 釋獲者's announcement."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cues.errors import UserError
from sequencer.judge.tally import (
    Release,
    Tally,
    chinese_numeral,
    judge,
    normalize_side,
    read_releases_csv,
)

# a 5-節 射節 of 2 s per 節: 節 1 is the listening 節 (0–2 s); one drum accord in each later 節
WINDOWS = [2.5, 4.5, 6.5, 8.5]
TOL = 0.15
LISTEN_END = 2.0


def tally(releases: list[Release], **kw: object) -> Tally:
    return judge(releases, WINDOWS, TOL, LISTEN_END, **kw)  # type: ignore[arg-type]


def test_hits_inside_and_outside_the_drum_accords() -> None:
    t = tally([
        Release(2.5, "右", True),    # on the drum
        Release(4.64, "右", True),   # 140 ms late: within tolerance
        Release(6.9, "右", True),    # 400 ms off: 不鼓不釋
        Release(4.4, "左", True),    # 100 ms early: counts
        Release(8.5, "左", False),   # a miss on the drum
    ])
    assert (t.right, t.left) == (2, 1)
    assert [d.counted for d in t.decisions] == [True, True, False, True, False]
    assert "不鼓不釋" in t.decisions[2].reason
    assert "6.5" in t.decisions[2].reason
    assert t.decisions[4].reason == "miss"


def test_tolerance_is_inclusive() -> None:
    t = judge([Release(3.25, "右", True), Release(3.2501, "左", True)], [3.0], 0.25, 0.0)
    assert (t.right, t.left) == (1, 0)


def test_a_hit_during_the_listening_jie_is_not_tallied() -> None:
    # a drum accord inside the listening 節 still does not make a hit count there
    t = judge([Release(1.0, "右", True), Release(3.0, "右", True)], [1.0, 3.0], 0.1, 2.0)
    assert (t.right, t.left) == (1, 0)
    assert not t.decisions[0].counted and "listening" in t.decisions[0].reason
    assert t.decisions[1].counted


def test_a_hit_before_the_shooting_music_is_not_tallied() -> None:
    t = judge([Release(-0.5, "左", True)], [-0.5], 0.1, 0.0)
    assert t.left == 0 and "before" in t.decisions[0].reason


def test_the_exempt_lord_is_not_judged_against_the_beat() -> None:
    # 大射: the lord (here on the 右 side) 「不以樂志」 — his hits count whenever they hit
    releases = [
        Release(0.7, "右", True),    # in the listening 節
        Release(5.5, "右", True),    # between drum accords
        Release(7.0, "右", False),   # still a miss
        Release(5.5, "左", True),    # his partner is judged: off the drum
        Release(6.5, "左", True),    # on the drum
    ]
    t = tally(releases, exempt_sides=frozenset({"右"}))
    assert (t.right, t.left) == (2, 1)
    assert "不以樂志" in t.decisions[0].reason
    assert tally(releases, exempt_sides=frozenset({"上射"})).right == 2  # aliases work
    assert tally(releases).right == 0


def test_exempt_spans() -> None:
    releases = [Release(5.5, "左", True), Release(9.5, "左", True)]
    t = tally(releases, exempt_spans=[(5.0, 6.0)])
    assert t.left == 1
    assert [d.counted for d in t.decisions] == [True, False]


def test_no_drum_accords_means_nothing_counts() -> None:
    t = judge([Release(3.0, "右", True)], [], 0.1, 0.0)
    assert t.right == 0 and "no drum accord" in t.decisions[0].reason


@pytest.mark.parametrize(
    ("right", "left", "result", "chun", "ji", "words"),
    [
        (4, 1, "右賢於左", 1, 1, "右賢於左，一純一奇"),
        (1, 5, "左賢於右", 2, 0, "左賢於右，二純"),
        (3, 2, "右賢於左", 0, 1, "右賢於左，一奇"),
        (3, 3, "左右鈞", 0, 0, "左右鈞"),
        (0, 0, "左右鈞", 0, 0, "左右鈞"),
        (23, 0, "右賢於左", 11, 1, "右賢於左，十一純一奇"),
        (0, 40, "左賢於右", 20, 0, "左賢於右，二十純"),
    ],
)
def test_tally_result_and_announcement(
    right: int, left: int, result: str, chun: int, ji: int, words: str
) -> None:
    t = Tally(right=right, left=left)
    assert (t.result, t.chun, t.ji) == (result, chun, ji)
    assert t.announcement() == words
    assert {k: v for k, v in t.to_json().items() if k != "decisions"} == {
        "右": right, "左": left, "result": result, "chun": chun, "ji": ji, "out_of_turn": 0,
    }


def test_tie_from_judging() -> None:
    t = tally([Release(2.5, "右", True), Release(4.5, "左", True), Release(6.9, "左", True)])
    assert (t.right, t.left, t.result) == (1, 1, "左右鈞")
    assert t.announcement() == "左右鈞"
    decisions = t.to_json()["decisions"]
    assert [d["counted"] for d in decisions] == [True, True, False]
    assert decisions[0] == {"time_s": 2.5, "side": "右", "hit": True, "counted": True,
                            "reason": decisions[0]["reason"], "out_of_turn": None}


@given(st.integers(min_value=0, max_value=60), st.integers(min_value=0, max_value=60))
def test_property_margin_is_told_in_chun_and_ji(right: int, left: int) -> None:
    t = Tally(right=right, left=left)
    assert 2 * t.chun + t.ji == abs(right - left)
    assert t.ji in (0, 1)
    assert t.announcement().endswith("奇") == (t.ji == 1)


@pytest.mark.parametrize(
    ("n", "words"),
    [(1, "一"), (2, "二"), (9, "九"), (10, "十"), (11, "十一"), (19, "十九"), (20, "二十"),
     (21, "二十一"), (100, "一百"), (101, "一百零一"), (110, "一百一十"), (1005, "一千零五")],
)
def test_chinese_numerals(n: int, words: str) -> None:
    assert chinese_numeral(n) == words


def test_sides_and_bad_releases() -> None:
    assert [normalize_side(s) for s in ("右", "RIGHT", "上射", "左", "left", "下射")] == [
        "右", "右", "右", "左", "左", "左"]
    assert Release(1, "right", 1) == Release(1.0, "右", True)
    with pytest.raises(UserError, match="unknown side"):
        Release(1.0, "middle", True)
    with pytest.raises(UserError, match="finite"):
        Release(float("nan"), "右", True)
    with pytest.raises(UserError, match="tolerance"):
        judge([], [1.0], -0.1, 0.0)
    with pytest.raises(UserError, match="start <= end"):
        judge([], [1.0], 0.1, 0.0, exempt_spans=[(3.0, 2.0)])


# ── CSV ──────────────────────────────────────────────────────────────────────────────────────


def write(tmp_path: Path, text: str, name: str = "releases.csv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_read_releases_csv(tmp_path: Path) -> None:
    path = write(tmp_path, "\ufeffarcher,time_s,side,hit\n"
                           "甲,2.5,右,1\n\n乙,4.4,left,1\n丙,6.9,上射,0\n丁, 8.5 ,下射,1\n")
    releases = read_releases_csv(path)
    assert releases == [
        Release(2.5, "右", True), Release(4.4, "左", True),
        Release(6.9, "右", False), Release(8.5, "左", True),
    ]
    t = tally(releases)
    assert (t.right, t.left) == (1, 2)
    assert t.announcement() == "左賢於右，一奇"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("time,side,hit\n1.0,右,1\n", "releases.csv:1: the header must name the columns"),
        ("2.5,右,1\n", "releases.csv:1: the header must name"),
        ("time_s,side,hit\n2.5,右,1\nsoon,左,1\n", "releases.csv:3: time_s 'soon'"),
        ("time_s,side,hit\n2.5,中,1\n", "releases.csv:2: unknown side '中'"),
        ("time_s,side,hit\n2.5,右,yes\n", "releases.csv:2: hit 'yes' must be 1 (hit) or 0"),
        ("time_s,side,hit\n\n2.5,右\n", "releases.csv:3: 2 fields"),
        ("time_s,side,hit\n2.5,右,1\ninf,左,1\n", "releases.csv:3: time_s 'inf' must be finite"),
        ("", "releases.csv: empty"),
    ],
)
def test_csv_errors_name_file_and_line(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(UserError) as info:
        read_releases_csv(write(tmp_path, text))
    assert message in str(info.value)


def test_csv_missing_or_binary_file(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no such file"):
        read_releases_csv(tmp_path / "nowhere.csv")
    path = tmp_path / "binary.csv"
    path.write_bytes(b"time_s,side,hit\n\xff\xfe\x00,1,1\n")
    with pytest.raises(UserError, match="not UTF-8"):
        read_releases_csv(path)
