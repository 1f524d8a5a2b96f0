"""`pip install .` carries everything the program reads at run time (found once missing)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.build


def test_wheel_carries_the_data(tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                    "-q", "-w", str(tmp_path), str(ROOT)], check=True, capture_output=True)
    wheel = next(tmp_path.glob("yuezheng-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    needed = ["cli.py", "cues/data/pieces.toml", "cues/data/sources/SOURCES.md"]
    needed += [f"cues/rites/{p.name}" for p in (ROOT / "cues/rites").glob("*.toml")]
    for folder in ("seeds", "reference"):
        needed += [f"cues/data/sources/{folder}/{p.name}"
                   for p in (ROOT / "cues/data/sources" / folder).iterdir()]
    missing = [n for n in needed if n not in names]
    assert not missing, missing
    for package in ("cues", "sequencer", "instruments"):  # every module of every subpackage
        modules = {p.relative_to(ROOT).as_posix() for p in (ROOT / package).rglob("*.py")}
        assert modules <= names, modules - names
    static = {p.relative_to(ROOT).as_posix() for p in (ROOT / "sequencer/live/screens/web/static").iterdir()}
    assert static <= names, static - names
