"""The command line's declarations: each command's name, its one line of help, its description
and examples, beside the arguments it takes (``@command(NAME, HELP, examples=…)`` on the function
that adds them), and the arguments several commands share — ``SETTING_FLAGS`` maps each flag of
the timeline's settings to its ``CompileSettings`` field.

``cli.py`` builds its parser from ``COMMANDS`` and binds each command by name to its body; nothing
here prints or runs a command.  Every choice and default is imported from the module that owns it
(tests/test_cli_args.py), inside the function that declares the argument: the owners (the mixer,
the live player: numpy, scipy) are imported only when their command is declared, so that
``yuezheng --help`` stays fast.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass

# ── the commands ────────────────────────────────────────────────────────────────────────────

Register = Callable[[argparse.ArgumentParser], None]


@dataclass(frozen=True)
class Command:
    name: str
    help: str  # the one line `yuezheng --help` shows
    description: str  # more, under it in the command's own --help
    examples: tuple[str, ...]  # the epilog (tests/test_help.py parses each)
    register: Register


COMMANDS: list[Command] = []  # in the order `yuezheng --help` lists them


def command(name: str, help: str, *, examples: Sequence[str],
            description: str = "") -> Callable[[Register], Register]:
    """Decorator: the function that adds command ``name``'s arguments (``cli.py`` runs the
    command's body, which it binds to ``name``)."""
    def add(register: Register) -> Register:
        COMMANDS.append(Command(name, help, description, tuple(examples), register))
        return register
    return add


# — arguments several commands share —

_VARIANT_HELP = "choose a variant of the rite (repeatable); `show` lists them"

# The timeline's settings on the command line: flag → CompileSettings field. The parser declares
# these flags from this map, and an error in a value names the flag it came by.
SETTING_FLAGS: dict[str, str] = {
    "--tempo": "tempo_bpm", "--jie-seconds": "jie_seconds",
    "--lost-zhong-seconds": "lost_zhong_seconds", "--go-gap": "go_gap_s",
    "--huangzhong": "huangzhong_hz", "--tuning": "tuning", "--drum-pattern": "drum_pattern",
    "--drum-reading": "drum_reading", "--release-rule": "release_rule",
    "--humanize": "humanize_ms",
}
FLAG_OF = {field: flag for flag, field in SETTING_FLAGS.items()}


def _add_variant(p: argparse.ArgumentParser | argparse._ArgumentGroup,
                 text: str = _VARIANT_HELP) -> None:
    """--variant V and --reading ID=VALUE (repeatable): the variants of the rite to play and the
    values of its readings; ``text`` is the help of --variant."""
    p.add_argument("--variant", action="append", default=[], metavar="V", help=text)
    p.add_argument("--reading", action="append", default=[], metavar="ID=VALUE",
                   help="choose the value of one of the rite's readings (repeatable); `show` "
                   "lists them with the passage behind each value")


def _add_tuning(p: argparse.ArgumentParser | argparse._ArgumentGroup, *,
                timeline: bool = True) -> None:
    """--huangzhong HZ and --tuning: the pitch of 黃鍾 and the tuning system.

    A timeline command (``timeline``): both default to None, so that the sheet's [settings]
    (else the compiler's defaults) decide, and the compiler reads the text as it reads the
    sheet's; a command without a timeline gets the compiler's default tuning and 黃鍾 as a
    number, so that every command defaults to the same tuning.
    """
    from instruments.tuning import DEFAULT_HUANGZHONG_HZ, TUNING_SYSTEMS
    from sequencer.timeline.settings import CompileSettings

    p.add_argument("--huangzhong", dest="huangzhong_hz", type=str if timeline else float,
                   metavar="HZ", default=None if timeline else CompileSettings.huangzhong_hz,
                   help=f"frequency of 黃鍾 in Hz (default {DEFAULT_HUANGZHONG_HZ:.2f} = C4: the "
                   "sources give none)")
    p.add_argument("--tuning", choices=TUNING_SYSTEMS,
                   default=None if timeline else CompileSettings.tuning,
                   help="sanfen = 三分損益 (the default of every command), equal = equal "
                   "temperament")


