"""The built-in rites (``cues/rites/*.toml``) and every name that selects one."""

from __future__ import annotations

import tomllib
from importlib import resources
from types import MappingProxyType

from cues.pinyin import loose_match

BUILTIN_RITES = ("xiang-yin-jiu", "xiang-she", "yan", "da-she")

# who plays a piece played on its own (``render 關雎``): a built-in rite's cue lends its kind,
# instruments, hang and settings; name → (rite, cue, what it is)
ENSEMBLES: MappingProxyType[str, tuple[str, str, str]] = MappingProxyType({
    "he-yue": ("xiang-yin-jiu", "he-yue",
               "合樂 of the 鄉飲酒禮: 歌 and 瑟 on the hall, 笙, 和 and 編磬 below"),
    "sheng-ge": ("xiang-yin-jiu", "sheng-ge", "升歌 of the 鄉飲酒禮: the 工 sing with the 瑟"),
    "sheng": ("xiang-yin-jiu", "sheng-ru", "笙 of the 鄉飲酒禮: three 笙 and a 和"),
    "jin-zou": ("yan", "si-xia-bin", "金奏 of the 燕禮: 編鐘, 鑮, 建鼓 and 編磬"),
})
DEFAULT_ENSEMBLE = "he-yue"


def ensemble_name(name: str) -> str:
    """The ensemble ``name`` is a form of (case, spacing: 「Sheng Ge」, 「JIN-ZOU」, 「jinzou」),
    else ``name`` as written (for the caller to refuse)."""
    return loose_match(name, ENSEMBLES) or name


def builtin_text(rite_id: str) -> str:
    """The cue sheet of built-in rite ``rite_id``, as text."""
    return resources.files("cues.rites").joinpath(f"{rite_id}.toml").read_text(encoding="utf-8")


EDITABLE_HEADER = """\
# A cue sheet written by `yuezheng new` from the built-in rite {rite_id} ({title}).
# Edit it freely: `yuezheng validate {name}` checks it, and every command that takes a rite
# takes this file in its place.
# Citations: file = "seeds/…" or "reference/…" names a text bundled with yuezheng; any other
# file = "…" is your own text (UTF-8), a path relative to this sheet, and its quote is checked
# the same way (verbatim, punctuation aside).
#
"""


def editable_sheet(rite_id: str, name: str) -> str:
    """Built-in rite ``rite_id``'s sheet, headed by where it came from, to be saved as ``name``
    and edited (``yuezheng new``): its TOML is the built-in's, byte for byte."""
    text = builtin_text(rite_id)
    title = tomllib.loads(text)["rite"]["title"]
    return EDITABLE_HEADER.format(rite_id=rite_id, title=title, name=name) + text


def builtin_names() -> dict[str, str]:
    """Every name that selects a built-in rite (ids, titles, aliases) → the rite id."""
    names: dict[str, str] = {}
    for rid in BUILTIN_RITES:
        head = tomllib.loads(builtin_text(rid)).get("rite", {})
        for name in (rid, head.get("title", ""), *head.get("aliases", [])):
            if name:
                names[name] = rid
    return names


def resolve_rite_name(name: str) -> str | None:
    """The built-in rite id for a name or alias, or None."""
    return builtin_names().get(name.strip())
