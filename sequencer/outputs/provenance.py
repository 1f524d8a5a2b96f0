"""The provenance every file yuezheng writes carries: what it was made from, so that ``check``
needs no settings.

A ``Provenance`` says the rite (its id; the sheet's path when it is not built in; the piece
when one piece was played, and by which ensemble), the range (``--from``/``--until``), the
variants and readings in force, every setting of the timeline (``CompileSettings``, and which
of them the command line gave), the instrument groups played (``--only``/``--except``), the
command that makes the file again (``-o`` aside), and where its 射節 strokes are due (the
``StrokeGrid`` of each 射節 cue, in the file's own seconds).

It is written as one JSON object (``{"provenance": "yuezheng/1", …}``, UTF-8, no time stamp:
the same command writes the same bytes):

- **MIDI**: a text meta event (``FF 01``) at tick 0 of the conductor track;
- **WAV**: the ``ICMT`` (comment) of the ``LIST``/``INFO`` chunk, with ``INAM`` (the title) and
  ``ISFT`` (yuezheng and its version) (``instruments.files.riff_info``);
- **FLAC**: the Vorbis comments ``COMMENT``, ``TITLE`` and ``SOFTWARE``.

``read_provenance`` reads it back (None from a file without it: a recording of people, or one
whose tags were stripped); a malformed one is an error that names the file.
"""

from __future__ import annotations

import io
import json
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from fractions import Fraction
from functools import cache
from pathlib import Path
from typing import Any

from cues.errors import UserError
from cues.model import Rite
from sequencer.timeline.events import Timeline
from sequencer.timeline.settings import SETTING_NAMES, CompileSettings
from sequencer.timeline.stroke_grids import StrokeGrid, stroke_grids

FORMAT = "yuezheng/1"
_PLAIN_WORD = re.compile(r"[^\s'\"\\$`;&|<>*?()\[\]{}!#~]+")
MIDI_TEXT = 0x01  # the meta event a MIDI file's provenance is written in
PROVENANCE_BYTES = 1 << 20  # a provenance longer than this is not read (a hostile file)


@cache
def software() -> str:
    """``yuezheng VERSION``: the installed package's version, else pyproject.toml's."""
    from importlib import metadata

    try:
        return f"yuezheng {metadata.version('yuezheng')}"
    except metadata.PackageNotFoundError:
        import tomllib

        pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
        try:
            with pyproject.open("rb") as handle:
                return f"yuezheng {tomllib.load(handle)['project']['version']}"
        except (OSError, KeyError, tomllib.TOMLDecodeError):
            return "yuezheng"


def setting_text(value: object) -> str | None:
    """A setting's value as the command line would take it (a Fraction exact: ``5/2``)."""
    if value is None:
        return None
    if isinstance(value, Fraction) and value.denominator == 1:
        return str(value.numerator)
    return str(value)


def command_line(words: Sequence[str]) -> str:
    """``words`` as a shell line: a word quoted only where the shell needs it (鄉射禮 is
    written as it is)."""
    return " ".join(w if _PLAIN_WORD.fullmatch(w) else shlex.quote(w) for w in words)


