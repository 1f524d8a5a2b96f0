"""The show log records what was delivered, not what was planned: an output lost and regained,
messages late, every operator action with its origin; `check LOG` fails the blocks they touch;
`live --auto` exits 1 when anything was lost (killing a JACK server of our own mid-show)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from jack_server import OwnServer

from cues.sheet import load_rite
from sequencer.compiler import make_settings, select_cues
from sequencer.live.delivery import LATE_S, DeliveryWatch
from sequencer.live.player import Player
from sequencer.live.protocol import MessagesLate, Nudge, OutputLost, OutputReconnected
from sequencer.tempo_check import check_log

ROOT = Path(__file__).resolve().parent.parent


def _jie_log(path: Path, extra: list[dict], blocks: int = 2) -> Path:
    """A log of ``blocks`` 射節 of 5 節 of 1 s (cue "j", 10 s apart) plus ``extra`` records."""
    records: list[dict] = [{"event": "show", "rite": "t", "title": "t", "cues": ["j"], "t": 0.0},
                           {"event": "start", "cue": "j", "t": 0.0}]
    for b in range(blocks):
        records += [{"event": "jie", "t": 10.0 * b + k, "k": k, "n": 5, "cue": "j", "cycle": b}
                    for k in range(1, 6)]
    records += extra
    path.write_text("".join(json.dumps(r) + "\n" for r in sorted(records, key=lambda r: r["t"])),
                    encoding="utf-8")
    return path


def test_a_clean_log_holds(tmp_path: Path) -> None:
    report = check_log(_jie_log(tmp_path / "a.jsonl", []))
    assert report.ok and len(report.blocks) == 2


def test_an_output_loss_fails_the_blocks_it_touches(tmp_path: Path) -> None:
    log = _jie_log(tmp_path / "a.jsonl", [{"event": "output-lost", "t": 13.5},
                                          {"event": "output-regained", "t": 13.8}])
    first, second = check_log(log).blocks
    assert first.ok  # the loss fell inside the second block (noticed up to 1 s late)
    assert not second.ok and "the output was lost" in second.notes[-1]


def test_an_output_never_regained_fails_every_block_after_it(tmp_path: Path) -> None:
    log = _jie_log(tmp_path / "a.jsonl", [{"event": "output-lost", "t": 6.5}], blocks=3)
    assert [b.ok for b in check_log(log).blocks] == [True, False, False]


def test_a_late_message_fails_its_block_only(tmp_path: Path) -> None:
    late = {"event": "late", "cue": "j", "t": 15.5, "late": 0, "missed": 1, "lost": 0,
            "worst_ms": 82.0, "times": [12.25]}
    first, second = check_log(_jie_log(tmp_path / "a.jsonl", [late])).blocks
    assert first.ok and not second.ok
    assert "1 message not delivered on time (worst 82.0 ms late)" in second.notes[-1]


def test_the_watch_counts_late_lost_and_missed() -> None:
    watch = DeliveryWatch()
    watch.started("a")
    watch.sent("a", 1.0, LATE_S / 2, None)
    assert watch.ended("a", 2.0, None) is None  # on time: nothing to say
    watch.started("a")
    watch.sent("a", 1.0, LATE_S * 2, None)
    watch.port_changed(OutputLost(1.5))
    watch.sent("a", 1.6, 0.0, None)
    watch.port_changed(OutputReconnected(1.7))
    assert watch.ended("a", 2.0, None) == MessagesLate("a", 2.0, 1, 0, 1, LATE_S * 2, (1.0,))
    watch.started("b")  # a frame-accurate port: its own count of missed frames
    watch.sent("b", 3.0, 0.0, 5)
    watch.sent("b", 3.1, 0.0, 7)
    assert watch.ended("b", 4.0, 7) == MessagesLate("b", 4.0, 0, 2, 0, 0.0, (3.1,))


def test_a_nudge_is_shown_and_logged_with_its_origin(tmp_path: Path) -> None:
    rite = select_cues(load_rite("xiang-she", ()), "she-jie", "she-jie")
    settings = make_settings(rite.settings, {"jie_seconds": "0.2"})
    player = Player(rite, settings, "memory:", auto=True, client_name="yztest")
    with player:
        deadline = time.perf_counter() + 10
        while not player.last_jie and time.perf_counter() < deadline:
            player.step(0.01)
        player.put(Nudge(faster=False), origin="key")
        player.step(0.01)
        assert player.message.startswith("key nudge slower: she-jie ×1.020 from")
        player.put(Nudge(faster=True), origin="midi")
        player.step(0.01)
    actions = [r for r in player.log.records if r["event"] == "operator"]
    assert [(r["action"], r["origin"]) for r in actions] == [("nudge slower", "key"),
                                                             ("nudge faster", "midi")]
    assert actions[0]["result"].startswith("she-jie ×1.020 from")


@pytest.mark.jack
def test_killing_the_jack_server_mid_show_fails_live_and_check(jack, tmp_path: Path) -> None:
    server = OwnServer("yz-test")
    server.start()
    env = server.env
    dump = subprocess.Popen(["jack_midi_dump"], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    log = tmp_path / "show.jsonl"
    try:
        time.sleep(1.0)  # the receiver's port is up
        live = subprocess.Popen(
            [sys.executable, str(ROOT / "cli.py"), "live", "xiang-she", "--from", "she-jie",
             "--until", "she-jie", "--auto", "--jie-seconds", "0.5", "--output",
             "jack:midi-monitor", "--log", str(log)],
            cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)
        deadline = time.perf_counter() + 30
        while time.perf_counter() < deadline and '"k": 3' not in (
                log.read_text(encoding="utf-8") if log.exists() else ""):
            time.sleep(0.05)
        server.stop()  # our own server, mid-show
        out, err = live.communicate(timeout=60)
    finally:
        if dump.poll() is None:
            dump.terminate()
            dump.wait(10)
        server.stop()
    assert live.returncode == 1, out + err
    assert "OUTPUT LOST at" in out and "not delivered whole" in err
    records = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert "output-lost" in [r["event"] for r in records]
    check = subprocess.run([sys.executable, str(ROOT / "cli.py"), "check", "--verbose", str(log)],
                           cwd=ROOT,
                           capture_output=True, text=True, timeout=60)
    assert check.returncode == 4, check.stdout + check.stderr
    assert "the output was lost" in check.stdout
