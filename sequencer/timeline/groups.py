"""Instrument groups: what ``--only`` and ``--except`` name, and a timeline cut down to them.

A station (another machine's synth and speakers) may sound one part of the ensemble: the east
縣 on one, the west on another. A GROUP names a part, looked up in this order:

- a **side** of the hall, by where each note sounds (its x, y in the layout's metres, moves
  included; docs/layout.md): 東 (x > 0), 西 (x < 0), 中 (on the axis, x = 0), 堂上 (on the
  hall, y > 0), 堂下 (below it, y ≤ 0). An instrument the layout does not place sounds at
  (0, 0): 中 and 堂下;
- an **八音 family** of the catalog: 金 石 絲 竹 匏 土 革 木, and 人聲 (the singers);
- an **instrument** of the catalog, by its name or pinyin (編鐘, bianzhong, 鼓, 歌);
- a **position** of the rite's layout or of its moves, by name (笙磬, 工): what sounds there;
- an instrument by one of its aliases (鍾, 磬) — after the positions, so that a hang's name
  for one set (大射's 笙磬 in the east, 頌磬 in the west) selects that set.

``--only`` keeps the notes of any group it names (all when none), then ``--except`` drops those
of any group it names. Markers (cues and 節) and the cues' spans stay whole, so ``check`` and
``judge`` work on a subset's MIDI, and a live subset stops where the whole would.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

from cues.catalog import CATALOG, canonical_instrument
from cues.errors import UserError
from cues.model import Rite
from cues.pinyin import name_key
from sequencer.timeline.events import Note, Timeline

SIDE, FAMILY, INSTRUMENT, POSITION = "side", "family", "instrument", "position"
KINDS = (SIDE, FAMILY, INSTRUMENT, POSITION)  # the order a name is looked up in
PLURALS = {SIDE: "sides", FAMILY: "families", INSTRUMENT: "instruments", POSITION: "positions"}

# side → (its other names, what it holds, the test on a note's (x, y))
_SIDES: dict[str, tuple[tuple[str, ...], str, Callable[[float, float], bool]]] = {
    "東": (("东", "東縣", "东县", "east", "dong"), "east of the axis (x > 0)",
          lambda x, y: x > 0),
    "西": (("西縣", "西县", "west", "xi"), "west of the axis (x < 0)", lambda x, y: x < 0),
    "中": (("centre", "center", "axis", "zhong"), "on the axis (x = 0)", lambda x, y: x == 0),
    "堂上": (("hall", "tangshang"), "on the hall (y > 0)", lambda x, y: y > 0),
    "堂下": (("court", "tangxia"), "below the hall (y ≤ 0)", lambda x, y: y <= 0),
}
FAMILIES = ("金", "石", "絲", "竹", "匏", "土", "革", "木", "人聲")  # the 八音, and the voice


@dataclass(frozen=True)
class Group:
    """A part of the ensemble a GROUP names: ``kind`` (SIDE, FAMILY, INSTRUMENT, POSITION),
    its ``name`` and every other name that selects it."""

    kind: str
    name: str
    aliases: tuple[str, ...] = ()
    what: str = ""

    def holds(self, note: Note) -> bool:
        """Whether ``note`` belongs to the group."""
        if self.kind == SIDE:
            return _SIDES[self.name][2](note.x, note.y)
        if self.kind == FAMILY:
            return CATALOG[note.instrument].bayin == self.name
        if self.kind == INSTRUMENT:
            return note.instrument == self.name
        return note.position == self.name


@dataclass(frozen=True)
class NoteSelection:
    """The notes ``--only`` keeps (any of ``only``; all when empty) less those of ``excluded``."""

    only: tuple[Group, ...] = ()
    excluded: tuple[Group, ...] = ()

    def keeps(self, note: Note) -> bool:
        if self.only and not any(g.holds(note) for g in self.only):
            return False
        return not any(g.holds(note) for g in self.excluded)

    def describe(self) -> str:
        """``only 東, 鼓; except 革`` (for a command's report)."""
        parts = []
        if self.only:
            parts.append("only " + ", ".join(g.name for g in self.only))
        if self.excluded:
            parts.append("except " + ", ".join(g.name for g in self.excluded))
        return "; ".join(parts)


def _position_names(rite: Rite) -> list[str]:
    names = [p.name for p in rite.layout]
    for cue in rite.cues:
        names.extend(m.name for m in cue.moves)
    return list(dict.fromkeys(names))


def rite_groups(rite: Rite) -> tuple[Group, ...]:
    """Every group a command on ``rite`` may name, in the order names are looked up."""
    groups = [Group(SIDE, name, aliases, what) for name, (aliases, what, _) in _SIDES.items()]
    for family in FAMILIES:
        members = [i.name for i in CATALOG.values() if i.bayin == family]
        groups.append(Group(FAMILY, family, (), "八音 " + (" ".join(members) or "(none here)")))
    for inst in CATALOG.values():
        groups.append(Group(INSTRUMENT, inst.name, (*inst.aliases, inst.pinyin),
                            inst.english))
    places = {p.name: p.instrument for p in rite.layout}
    for name in _position_names(rite):
        holds = places.get(name)
        groups.append(Group(POSITION, name, (), f"the layout's {name}" +
                            (f" ({holds})" if holds else "")))
    return tuple(groups)


def find_group(name: str, groups: Sequence[Group]) -> Group | None:
    """The group of ``groups`` that ``name`` selects (names compared as ``cues.pinyin`` keys):
    a side or family; an instrument by its own name or pinyin; a position; an instrument by an
    alias. So a hang's own name for a set (大射's 笙磬, 頌磬: aliases of 編磬 in the catalog)
    selects that position, not every 編磬."""
    key = name_key(name)

    def named(group: Group, names: Iterable[str]) -> bool:
        return key in {name_key(n) for n in names}

    own = [(g, (g.name, *g.aliases)) for g in groups if g.kind in (SIDE, FAMILY)]
    own += [(g, (g.name, CATALOG[g.name].pinyin)) for g in groups if g.kind == INSTRUMENT]
    own += [(g, (g.name,)) for g in groups if g.kind == POSITION]
    for group, names in own:
        if named(group, names):
            return group
    instrument = canonical_instrument(name)
    return next((g for g in groups if g.kind == INSTRUMENT and g.name == instrument), None)


def _split(names: Iterable[str]) -> list[str]:
    """Names given as separate words or joined by commas (``東,鼓``)."""
    return [part.strip() for name in names for part in name.split(",") if part.strip()]


def groups_help(groups: Sequence[Group]) -> str:
    """The valid names, by kind (for an error)."""
    return "; ".join(f"{PLURALS[kind]}: {' '.join(g.name for g in groups if g.kind == kind)}"
                     for kind in KINDS if any(g.kind == kind for g in groups))


def note_selection(rite: Rite, only: Iterable[str] = (),
                   excluded: Iterable[str] = ()) -> NoteSelection | None:
    """The selection ``--only ONLY --except EXCLUDED`` names on ``rite`` (None when neither is
    given); an unknown name is the user's error, listing the valid ones."""
    only_names, except_names = _split(only), _split(excluded)
    if not only_names and not except_names:
        return None
    groups = rite_groups(rite)
    found: dict[str, list[Group]] = {"--only": [], "--except": []}
    for flag, names in (("--only", only_names), ("--except", except_names)):
        for name in names:
            group = find_group(name, groups)
            if group is None:
                raise UserError(f"{flag} {name}: no such group in {rite.id}; "
                                f"{groups_help(groups)}")
            found[flag].append(group)
    return NoteSelection(tuple(found["--only"]), tuple(found["--except"]))


def select_notes(timeline: Timeline, selection: NoteSelection | None) -> Timeline:
    """``timeline`` with only the notes ``selection`` keeps (None: all); markers, spans and
    settings as they are."""
    if selection is None:
        return timeline
    return replace(timeline, notes=tuple(n for n in timeline.notes if selection.keeps(n)))


def groups_json(rite: Rite, timeline: Timeline | None = None) -> list[dict]:
    """Every group of ``rite`` as ``show --json`` lists it: kind, name, other names, what it is,
    and (with a timeline) how many notes it holds."""
    out = []
    for group in rite_groups(rite):
        row: dict = {"kind": group.kind, "name": group.name, "aliases": list(group.aliases),
                     "what": group.what}
        if timeline is not None:
            row["notes"] = sum(1 for n in timeline.notes if group.holds(n))
        out.append(row)
    return out
