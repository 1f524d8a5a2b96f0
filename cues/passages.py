"""Where a quoted passage is: its file, its lines, the layers of the text it comes from (經, 記,
注, 疏, a later commentary, a modern note — as the file marks them, or else as the citation says)
and the lines around it, for ``yuezheng source`` and for every place a citation is shown."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

from cues.editions import LAYERS, MODERN, claimed_layer, current_name, edition
from cues.editions import char_layers as _char_layers
from cues.model import Source
from cues.sources import is_punctuation, own_text_path, read_source, source_files

CONTEXT_LINES = 2  # lines shown before and after a passage
MAX_LINE_CHARS = 200  # a context line longer than this is cut (around the quote)


@dataclass(frozen=True)
class Passage:
    """A quote found in its file: lines ``first``…``last`` (1-based), the characters
    ``start``…``end`` of the file's text, and the layers it spans (``marked``: as the file marks
    them; else as the citation's work says)."""

    file: str
    quote: str
    first: int
    last: int
    start: int
    end: int
    layers: tuple[str, ...]
    marked: bool

    @property
    def modern(self) -> bool:
        return any(layer in MODERN for layer in self.layers)


@cache
def _index(text: str) -> tuple[str, tuple[int, ...]]:
    """The text with punctuation and white space removed, and each kept character's offset."""
    kept = [(i, ch) for i, ch in enumerate(text) if not is_punctuation(ch)]
    return "".join(ch for _, ch in kept), tuple(i for i, _ in kept)


def file_text(file: str) -> str | None:
    """The cited text: a bundled file (by its name or former name) or the user's own; None when
    it cannot be read."""
    name = current_name(file)
    try:
        if name in source_files():
            return read_source(name)
        path = own_text_path(file)
        return None if path is None else Path(path).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeError):
        return None


def _layer_order(layers: set[str]) -> tuple[str, ...]:
    return tuple(layer for layer in LAYERS if layer in layers)


def locate(source: Source) -> Passage | None:
    """Where ``source``'s quote is in its file, or None: punctuation aside, the first place in
    the layer the citation names (a short quote such as 「奏《陔》」 recurs in a 疏 before the
    經 line it cites), else the first place."""
    if source.file is None:
        return None
    text = file_text(source.file)
    if text is None:
        return None
    needle = "".join(ch for ch in source.quote if not is_punctuation(ch))
    if not needle:
        return None
    bare, offsets = _index(text)
    name = current_name(source.file)
    marks = _char_layers(name, text) if name in source_files() else ()
    claimed = claimed_layer(source.work)
    chosen: Passage | None = None
    at = bare.find(needle)
    while at >= 0:
        passage = _passage(source, name, text, offsets, marks, at, len(needle))
        if chosen is None:
            chosen = passage
        if passage.marked and claimed in passage.layers:
            return passage
        at = bare.find(needle, at + 1)
    return chosen


def _passage(source: Source, name: str, text: str, offsets: tuple[int, ...],
             marks: tuple[str | None, ...], at: int, size: int) -> Passage:
    """The passage of ``size`` kept characters from ``at`` (an offset into the bare text)."""
    start, end = offsets[at], offsets[at + size - 1] + 1
    first = text.count("\n", 0, start) + 1
    last = text.count("\n", 0, end - 1) + 1
    found = [marks[offsets[i]] if offsets[i] < len(marks) else None
             for i in range(at, at + size)]
    if found and None not in found:
        return Passage(name, source.quote, first, last, start, end,
                       _layer_order({f for f in found if f is not None}), True)
    return Passage(name, source.quote, first, last, start, end,
                   (claimed_layer(source.work),), False)


def layer_label(passage: Passage | None, source: Source) -> str:
    """What the quote is, for a listing: 「經」, 「注」, 「經 and 注」, 「modern note」; an
    unmarked text's layer is followed by 「(as cited)」."""
    if passage is None:
        return claimed_layer(source.work) + " (as cited)"
    label = " and ".join(passage.layers)
    return label if passage.marked else f"{label} (as cited)"


