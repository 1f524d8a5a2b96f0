"""Files written whole or not at all (``instruments.files.atomic``): an interrupted or failed run
leaves the old output byte-identical and no temporary file behind."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import cli
from instruments.files.atomic import atomic_files, atomic_path

pytestmark = pytest.mark.render

ROOT = Path(__file__).resolve().parent.parent
OLD = b"an old render the stage manager trusts\n" * 1000


def _old_file(path: Path) -> Path:
    path.write_bytes(OLD)
    return path


def _temps(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".tmp" in p.name)


def test_success_replaces_and_keeps_the_mode(tmp_path: Path) -> None:
    target = _old_file(tmp_path / "a.bin")
    target.chmod(0o640)
    with atomic_path(target) as temp:
        assert temp.parent == tmp_path and temp != target
        temp.write_bytes(b"new")
    assert target.read_bytes() == b"new"
    assert target.stat().st_mode & 0o777 == 0o640
    assert _temps(tmp_path) == []


def test_failure_leaves_the_old_file_and_says_so(tmp_path: Path) -> None:
    target = _old_file(tmp_path / "a.bin")
    with pytest.raises(RuntimeError) as info, atomic_path(target) as temp:
        temp.write_bytes(b"half")
        raise RuntimeError("the mixer failed")
    assert target.read_bytes() == OLD
    assert _temps(tmp_path) == []
    assert info.value.__notes__ == ["a.bin not written; the old file is untouched"]


def test_a_group_is_committed_together_or_not_at_all(tmp_path: Path) -> None:
    mix, stem = _old_file(tmp_path / "mix.wav"), tmp_path / "stem.wav"
    with pytest.raises(KeyboardInterrupt), atomic_files() as group:
        group.temp_for(mix).write_bytes(b"mix")
        group.temp_for(stem).write_bytes(b"stem")
        raise KeyboardInterrupt
    assert mix.read_bytes() == OLD and not stem.exists()
    assert _temps(tmp_path) == []


def test_two_writers_of_one_path_never_mix(tmp_path: Path) -> None:
    target = tmp_path / "a.mid"
    with atomic_path(target) as first, atomic_path(target) as second:
        assert first != second
        first.write_bytes(b"1" * 5000)
        second.write_bytes(b"2" * 7000)
    assert target.read_bytes() in (b"1" * 5000, b"2" * 7000)
    assert _temps(tmp_path) == []


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_during_render_leaves_the_old_file(tmp_path: Path, signum: int) -> None:
    target = _old_file(tmp_path / "rite.wav")
    proc = subprocess.Popen([sys.executable, str(ROOT / "cli.py"), "render", "yan", "-o",
                             str(target)], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        temps = [p for p in tmp_path.iterdir() if ".tmp" in p.name]
        if temps and temps[0].stat().st_size > 1_000_000:  # the mix is being written
            break
        time.sleep(0.02)
    assert proc.poll() is None, "the render ended before it could be interrupted"
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signum
    assert "rite.wav not written; the old file is untouched" in err
    assert target.read_bytes() == OLD
    assert _temps(tmp_path) == []


def test_a_full_disk_during_render_leaves_the_old_file(tmp_path: Path, monkeypatch,
                                                       capsys) -> None:
    from instruments.files import wav24 as wavfile

    target = _old_file(tmp_path / "she.wav")
    written = []
    real_write, real_write_packed = wavfile.Wav24Writer.write, wavfile.Wav24Writer.write_packed

    def write_then_fail(self, frames) -> None:
        if written:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        written.append(frames.shape[0])
        real_write(self, frames)

    def write_packed_then_fail(self, data, frames: int) -> None:  # a long render's blocks
        if written:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        written.append(frames)
        real_write_packed(self, data, frames)

    monkeypatch.setattr(wavfile.Wav24Writer, "write", write_then_fail)
    monkeypatch.setattr(wavfile.Wav24Writer, "write_packed", write_packed_then_fail)
    code = cli.main(["render", "xiang-she", "--from", "she-jie", "--until", "she-jie", "-o",
                     str(target)])
    err = capsys.readouterr().err
    assert code == cli.EXIT_USAGE
    assert "No space left on device" in err
    assert "she.wav not written; the old file is untouched" in err
    assert target.read_bytes() == OLD
    assert _temps(tmp_path) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="mounts a small tmpfs (root)")
@pytest.mark.parametrize("name", ["she.flac", "she.wav"])
def test_a_really_full_disk_is_a_message_not_a_traceback(tmp_path: Path, name: str) -> None:
    """On a 300 KB tmpfs: libsndfile's FLAC writer meets ENOSPC in a callback from C, where an
    exception used to be printed as a traceback (issue 27); now one message, exit 2."""
    from tests.bounded_run import run_cli

    disk = tmp_path / "full"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=300k", "tmpfs", str(disk)], check=True)
    try:
        target = disk / name
        target.write_bytes(b"old take")
        run = run_cli("audition", "bianzhong", "-o", str(target))  # 1 MB of FLAC
        run.assert_clean((2,))
        assert "No space left on device" in run.err and "Exception ignored" not in run.err
        assert f"{name} not written; the old file is untouched" in run.err
        assert target.read_bytes() == b"old take" and _temps(disk) == []
    finally:
        subprocess.run(["umount", str(disk)], check=True)


def test_a_temp_file_that_cannot_be_made_leaves_the_old_file(tmp_path: Path, capsys) -> None:
    """The temp file beside the target cannot be created (its name is longer than the file
    system allows, for root as for anyone): the old file stays as it was."""
    target = _old_file(tmp_path / ("a" * 240 + ".mid"))
    assert cli.main(["midi", "xiang-she", "-o", str(target)]) == cli.EXIT_USAGE
    assert "the old file is untouched" in capsys.readouterr().err
    assert target.read_bytes() == OLD
    assert _temps(tmp_path) == []


def test_a_failed_picture_leaves_the_old_file(tmp_path: Path, monkeypatch) -> None:
    from matplotlib.figure import Figure

    target = _old_file(tmp_path / "t.png")

    def fail(self, fname, **kwargs) -> None:
        Path(fname).write_bytes(b"half a picture")
        raise OSError(errno.EIO, "I/O error")

    monkeypatch.setattr(Figure, "savefig", fail)
    assert cli.main(["plot", "xiang-she", "-o", str(target)]) == cli.EXIT_USAGE
    assert target.read_bytes() == OLD
    assert _temps(tmp_path) == []


def test_the_mix_may_not_be_written_where_a_stem_goes(tmp_path: Path, capsys) -> None:
    stems = tmp_path / "st"
    stems.mkdir()
    mix = _old_file(stems / "瑟.wav")
    code = cli.main(["render", "xiang-she", "--from", "she-jie", "--until", "she-jie", "-o",
                     str(mix), "--stems", str(stems)])
    assert code == cli.EXIT_USAGE
    assert "where the stem '瑟' goes" in capsys.readouterr().err
    assert mix.read_bytes() == OLD


def test_a_long_file_goes_to_the_disk_as_it_grows_and_is_written_whole(
        tmp_path: Path, monkeypatch) -> None:
    from instruments.files import atomic as atomicfile

    monkeypatch.setattr(atomicfile, "WRITE_BEHIND_BYTES", 1 << 16)
    advised = []
    real = os.posix_fadvise

    def counting(fd: int, offset: int, length: int, advice: int) -> None:
        advised.append(advice)
        real(fd, offset, length, advice)

    monkeypatch.setattr(os, "posix_fadvise", counting)
    target = _old_file(tmp_path / "long.wav")
    chunks = [bytes([i]) * 10_000 for i in range(100)]  # a write-behind every 7th chunk
    with atomic_path(target) as temp, atomicfile.open_write_behind(temp) as f:
        f.write(b"header")
        for chunk in chunks:
            f.write(chunk)
        f.seek(0)
        f.write(b"HEADER")
    assert target.read_bytes() == b"HEADER" + b"".join(chunks)
    assert advised == [os.POSIX_FADV_DONTNEED] * 14
    with pytest.raises(ValueError, match="not empty"):  # never truncates what it did not make
        atomicfile.open_write_behind(target)
    assert target.read_bytes() == b"HEADER" + b"".join(chunks)