def _add_midi_tuning(p: argparse.ArgumentParser) -> None:
    """--midi-tuning mts|bend: how MIDI out carries a pitch between the keys."""
    from instruments.midi import DEFAULT_MIDI_TUNING, MIDI_TUNINGS

    p.add_argument("--midi-tuning", dest="midi_tuning", choices=MIDI_TUNINGS,
                   default=DEFAULT_MIDI_TUNING,
                   help="how a pitch between the keys (三分損益) goes out: mts (default: the "
                   "MIDI Tuning Standard, each key its own pitch; FluidSynth, TiMidity++ read "
                   "it) or bend (a channel pitch bend before each note, for synths that read "
                   "no MTS: it retunes the notes still ringing on the channel)")


def _add_bell_interval(p: argparse.ArgumentParser) -> None:
    """--bell-interval: the 側鼓音 of the 編鐘 above its 正鼓音."""
    from instruments.voices.models import BELL_INTERVALS

    p.add_argument("--bell-interval", choices=tuple(BELL_INTERVALS), default="minor",
                   help="編鐘: 側鼓音 a minor (default) or major third above the 正鼓音")


def _add_settings(p: argparse.ArgumentParser) -> None:
    """The variants and the compiler settings every timeline command accepts."""
    from sequencer.timeline import drums
    from sequencer.timeline.settings import RELEASE_RULES, CompileSettings

    g = p.add_argument_group("settings (override the sheet's [settings])")
    _add_variant(g)
    flag = FLAG_OF
    g.add_argument(flag["tempo_bpm"], dest="tempo_bpm", metavar="BPM",
                   help=f"sung syllables a minute (default {CompileSettings.tempo_bpm})")
    g.add_argument(flag["jie_seconds"], dest="jie_seconds", metavar="S",
                   help="length of one 節 of a 射節 (default: one 終 of its song)")
    g.add_argument(flag["lost_zhong_seconds"], dest="lost_zhong_seconds", metavar="S",
                   help="length of one 終 of a piece whose music is lost (default "
                   f"{CompileSettings.lost_zhong_seconds})")
    g.add_argument(flag["go_gap_s"], dest="go_gap_s", metavar="S",
                   help="offline: seconds between a cue's end and the next operator GO "
                        f"(default {CompileSettings.go_gap_s})")
    _add_tuning(g)
    g.add_argument(flag["drum_pattern"], dest="drum_pattern", choices=drums.PATTERNS,
                   help=f"射節 strokes: {drums.DEFAULT_PATTERN} (default) or a 投壺 pattern "
                   "(魯鼓, 薛鼓)")
    g.add_argument(flag["drum_reading"], dest="drum_reading", choices=drums.READINGS,
                   help=f"reading of 投壺 block 1's labels (default {drums.DEFAULT_READING})")
    g.add_argument(flag["release_rule"], dest="release_rule", choices=RELEASE_RULES,
                   help=f"when a release accords with the drum (default "
                        f"{CompileSettings.release_rule}: 上射 on the 節, 下射 half a 節 later)")
    g.add_argument(flag["humanize_ms"], dest="humanize_ms", metavar="MS",
                   help="the drummers' timing error, standard deviation in ms (default 0: every "
                        "stroke on the tick; a drummer to a metronome: 10–20)")


def _add_piece_target(p: argparse.ArgumentParser) -> None:
    """RITE|FILE|PIECE and --ensemble: a rite, a sheet, or one piece played by an ensemble."""
    from cues.builtin import DEFAULT_ENSEMBLE, ENSEMBLES, ensemble_name

    p.add_argument("rite", metavar="RITE|FILE|PIECE",
                   help="a built-in rite, a .toml sheet, or a piece (`pieces` lists them)")
    p.add_argument("--ensemble", choices=tuple(ENSEMBLES), type=ensemble_name, metavar="NAME",
                   help="a piece's players (default " + DEFAULT_ENSEMBLE + "): " + "; ".join(
                       f"{name} = {what}" for name, (_, _, what) in ENSEMBLES.items()))


