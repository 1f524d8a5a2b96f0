"""Quotations written into a sheet's prose: a 「…」 in an ``at`` (or a stop's ``at``) claims the
text says so, and must be found, punctuation aside, in a file the sheet cites — in its classic
text, not only in what the file marks as a modern note or translation."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from cues.model import Source
from cues.passages import locate
from cues.sources import normalize, quote_found

# a 「…」 quotation, one level of nested 「…」 allowed
QUOTATION = re.compile(r"「([^「」]*(?:「[^「」]*」[^「」]*)*)」")
ELLIPSIS = re.compile(r"…+")


def quoted_parts(text: str) -> list[str]:
    """The verbatim pieces of every 「…」 in ``text`` (an ellipsis marks a cut)."""
    return [part for m in QUOTATION.finditer(text) for part in ELLIPSIS.split(m.group(1))
            if normalize(part)]


def found_in(part: str, files: Iterable[str]) -> bool:
    """Whether ``part`` occurs, punctuation aside, in one of the cited ``files``."""
    return any(quote_found(part, f) for f in files)


def found_in_classic(part: str, files: Iterable[str]) -> bool:
    """``found_in``, and not only in what a file marks as a modern note or translation: a cue's
    moment is in the text's own words (a note may quote a modern note, saying so)."""
    for f in files:
        if quote_found(part, f):
            passage = locate(Source("", part, f))
            if passage is None or not passage.modern:
                return True
    return False


def misquotations(text: str, files: Sequence[str]) -> list[str]:
    """The quoted parts of ``text`` (a moment) that none of ``files`` has in its classic text."""
    return [part for part in quoted_parts(text) if not found_in_classic(part, files)]


def is_verbatim(text: str, files: Iterable[str]) -> bool:
    """Whether the whole of ``text`` is the texts' own words: every piece between its
    ellipses (cuts) found, punctuation aside, in one of ``files`` — else it is a paraphrase,
    and ``show`` says so rather than print it between 「」."""
    files = tuple(files)
    parts = [p for p in ELLIPSIS.split(text) if normalize(p)]
    return bool(parts) and all(found_in(p, files) for p in parts)


def misquotation_message(key: str, part: str, files: Sequence[str]) -> str:
    if any(quote_found(part, f) for f in files):
        return (f"{key!r} quotes 「{part}」, which the texts this sheet cites have only in a "
                "modern note or translation, not in the classic: write it without 「」 or "
                "quote the text")
    return (f"{key!r} quotes 「{part}」, which is not in the texts this sheet cites "
            f"({', '.join(files) or 'none'}): write it without 「」 or quote the text")
