"""The MusicXML text of a realization file, bounded before music21 sees it.

A compressed ``.mxl`` is a zip archive: its score (named by ``META-INF/container.xml``, else
the first ``.xml``/``.musicxml`` member) is unpacked by streaming and refused as soon as it
passes ``MXL_UNPACKED_BYTES``, so a zip bomb of a few KB costs a few KB.  The number of notes
is counted in the text (``<note``) before music21 parses it, since music21 is slow.
"""

from __future__ import annotations

import io
import lzma
import zipfile
import zlib
from xml.etree import ElementTree

from cues.limits import MXL_UNPACKED_BYTES, REALIZATION_NOTES, InputFileError, over_limit

ZIP_MAGIC = b"PK\x03\x04"
CONTAINER = "META-INF/container.xml"
_CHUNK = 64 * 1024


def musicxml_text(path: str, data: bytes) -> bytes:
    """The MusicXML of ``data`` (the bytes of file ``path``: plain, or a zipped .mxl)."""
    score = _unpacked(path, data) if data.startswith(ZIP_MAGIC) else data
    notes = score.count(b"<note")
    if notes > REALIZATION_NOTES.value:
        raise InputFileError(path, f"the score has {over_limit(REALIZATION_NOTES, notes)}")
    return score


def _unpacked(path: str, data: bytes) -> bytes:
    """The score inside the .mxl archive ``data``."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            name = _score_name(path, archive)
            return _read_member(path, archive, name)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, EOFError,
            ValueError, OSError, zlib.error, lzma.LZMAError) as exc:
        raise InputFileError(path, f"not a readable .mxl archive ({exc})") from None


def _score_name(path: str, archive: zipfile.ZipFile) -> str:
    """The member holding the score: the container's root file, else the first .xml."""
    names = archive.namelist()
    if CONTAINER in names:
        container = _read_member(path, archive, CONTAINER)
        try:
            root = ElementTree.fromstring(container)
        except ElementTree.ParseError as exc:
            raise InputFileError(path, f"{CONTAINER} is not XML ({exc})") from None
        for element in root.iter():
            if element.tag.endswith("rootfile") and element.get("full-path") in names:
                return str(element.get("full-path"))
    for name in names:
        if name.lower().endswith((".xml", ".musicxml")) and not name.startswith("META-INF/"):
            return name
    raise InputFileError(path, "the .mxl archive holds no MusicXML score")


def _read_member(path: str, archive: zipfile.ZipFile, name: str) -> bytes:
    """Member ``name`` unpacked chunk by chunk, refused past MXL_UNPACKED_BYTES."""
    limit = MXL_UNPACKED_BYTES.value
    parts: list[bytes] = []
    size = 0
    with archive.open(name) as member:
        while chunk := member.read(_CHUNK):
            size += len(chunk)
            if size > limit:
                raise InputFileError(path, f"{name} unpacks to more than "
                                     f"{over_limit(MXL_UNPACKED_BYTES, limit)}")
            parts.append(chunk)
    return b"".join(parts)
