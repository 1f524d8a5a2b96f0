"""docs/architecture.md is true to the code: every module of the three layers is named there by
its path, and every path it names exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"
LAYERS = ("cues", "instruments", "sequencer")


def _named() -> set[str]:
    return set(re.findall(r"`((?:cues|instruments|sequencer)/[\w/]+\.py)`",
                          DOC.read_text(encoding="utf-8")))


def _modules() -> set[str]:
    return {p.relative_to(ROOT).as_posix() for layer in LAYERS
            for p in (ROOT / layer).rglob("*.py")
            if p.name != "__init__.py" or p.parent.name == "rites"
            or p.parent.name == "ports"}


def test_every_module_is_named() -> None:
    missing = sorted(_modules() - _named())
    assert not missing, "modules docs/architecture.md does not name: " + ", ".join(missing)


def test_every_name_exists() -> None:
    stale = sorted(n for n in _named() if not (ROOT / n).is_file())
    assert not stale, "docs/architecture.md names modules that do not exist: " + ", ".join(stale)
