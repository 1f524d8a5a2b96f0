"""Writing a score (``instruments.notation.score``) to a file: MusicXML, compressed MusicXML or PDF.

PDF goes through LilyPond (``musicxml2ly`` then ``lilypond``), on a copy of the score adapted to
what musicxml2ly does with credits and long staff texts (``_lilypond_copy``).  The voice's text
rows are named for what they hold (字 the syllable, 律, 工尺, ¢ the cents), not numbered as
verses; and where the end notes would spill onto a page of their own, the music is set a
little smaller (staff size 20, then 18, then 16) until they share its last page.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from cues.errors import UserError
from instruments.files.atomic import atomic_path
from instruments.files.targets import output_suffix
from instruments.notation.score import CENTS_TEXT, CONTINUED

if TYPE_CHECKING:
    from music21 import stream

SCORE_SUFFIXES = (".musicxml", ".xml", ".mxl", ".pdf")
LILYPOND_TIMEOUT_S = 300
LILYPOND_TEXT_MAX = 24  # longer staff texts stretch LilyPond's bars: they move to the end notes
CENTS_LYRIC_LINE = 4  # in the PDF the cents are a lyric line under the 工尺: aligned, no collisions
# after musicxml2ly's own blocks: room for the part names, no LilyPond advertisement
LILYPOND_PAGE = ("\\paper { indent = 22\\mm  short-indent = 8\\mm }\n"
                 "\\header { tagline = ##f  subtitle = ##f }\n")
LYRIC_ROWS = {1: "字", 2: "律", 3: "工尺", CENTS_LYRIC_LINE: "¢"}  # the voice's text rows, named
STAFF_SIZES = (20, 18, 16)  # tried in turn until the end notes share the music's last page
_STANZA = re.compile(r'\\set stanza = "(\d+)\."')
_STAFF_SIZE = re.compile(r"#\(set-global-staff-size [\d.]+\)")


def _check_output(path: Path) -> str:
    suffix = output_suffix(path, SCORE_SUFFIXES, "a score")
    if not path.parent.is_dir():
        raise UserError(f"cannot write {str(path)!r}: directory {str(path.parent)!r} "
                        "does not exist")
    return suffix


def write_score(score: stream.Score, path: str | Path) -> Path:
    """Write a score as MusicXML (.musicxml, .xml), compressed MusicXML (.mxl) or PDF (.pdf).

    PDF goes through LilyPond (``musicxml2ly`` then ``lilypond``, Debian package ``lilypond``);
    Chinese text needs a CJK font installed (e.g. Debian ``fonts-noto-cjk`` or
    ``fonts-wqy-microhei``).  In the PDF the credit text is printed as notes after the music and
    long staff texts (the [校] notes) become numbered references to those notes, because
    musicxml2ly maps credits to header fields and lets long texts stretch the bars.
    """
    out = Path(path)
    suffix = _check_output(out)
    if suffix in (".musicxml", ".xml"):
        with atomic_path(out) as temp:
            score.write("musicxml", fp=str(temp))
        return out
    lilypond = musicxml2ly = ""
    if suffix == ".pdf":
        lilypond, musicxml2ly = shutil.which("lilypond") or "", shutil.which("musicxml2ly") or ""
        if not (lilypond and musicxml2ly):
            raise UserError("PDF scores need LilyPond, which is not installed: install the "
                            "Debian package `lilypond` (apt-get install lilypond), or write "
                            ".musicxml / .mxl instead")
    # .mxl and .pdf: music21 and LilyPond write beside their input, so work in a private directory
    with tempfile.TemporaryDirectory(prefix="yuezheng-score-") as tmp:
        work = Path(tmp)
        if suffix == ".mxl":
            written = Path(score.write("mxl", fp=str(work / "score.mxl")))
            _move_whole(written, out)
            return out
        for_lilypond, notes = _lilypond_copy(score)
        xml = Path(for_lilypond.write("musicxml", fp=str(work / "score.musicxml")))
        ly = work / "score.ly"
        _run([musicxml2ly, "--output", str(ly), str(xml)], work)
        music = _named_rows(ly.read_text(encoding="utf-8")) + LILYPOND_PAGE
        _move_whole(_fitted_pdf(music, _ly_notes(notes), work, lilypond), out)
    return out


def _named_rows(ly: str) -> str:
    """musicxml2ly's LilyPond with the voice's text rows named (``LYRIC_ROWS``) where it numbers
    them "1.", "2." … like the verses of a hymn."""
    return _STANZA.sub(lambda m: f'\\set stanza = "{LYRIC_ROWS.get(int(m.group(1)), "")}"', ly)


def _fitted_pdf(music: str, notes: str, work: Path, lilypond: str) -> Path:
    """The PDF of ``music`` followed by the end ``notes``, at the first of ``STAFF_SIZES`` at
    which the notes take no page of their own (the largest, if none)."""
    music_pages: int | None = None
    first: Path | None = None
    for size in STAFF_SIZES:
        sized = _STAFF_SIZE.sub(f"#(set-global-staff-size {size})", music)
        pdf = _lilypond(sized + notes, work, f"score-{size}", lilypond)
        pages = pdf_pages(pdf)
        if pages == 1 or not notes.strip():
            return pdf
        if music_pages is None:  # the pages the music itself needs, at the largest size
            music_pages = pdf_pages(_lilypond(music, work, "music", lilypond))
        if pages <= music_pages:
            return pdf
        first = first or pdf
    assert first is not None
    return first


def _lilypond(text: str, work: Path, name: str, lilypond: str) -> Path:
    ly = work / f"{name}.ly"
    ly.write_text(text, encoding="utf-8")
    _run([lilypond, "--pdf", "-o", str(work / name), str(ly)], work)
    return work / f"{name}.pdf"


def pdf_pages(path: Path) -> int:
    """The pages of a PDF file (its page objects counted)."""
    return len(re.findall(rb"/Type\s*/Page[^s]", path.read_bytes()))


def _move_whole(written: Path, out: Path) -> None:
    """Put a finished file at ``out`` whole (``instruments.files.atomic``)."""
    with atomic_path(out) as temp:
        shutil.move(str(written), temp)



def _lilypond_copy(score: stream.Score) -> tuple[stream.Score, list[str]]:
    """A copy for musicxml2ly, which maps credits haphazardly to header fields and spaces long
    staff texts badly: the credit lines become end notes, each long staff text (an editorial
    [校] note) becomes a numbered reference "[校 n]" to the end note of the same number, and the
    cents above the notes become a lyric line (LilyPond stacks texts above close notes)."""
    import copy

    from music21 import expressions, text

    dup = copy.deepcopy(score)
    for box in list(dup.getElementsByClass(text.TextBox)):
        dup.remove(box)
    _cents_to_lyrics(dup)
    paragraphs = _credit_paragraphs(score)
    long_texts = [t for t in dup.recurse().getElementsByClass(expressions.TextExpression)
                  if len(t.content) > LILYPOND_TEXT_MAX]
    extra: list[str] = []
    numbers: dict[str, int] = {}  # a note's text → its number (a piece sung twice: one note)
    for words in long_texts:
        body = words.content.removeprefix("[校]").strip()
        new = body not in numbers
        number = numbers.setdefault(body, len(numbers) + 1)
        if not words.content.startswith("[校]"):
            words.content = f"({number})"
            extra.extend([f"({number}) {body}"] if new else [])
            continue
        words.content = f"[校 {number}]"
        if not new:
            continue
        for i, line in enumerate(paragraphs):
            if line.startswith("[校] ") and line.endswith(body):
                paragraphs[i] = f"[校 {number}]{line.removeprefix('[校]')}"
                break
        else:
            extra.append(f"[校 {number}] {body}")
    return dup, [*paragraphs, *extra]


def _credit_paragraphs(score: stream.Score) -> list[str]:
    """The score's credit boxes joined back into paragraphs (a wrapped line continues one)."""
    from music21 import text

    paragraphs: list[str] = []
    for box in score.getElementsByClass(text.TextBox):
        if box.content.startswith(CONTINUED) and paragraphs:
            paragraphs[-1] += " " + box.content.strip()
        else:
            paragraphs.append(box.content)
    return paragraphs