def _add_range(p: argparse.ArgumentParser, which: str = "") -> None:
    """--from CUE and --until CUE."""
    p.add_argument("--from", dest="from_cue", metavar="CUE",
                   help=f"{which}start at this cue" if not which else f"{which}the file "
                   "starts at this cue")
    p.add_argument("--until", dest="until_cue", metavar="CUE",
                   help=f"{which}end with this cue" if not which else f"{which}the file "
                   "ends with this cue")


def _add_timeline_args(p: argparse.ArgumentParser, output: str) -> None:
    """RITE|FILE|PIECE, -o OUTPUT, --from/--until and the settings: what every timeline view
    takes."""
    _add_piece_target(p)
    p.add_argument("-o", "--output", required=True, metavar=output)
    _add_range(p)
    _add_groups(p)
    _add_settings(p)


def _add_groups(p: argparse.ArgumentParser) -> None:
    """--only GROUP… and --except GROUP… (sequencer.timeline.groups)."""
    g = p.add_argument_group("instrument groups (a side 東 西 中 堂上 堂下, an 八音 family, an "
                             "instrument, a layout position; `show` lists them)")
    g.add_argument("--only", action="extend", nargs="+", default=[], metavar="GROUP",
                   help="play only these groups (names, or joined by commas)")
    g.add_argument("--except", dest="excluded", action="extend", nargs="+", default=[],
                   metavar="GROUP", help="leave these groups out")


def _add_room_args(p: argparse.ArgumentParser, *, loudness: bool) -> None:
    """--room (and for render --loudness, --bell-detune): how the built-in voices are heard."""
    from instruments.mix.room import DEFAULT_ROOM, ROOMS

    p.add_argument("--room", choices=ROOMS, default=DEFAULT_ROOM,
                   help="courtyard: reflections from the hall and the side walls, a short "
                   "tail, delays by distance; dry: pan and distance only (default "
                   f"{DEFAULT_ROOM})")
    if loudness:
        from instruments.voices.models import BELL_DETUNES
        from sequencer.outputs.render import DEFAULT_LOUDNESS_LUFS

        p.add_argument("--loudness", type=float, metavar="LUFS", default=DEFAULT_LOUDNESS_LUFS,
                       help="normalise the render to this integrated loudness (BS.1770; "
                       f"default {DEFAULT_LOUDNESS_LUFS:g})")
        p.add_argument("--bell-detune", choices=BELL_DETUNES, default=BELL_DETUNES[0],
                       help="each bell's fixed tuning error: none (default), up to ±5 cents, "
                       "or an excavated set's ±25 cents")


# ── each command, with its examples ─────────────────────────────────────────────────────────

# — rites, show, validate, new, pieces: the rites as data —


