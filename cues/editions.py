"""The bundled texts' catalog (``cues/data/sources/SOURCES.toml``): each file's readable name and
former hashed name, what it is, the edition, where it came from, and which layer of the text —
經, 記, 注, 疏, a later commentary, a modern note or translation, the editor's apparatus — each of
its characters belongs to, as far as the file itself marks them."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources

CATALOG_FILE = "data/sources/SOURCES.toml"

JING, JI, ZHU, SHU = "經", "記", "注", "疏"
LATER = "later commentary"
MODERN_NOTE = "modern note"
MODERN_TRANSLATION = "modern translation"
APPARATUS = "editor's apparatus"
# the layers a citation may name, oldest first
LAYERS = (JING, JI, ZHU, SHU, LATER, MODERN_NOTE, MODERN_TRANSLATION, APPARATUS)
# written by a modern hand: never to be shown as the classic
MODERN = frozenset({MODERN_NOTE, MODERN_TRANSLATION, APPARATUS})
RULES = ("brackets", "parentheses", "alternating", "headings", "unmarked")
UNMARKED = "unmarked"


@dataclass(frozen=True)
class Span:
    """A rule in force over lines ``first``…``last`` (1-based, inclusive; 0, 0: the default)."""

    first: int
    last: int
    rule: str


@dataclass(frozen=True)
class Edition:
    """One bundled text: its path (``seeds/…``, ``reference/…``), the name it had before, what it
    is, the edition and where it came from, and the rules that say where its layers are."""

    file: str
    title: str
    edition: str
    origin: str
    former: str = ""
    spans: tuple[Span, ...] = ()

    def rule_at(self, line: int) -> str:
        """The rule in force on ``line`` (1-based): the last span that covers it."""
        rule = UNMARKED
        for span in self.spans:
            if (span.first, span.last) == (0, 0) or span.first <= line <= span.last:
                rule = span.rule
        return rule


@cache
def editions() -> dict[str, Edition]:
    """Every catalogued text by its path."""
    raw = resources.files("cues").joinpath(CATALOG_FILE).read_text(encoding="utf-8")
    out: dict[str, Edition] = {}
    for entry in tomllib.loads(raw)["text"]:
        spans = tuple(Span(int(span.get("lines", (0, 0))[0]), int(span.get("lines", (0, 0))[1]),
                           str(span["rule"])) for span in entry.get("layers", ()))
        for span in spans:
            if span.rule not in RULES and span.rule not in LAYERS:
                raise ValueError(f"{CATALOG_FILE}: {entry['file']}: unknown rule {span.rule!r}")
        out[entry["file"]] = Edition(file=entry["file"], title=entry["title"],
                                     edition=entry["edition"], origin=entry["origin"],
                                     former=entry.get("former", ""), spans=spans)
    return out


def edition(file: str) -> Edition | None:
    """The catalog's entry for a bundled text (by its name or its former name), or None."""
    return editions().get(current_name(file))


@cache
def _former_names() -> dict[str, str]:
    return {e.former: e.file for e in editions().values() if e.former}


def current_name(file: str) -> str:
    """A bundled text's readable name for ``file`` when it is the file's former hashed name
    (``seeds/000_….txt``: sheets written before the rename still load); else ``file``."""
    return _former_names().get(file, file)


def former_names() -> dict[str, str]:
    """Former hashed name → readable name."""
    return dict(_former_names())


_BRACKET_SHU = "疏曰"


def _brackets(line: str) -> list[str | None]:
    out: list[str | None] = []
    inside, layer = False, JING
    i = 0
    while i < len(line):
        ch = line[i]
        if ch == "【":
            inside, layer = True, ZHU
        elif ch == "】":
            out.append(layer)
            inside, layer = False, JING
            i += 1
            continue
        elif inside and line.startswith(_BRACKET_SHU, i):
            layer = SHU
        elif inside and ch == "○":
            layer = LATER
        out.append(layer)
        i += 1
    return out


def _parentheses(line: str) -> list[str | None]:
    out: list[str | None] = []
    depth, shu = 0, False
    for i, ch in enumerate(line):
        if line.startswith("[疏]", i):
            shu = True
        if ch == "（":
            depth += 1
        out.append(SHU if shu else ZHU if depth > 0 else JING)
        if ch == "）" and depth > 0:
            depth -= 1
    return out


_CONTINUES = "。，、；：」』）"
_HEADING = re.compile(r"\s*####")
_JI_OPENS = re.compile(r"\s*[〔\[]?記[〕\]]?[。：]")


@cache
def char_layers(file: str, text: str) -> tuple[str | None, ...]:
    """The layer of each character of ``text`` (the bundled ``file``'s contents) as the file
    marks it; None where the file does not say (an unmarked text, or a line break)."""
    entry = edition(file)
    out: list[str | None] = []
    alternate = 0  # the lines since the last 疏 line (rule "alternating")
    in_ji = False  # under rule "headings": past a 「記。」 line in this part
    for number, line in enumerate(text.split("\n"), start=1):
        rule = entry.rule_at(number) if entry is not None else UNMARKED
        layers: list[str | None]
        if rule == "brackets":
            layers = _brackets(line)
        elif rule == "parentheses":
            layers = _parentheses(line)
        elif rule == "alternating":
            if line.lstrip().startswith(SHU):
                layer, alternate = SHU, 0
            elif not line.strip():
                layer = None
            elif line.lstrip()[0] in _CONTINUES and out:
                # a line cut in two: its second half opens with the first half's punctuation
                layer = next((x for x in reversed(out) if x is not None), None)
            else:
                layer = JING if alternate % 2 == 0 else ZHU
                alternate += 1
            layers = [layer] * len(line)
        elif rule == "headings":
            if _HEADING.match(line):
                in_ji, layer = False, APPARATUS
            else:
                in_ji = in_ji or bool(_JI_OPENS.match(line))
                layer = JI if in_ji else JING
            layers = [layer] * len(line)
        elif rule == UNMARKED:
            layers = [None] * len(line)
        else:  # a layer named outright
            layers = [rule] * len(line)
        out += layers
        out.append(None)  # the line break
    return tuple(out[:len(text)])


def claimed_layer(work: str) -> str:
    """The layer a citation's ``work`` names (e.g. 「儀禮·大射 鄭注」 → 注): the most derived of
    疏, 注, 記 it mentions, a modern note, or else 經.  The book 禮記 and a parenthesised remark
    that quotes another text (「(燕禮 注: 「如鄕射之禮」)」) name no layer."""
    bare = re.sub(r"\([^)]*「[^)]*\)|（[^）]*「[^）]*）", "", work).replace("禮記", "")
    if "modern" in bare or "今注" in bare or "今譯" in bare:
        return MODERN_TRANSLATION if "translation" in bare or "今譯" in bare else MODERN_NOTE
    for layer in (SHU, ZHU, JI):
        if layer in bare:
            return layer
    return JING