@dataclass(frozen=True)
class Provenance:
    """What a file was made from (see the module docstring)."""

    command: str  # the command that makes it again, -o aside
    title: str
    rite: str | None = None  # the rite's id (a piece's own id); None: no rite (audition)
    sheet: str | None = None  # the sheet's path, for a rite that is not built in
    piece: str | None = None  # the piece, when one piece was played
    ensemble: str | None = None
    from_cue: str | None = None
    until_cue: str | None = None
    variants: tuple[str, ...] = ()  # the variants in force
    readings: Mapping[str, str] = field(default_factory=dict)  # every reading's value in force
    settings: Mapping[str, str | None] = field(default_factory=dict)  # every setting, as text
    given: tuple[str, ...] = ()  # the settings the command line gave (field names)
    only: tuple[str, ...] = ()
    excluded: tuple[str, ...] = ()
    she_jie: tuple[StrokeGrid, ...] = ()  # where the strokes of each 射節 are due
    software: str = ""
    stem: str | None = None  # the instrument of a render's stem (its other fields: the mix's)

    def to_json(self) -> dict[str, Any]:
        return {
            "provenance": FORMAT, "software": self.software or software(),
            "command": self.command, "title": self.title, "rite": self.rite,
            "sheet": self.sheet, "piece": self.piece, "ensemble": self.ensemble,
            "from": self.from_cue, "until": self.until_cue, "variants": list(self.variants),
            "readings": dict(self.readings), "settings": dict(self.settings),
            "given": list(self.given), "only": list(self.only), "except": list(self.excluded),
            "she_jie": [g.to_json() for g in self.she_jie],
            **({"stem": self.stem} if self.stem else {}),
        }

    def text(self) -> str:
        """The JSON text written into a file (compact, UTF-8, keys in a fixed order)."""
        return json.dumps(self.to_json(), ensure_ascii=False, separators=(",", ":"))

    def tags(self) -> dict[str, str]:
        """An audio file's text tags: title, comment (this provenance), software."""
        return {"title": self.title + (f" — stem {self.stem}" if self.stem else ""),
                "comment": self.text(), "software": self.software or software()}

    def stem_tags(self, stem: str) -> dict[str, str]:
        """The tags of the stem of instrument ``stem`` of the render this provenance is of."""
        return replace(self, stem=stem).tags()

    def compile_settings(self) -> CompileSettings:
        """The settings the file's timeline was compiled with (ValueError if unreadable)."""
        from sequencer.timeline.settings import make_settings

        try:
            return make_settings(None, {k: v for k, v in self.settings.items()
                                        if k in SETTING_NAMES})
        except UserError as exc:
            raise ValueError(str(exc)) from None

    @classmethod
    def from_json(cls, data: Any) -> Provenance:
        """A provenance read back (ValueError when it is not one of ours)."""
        if not isinstance(data, dict) or not str(data.get("provenance", "")).startswith(
                "yuezheng/"):
            raise ValueError("not a yuezheng provenance")

        def text(key: str) -> str | None:
            value = data.get(key)
            if value is not None and not isinstance(value, str):
                raise ValueError(f"{key!r} must be text, got {value!r}")
            return value

        def texts(key: str) -> tuple[str, ...]:
            value = data.get(key) or []
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ValueError(f"{key!r} must be a list of text, got {value!r}")
            return tuple(value)

        def mapping(key: str) -> dict[str, str | None]:
            value = data.get(key) or {}
            if not isinstance(value, dict) or not all(
                    isinstance(k, str) and (v is None or isinstance(v, str))
                    for k, v in value.items()):
                raise ValueError(f"{key!r} must map names to text, got {value!r}")
            return value

        grids = data.get("she_jie") or []
        if not isinstance(grids, list):
            raise ValueError(f"'she_jie' must be a list, got {grids!r}")
        readings = {k: v for k, v in mapping("readings").items() if v is not None}
        return cls(
            command=text("command") or "", title=text("title") or "", rite=text("rite"),
            sheet=text("sheet"), piece=text("piece"), ensemble=text("ensemble"),
            from_cue=text("from"), until_cue=text("until"), variants=texts("variants"),
            readings=readings, settings=mapping("settings"), given=texts("given"),
            only=texts("only"), excluded=texts("except"),
            she_jie=tuple(StrokeGrid.from_json(g) for g in grids),
            software=text("software") or "", stem=text("stem"),
        )

    @property
    def target(self) -> str | None:
        """What to load to compile the file's timeline again: the sheet, the piece or the
        built-in rite."""
        return self.sheet or self.piece or self.rite


