"""``validate``: a sheet checked for everything ``show``, ``midi`` and ``render`` will need, and
warned of what it lists but never sounds.

Beyond the loader's checks (``cues.sheet.loader``): each of the sheet's ``[settings]`` checked as
the command line's are (at its line), every realization file opened, read and bounded, and the
rite compiled, so that the timeline's limits hold.  Whatever would fail later fails here.
Every instrument a cue lists sounds, or the sheet says why not (``silent``): otherwise a
warning, not an error — a sheet may list instruments for the stage plan before a realization
of them exists.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Mapping
from dataclasses import replace

from cues.errors import SheetError, SheetErrors, UserError
from cues.limits import COMBINATIONS, SHEET_BYTES, read_limited
from cues.model import Rite
from cues.sheet.loader import load_sheet, load_sheet_as_written
from cues.sheet.readings import select_readings
from cues.sheet.toml_lines import TomlLines
from cues.sheet.variants import select_variants
from instruments.voices.models import BELL_INTERVALS
from sequencer.timeline.compiler import compile_rite, unsounded_instruments
from sequencer.timeline.realization import load_realization
from sequencer.timeline.settings import CompileSettings, make_settings

Combination = tuple[tuple[str, ...], dict[str, str]]  # (variants chosen, readings chosen)


def check_sheet(path: str) -> tuple[Rite | None, list[SheetError]]:
    """The rite of sheet ``path`` and every problem found in it (the rite is None if the loader
    refused it)."""
    try:
        rite = load_sheet(path)
    except SheetErrors as exc:
        return None, exc.errors
    lines = TomlLines(read_limited(path, SHEET_BYTES, "a .toml cue sheet").decode("utf-8-sig"))
    problems = settings_problems(rite.settings, path, lines)
    if problems:
        return rite, problems
    try:
        make_settings(rite.settings)
    except UserError as exc:  # settings that do not fit together (a drum pattern's reading)
        return rite, [SheetError(str(exc), file=path, line=lines.line("settings"))]
    return rite, combination_problems(rite, path)


def settings_problems(
    values: Mapping[str, object], path: str, lines: TomlLines,
) -> list[SheetError]:
    """Each of the sheet's ``[settings]`` that the command line would refuse, at its line."""
    problems: list[SheetError] = []
    for key, value in values.items():
        problem = _setting_problem(key, value)
        if problem:
            problems.append(SheetError(f"[settings] {key}: {problem}", file=path,
                                       line=lines.line("settings", 0, key)))
    return problems


def _setting_problem(key: str, value: object) -> str | None:
    """What is wrong with setting ``key`` = ``value`` alone, or None."""
    if key == "bell_interval":
        if value not in BELL_INTERVALS:
            return f"{value!r}: expected one of {', '.join(BELL_INTERVALS)}"
        return None
    if key == "ticks_per_beat":
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            return f"{value!r}: expected a whole number of ticks, 1 or more"
        return None
    try:
        make_settings({key: value})
    except UserError as exc:
        return str(exc)
    return None


def combinations(rite: Rite) -> tuple[list[Combination], int]:
    """The (variants, readings) combinations ``validate`` compiles, and how many there are
    (counted, never built: 2^variants × the product of the readings' value counts).  Up to
    ``COMBINATIONS``: every one.  Past it: the sheet as it stands, each variant alone, all of
    them together, each reading value alone, then a sample drawn at random (seeded by the
    sheet, so every run checks the same) up to ``COMBINATIONS`` in all (README: Limits)."""
    ids = [v.id for v in rite.variants]
    choices = [(r.name, tuple(r.choices)) for r in rite.readings]
    total = 2 ** len(ids) * math.prod(len(values) for _, values in choices)
    if total <= COMBINATIONS.value:
        variant_sets = [tuple(chosen) for n in range(len(ids) + 1)
                        for chosen in itertools.combinations(ids, n)]
        reading_sets = [dict(zip([name for name, _ in choices], values, strict=True))
                        for values in itertools.product(*(values for _, values in choices))]
        return [(v, r) for r in reading_sets for v in variant_sets], total
    some: list[Combination] = [((), {}), *(((v,), {}) for v in ids), (tuple(ids), {})]
    some += [((), {name: value}) for name, values in choices for value in values]
    seen = {_key(c) for c in some}
    draw = random.Random(f"{rite.id} {len(ids)} {choices}")
    for _ in range(4 * COMBINATIONS.value):  # a few draws may repeat one already taken
        if len(some) >= COMBINATIONS.value:
            break
        pick: Combination = (tuple(v for v in ids if draw.random() < 0.5),
                             {name: draw.choice(values) for name, values in choices})
        if _key(pick) not in seen:
            seen.add(_key(pick))
            some.append(pick)
    return some, total


