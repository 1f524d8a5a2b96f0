"""``yuezheng check FILE``: what the file says it was made with, what the user passed, and which
check follows.

- **A file with its provenance** (every MIDI, WAV and FLAC file yuezheng writes:
  :mod:`sequencer.outputs.provenance`) needs no settings: an audio file is checked in the 射節
  its provenance places (their stroke grids), a MIDI file by its 節 markers.  What the user
  passes anyway (``--rite``, ``--from``/``--until``, ``--variant``, ``--reading``, a setting)
  is compared with what the file says; a difference is named — "--jie-seconds 0.8: the file
  was made with 1" — and ends the check (exit 2), never a verdict that the timing fails.  Where
  they agree, the rite is compiled again with the file's other settings, and its 射節 must be
  where the file says (a sheet changed since would put them elsewhere: that is named too).
- **A file without one** — a recording of people, or a file whose tags were stripped — is
  checked against ``--rite`` when given (with the range and settings the user says it was
  made with), and otherwise: a MIDI file by its 節 markers or its note onsets, audio by the runs
  of equal strokes found in it, with the 節 spacing found and how sure that is
  (:mod:`sequencer.check.spacing`).
- **A show log** has its own 節 records: checked block by block.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from cues.errors import UserError
from sequencer.check.inputs import require_file
from sequencer.check.tempo import (
    CheckReport,
    check_file,
    check_found,
    check_grids,
    check_timeline,
    file_kind,
    humanized,
)
from sequencer.outputs.provenance import Provenance, read_provenance, setting_text
from sequencer.timeline.stroke_grids import StrokeGrid, stroke_grids

_GRID_EPSILON_S = 1e-6


@dataclass(frozen=True)
class CheckRequest:
    """What the user passed to ``check``."""

    file: str
    rite: str | None = None
    from_cue: str | None = None
    until_cue: str | None = None
    variants: tuple[str, ...] = ()
    readings: tuple[str, ...] = ()
    overrides: Mapping[str, object] = field(default_factory=dict)  # field → as typed, or None
    flags: Mapping[str, str] = field(default_factory=dict)  # field → its flag (--jie-seconds)
    channel: int | None = None
    tolerance_ms: float | None = None

    @property
    def given(self) -> dict[str, object]:
        """The settings passed (field → as typed)."""
        return {k: v for k, v in self.overrides.items() if v is not None}

    @property
    def told(self) -> bool:
        """Whether the user said anything of how the file was made."""
        return bool(self.rite or self.from_cue or self.until_cue or self.variants
                     or self.readings or self.given)

    def flag(self, name: str) -> str:
        return self.flags.get(name, "--" + name.replace("_", "-"))


def check_request(request: CheckRequest) -> CheckReport:
    """The check ``request`` asks for (see the module docstring)."""
    path = Path(request.file)
    kind = file_kind(path)
    if kind == "log":
        if request.told:
            raise UserError(f"{path}: --rite, --from, --until, --variant, --reading and the "
                            f"settings apply to audio and MIDI files; a show log has its 節 "
                            f"records (check it without them)")
        return check_file(path, request.channel, request.tolerance_ms)
    require_file(path)
    if request.channel is not None and (kind != "midi" or request.told):
        raise UserError("--channel applies to MIDI files checked without --rite and settings "
                        "(their note onsets, when they have no 節 markers)")
    provenance = read_provenance(path)
    if provenance is None:
        return _without_provenance(path, kind, request)
    if provenance.stem and provenance.she_jie and not _drum(provenance.stem):
        raise UserError(f"{path} is the {provenance.stem} stem of a render (its provenance: "
                        f"{provenance.command}): the 射節's strokes are the drums', not in this "
                        f"stem — check the mix, or a drum's stem")
    if request.told:
        grids = _agreed_grids(path, provenance, request)
    else:
        grids = list(provenance.she_jie)
        if kind == "midi":
            return replace(check_file(path, request.channel, request.tolerance_ms),
                           made_with=provenance.command)
    if not grids:
        if kind == "audio":
            return replace(check_found(path, request.tolerance_ms,
                                       "the file says it holds no 射節"),
                           made_with=provenance.command)
        raise UserError(f"{path}: made from {provenance.title} with no 射節 (its provenance: "
                        f"{provenance.command}), where 「間若一」 applies: nothing to check")
    return check_grids(path, grids, request.tolerance_ms,
                       f"射節 where the file's provenance places them ({provenance.rite}); "
                       f"onsets outside them ignored", provenance.command, provenance.rite,
                       humanized(provenance.settings.get("humanize_ms") or 0))


def _without_provenance(path: Path, kind: str, request: CheckRequest) -> CheckReport:
    """A file that says nothing of how it was made."""
    if request.rite is None:
        if request.told:
            raise UserError(f"{path} carries no provenance (no tags of yuezheng's): --from, "
                            f"--until, --variant, --reading and the settings need --rite, the "
                            f"rite it was made from")
        if kind == "audio":
            return check_found(path, request.tolerance_ms)
        return check_file(path, request.channel, request.tolerance_ms)
    from sequencer.timeline.compiler import compile_rite
    from sequencer.timeline.selection import selected_rite

    rite, settings = selected_rite(
        request.rite, variants=request.variants, readings=request.readings,
        from_cue=request.from_cue, until_cue=request.until_cue, overrides=request.overrides,
        flags=request.flags)
    return check_timeline(path, compile_rite(rite, settings), request.tolerance_ms)


def _agreed_grids(path: Path, provenance: Provenance, request: CheckRequest,
                  ) -> list[StrokeGrid]:
    """The 射節 grids of the file's timeline compiled again with what the user passed in place
    of what the file says — once every difference between the two is ruled out (UserError
    naming them)."""
    from cues.builtin import resolve_rite_name
    from sequencer.timeline.groups import note_selection
    from sequencer.timeline.selection import compiled_part, selected_rite

    differences = []
    readings = request.readings or tuple(f"{k}={v}" for k, v in provenance.readings.items())
    if request.rite is not None and not request.readings:
        named = resolve_rite_name(request.rite)
        if named is not None and named != provenance.rite:
            readings = ()  # the file's readings are its own rite's: the rites differ, said below
    variants = request.variants or provenance.variants
    target = request.rite or provenance.target or ""
    try:  # a piece is played by the file's ensemble
        user_rite, _ = selected_rite(target, variants=variants, readings=readings,
                                     ensemble=provenance.ensemble)
    except UserError:
        if request.rite is None or provenance.ensemble is None:
            raise
        user_rite, _ = selected_rite(target, variants=variants, readings=readings)
    if user_rite.id != provenance.rite:
        differences.append(f"--rite {request.rite}: the file was made from "
                           f"{provenance.title} ({provenance.rite}), not {user_rite.title} "
                           f"({user_rite.id})")
    elif request.variants and set(user_rite.active_variants) != set(provenance.variants):
        differences.append(f"--variant {' '.join(request.variants)}: the file was made with "
                           + (", ".join(provenance.variants) or "no variant"))
    elif request.readings:
        now = {r.name: r.value for r in user_rite.readings}
        differences += [f"--reading {name}={value}: the file was made with {name}="
                        f"{provenance.readings.get(name, '(none)')}"
                        for name, value in now.items() if provenance.readings.get(name) != value]
    for flag, passed, made_with in (("--from", request.from_cue, provenance.from_cue),
                                    ("--until", request.until_cue, provenance.until_cue)):
        if passed is not None and passed != made_with:
            differences.append(f"{flag} {passed}: the file was made "
                               + (f"with {flag} {made_with}" if made_with else f"without {flag}"))
    if differences:
        raise _mismatch(path, provenance, differences)
    overrides: dict[str, object] = {k: v for k, v in provenance.settings.items() if v is not None}
    overrides.update(request.given)
    rite, settings = selected_rite(
        target, variants=variants, readings=readings,
        from_cue=request.from_cue or provenance.from_cue,
        until_cue=request.until_cue or provenance.until_cue, overrides=overrides,
        flags=request.flags, ensemble=provenance.ensemble if provenance.piece else None)
    try:
        made = provenance.compile_settings()
    except ValueError as exc:
        raise UserError(f"{path}: its provenance has settings this yuezheng cannot read "
                        f"({exc})") from None
    for name, typed in request.given.items():
        if getattr(settings, name) != getattr(made, name):
            was = setting_text(getattr(made, name))
            differences.append(f"{request.flag(name)} {typed}: the file was made with "
                               + (f"{request.flag(name)} {was}" if was is not None else
                                  f"no {request.flag(name)} (its default)"))
    if differences:
        raise _mismatch(path, provenance, differences)
    selection = note_selection(rite, provenance.only, provenance.excluded)
    _, part, _ = compiled_part(rite, settings, selection)
    grids = stroke_grids(part)
    if not _same(grids, provenance.she_jie):
        raise UserError(
            f"{path}: {rite.title} compiled again with the settings the file was made with "
            f"({provenance.command}) has its 射節 at {_where(grids)}, the file says at "
            f"{_where(provenance.she_jie)}: was the sheet changed since the file was made? "
            f"Check it without --rite and the settings: the file says where its 射節 are")
    return grids


def _drum(instrument: str) -> bool:
    from cues.catalog import canonical_instrument, get_instrument

    name = canonical_instrument(instrument)
    return name is not None and get_instrument(name).is_drum


def _mismatch(path: Path, provenance: Provenance, differences: Sequence[str]) -> UserError:
    return UserError(
        f"{path} was not made with what you passed — {'; '.join(differences)} (its "
        f"provenance: {provenance.command}). Leave them out: check reads them from the file")


def _same(a: Sequence[StrokeGrid], b: Sequence[StrokeGrid]) -> bool:
    return len(a) == len(b) and all(
        x.cue == y.cue and x.count == y.count and abs(x.start_s - y.start_s) < _GRID_EPSILON_S
        and abs(x.step_s - y.step_s) < _GRID_EPSILON_S for x, y in zip(a, b, strict=True))


def _where(grids: Sequence[StrokeGrid]) -> str:
    return ", ".join(f"{g.cue} {g.start_s:.3f} s, {g.count} strokes every {g.step_s:g} s"
                     for g in grids) or "nowhere"
