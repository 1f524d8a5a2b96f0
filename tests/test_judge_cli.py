"""`yuezheng judge`: 「不鼓不釋」 on a rite's own 射節 timeline."""

from __future__ import annotations

import json
from pathlib import Path

import cli


def judge(capsys, tmp_path: Path, rows: list[str], *args: str) -> tuple[int, dict]:
    csv = tmp_path / "releases.csv"
    csv.write_text("time_s,side,hit\n" + "\n".join(rows) + "\n", encoding="utf-8")
    code = cli.main(["judge", *args, "--releases", str(csv), "--json"])
    out = capsys.readouterr().out
    return code, (json.loads(out) if code == 0 else {})


def test_xiang_she_drum_windows_and_listening(capsys, tmp_path: Path) -> None:
    # --jie-seconds 4: 5 節 of 4 s, the first to listen; accords at 4, 6, 8, … 18 s per cycle
    code, data = judge(capsys, tmp_path, [
        "2.0,右,1",      # listening 節: not tallied
        "4.05,右,1",     # on the drum: tallied
        "6.0,左,1",      # on the drum: tallied
        "7.0,左,1",      # off the drum: 不鼓不釋
        "8.0,右,0",      # a miss
        "24.1,右,1",     # the second pair's cycle (20 s long): its first shot at 4 s
        "26.0,右,1",     # the 下射's accord: not the 上射's to shoot at, and out of turn
    ], "xiang-she", "--jie-seconds", "4")
    assert code == 0
    assert (data["右"], data["左"]) == (2, 1)
    assert data["result"] == "右賢於左" and (data["chun"], data["ji"]) == (0, 1)
    assert data["announcement"] == "右賢於左，一奇"
    assert [d["counted"] for d in data["decisions"]] == [False, True, True, False, False, True,
                                                          False]
    last = data["decisions"][-1]
    assert "at the 下射's accord (6 s), not the 上射's" in last["reason"]
    assert last["out_of_turn"].startswith("out of turn: 右 (上射) shot again")
    assert data["out_of_turn"] == 3  # and 4.05 右 after 2.0 右, 7.0 左 after 6.0 左


def test_three_right_releases_are_judged_per_archer(capsys, tmp_path: Path) -> None:
    """The issue's CSV: three 右 releases in a row, at 右, 左 and 右 accords (half rule, 節 of
    1 s: accords at 1 右, 1.5 左, 2 右 …). The 上射 counts at his own accords only; the second
    and third are out of turn, and named so."""
    code, data = judge(capsys, tmp_path, ["1.0,右,1", "1.5,右,1", "2.0,右,1"],
                       "xiang-she", "--jie-seconds", "1")
    assert code == 0
    assert [d["counted"] for d in data["decisions"]] == [True, False, True]
    assert (data["右"], data["左"], data["out_of_turn"]) == (2, 0, 2)
    assert [d["out_of_turn"] is not None for d in data["decisions"]] == [False, True, True]
    assert "the 下射's accord (1.5 s)" in data["decisions"][1]["reason"]
    csv = tmp_path / "releases.csv"
    assert cli.main(["judge", "xiang-she", "--jie-seconds", "1", "--releases", str(csv)]) == 0
    out = capsys.readouterr().out
    assert "2 releases out of turn (marked !)" in out and "1 右, 1.5 左" in out
    # the quarters rule: the 上射 at a quarter of the 節, the 下射 at three quarters
    code, data = judge(capsys, tmp_path, ["1.25,右,1", "1.75,右,1", "2.75,左,1"],
                       "xiang-she", "--jie-seconds", "1", "--release-rule", "quarters")
    assert [d["counted"] for d in data["decisions"]] == [True, False, True]
    assert data["decisions"][2]["out_of_turn"] is None  # 左 after 右: in turn


def test_da_she_lord_is_exempt(capsys, tmp_path: Path) -> None:
    # 大射: 7 節 (3 to listen) of 2 s: a cycle is 14 s; the 公與賓 pair is the 4th (42–56 s),
    # and the lord shoots as 下射 (左): 「不以樂志」 — his hits count off the beat too
    rows = ["43.3,左,1", "43.3,右,1", "1.0,左,1"]
    code, data = judge(capsys, tmp_path, rows, "da-she", "--jie-seconds", "2")
    assert code == 0
    assert [d["counted"] for d in data["decisions"]] == [True, False, False]
    assert data["result"] == "左賢於右" and data["announcement"] == "左賢於右，一奇"


def test_tie_and_bad_input(capsys, tmp_path: Path) -> None:
    code, data = judge(capsys, tmp_path, ["4,右,1", "6,左,1"], "xiang-she", "--jie-seconds", "4")
    assert code == 0 and data["result"] == "左右鈞" and data["announcement"] == "左右鈞"
    assert judge(capsys, tmp_path, ["x,右,1"], "xiang-she")[0] == 2
    assert judge(capsys, tmp_path, ["4,中,1"], "xiang-she")[0] == 2
    assert judge(capsys, tmp_path, ["4,右,1"], "xiang-yin-jiu")[0] == 2  # no 射節 in 鄉飲酒
