"""The validator's checks that need the compiler: every instrument a cue lists sounds, or the
sheet says why not (``silent``).  A warning, not an error: a sheet may list instruments for the
stage plan before a realization of them exists."""

from __future__ import annotations

from dataclasses import replace

from cues.errors import SheetError
from cues.model import Rite
from sequencer.compiler import make_settings, unsounded_instruments


def sheet_warnings(rite: Rite) -> list[str]:
    """The loader's warnings and every unsounded, unexplained instrument of ``rite`` (loaded
    with every cue of every variant), in each cue as written and as each reading sets it."""
    warnings = list(rite.warnings)
    settings = make_settings(rite.settings)
    versions = [rite] + [replace(rite, cues=tuple(option.cues.values()))
                         for reading in rite.readings for option in reading.options
                         if option.cues]
    seen: set[tuple[str, str]] = set()
    for version in versions:
        for cue, instrument in unsounded_instruments(version, settings):
            if (cue.id, instrument) in seen:
                continue
            seen.add((cue.id, instrument))
            warnings.append(str(SheetError(
                f"instrument {instrument} is listed for {cue.id} but never sounds: remove it "
                "or say why (silent = \"…\")", file=rite.path, line=cue.line, cue=cue.id)))
    return warnings