def make_provenance(
    command: str, target: str, rite: Rite, timeline: Timeline, *,
    from_cue: str | None = None, until_cue: str | None = None, readings: Sequence[str] = (),
    overrides: Mapping[str, object] | None = None, flags: Mapping[str, str] | None = None,
    ensemble: str | None = None, only: Sequence[str] = (), excluded: Sequence[str] = (),
    options: Sequence[str] = (),
) -> Provenance:
    """The provenance of a file that ``command`` (``midi``, ``render``…) writes of ``timeline``
    (the part played), compiled from ``rite`` (as ``selection.selected_rite`` gave it) named
    ``target`` on the command line, with these arguments; ``flags``: each setting's flag
    (``jie_seconds`` → ``--jie-seconds``); ``options``: the command's other arguments, as
    typed (``--room dry``), for the command line it records."""
    given = {k: v for k, v in (overrides or {}).items() if v is not None}
    piece = None if rite.path is not None else rite.cues[0].pieces[0].title if (
        rite.cues and rite.cues[0].pieces) else None
    words = ["yuezheng", command, target]
    for flag, named in (("--from", from_cue), ("--until", until_cue), ("--ensemble", ensemble)):
        if named:
            words += [flag, named]
    for variant in rite.active_variants:
        words += ["--variant", variant]
    for reading in readings:
        words += ["--reading", reading]
    for name, value in given.items():
        words += [(flags or {}).get(name, f"--{name.replace('_', '-')}"), str(value)]
    for flag, groups in (("--only", only), ("--except", excluded)):
        if groups:
            words += [flag, *groups]
    words += list(options)
    builtin = rite.path is not None and rite.path.endswith("(built-in)")
    settings = timeline.settings
    return Provenance(
        command=command_line(words), title=rite.title, rite=rite.id,
        sheet=None if builtin or rite.path is None else rite.path, piece=piece,
        ensemble=ensemble, from_cue=from_cue, until_cue=until_cue,
        variants=tuple(rite.active_variants),
        readings={r.name: r.value for r in rite.readings},
        settings={f.name: setting_text(getattr(settings, f.name)) for f in fields(settings)},
        given=tuple(given), only=tuple(only), excluded=tuple(excluded),
        she_jie=tuple(stroke_grids(timeline)), software=software(),
    )


def tool_provenance(command: str, title: str, options: Sequence[str] = ()) -> Provenance:
    """The provenance of a file made from no rite (``audition``)."""
    return Provenance(command=command_line(["yuezheng", command, *options]), title=title,
                      software=software())


# ── reading it back ─────────────────────────────────────────────────────────────────────────


def read_provenance(path: str | Path) -> Provenance | None:
    """The provenance a MIDI, WAV or FLAC file carries; None when it carries none (a file of
    another kind, or without yuezheng's tags). UserError when it carries a malformed one."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in (".mid", ".midi", ".smf"):
        text = _midi_text(path)
    elif suffix == ".wav":
        from instruments.files.riff_info import read_info

        text = read_info(path).get("comment")
    elif suffix == ".flac":
        text = _flac_comment(path)
    else:
        return None
    if not text or not text.lstrip().startswith("{") or '"provenance"' not in text:
        return None
    if len(text) > PROVENANCE_BYTES:
        raise UserError(f"{path}: its provenance is longer than {PROVENANCE_BYTES} bytes")
    try:
        return Provenance.from_json(json.loads(text))
    except (ValueError, RecursionError) as exc:
        raise UserError(f"{path}: its provenance (the tags yuezheng writes) cannot be read: "
                        f"{exc}") from None


def _midi_text(path: Path) -> str | None:
    """The first text meta event of the first track that holds a provenance."""
    import mido

    from cues.limits import MIDI_BYTES, read_limited

    data = read_limited(path, MIDI_BYTES, "a Standard MIDI File (.mid)")
    try:
        mid = mido.MidiFile(file=io.BytesIO(data), charset="latin1")
    except Exception:  # unreadable: the checker says so when it reads the file itself
        return None
    for msg in mid.tracks[0] if mid.tracks else ():
        if msg.type == "text":
            text = msg.text.encode("latin1").decode("utf-8", errors="replace")
            if '"provenance"' in text:
                return text
    return None


def _flac_comment(path: Path) -> str | None:
    import soundfile

    try:
        with soundfile.SoundFile(str(path)) as f:
            return f.comment or None
    except Exception:  # unreadable: the checker says so when it reads the file itself
        return None
