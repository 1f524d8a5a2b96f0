"""The rite as a command chose it: loaded by name or path, with its variants and readings, its
range of cues (``--from``/``--until``) and its compiler settings (the sheet's ``[settings]``,
then overrides).  A piece of the repertoire is a rite too: one cue of it, played by an ensemble
(``cues.builtin.ENSEMBLES``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from cues.builtin import DEFAULT_ENSEMBLE, ENSEMBLES, builtin_names, resolve_rite_name
from cues.errors import UserError
from cues.model import TRIGGER_GO, PieceRef, Rite, Trigger
from cues.repertoire import all_pieces, canonical_title, get_piece
from cues.sheet.checker import closest
from cues.sheet.cue_pieces import default_by
from cues.sheet.loader import builtin_rite, load_rite
from cues.sheet.readings import parse_reading_args
from sequencer.timeline.compiler import CompileSettings, compile_rite, make_settings, select_cues
from sequencer.timeline.events import Timeline
from sequencer.timeline.groups import NoteSelection, select_notes


def piece_rite(title: str, ensemble: str = DEFAULT_ENSEMBLE) -> Rite:
    """A rite of one cue: piece ``title`` played once through (one 終) by ``ensemble`` — the
    kind, instruments, source, hang and settings of that ensemble's built-in cue."""
    if ensemble not in ENSEMBLES:
        raise UserError(f"--ensemble {ensemble}: expected one of {', '.join(ENSEMBLES)}")
    rite_id, cue_id, _ = ENSEMBLES[ensemble]
    rite = builtin_rite(rite_id, variants=None)
    piece = get_piece(title)
    played_by = rite.cue(cue_id)
    ref = PieceRef(piece.title, default_by(played_by.kind, piece))
    cue = replace(played_by, pieces=(ref,), zhong=1, trigger=Trigger(TRIGGER_GO),
                  title=f"《{piece.title}》", when=(), unless=())
    return replace(rite, id=piece.pinyin, title=f"《{piece.title}》", cues=(cue,), variants=(),
                   active_variants=(), aliases=(), readings=(), path=None, warnings=())


def _piece_named(name: str) -> str | None:
    """The piece ``name`` selects, if it names no sheet (and no rite: a name that selects both
    is an error naming both)."""
    title = canonical_title(name)
    if title is None or Path(name).suffix.lower() == ".toml" or Path(name).exists():
        return None
    rite_id = resolve_rite_name(name)
    if rite_id is not None:
        raise UserError(f"{name!r} names both the rite {rite_id} and the piece 《{title}》: "
                        "give the rite's id or the piece's title")
    return title


def selected_rite(
    name_or_path: str, *, variants: Sequence[str] = (), readings: Sequence[str] = (),
    from_cue: str | None = None,
    until_cue: str | None = None, overrides: Mapping[str, object] | None = None,
    flags: Mapping[str, str] | None = None, ensemble: str | None = None,
) -> tuple[Rite, CompileSettings]:
    """The rite with ``variants`` chosen and ``readings`` (``ID=VALUE``) in force, cut to
    ``from_cue``…``until_cue``, and its settings; a piece's name gives its ``piece_rite``
    played by ``ensemble``.

    ``overrides``: settings of ``CompileSettings`` by field, as the user wrote them (a None
    leaves the sheet's value); ``flags``: the flag each was given by, for the errors
    (``sequencer.timeline.settings.make_settings``).
    """
    title = _piece_named(name_or_path)
    if title is not None:
        if variants or readings:
            raise UserError(f"--variant and --reading apply to rites only; {title!r} is a piece")
        rite = piece_rite(title, ensemble or DEFAULT_ENSEMBLE)
    elif ensemble is not None:
        raise UserError(f"--ensemble applies to a piece; {name_or_path!r} is a rite")
    else:
        _known_rite_or_sheet(name_or_path)
        rite = load_rite(name_or_path, tuple(variants), parse_reading_args(readings))
    if from_cue or until_cue:
        rite = select_cues(rite, from_cue, until_cue)
    return rite, make_settings(rite.settings, overrides, flags=flags)


def compiled_part(rite: Rite, settings: CompileSettings, selection: NoteSelection | None,
                  ) -> tuple[Timeline, Timeline, list[str]]:
    """(the rite's whole timeline, the part ``selection`` keeps — the whole without one, and
    the warnings: the rite's notices (a --reading that changes nothing), and that the selection
    keeps no note)."""
    whole = compile_rite(rite, settings)
    part = select_notes(whole, selection)
    if selection is not None and not part.notes:
        return whole, part, [*rite.notices, f"{selection.describe()}: no note of {rite.id} is left"]
    return whole, part, list(rite.notices)


def piece_or_rite(name: str, variants: Sequence[str] = (),
                  readings: Sequence[str] = ()) -> tuple[str | None, Rite | None]:
    """What ``score`` names: (a piece's title, None) or (None, the rite with ``variants`` and
    ``readings`` in force)."""
    title = canonical_title(name)
    if title is not None:
        if variants or readings:
            raise UserError(f"--variant and --reading apply to rites only; {title!r} is a piece")
        return title, None
    _known_rite_or_sheet(name)
    return None, load_rite(name, tuple(variants), parse_reading_args(readings))


def _known_rite_or_sheet(name: str) -> None:
    """UserError when ``name`` is no rite, no sheet and no piece: where a piece would do, the
    message says so and suggests the nearest rite or piece (not "unknown rite")."""
    path = Path(name)
    if resolve_rite_name(name) is not None or path.suffix.lower() == ".toml" or path.exists():
        return
    names = [*builtin_names(), *(p.title for p in all_pieces())]
    hint = closest(name, names) or closest(name.strip("《》"), names)
    raise UserError(
        f"unknown rite or piece {name!r}" + (f" (did you mean {hint!r}?)" if hint else "")
        + "; expected a built-in rite (`yuezheng rites`), a piece (`yuezheng pieces`: its "
        "title, simplified or pinyin) or the path of a .toml cue sheet")
