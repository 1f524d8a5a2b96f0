"""The rite as a command chose it: loaded by name or path, with its variants and readings, its
range of cues (``--from``/``--until``) and its compiler settings (the sheet's ``[settings]``,
then overrides)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import fields

from cues.model import Rite
from cues.readings import parse_reading_args
from cues.sheet import load_rite
from sequencer.compiler import CompileSettings, make_settings, select_cues

SETTING_NAMES = tuple(f.name for f in fields(CompileSettings))


def selected_rite(
    name_or_path: str, *, variants: Sequence[str] = (), readings: Sequence[str] = (),
    from_cue: str | None = None,
    until_cue: str | None = None, overrides: Mapping[str, object] | None = None,
) -> tuple[Rite, CompileSettings]:
    """The rite with ``variants`` chosen and ``readings`` (``ID=VALUE``) in force, cut to
    ``from_cue``…``until_cue``, and its settings.

    ``overrides`` may hold anything (a command's parsed arguments): only the names of
    ``CompileSettings`` are read, and a None leaves the sheet's value.
    """
    rite = load_rite(name_or_path, tuple(variants), parse_reading_args(readings))
    if from_cue or until_cue:
        rite = select_cues(rite, from_cue, until_cue)
    given = overrides or {}
    return rite, make_settings(rite.settings, {name: given.get(name) for name in SETTING_NAMES})
