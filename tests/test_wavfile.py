"""The numpy 24-bit WAV writer: read back by libsndfile and by Python's wave module."""

from __future__ import annotations

import wave
from pathlib import Path

import numpy as np
import soundfile as sf

from instruments.files.wav24 import FULL_SCALE, Wav24Writer, pack24


def _frames(n: int, channels: int = 2, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1.0, 1.0, size=(n, channels)).astype(np.float32)
    x[:4] = [[0.0] * channels, [1.0] * channels, [-1.0] * channels, [0.5 / FULL_SCALE] * channels]
    return x


def test_samples_read_back_within_half_an_lsb(tmp_path: Path) -> None:
    x = _frames(10007)
    path = tmp_path / "a.wav"
    with path.open("wb") as raw, Wav24Writer(raw, 48000, 2) as w:
        w.write(x[:5000])
        w.write(x[5000:])
    data, rate = sf.read(str(path), dtype="float64")
    info = sf.info(str(path))
    assert (rate, info.subtype, info.format, data.shape) == (48000, "PCM_24", "WAV", x.shape)
    expected = np.clip(np.rint(x.astype(np.float64) * FULL_SCALE), -FULL_SCALE, FULL_SCALE - 1)
    assert np.array_equal(np.rint(data * FULL_SCALE), expected)
    assert np.max(np.abs(data[4:] - x[4:])) <= 0.5 / FULL_SCALE + 1e-12
    assert data[1, 0] == (FULL_SCALE - 1) / FULL_SCALE and data[2, 0] == -1.0  # clipped, exact
    with wave.open(str(path)) as wf:  # the plain RIFF form every reader takes
        assert (wf.getnchannels(), wf.getsampwidth(), wf.getframerate(), wf.getnframes()) == (
            2, 3, 48000, 10007)
        raw_bytes = wf.readframes(3)
    assert raw_bytes == bytes(pack24(x[:3]))
    assert path.stat().st_size == 80 + 10007 * 6


def test_odd_data_chunk_is_padded_and_sizes_agree(tmp_path: Path) -> None:
    path = tmp_path / "mono.wav"
    with path.open("wb") as raw, Wav24Writer(raw, 44100, 1) as w:
        w.write(_frames(11, channels=1))
    blob = path.read_bytes()
    assert len(blob) == 80 + 33 + 1 and blob[-1] == 0
    assert int.from_bytes(blob[4:8], "little") == len(blob) - 8
    assert sf.info(str(path)).frames == 11


def test_past_the_riff_limit_the_file_becomes_rf64(tmp_path: Path) -> None:
    x = _frames(2000)
    path = tmp_path / "long.wav"
    with path.open("wb") as raw, Wav24Writer(raw, 48000, 2, riff_limit=4096) as w:
        w.write(x)
    blob = path.read_bytes()
    assert blob[:4] == b"RF64" and blob[12:16] == b"ds64"
    assert blob[4:8] == b"\xff\xff\xff\xff"
    assert int.from_bytes(blob[20:28], "little") == len(blob) - 8  # 64-bit RIFF size
    assert int.from_bytes(blob[36:44], "little") == 2000  # sample count
    data, _ = sf.read(str(path), dtype="float64")
    assert data.shape == (2000, 2)
    assert np.max(np.abs(data[4:] - x[4:])) <= 0.5 / FULL_SCALE + 1e-12


def test_a_short_file_stays_plain_riff(tmp_path: Path) -> None:
    path = tmp_path / "s.wav"
    with path.open("wb") as raw, Wav24Writer(raw, 48000, 2, riff_limit=4096) as w:
        w.write(_frames(10))
    blob = path.read_bytes()
    assert blob[:4] == b"RIFF" and blob[12:16] == b"JUNK"


def _reference_bytes(x: np.ndarray) -> bytes:
    """24-bit little-endian two's complement, one sample at a time in Python."""
    scaled = np.clip(np.rint(x.astype(np.float32) * np.float32(FULL_SCALE)),
                     -FULL_SCALE, FULL_SCALE - 1).reshape(-1)
    return b"".join(int(v).to_bytes(3, "little", signed=True) for v in scaled)


def test_pack24_both_ways_give_the_reference_bytes_and_store_nothing_past_the_buffer(
) -> None:
    import instruments.files.wav24 as wavfile

    assert wavfile._OVERLAPPING_STORES  # numpy here stores in order: the fast way is taken
    for n in (0, 1, 2, 3, 7, 4097):
        x = _frames(max(n, 4), seed=n)[:n] * np.float32(1.3)  # past full scale: clipped
        expected = _reference_bytes(x)
        for fast in (True, False):
            wavfile._OVERLAPPING_STORES = fast
            try:
                assert pack24(x).tobytes() == expected, (n, fast)
                room = np.full(len(expected) + 8, 0xA5, dtype=np.uint8)
                pack24(x, memoryview(room)[4:4 + len(expected)])
                assert room[4:4 + len(expected)].tobytes() == expected, (n, fast)
                assert (room[:4] == 0xA5).all() and (room[4 + len(expected):] == 0xA5).all()
            finally:
                wavfile._OVERLAPPING_STORES = True
