"""Outputs that never destroy (issues 27 and 29): a FIFO, a character device and ``-`` are
written through, never replaced; a symlink is followed and its target replaced in its own folder;
a directory is refused; the extension must be the format's.  Real FIFOs and device nodes (made
with ``mknod`` in a temporary folder: the tests run as root), read back."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

import cli
from cues.errors import UserError
from instruments.files.atomic import atomic_path, write_bytes_atomically
from instruments.files.targets import output_suffix

DATA = b"MThd" + b"\x00" * 2000


def _null_device(folder: Path, name: str = "null.mid") -> Path:
    """A character device node like /dev/null (major 1, minor 3) in ``folder``."""
    node = folder / name
    os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    return node


def _kind(path: Path) -> str:
    mode = os.lstat(path).st_mode
    return ("fifo" if stat.S_ISFIFO(mode) else "char" if stat.S_ISCHR(mode)
            else "link" if stat.S_ISLNK(mode) else "file" if stat.S_ISREG(mode) else "?")


def _temps(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if ".tmp" in p.name]


def _fifo_reader(fifo: Path) -> int:
    """The read end of ``fifo``, open (what is written, up to the pipe's 64 KB, waits in it)."""
    return os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)


def _drain(fd: int) -> bytes:
    with open(fd, "rb") as f:
        return f.read()


def _fifo_at(folder: Path, through_link: bool) -> tuple[Path, Path]:
    """A FIFO ``take.mid`` in ``folder``, and the path to write: the FIFO, or a link to it."""
    fifo = folder / "take.mid"
    os.mkfifo(fifo)
    if not through_link:
        return fifo, fifo
    link = folder / "link.mid"
    link.symlink_to(fifo)
    return fifo, link


@pytest.mark.parametrize("through_link", [False, True], ids=["direct", "symlink"])
def test_a_fifo_with_a_reader_gets_the_whole_file_and_stays_a_fifo(
        tmp_path: Path, through_link: bool) -> None:
    fifo, target = _fifo_at(tmp_path, through_link)
    reader = _fifo_reader(fifo)
    write_bytes_atomically(target, DATA)
    assert _drain(reader) == DATA
    assert _kind(fifo) == "fifo" and _kind(target) == ("link" if through_link else "fifo")
    assert not _temps(tmp_path)


@pytest.mark.parametrize("through_link", [False, True], ids=["direct", "symlink"])
def test_a_fifo_no_one_reads_is_refused_at_once(tmp_path: Path, through_link: bool) -> None:
    fifo, target = _fifo_at(tmp_path, through_link)
    with pytest.raises(UserError, match="a FIFO that no one is reading"):
        write_bytes_atomically(target, DATA)
    assert _kind(fifo) == "fifo" and not _temps(tmp_path)


@pytest.mark.parametrize("through_link", [False, True], ids=["direct", "symlink"])
def test_a_character_device_is_written_through_not_replaced(
        tmp_path: Path, through_link: bool) -> None:
    node = _null_device(tmp_path)
    target = node
    if through_link:
        target = tmp_path / "link.mid"
        target.symlink_to(node)
    write_bytes_atomically(target, DATA)
    assert _kind(node) == "char" and os.stat(node).st_rdev == os.makedev(1, 3)
    assert _kind(target) == ("link" if through_link else "char")
    assert not _temps(tmp_path)


def test_a_symlink_target_elsewhere_is_replaced_in_its_own_folder(tmp_path: Path) -> None:
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir()
    there.mkdir()
    (there / "take.mid").write_bytes(b"old")
    (here / "take.mid").symlink_to(there / "take.mid")
    with atomic_path(here / "take.mid") as temp:
        assert temp.parent == there  # the rename stays within the target's file system
        temp.write_bytes(DATA)
    assert (here / "take.mid").is_symlink() and (there / "take.mid").read_bytes() == DATA
    assert not _temps(here) and not _temps(there)


def test_a_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "out.mid").mkdir()
    with pytest.raises(UserError, match="it is a directory"):
        write_bytes_atomically(tmp_path / "out.mid", DATA)


def test_standard_output_is_written_through(tmp_path: Path) -> None:
    out = tmp_path / "stdout.bin"
    saved = os.dup(1)
    try:
        with open(out, "wb") as f:
            os.dup2(f.fileno(), 1)
            write_bytes_atomically("-", DATA)
    finally:
        os.dup2(saved, 1)
        os.close(saved)
    assert out.read_bytes() == DATA and not (Path.cwd() / "-").exists()


def test_an_error_in_the_middle_leaves_the_device_and_no_temporary_file(tmp_path: Path) -> None:
    node = _null_device(tmp_path)
    with pytest.raises(RuntimeError), atomic_path(node) as temp:
        temp.write_bytes(DATA)
        raise RuntimeError("the render failed")
    assert _kind(node) == "char"
    assert not [p for p in Path(os.environ.get("TMPDIR", "/tmp")).glob(".null.*.tmp*")
                if p.stat().st_mtime > node.stat().st_mtime]


@pytest.mark.parametrize(("name", "suffixes", "ok"), [
    ("take.mid", (".mid", ".midi"), ".mid"),
    ("TAKE.MIDI", (".mid", ".midi"), ".midi"),
    ("take.wav", (".mid", ".midi"), None),
    ("take", (".mid", ".midi"), None),
    ("-", (".wav", ".flac"), ".wav"),
    ("/dev/null", (".png", ".svg"), ".png"),
])
def test_the_extension_rule(name: str, suffixes: tuple[str, ...], ok: str | None) -> None:
    if ok is None:
        with pytest.raises(UserError, match="is written as"):
            output_suffix(name, suffixes, "a thing")
    else:
        assert output_suffix(name, suffixes, "a thing") == ok


@pytest.mark.render
def test_midi_onto_a_wav_name_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "x.wav"
    assert cli.main(["midi", "guanju", "-o", str(out)]) == cli.EXIT_USAGE
    assert "a Standard MIDI File is written as .mid" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.render
@pytest.mark.parametrize("command", [["midi", "guanju"], ["plot", "guanju"],
                                     ["layout", "xiang-she"]])
def test_every_writer_leaves_a_device_node_and_a_fifo_what_they_were(
        tmp_path: Path, command: list[str], capsys: pytest.CaptureFixture) -> None:
    node = _null_device(tmp_path, "null")
    assert cli.main([*command, "-o", str(node)]) == cli.EXIT_OK, capsys.readouterr().err
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    assert cli.main([*command, "-o", str(fifo)]) == cli.EXIT_USAGE
    assert "no one is reading" in capsys.readouterr().err
    assert _kind(node) == "char" and _kind(fifo) == "fifo" and not _temps(tmp_path)