@command("rites", "list the built-in rites", examples=("yuezheng rites", "yuezheng rites --json"))
def _register_rites(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print JSON")


@command("show", "show a rite's cues (a table, or the JSON contract)",
         examples=("yuezheng show xiang-she", "yuezheng show 燕禮 --variant she --json"))
def _register_show(p: argparse.ArgumentParser) -> None:
    p.add_argument("rite", metavar="RITE|FILE", help="a built-in rite (or alias) or a .toml sheet")
    p.add_argument("--json", action="store_true", help="print the JSON contract")
    _add_groups(p)
    _add_settings(p)


@command("validate", "check cue sheets and report every problem",
         examples=("yuezheng validate my-rite.toml",))
def _register_validate(p: argparse.ArgumentParser) -> None:
    p.add_argument("files", nargs="+", metavar="FILE")


@command("new", "start your own cue sheet from a built-in rite",
         description="Write a built-in rite as an editable cue sheet (its TOML, headed by where "
         "it came from). Example: yuezheng new my-she.toml --from xiang-she",
         examples=("yuezheng new my-she.toml --from xiang-she   # then edit it, and: "
                   "yuezheng render my-she.toml -o my-she.wav",))
def _register_new(p: argparse.ArgumentParser) -> None:
    p.add_argument("sheet", metavar="SHEET.toml", help="the sheet to write")
    p.add_argument("--from", dest="from_rite", required=True, metavar="RITE",
                   help="the built-in rite to start from (name or alias; `rites` lists them)")
    p.add_argument("--force", action="store_true", help="replace SHEET.toml if it exists")


@command("pieces", "list the repertoire: every piece the rites name",
         examples=("yuezheng pieces", "yuezheng pieces --json"))
def _register_pieces(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print JSON")


@command("source", "show the passage a cue, piece, position, variant or reading cites, in its "
         "context",
         description="The work, what the quote is (經, 記, 注, 疏, a later commentary or a modern "
         "note: as the file marks it, else as cited), the file and line, the edition, and the "
         "lines around the quote with the layer of each; the quote is marked ⟦…⟧.",
         examples=("yuezheng source 騶虞", "yuezheng source she-jie --rite xiang-she",
                   "yuezheng source 笙 --rite 鄉射禮   # a position of the layout"))
def _register_source(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", metavar="CUE|PIECE",
                   help="a piece, or a cue id, position, variant, reading or `layout` of a rite")
    p.add_argument("--rite", metavar="RITE|FILE",
                   help="the rite (built-in or a .toml sheet) whose cue is meant; without "
                        "it a piece's name means the piece")
    p.add_argument("--json", action="store_true", help="print JSON")


# — midi, render, score, audition, instruments: the rites as files —


@command("midi", "write a rite as a Standard MIDI File",
         examples=("yuezheng midi xiang-she -o xiang-she.mid",
                   "yuezheng midi yan -o she.mid --variant she --from she-jie --until she-jie"))
def _register_midi(p: argparse.ArgumentParser) -> None:
    _add_timeline_args(p, "OUT.mid")
    _add_midi_tuning(p)


@command("render", "render a rite to audio (built-in voices or FluidSynth)",
         examples=("yuezheng render xiang-she -o xiang-she.wav",
                   "yuezheng render guanju -o guanju.wav --ensemble sheng-ge",
                   "yuezheng render xiang-she -o x.wav --engine fluidsynth "
                   "--soundfont /usr/share/sounds/sf2/FluidR3_GM.sf2"))
def _register_render(p: argparse.ArgumentParser) -> None:
    from sequencer.outputs.render import ENGINES

    _add_timeline_args(p, "OUT.wav|.flac")
    p.add_argument("--stems", metavar="DIR", help="also write one file per instrument")
    p.add_argument("--engine", choices=ENGINES, default=ENGINES[0],
                   help="built-in voices (default) or FluidSynth with a SoundFont")
    p.add_argument("--soundfont", metavar="FILE.sf2", help="for --engine fluidsynth")
    _add_bell_interval(p)
    _add_room_args(p, loudness=True)


@command("score", "write the score of a 詩譜 piece, or of the sung pieces of a rite",
         description="Write a score (MusicXML, compressed .mxl, or PDF through LilyPond) of a "
         "piece of the 風雅十二詩譜 (every stanza: voice with syllable, 律 and 工尺 under each "
         "note, and the 瑟 an octave below, as the MIDI and audio play it), or of the sung (歌) "
         "pieces of a rite in order with the cue ids as rehearsal marks. The 詩譜 notates no "
         "rhythm: every syllable is a quarter note. Lost melodies are never invented.",
         examples=("yuezheng score 關雎 -o guanju.pdf",
                   "yuezheng score xiang-yin-jiu -o xiang-yin-jiu.musicxml --tuning equal"))
def _register_score(p: argparse.ArgumentParser) -> None:
    p.add_argument("target", metavar="PIECE|RITE",
                   help="a repertoire title (鹿鳴, 关雎, …) or a rite (name, alias or .toml path)")
    p.add_argument("-o", "--output", metavar="OUT", required=True,
                   help="OUT.musicxml, OUT.xml, OUT.mxl or OUT.pdf (PDF needs Debian lilypond)")
    _add_tuning(p, timeline=False)
    _add_variant(p, "rites only: select a variant reading (repeatable)")


@command("instruments",
         "list the instrument catalog: 八音, GM fallback and the synthesis voice model",
         description="List every instrument of the catalog with its 八音 class, aliases, the "
         "General MIDI fallback for external synths, and the model of its built-in voice.",
         examples=("yuezheng instruments",))
def _register_instruments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print one JSON array")


@command("audition", "render a short demonstration of one instrument's voice to an audio file",
         description="Render a few seconds of one instrument: the pentatonic 宮 商 角 徵 羽 清宮 "
         "on 黃鍾 for pitched instruments, a few strokes for drums. 48 kHz stereo, 24-bit WAV or "
         "FLAC by the output's extension.",
         examples=("yuezheng audition 編鐘 -o bianzhong.wav",
                   "yuezheng audition 瑟 -o se.flac --tuning equal"))
def _register_audition(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", metavar="NAME", help="an instrument of `yuezheng instruments`")
    p.add_argument("-o", "--output", metavar="OUT", required=True, help="OUT.wav or OUT.flac")
    _add_tuning(p, timeline=False)
    _add_bell_interval(p)
    _add_room_args(p, loudness=False)


# — check, judge: the proofs —


@command("check",
         "prove the timing holds (「間若一」): test 節 or onsets as an equal-interval grid",
         description="Test a MIDI file, an audio recording or a live show log as equal-interval "
         "grids. MIDI: each block of '節 k/N' markers (a block starts where k goes back to 1); "
         "without markers, the note_on onsets merged within 30 ms. Audio (.wav .flac .aif .aiff "
         ".ogg): the detected onsets. Log (.jsonl .ndjson): the {\"event\": \"jie\"} records of "
         "the live player. With --rite (and the settings and range the file was made with), an "
         "audio or MIDI file is checked only in the rite's 射節, each against the stroke grid "
         "of its timeline, and its offset from the timeline is reported. One line per block; "
         "--verbose for each violation. Exit codes: 0 every block holds, 4 a block fails, "
         "2 bad input. Example: yuezheng check xiang-she.wav --rite xiang-she",
         examples=("yuezheng check xiang-she.mid", "yuezheng check show.jsonl --json",
                   "yuezheng check xiang-she.wav --rite xiang-she"))
def _register_check(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE", help="FILE.mid, FILE.wav, FILE.flac or FILE.jsonl")
    p.add_argument(
        "--channel", type=int, metavar="N", default=None,
        help="MIDI only, without 節 markers: check note onsets of channel N (1-16); "
        "default: all channels",
    )
    p.add_argument(
        "--tolerance-ms", type=float, metavar="T", default=None,
        help="largest allowed deviation of an onset from the fitted grid, in ms "
        "(default: MIDI 1, audio 10, log 5)",
    )
    p.add_argument("--rite", metavar="RITE|FILE", default=None,
                   help="check the file in this rite's 射節 only, against its timeline")
    _add_range(p, "with --rite: ")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="print each violation and note, not only one line per block")
    p.add_argument("--json", action="store_true", help="print the report as one JSON object")
    _add_settings(p)


@command("judge", "「不鼓不釋」: tally the archers' hits by the drum rule",
         examples=("yuezheng judge xiang-she --releases releases.csv   "
                   "# rows: time_s,side,hit e.g. 4.0,右,1",))
def _register_judge(p: argparse.ArgumentParser) -> None:
    from sequencer.judge.tally import DEFAULT_TOLERANCE_MS

    p.add_argument("rite", metavar="RITE|FILE")
    p.add_argument("--releases", required=True, metavar="FILE.csv",
                   help="columns time_s,side,hit: seconds from the 射節 cue's start (all pairs, "
                        "one cycle of 節 each, in the shooting order), side 右 (the 上射's) or "
                        "左, hit 0/1")
    p.add_argument("--cue", metavar="CUE", help="the 射節 cue (default: the rite's first)")
    p.add_argument("--tolerance-ms", type=float, default=DEFAULT_TOLERANCE_MS,
                   help="how far a release may be from a drum accord and still count "
                        f"(default {DEFAULT_TOLERANCE_MS:g} ms)")
    p.add_argument("--json", action="store_true", help="print JSON")
    _add_settings(p)


# — plot, layout: the pictures —


@command("plot", "draw a rite's timeline (PNG or SVG)",
         examples=("yuezheng plot xiang-she -o xiang-she.png",))
def _register_plot(p: argparse.ArgumentParser) -> None:
    _add_timeline_args(p, "OUT.png|OUT.svg")


@command("layout", "draw a rite's hang from above (PNG or SVG)",
         examples=("yuezheng layout da-she -o da-she.svg",))
def _register_layout(p: argparse.ArgumentParser) -> None:
    p.add_argument("rite", metavar="RITE|FILE")
    p.add_argument("-o", "--output", required=True, metavar="OUT.png|OUT.svg")
    _add_variant(p)


# — ports, live: the show —


@command("ports", "list the MIDI inputs a live output can connect to",
         description="List the MIDI inputs that `jack:PORT` / `alsa:PORT` outputs can connect to "
         "(PORT may be any part of a name shown here).",
         examples=("yuezheng ports", "yuezheng ports --api alsa"))
def _register_ports(p: argparse.ArgumentParser) -> None:
    from instruments.ports.rtmidi import API_NAMES

    p.add_argument("--api", choices=API_NAMES, default=API_NAMES[0],
                   help=f"MIDI API to list (default: {API_NAMES[0]})")
    p.add_argument("--json", action="store_true", help="print a JSON list of names")


@command("reaction", "measure the judge's delay from a sight to a key, for live --mark-delay",
         description="A block appears on the terminal after an unforeseeable wait; press space "
         "(or 1-4) the moment it does. After --trials presses the median delay is printed: "
         "pass it to `live --mark-delay` so that each release the judge marks is judged at "
         "the release, not at the key. A press before the block, or within 0.1 s of it (a "
         "guess), is not counted and that trial is done again.",
         examples=("yuezheng reaction", "yuezheng reaction --trials 20"))
def _register_reaction(p: argparse.ArgumentParser) -> None:
    p.add_argument("--trials", type=int, default=10, metavar="N",
                   help="presses to measure (default 10; 1-100)")


@command("live", "run a rite live: cue by cue to a MIDI output, from the console or headless",
         description="Play a rite live to a MIDI port. The console (curses) shows the cue list, "
         "the standby cue's ritual moment, the 節 counter and the keys: space GO, s stop "
         "(樂闋: ends a looping cue at its next rest point; twice: at once), h hold, r resume, "
         "n/b skip/back, p panic (twice: CC 123/120 on every channel), +/- nudge a 射節 from its "
         "next 耦 cycle, ,/. the 無算樂's next piece, 1/2/3/4 the judge marks a release (右 hit, "
         "右 miss, 左 hit, 左 miss: 「不鼓不釋」 at the press less --mark-delay, tallied live), "
         "q quit (twice while music sounds). Every command says what it did, or why it did "
         "nothing. The console fits the terminal (80x24 shows everything; 40x12 at least). "
         "A GO within --go-guard "
         "of the last is ignored; a GO while a follow cue waits starts nothing; a GO while music "
         "sounds asks for a second GO, which cuts it (--go-cuts: at once). --auto runs every cue "
         "without an operator. At the end a summary says what was not delivered: the output "
         "lost, messages late; the exit code is then 1.",
         examples=("yuezheng live xiang-she --output jack:fluidsynth",
                   "yuezheng live xiang-she --output pyo --auto --log show.jsonl"))
def _register_live(p: argparse.ArgumentParser) -> None:
    from sequencer.live.control.midi_in import DEFAULT_GO, DEFAULT_PANIC, DEFAULT_STOP
    from sequencer.live.go_safety import DEFAULT_GO_GUARD_S
    from sequencer.live.player.judging import DEFAULT_MARK_DELAY_S
    from sequencer.live.screens.web.guard import MIN_TOKEN_CHARS
    from sequencer.outputs.render import DEFAULT_LOUDNESS_LUFS

    _add_piece_target(p)
    p.add_argument("--output", required=True, metavar="SPEC",
                   help="jack:PORT, jack-virtual:NAME, alsa:PORT, virtual:NAME, pyo (the "
                   "built-in voices through pyo's audio server: pyo:jack, pyo:portaudio, "
                   "pyo:jack:CLIENT), or memory:[PATH] (no hardware: the messages are "
                   "recorded, to PATH as JSON lines)")
    p.add_argument("--auto", action="store_true",
                   help="headless: GO cues start the go gap after the previous cue ends; cues "
                        "that run until stopped play one pass")
    _add_range(p)
    p.add_argument("--control", metavar="URL",
                   help="OSC remote control, e.g. osc://127.0.0.1:53000 (/go /stop /panic /hold "
                        "/resume /cue/ID/start, /release SIDE HIT; replies /reply/...)")
    p.add_argument("--remote-quit", dest="remote_quit", action="store_true",
                   help="let OSC /quit end the show (refused otherwise)")
    p.add_argument("--midi-in", dest="midi_in", metavar="SPEC",
                   help="MIDI input for GO/stop/panic and MIDI Show Control (GO, STOP, RESUME)")
    for name, default in (("go", DEFAULT_GO), ("stop", DEFAULT_STOP), ("panic", DEFAULT_PANIC)):
        p.add_argument(f"--midi-{name}", default=default, metavar="note:N|cc:N",
                       help=f"the MIDI input's {'GO' if name == 'go' else name} "
                       f"(default {default})")
    p.add_argument("--clock-out", action="store_true",
                   help="send MIDI clock (24 ppqn at the rite's tempo, start/stop/continue)")
    p.add_argument("--loudness", type=float, metavar="LUFS",
                   help="the pyo output plays the show as loud as its render normalised to "
                   f"this integrated loudness (default {DEFAULT_LOUDNESS_LUFS:g}, render's; "
                   "refused with a MIDI output, whose level is the synth's)")
    _add_midi_tuning(p)
    p.add_argument("--log", metavar="FILE.jsonl", help="append the show log (JSON lines) here")
    p.add_argument("--resume", metavar="LOG", help="start again at the last cue LOG started")
    p.add_argument("--go-guard", dest="go_guard_s", type=float, default=DEFAULT_GO_GUARD_S,
                   metavar="S", help="the least time between two GOs; a GO sooner is ignored "
                   f"(default {DEFAULT_GO_GUARD_S:g})")
    p.add_argument("--mark-delay", dest="mark_delay_ms", type=float,
                   default=DEFAULT_MARK_DELAY_S * 1000, metavar="MS",
                   help="the judge's delay from an archer's release to the key (1-4, OSC "
                   "/release) that marks it, taken off each mark before it is judged (default "
                   f"{DEFAULT_MARK_DELAY_S * 1000:g}; `yuezheng reaction` measures yours)")
    p.add_argument("--go-cuts", action="store_true",
                   help="a GO while music sounds cuts it at once (default: GO again to confirm)")
    p.add_argument("--web", metavar="[ADDR:]PORT",
                   help="serve the performers' 節 display (/) and the operator remote "
                        "(/operator) on this port, loopback unless ADDR is given")
    p.add_argument("--web-token", metavar="TOKEN",
                   help="the token the operator page needs to give commands, at least "
                   f"{MIN_TOKEN_CHARS} characters (default: one of 128 bits is made and "
                   "printed at the start)")
    p.add_argument("--web-token-file", metavar="FILE", help="read --web-token from FILE")
    p.add_argument("--speak", action="store_true",
                   help="announce standby and GO aloud with espeak-ng (backstage calls)")
    p.add_argument("--plain", action="store_true",
                   help="a plain console for screen readers: what changes, a line each; type a "
                        "command (go, stop, hold, resume, skip, back, panic, faster, slower, "
                        "quit) or a console key")
    _add_groups(p)
    link = p.add_mutually_exclusive_group()
    link.add_argument("--link", action="store_true",
                      help="join an Ableton Link session and lead it: each 射節's 節 become "
                           "Link beats (phase 0 on 節 1), its start and stop the session's")
    link.add_argument("--link-follow", dest="link_follow", action="store_true",
                      help="join an Ableton Link session and follow it: each 射節 takes the "
                           "session's tempo and starts on its next phase 0 (tempo locked "
                           "for the cue)")
    _add_hearing_args(p)
    _add_standby_args(p)
    _add_settings(p)


def _add_hearing_args(p: argparse.ArgumentParser) -> None:
    """``live``'s ears (docs/hearing.md)."""
    g = p.add_argument_group("the drum heard (docs/hearing.md)")
    g.add_argument("--hear", metavar="SPEC",
                   help="hear the drum: jack:PORT (a JACK audio output, e.g. "
                        "jack:system:capture_1), jack: (an input to connect yourself) or an "
                        "audio file played in from the show's start; each stroke is placed on "
                        "the 射節's grid (console, pages, log) and the judge uses it")
    g.add_argument("--hear-latency", dest="hear_latency_ms", type=float, default=0.0,
                   metavar="MS", help="the sound's way from the drum to the microphone, taken "
                   "off every stroke besides the input's own latency (about 3 ms a metre; "
                   "default 0)")
    g.add_argument("--follow", nargs="?", const="hold", choices=("hold", "continue"),
                   help="the drum leads: each 射節 keeps to the drummer's grid, placed at each "
                        "耦 cycle (needs --hear); when the drum stops the accompaniment holds "
                        "(default) or continues at the last 節")


def _add_standby_args(p: argparse.ArgumentParser) -> None:
    """``live``'s hot standby (docs/standby.md)."""
    from sequencer.live.standby.pair import (
        DEFAULT_HEARTBEAT_MS,
        DEFAULT_LEAD_MS,
        DEFAULT_TAKEOVER_MS,
        ROLES,
    )

    g = p.add_argument_group("hot standby (a main and a muted backup machine; docs/standby.md)")
    g.add_argument("--role", choices=ROLES,
                   help="main: mirror every action to the backup; backup: play muted, take over "
                        "when the main falls silent")
    g.add_argument("--peer", metavar="osc.udp://HOST:PORT", help="the other machine's --listen")
    g.add_argument("--listen", metavar="[ADDR:]PORT",
                   help="where this machine hears its peer (loopback unless ADDR is given; "
                        "default: loopback on the --peer port)")
    g.add_argument("--peer-key-file", metavar="FILE",
                   help="the shared key (else the environment variable YUEZHENG_PEER_KEY)")
    g.add_argument("--peer-lead", dest="peer_lead_ms", type=float, default=DEFAULT_LEAD_MS,
                   metavar="MS", help="both machines act this long after the main's action "
                   f"(default {DEFAULT_LEAD_MS:g})")
    g.add_argument("--heartbeat", dest="heartbeat_ms", type=float, default=DEFAULT_HEARTBEAT_MS,
                   metavar="MS", help=f"how often each side says it is alive (default "
                   f"{DEFAULT_HEARTBEAT_MS:g})")
    g.add_argument("--takeover", dest="takeover_ms", type=float, default=DEFAULT_TAKEOVER_MS,
                   metavar="MS", help="the backup takes over after this long without the main "
                   f"(default {DEFAULT_TAKEOVER_MS:g})")
