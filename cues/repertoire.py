"""The repertoire: every piece the rites name, with its category, what survives, and its melody.

Data: ``cues/data/pieces.toml`` (the list, with citations), the 風雅十二詩譜 melodies from
``sources/reference/fengya12.json`` (one 律 per sung syllable) and the texts from
``sources/reference/shijing_traditional.json``.  Melodies are never invented: a piece whose
melody is lost has no stanzas and ``melody_lost`` is true.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources
from types import MappingProxyType

from cues.pinyin import add_names, name_key
from cues.sources import read_json_source

MODES = MappingProxyType({"黄钟宫": "黃鍾宮", "无射商": "無射商"})
LU_NAMES = (
    "黃鍾", "大呂", "太蔟", "夾鍾", "姑洗", "仲呂", "蕤賓", "林鍾", "夷則", "南呂", "無射", "應鍾",
)


@dataclass(frozen=True)
class Citation:
    work: str
    file: str
    quote: str


@dataclass(frozen=True)
class Stanza:
    """One stanza of a 詩譜 melody: one note per syllable."""

    number: int
    lyric: str  # traditional characters, one per note
    semitones: tuple[int, ...]  # above 黃鍾 (+12 for the 清 octave)
    lu: str  # the 律 line as the source writes it (simplified)
    su: str  # the 工尺 (俗字) line
    note: str  # the transcriber's note on anomalies ("" if none)

    @property
    def syllables(self) -> int:
        return len(self.semitones)


@dataclass(frozen=True)
class Piece:
    title: str
    aliases: tuple[str, ...]  # other Chinese names: simplified forms, variants, other titles
    category: str
    text_lost: bool
    melody_lost: bool
    source: Citation
    mode: str | None = None  # 黃鍾宮 or 無射商 for the 詩譜 songs
    stanzas: tuple[Stanza, ...] = ()
    text: str | None = None
    note: str = ""
    fragment: str = ""  # what survives of a text otherwise lost (text = "fragment")
    fragment_source: Citation | None = None
    pinyin: str = ""  # tone-less (``guanju``): a name too, looked up as ``cues.pinyin`` says

    @property
    def text_state(self) -> str:
        """How the words survive: "extant", "fragment" or "lost"."""
        return "fragment" if self.fragment else "lost" if self.text_lost else "extant"

    @property
    def lost(self) -> bool:
        """True where the music is lost (the software may realize it only as structure)."""
        return self.melody_lost

    @property
    def is_sheng_piece(self) -> bool:
        """A 笙詩: played by the mouth organs below the hall, never sung."""
        return self.category == "笙詩"


def _fengya() -> dict[str, dict]:
    data = read_json_source("reference/fengya12.json")
    return {song["title_traditional"]: song for song in data["songs"]}


def _texts() -> dict[str, str]:
    data = read_json_source("reference/shijing_traditional.json")
    out: dict[str, str] = {}
    for poem in data["poems"]:
        title = poem["title"].rsplit("-", 1)[-1]
        body = "\n".join(
            line for line in poem["text"].splitlines() if line and not line.startswith("#")
        )
        out[title] = body.strip()
    return out


@cache
def _load() -> MappingProxyType[str, Piece]:
    raw = tomllib.loads(
        resources.files("cues").joinpath("data/pieces.toml").read_text(encoding="utf-8")
    )
    songs = _fengya()
    texts = _texts()
    pieces: dict[str, Piece] = {}
    for entry in raw["piece"]:
        title = entry["title"]
        stanzas: tuple[Stanza, ...] = ()
        mode = None
        if entry["melody"] == "詩譜":
            song = songs[title]
            mode = MODES[song["mode"]]
            stanzas = tuple(
                Stanza(
                    number=st["stanza"],
                    lyric=st.get("lyric_traditional_ifcalm") or st["lyric_as_in_source"],
                    semitones=tuple(st["semitones_from_huangzhong"]),
                    lu=st["lu"],
                    su=st["su"],
                    note=st.get("note", ""),
                )
                for st in song["stanzas"]
            )
        pieces[title] = Piece(
            title=title,
            aliases=tuple(entry.get("aliases", ())),
            category=entry["category"],
            text_lost=entry["text"] == "lost",
            melody_lost=entry["melody"] == "lost",
            source=Citation(**entry["source"]),
            mode=mode,
            stanzas=stanzas,
            text=texts.get(title),
            note=entry.get("note", ""),
            pinyin=entry["pinyin"],
            **_fragment(entry),
        )
    return MappingProxyType(pieces)


def _fragment(entry: dict) -> dict:
    """A ``text = "fragment"`` piece's surviving words and their citation."""
    if entry["text"] != "fragment":
        return {}
    fragment = entry["fragment"]
    return {"fragment": fragment["text"], "fragment_source": Citation(**fragment["source"])}


@cache
def _alias_map() -> MappingProxyType[str, str]:
    """Every name of a piece (keyed by ``name_key``) → its title; ValueError if ambiguous."""
    out: dict[str, str] = {}
    for piece in _load().values():
        add_names(out, (piece.title, *piece.aliases, piece.pinyin), piece.title, "piece")
    return MappingProxyType(out)


def canonical_title(title: str) -> str | None:
    """The repertoire's title for ``title`` (traditional, simplified, a variant or the pinyin),
    or None."""
    return _alias_map().get(name_key(title.strip().strip("《》")))


def get_piece(title: str) -> Piece:
    canon = canonical_title(title)
    if canon is None:
        raise KeyError(f"unknown piece {title!r}")
    return _load()[canon]


def all_pieces() -> tuple[Piece, ...]:
    return tuple(_load().values())