def _key(combination: Combination) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    variants, readings = combination
    return variants, tuple(sorted(readings.items()))


def combination_problems(rite: Rite, path: str) -> list[SheetError]:
    """What fails in the first combination of variants and readings that fails (see
    ``combinations``): its settings, a realization file, or its compilation."""
    checked: set[tuple[str, object]] = set()  # (realization file, tempo) read once
    try:
        as_written = load_sheet_as_written(path)  # read and parsed once, chosen from below
    except UserError as exc:
        return [SheetError(str(exc), file=path)]
    loaded: dict[tuple[tuple[str, str], ...], Rite] = {}  # every variant's cues, per readings
    compiled: set[tuple[int, ...]] = set()  # the cues of each rite compiled (by identity)
    for variants, readings in combinations(rite)[0]:
        # a reading that needs variants (its ``when``) is in force only when they are chosen
        gates = tuple(sorted({v for r in as_written.readings for v in r.when if v in variants}))
        key = (*sorted(readings.items()), *((g, "") for g in gates))
        try:
            if key not in loaded:
                loaded[key] = select_readings(replace(as_written, active_variants=gates),
                                              readings)
            chosen = select_variants(loaded[key], variants)
        except UserError:  # variants the sheet refuses together: `show` says so itself
            continue
        same = (id(loaded[key]), *(id(c) for c in chosen.cues))
        if same in compiled:  # another combination plays the very same cues
            continue
        compiled.add(same)
        label = _label(variants, readings)
        try:
            settings = make_settings(chosen.settings)
        except UserError as exc:
            return [SheetError(f"{label}{exc}", file=path)]
        todo = [c for c in chosen.cues
                if any((str(ref.realization), settings.tempo_bpm) not in checked
                       for ref in c.pieces if ref.realization is not None)]
        problems = realization_problems(replace(chosen, cues=tuple(todo)), settings, path)
        checked.update((str(ref.realization), settings.tempo_bpm) for c in todo
                       for ref in c.pieces if ref.realization is not None)
        if problems:
            return [SheetError(label + p.message, file=p.file, line=p.line, cue=p.cue)
                    for p in problems]
        try:
            compile_rite(chosen, settings)
        except UserError as exc:
            return [SheetError(f"{label}{exc}", file=path)]
    return []


def _label(variants: tuple[str, ...], readings: dict[str, str]) -> str:
    """How a problem names its combination ("" for the sheet as it stands)."""
    parts = ([f"variants {', '.join(variants)}"] if variants else []) + [
        f"reading {name} = {value}" for name, value in readings.items()]
    return f"with {' and '.join(parts)}: " if parts else ""


def realization_problems(
    rite: Rite, settings: CompileSettings, path: str,
) -> list[SheetError]:
    """Every realization file of the rite that cannot be read, or is past a limit."""
    problems: list[SheetError] = []
    for cue in rite.cues:
        for ref in cue.pieces:
            if ref.realization is None:
                continue
            try:
                load_realization(ref.realization, settings.tempo_bpm)
            except UserError as exc:
                problems.append(SheetError(f"piece 《{ref.title}》: {exc}", file=path,
                                           line=cue.line, cue=cue.id))
    return problems


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
