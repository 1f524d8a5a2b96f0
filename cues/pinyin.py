"""Latin names: pieces and instruments may be named by their tone-less pinyin (``guanju``,
``bianzhong``).  A name is looked up by its key: lower case, tone marks, tone digits, spaces,
hyphens, underscores and apostrophes dropped, so that ``Guān-jū``, ``guan ju`` and ``guan1ju1``
all find 關雎; Chinese names keep every character."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

_IGNORED = re.compile(r"[\s\-_'’0-9]")


def name_key(name: str) -> str:
    """The key ``name`` is looked up by (see the module docstring)."""
    decomposed = unicodedata.normalize("NFD", name.strip())
    bare = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return unicodedata.normalize("NFC", _IGNORED.sub("", bare.lower()))


def add_names(table: dict[str, str], names: Iterable[str], canonical: str, what: str) -> None:
    """Let every one of ``names`` select ``canonical`` in ``table`` (keyed by ``name_key``);
    a name that already selects another ``what`` is ambiguous: ValueError naming both."""
    for name in names:
        key = name_key(name)
        if not key:
            continue
        other = table.setdefault(key, canonical)
        if other != canonical:
            raise ValueError(f"ambiguous {what} name {name!r}: it names both {other} and "
                             f"{canonical}")
