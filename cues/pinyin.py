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


# the simplified (and variant) characters of the names a rite's kinds, readings and variants use,
# folded to the traditional form the sheets write (鍾 and 鐘 are one name; 狸 is 貍)
_TRADITIONAL = str.maketrans({
    "乐": "樂", "备": "備", "无": "無", "献": "獻", "节": "節", "苹": "蘋", "狸": "貍",
    "迁": "遷", "钟": "鍾", "鐘": "鍾", "间": "間", "閒": "間", "驺": "騶", "骜": "驁",
    "採": "采", "礼": "禮", "乡": "鄉", "饮": "飲",
})


def loose_key(name: str) -> str:
    """``name_key`` with simplified and variant characters folded to the traditional form the
    sheets write: 「合乐」 and 「合樂」, 「钟先」 and 「鍾先」, 「SHE」 and 「she」 have one key."""
    return name_key(name).translate(_TRADITIONAL)


def loose_match(name: str, names: Iterable[str]) -> str | None:
    """The one of ``names`` that ``name`` is a form of (by ``loose_key``), or None."""
    key = loose_key(name)
    return next((n for n in names if loose_key(n) == key), None) if key else None
