"""The built-in rites (``cues/rites/*.toml``) and every name that selects one."""

from __future__ import annotations

import tomllib
from importlib import resources

BUILTIN_RITES = ("xiang-yin-jiu", "xiang-she", "yan", "da-she")


def builtin_text(rite_id: str) -> str:
    """The cue sheet of built-in rite ``rite_id``, as text."""
    return resources.files("cues.rites").joinpath(f"{rite_id}.toml").read_text(encoding="utf-8")


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
