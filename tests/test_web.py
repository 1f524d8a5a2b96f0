"""`live --web` without a browser: the address and token options, the feed's answers (the
token guards every command), the bundled pages over HTTP, a taken port (a clear error)."""

from __future__ import annotations

import json
import socket
import tomllib
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from cues.errors import UserError
from sequencer.live.screens.show_state import ShowState
from sequencer.live.screens.web.feed import Session, answer, token_matches
from sequencer.live.screens.web.server import STATIC, WebServer, parse_web_address, read_web_token

ROOT = Path(__file__).resolve().parent.parent


class FakeView:
    """A ShowView that records commands."""

    def __init__(self) -> None:
        self.commands: list[tuple[str, str]] = []
        self.reports: list[dict] = []
        self.state = ShowState(rite="鄉射禮", cues=(), standby=None, standby_at="",
                               standby_trigger="", next_start=None, current=None, shooting=None,
                               held=False, panic_stage=0, done=False, message="", tally="")

    def snapshot(self) -> ShowState:
        return self.state

    def show_clock(self) -> float:
        return 12.5

    def command(self, name: str, origin: str, reply=None) -> None:
        self.commands.append((name, origin))
        self.reply = reply

    def report(self, record: dict) -> None:
        self.reports.append(record)


@pytest.mark.parametrize(("text", "expected"), [
    ("8080", ("127.0.0.1", 8080)), ("0.0.0.0:80", ("0.0.0.0", 80)),
    ("[::1]:9000", ("::1", 9000)), (":7000", ("127.0.0.1", 7000)),
])
def test_web_address(text: str, expected: tuple[str, int]) -> None:
    assert parse_web_address(text) == expected


@pytest.mark.parametrize("text", ["", "http", "host:", "1:70000", "-1"])
def test_bad_web_address(text: str) -> None:
    with pytest.raises(UserError, match="expected \\[ADDR:\\]PORT"):
        parse_web_address(text)


def test_token_from_option_or_file(tmp_path: Path) -> None:
    assert read_web_token(None, None) is None
    assert read_web_token("s3cret", None) == "s3cret"
    f = tmp_path / "token"
    f.write_text("s3cret\n", encoding="utf-8")
    assert read_web_token(None, str(f)) == "s3cret"
    with pytest.raises(UserError, match="not both"):
        read_web_token("x", str(f))
    with pytest.raises(UserError, match="cannot read"):
        read_web_token(None, str(tmp_path / "missing"))
    (tmp_path / "empty").write_text("\n", encoding="utf-8")
    with pytest.raises(UserError, match="empty"):
        read_web_token(None, str(tmp_path / "empty"))


def test_commands_need_the_token() -> None:
    view = FakeView()
    session = Session("web:1.2.3.4:5")
    assert answer('{"type": "command", "name": "go"}', session, view, "tok")["type"] == "denied"
    assert answer('{"type": "hello", "token": "nope"}', session, view, "tok") == {
        "type": "hello", "control": False}
    assert answer('{"type": "command", "name": "go"}', session, view, "tok")["type"] == "denied"
    assert view.commands == []
    assert answer('{"type": "hello", "token": "tok"}', session, view, "tok")["control"]
    assert answer('{"type": "command", "name": "go"}', session, view, "tok") == {
        "type": "ok", "name": "go"}
    assert answer('{"type": "command", "name": "quit"}', session, view, "tok")["type"] == "denied"
    assert view.commands == [("go", "web:1.2.3.4:5")]


def test_no_token_set_means_view_only() -> None:
    assert not token_matches("", None) and not token_matches("", "")
    assert not token_matches(None, "tok") and token_matches("tok", "tok")
    session = Session("web")
    assert not answer('{"type": "hello", "token": ""}', session, FakeView(), None)["control"]


def test_ping_answers_the_show_clock_and_bad_input_is_an_error() -> None:
    session = Session("web")
    assert answer('{"type": "ping", "c": 3.25}', session, FakeView(), None) == {
        "type": "pong", "c": 3.25, "s": 12.5}
    assert answer("{", session, FakeView(), None)["type"] == "error"
    assert answer("[1]", session, FakeView(), None)["type"] == "error"
    assert answer('{"type": "dance"}', session, FakeView(), None)["type"] == "error"


def test_pages_are_served_from_the_package() -> None:
    server = WebServer(FakeView(), "127.0.0.1", 0)
    url = server.start()
    try:
        for path, kind in (("", "text/html"), ("operator", "text/html"),
                           ("static/feed.js", "javascript"), ("static/style.css", "text/css")):
            with urllib.request.urlopen(url + path, timeout=5) as reply:
                assert kind in reply.headers["Content-Type"]
                body = reply.read().decode("utf-8")
            assert "http://" not in body.replace(url, "") and "https://" not in body, path
        with pytest.raises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen(url + "static/../view.py", timeout=5)
        assert missing.value.code == 404
    finally:
        server.close()


def test_a_taken_port_is_a_clear_error() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(UserError, match=f"--web 127.0.0.1:{port}: cannot listen"):
            WebServer(FakeView(), "127.0.0.1", port).start()


def test_the_pages_are_packaged() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    setup = project["tool"]["setuptools"]
    assert "sequencer*" in setup["packages"]["find"]["include"]
    assert setup["package-data"]["sequencer.live.screens.web"] == ["static/*"]
    assert {p.name for p in STATIC.iterdir()} >= {"performers.html", "operator.html", "feed.js"}
    assert any(d.startswith("websockets") for d in project["project"]["dependencies"])


def test_state_is_json() -> None:
    assert json.loads(json.dumps(FakeView().state.to_json()))["type"] == "state"