def citation_line(source: Source) -> str:
    """One line naming a citation's work, layer, file and line, and its edition's short title:
    「儀禮·大射 — 注, seeds/yili-da-she-zhushu.txt:307 (《儀禮注疏》…)」."""
    passage = locate(source)
    where = ""
    if source.file is not None:
        name = current_name(source.file)
        where = f", {name}" + (f":{passage.first}" if passage is not None else "")
    return f"{source.work} — {layer_label(passage, source)}{where}"


def layer_problem(source: Source) -> str | None:
    """Why a citation misstates what it quotes (None when it does not): a passage the file marks
    as a modern note, translation or the editor's apparatus cited as the classic."""
    passage = locate(source)
    if passage is None or not passage.marked or not passage.modern:
        return None
    claimed = claimed_layer(source.work)
    if claimed in MODERN:
        return None
    modern = " and ".join(layer for layer in passage.layers if layer in MODERN)
    return (f"quote 「{source.quote}」 is the {modern} of {passage.file} (line {passage.first}), "
            f"not the {claimed} of {source.work}: cite the classic's own words, or say so in "
            f"the work (e.g. \"{source.work} (modern note)\")")


def layer_doubt(source: Source) -> str | None:
    """Why a citation's work names another layer than the file puts its quote in (None when
    they agree, or the file does not say): 「儀禮·大射 鄭注」 quoting a line of 經."""
    passage = locate(source)
    if passage is None or not passage.marked or passage.modern:
        return None
    claimed = claimed_layer(source.work)
    if claimed in passage.layers:
        return None
    found = " and ".join(passage.layers)
    return (f"work {source.work!r} names the {claimed}, but {passage.file} puts 「{source.quote}」 "
            f"(line {passage.first}) in the {found}: it is shown as {found}")


def context(passage: Passage, around: int = CONTEXT_LINES,
            marks: tuple[str, str] = ("", "")) -> list[tuple[int, str, bool]]:
    """The passage's lines with ``around`` lines either side: (line number, text, whether the
    line holds the passage), the quote's part of a line between ``marks``; a very long line is
    cut to the part around the quote."""
    text = file_text(passage.file) or ""
    lines = text.split("\n")
    first = max(1, passage.first - around)
    last = min(len(lines), passage.last + around)
    out: list[tuple[int, str, bool]] = []
    offset = sum(len(line) + 1 for line in lines[:first - 1])
    for number in range(first, last + 1):
        line = lines[number - 1]
        inside = passage.first <= number <= passage.last
        if inside:
            lo = max(0, passage.start - offset)
            hi = max(lo, min(len(line), passage.end - offset))
            shown = _cut(line[:lo] + marks[0] + line[lo:hi] + marks[1] + line[hi:],
                         lo, hi + len(marks[0]) + len(marks[1]))
        else:
            shown = line if len(line) <= MAX_LINE_CHARS else line[:MAX_LINE_CHARS // 2] + "…"
        out.append((number, shown, inside))
        offset += len(line) + 1
    return out


def _cut(line: str, lo: int, hi: int) -> str:
    """``line`` cut to about ``MAX_LINE_CHARS`` around its characters ``lo``…``hi``."""
    if len(line) <= MAX_LINE_CHARS:
        return line
    start = max(0, lo - MAX_LINE_CHARS // 4)
    stop = min(len(line), max(hi, start) + MAX_LINE_CHARS // 4)
    return ("…" if start > 0 else "") + line[start:stop] + ("…" if stop < len(line) else "")


def edition_of(file: str) -> str:
    """The edition a bundled file is (its catalog entry), or that it is the user's own text."""
    entry = edition(file)
    if entry is not None:
        return entry.edition
    if current_name(file) in source_files():
        return "a structured extract made for the project (see reference/README.md)"
    return "the user's own text"


def citation_json(source: Source) -> dict[str, object]:
    """A citation for ``--json``: work, quote and file, and what the quote is — its layers
    (``layers``; ``layers_marked``: as the file marks them, else as the work says), its first
    line in the file and the file's edition."""
    out: dict[str, object] = {"work": source.work, "quote": source.quote}
    if source.file:
        out["file"] = current_name(source.file)
    passage = locate(source)
    out["layers"] = list(passage.layers) if passage is not None else [claimed_layer(source.work)]
    out["layers_marked"] = passage is not None and passage.marked
    if passage is not None:
        out["line"] = passage.first
    if source.file:
        out["edition"] = edition_of(source.file)
    return out