def _cents_to_lyrics(score: stream.Score) -> None:
    """Move each cents text of the voice to lyric line ``CENTS_LYRIC_LINE`` of its note."""
    from music21 import expressions

    for measure in score.parts[0].getElementsByClass("Measure"):
        for words in list(measure.getElementsByClass(expressions.TextExpression)):
            if not CENTS_TEXT.match(words.content):
                continue
            for sung in measure.notes:
                if sung.offset == words.offset:
                    while len(sung.lyrics) < CENTS_LYRIC_LINE - 1:
                        sung.addLyric("")
                    sung.addLyric(words.content, lyricNumber=CENTS_LYRIC_LINE)
            measure.remove(words)


def _ly_notes(lines: Sequence[str]) -> str:
    """Top-level LilyPond markups (printed after the music), one paragraph per line."""
    out = []
    for line in lines:
        escaped = line.replace("\\", "\\\\").replace('"', '\\"')
        out.append(f'\\markup \\fontsize #-2 \\wordwrap-string #"{escaped}"\n')
    return "\n" + "".join(out)


def _run(argv: list[str], cwd: Path) -> None:
    name = Path(argv[0]).name
    try:
        subprocess.run(argv, cwd=cwd, check=True, capture_output=True, text=True,
                       timeout=LILYPOND_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"{name} took longer than {LILYPOND_TIMEOUT_S} s") from None
    except subprocess.CalledProcessError as exc:
        tail = "\n".join((exc.stderr or "").strip().splitlines()[-8:])
        raise RuntimeError(f"{name} failed (exit {exc.returncode}):\n{tail}") from None
