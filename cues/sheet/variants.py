"""Variants: readings of a rite a sheet declares (``[[variant]]``), the cues each one adds or
removes (``when``/``unless``), and the rite as played with some of them chosen."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from cues.errors import SheetError, SheetErrors, UserError
from cues.model import Rite, Variant
from cues.pinyin import loose_match
from cues.sheet.checker import InTable, SheetChecker, Where
from cues.sheet.subtables import parse_source
from cues.sheet.triggers import trigger_problems

VARIANT_KEYS = {"id", "title", "source", "note"}


def parse_variants(checker: SheetChecker, data: dict) -> tuple[Variant, ...]:
    """The sheet's ``[[variant]]`` tables (an id declared twice is reported)."""
    variants: list[Variant] = []
    for i, item in checker.table_array(data, "variant"):
        where: InTable = {"table": "variant", "index": i}
        checker.unknown_keys(item, VARIANT_KEYS, "a [[variant]]", **where)
        vid = checker.get(item, "id", str, "a short name", required=True, **where)
        title = checker.get(item, "title", str, "a title", **where) or vid
        source = parse_source(checker, item.get("source"), cue=None, required=False, **where)
        if vid is not None:
            if any(v.id == vid for v in variants):
                checker.error(f"variant {vid!r} is declared twice", key="id", **where)
            variants.append(Variant(vid, title or vid, source, str(item.get("note", ""))))
    return tuple(variants)


def cue_conditions(
    checker: SheetChecker, data: dict, variant_ids: set[str], *, index: int, cue: str,
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A cue's ``when`` and ``unless``: the variants it needs and those that remove it."""
    where: Where = {"table": "cue", "index": index, "cue": cue}
    when = checker.string_list(data, "when", **where)
    unless = checker.string_list(data, "unless", **where)
    for v in when + unless:
        if v not in variant_ids:
            checker.error(f"variant {v!r} is not declared: expected one of "
                          f"{sorted(variant_ids) or 'the [[variant]] ids'}",
                          key="when" if v in when else "unless", **where)
    return when, unless


def select_variants(rite: Rite, variants: Sequence[str]) -> Rite:
    """The rite as played with ``variants`` chosen (cues filtered by their when/unless)."""
    known = {v.id for v in rite.variants}
    # a variant id in another case, spacing or script (「SHE」, 「Na Bin」) is the same id
    chosen = tuple(dict.fromkeys(loose_match(v, known) or v.strip() for v in variants
                                 if v.strip()))
    unknown = [v for v in chosen if v not in known]
    if unknown:
        listing = ", ".join(f"{v.id} ({v.title})" for v in rite.variants) or "none"
        raise UserError(f"{rite.path or rite.id}: unknown variant {unknown[0]!r} for "
                        f"{rite.title}; its variants: {listing}")
    active = set(chosen)
    cues = tuple(
        c for c in rite.cues
        if all(w in active for w in c.when) and not any(u in active for u in c.unless)
    )
    problems = trigger_problems(cues, set(rite.signals))
    if problems:
        raise SheetErrors([
            SheetError(f"with variants {list(chosen)}: {message}", file=rite.path,
                       line=cue.line, cue=cue.id)
            for cue, message in problems
        ])
    return replace(rite, cues=cues, active_variants=chosen)
