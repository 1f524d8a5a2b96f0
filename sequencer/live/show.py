"""``yuezheng live`` assembled: the player, its remote controls, screens, hot standby and Link,
run from the first GO to the show's end and silenced on every way out.

The command line hands over a rite, its settings and ``LiveOptions`` (every option checked when
they are built, before anything opens); ``run_live`` opens the output, runs the console (curses
or plain) or runs headless, and returns a ``LiveOutcome``: the exit code and the lines of the
end-of-show report. Nothing here prints: what the show says while it runs goes to the ``say``
callback (standard error) and the plain console's lines to ``out``.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cues.errors import UserError
from cues.model import Rite
from instruments.midi import DEFAULT_MIDI_TUNING, MIDI_TUNINGS
from instruments.mix.mixer import MAX_LOUDNESS, MIN_LOUDNESS
from instruments.ports import parse_spec
from sequencer.live import protocol
from sequencer.live.control.midi_in import (
    DEFAULT_GO,
    DEFAULT_PANIC,
    DEFAULT_STOP,
    parse_trigger,
    start_midi_in,
)
from sequencer.live.control.osc import parse_control, start_osc
from sequencer.live.go_safety import DEFAULT_GO_GUARD_S
from sequencer.live.player.judging import DEFAULT_MARK_DELAY_S
from sequencer.live.player.plan import plan_show
from sequencer.live.player.player import LEAD_S, Player
from sequencer.live.player.show_log import ShowLog, resume_point
from sequencer.live.screens.player_adapter import PlayerView, ScreenOptions, start_screens
from sequencer.live.standby.pair import (
    DEFAULT_HEARTBEAT_MS,
    DEFAULT_LEAD_MS,
    DEFAULT_TAKEOVER_MS,
    Standby,
    StandbyOptions,
    standby_options,
)
from sequencer.timeline.groups import NoteSelection
from sequencer.timeline.settings import CompileSettings

#: the signals that end a live show, silenced (SIGHUP: a lost terminal or SSH session)
LIVE_SIGNALS = ("SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT")
LINK_MODES = ("lead", "follow")
MAX_MARK_DELAY_MS = 5000.0  # a judge's delay longer than this is no reaction to a release
EXIT_OK, EXIT_FAILURE = 0, 1

Say = Callable[[str], None]


@dataclass(frozen=True)
class StandbyRequest:
    """``live --role``'s options as given (``standby_options`` checks them)."""

    role: str  # main | backup
    peer: str | None = None
    listen: str | None = None
    key_file: str | None = None
    lead_ms: float = DEFAULT_LEAD_MS
    heartbeat_ms: float = DEFAULT_HEARTBEAT_MS
    takeover_ms: float = DEFAULT_TAKEOVER_MS


@dataclass(frozen=True)
class LiveOptions:
    """How a live show runs: its output, operation, controls, screens and peers."""

    output: str
    auto: bool = False
    interactive: bool = False  # an operator at this terminal (curses, or the plain console)
    log_path: str | None = None
    clock_out: bool = False
    go_guard_s: float = DEFAULT_GO_GUARD_S
    go_cuts: bool = False
    lead_s: float = LEAD_S  # a command takes effect this long after it is given
    control: str | None = None  # osc://HOST:PORT
    remote_quit: bool = False
    midi_in: str | None = None
    midi_triggers: tuple[str, str, str] = (DEFAULT_GO, DEFAULT_STOP, DEFAULT_PANIC)
    screens: ScreenOptions = field(default_factory=ScreenOptions)
    link: str | None = None  # None, "lead" or "follow"
    standby: StandbyOptions | None = None
    only: NoteSelection | None = None
    resumed: tuple[str, str] | None = None  # --resume: (the log, the cue it starts again at)
    mark_delay_ms: float = DEFAULT_MARK_DELAY_S * 1000  # the judge's delay (--mark-delay)
    midi_tuning: str = DEFAULT_MIDI_TUNING  # how 三分損益 goes out: MTS or pitch bends
    hear: str | None = None  # --hear SPEC: the drum heard (sequencer.live.hearing)
    hear_latency_ms: float = 0.0  # the microphone's distance from the drum
    follow: str | None = None  # --follow: the drum leads; "hold" or "continue" when it stops
    loudness: float | None = None  # the pyo output at a render's level at this LUFS (None: the
    # render's default); a MIDI output's level is its synth's: refused there

    @property
    def role(self) -> str | None:
        return self.standby.role if self.standby else None


def checked_options(options: LiveOptions) -> LiveOptions:
    """``options`` if they can run a show; UserError naming the flag at fault."""
    spec = parse_spec(options.output)
    for trigger in options.midi_triggers:
        parse_trigger(trigger)
    if options.control:
        parse_control(options.control)
    if options.loudness is not None:
        if not MIN_LOUDNESS <= options.loudness <= MAX_LOUDNESS:  # NaN fails it too
            raise UserError(f"--loudness {options.loudness:g}: expected {MIN_LOUDNESS:g} to "
                            f"{MAX_LOUDNESS:g} LUFS")
        if spec.kind != "pyo":
            raise UserError(f"--loudness {options.loudness:g}: it sets the level of the pyo "
                            f"output (the built-in voices); {options.output!r} sends MIDI, "
                            "whose level is the synth's — leave --loudness out")
    if not 0 <= options.mark_delay_ms <= MAX_MARK_DELAY_MS:  # NaN fails it too
        raise UserError(f"--mark-delay {options.mark_delay_ms:g}: expected 0 to "
                        f"{MAX_MARK_DELAY_MS:g} ms")
    if options.go_guard_s < 0:
        raise UserError(f"--go-guard {options.go_guard_s:g}: must be 0 or more seconds")
    if options.midi_tuning not in MIDI_TUNINGS:
        raise UserError(f"--midi-tuning {options.midi_tuning!r}: expected one of "
                        f"{', '.join(MIDI_TUNINGS)}")
    if options.link not in (None, *LINK_MODES):
        raise UserError(f"Link mode {options.link!r}: expected one of {', '.join(LINK_MODES)}")
    _check_hearing(options)
    if not (options.auto or options.interactive or options.control or options.midi_in
            or options.screens.web or options.role == "backup"):  # a backup: its main operates
        raise UserError("the live console needs a terminal; use --auto to run headless, or "
                        "--control/--midi-in/--web to be operated remotely")
    return options


def _check_hearing(options: LiveOptions) -> None:
    """``--hear``, ``--hear-latency`` and ``--follow`` (UserError naming the flag)."""
    from sequencer.live.hearing.follow import FOLLOW_MODES
    from sequencer.live.hearing.source import checked_latency_ms, parse_hear

    if options.hear is not None:
        parse_hear(options.hear)
    checked_latency_ms(options.hear_latency_ms)
    if options.follow is None:
        return
    if options.follow not in FOLLOW_MODES:
        raise UserError(f"--follow {options.follow}: expected {' or '.join(FOLLOW_MODES)} (what "
                        f"the accompaniment does when the drum stops)")
    if options.hear is None:
        raise UserError("--follow needs --hear SPEC: the drum it follows")
    if options.link is not None:
        raise UserError("--follow and --link/--link-follow both set the 射節's tempo: give one")
    if options.role is not None:
        raise UserError("--follow with a hot standby (--role) is not supported: the backup "
                        "would not hear the drum")


def standby_request(request: StandbyRequest | None) -> StandbyOptions | None:
    """The hot standby ``request`` asks for, checked, with its key read (None: no standby)."""
    if request is None:
        return None
    from sequencer.live.standby.auth import load_key

    return standby_options(request.role, request.peer, request.listen,
                           load_key(request.key_file), request.lead_ms, request.heartbeat_ms,
                           request.takeover_ms)


def resume_cue(log_path: str | None, from_cue: str | None) -> tuple[str | None, str | None]:
    """(the rite the log is of, the cue to start at): ``--resume LOG`` starts again at the last
    cue LOG started; without it, at ``from_cue``."""
    if log_path is None:
        return None, from_cue
    rite_id, cue = resume_point(log_path)
    if from_cue and from_cue != cue:
        raise UserError("give --resume or --from, not both")
    return rite_id, cue


@dataclass(frozen=True)
class LiveOutcome:
    """How a show ended: the exit code, the report (standard output) and the problems
    (standard error), in order."""

    code: int
    report: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()


class _Terminated(KeyboardInterrupt):
    """The show's first ending signal (a KeyboardInterrupt: no ``except Exception`` on the way
    swallows it; before the show opens, the command line reports it as an interruption with
    128 + ``signum``)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class EndingSignals:
    """The show's handling of LIVE_SIGNALS, the same under any sequence of them.

    The first ending signal, while the show runs (``armed``), raises ``_Terminated`` in the
    main thread: the player's exit silences the output (both panic stages) and the show ends
    with 128 + that signal's number (SIGINT 130, SIGTERM 143). Every later one — a second
    Ctrl-C, Ctrl-\\ after Ctrl-C, SIGTERMs in a row, a signal once the music has ended — raises
    nothing: it is recorded and said, and the silencing under way finishes (a raise in the
    middle of it would leave the output sounding or a lock half released); the exit code stays
    the first signal's. Only SIGKILL ends a show without its silencing (README: "When the
    process is killed outright"). A SIGHUP ignored by ``nohup`` stays ignored."""

    def __init__(self) -> None:
        self.first: int | None = None
        self.later: list[int] = []
        self.armed = False
        self._old: dict[int, Any] = {}

    def install(self) -> EndingSignals:
        for name in LIVE_SIGNALS:
            number = getattr(signal, name)
            if name == "SIGHUP" and signal.getsignal(number) is signal.SIG_IGN:
                continue
            self._old[number] = signal.signal(number, self._on_signal)
        self.armed = True
        return self

    def _on_signal(self, signum: int, frame: object) -> None:
        if self.first is None:
            self.first = signum
            if self.armed:
                self.armed = False
                raise _Terminated(signum)
        else:
            self.later.append(signum)

    def disarm(self) -> None:
        """From now on a signal is recorded only (the show's music has ended)."""
        self.armed = False

    def restore(self) -> None:
        """Put the old handlers back — unless a signal came: the process is ending with that
        signal's code, and a later one must not end it otherwise (a default SIGTERM: exit
        −15). Python puts the default handlers back as it exits, after ``atexit``, but leaves
        an ignored signal ignored: so from here on the ending signals are ignored."""
        for number, handler in self._old.items():
            signal.signal(number, handler if self.first is None else signal.SIG_IGN)

    def outcome(self, log: ShowLog) -> LiveOutcome:
        """The show ended by the first signal: its exit code, and what each later one did."""
        assert self.first is not None
        problems = [f"{signal.Signals(self.first).name}: silenced and stopped"]
        if self.later:
            names = ", ".join(signal.Signals(n).name for n in self.later)
            problems.append(f"then {names}: the silencing was already under way and finished "
                            "(exit code of the first signal; only SIGKILL skips the silencing)")
        return LiveOutcome(128 + self.first, problems=(*problems, *_log_problem(log)))


def _log_problem(log: ShowLog) -> list[str]:
    """A show log that could not be written (the show went on)."""
    return [] if log.error is None else [f"{log.error}; {log.lost} record(s) not written"]


def run_live(rite: Rite, settings: CompileSettings, options: LiveOptions, *, say: Say,
             out: Say) -> LiveOutcome:
    """Run the show (see the module docstring); ``say`` reports while it runs, ``out`` is the
    plain console's printer."""
    signals = EndingSignals().install()
    player = Player(plan_show(rite, settings, options.only, options.midi_tuning), options.output,
                    auto=options.auto, log_path=options.log_path, clock_out=options.clock_out,
                    go_guard_s=options.go_guard_s, go_cuts=options.go_cuts,
                    muted=options.role == "backup", lead_s=options.lead_s,
                    mark_delay_s=options.mark_delay_ms / 1000, loudness=options.loudness)
    standby = _standby(player, options.standby, say)
    player.log.on_error = player.status.say if options.interactive else say
    if options.resumed is not None:
        _resumed(player, *options.resumed, say if not options.interactive else None)
    link = _start_link(player, options.link)
    _start_hearing(player, options, say)
    try:
        with player:
            try:
                _operate(player, options, say, out)
            finally:  # the player's exit silences: no signal may break into it
                signals.disarm()
    except _Terminated:
        pass
    finally:
        signals.disarm()
        if link is not None:
            link.close()
    try:
        if signals.first is not None:
            return signals.outcome(player.log)
        return _ending(rite, player, standby, options)
    finally:
        signals.restore()


def _resumed(player: Player, log: str, cue: str, say: Say | None) -> None:
    """Say, on the console (and standard error when headless), in the show log's ``show``
    record and in the web pages' message, that this show is resumed, from which log and cue."""
    text = f"RESUMED from {log} at {cue} (the last cue it started)"
    player.resumed = {"log": log, "cue": cue}
    player.status.provide("resumed", lambda: text)
    player.status.say(text)
    if say is not None:
        say(text)


def _operate(player: Player, options: LiveOptions, say: Say, out: Say) -> None:
    """Open the controls and screens asked for, then the console or the headless run."""
    if options.control:
        host, port = start_osc(player, options.control, remote_quit=options.remote_quit)
        if not options.interactive:
            say(f"OSC control on osc://{host}:{port}")
    if options.midi_in:
        go, stop, panic = (parse_trigger(t) for t in options.midi_triggers)
        start_midi_in(player, options.midi_in,
                      {go: protocol.Go(), stop: protocol.Stop(), panic: protocol.Panic()})
    plain = options.screens.plain
    view = _start_screens(player, options.screens, say,
                          quiet=options.interactive and not plain)
    if options.interactive:
        _console(player, view if plain else None, out)
    else:  # --auto, or remote control without a terminal: until the show is done
        player.run(stop=lambda: player.machine.done and not options.auto
                   and player.machine.pos >= len(player.machine.cues))


def _ending(rite: Rite, player: Player, standby: Standby | None,
            options: LiveOptions) -> LiveOutcome:
    """The end-of-show report and exit code: 1 when anything was not delivered or logged."""
    report: list[str] = []
    if standby is not None:
        if standby.refused:
            raise UserError(f"backup refused to arm: {standby.refused}")
        report.append(f"hot standby: {standby.status()['line']}")
    if options.auto:
        report.append(f"played {rite.title}: {len(rite.cues)} cues" +
                      (f"; log {options.log_path}" if options.log_path else ""))
    report += player.delivery.summary_lines()
    problems = _log_problem(player.log)
    code = EXIT_OK if not problems else EXIT_FAILURE
    if not player.delivery.faultless:
        problems.append("the show was not delivered whole (see above; exit 1)")
        code = EXIT_FAILURE
    return LiveOutcome(code, tuple(report), tuple(problems))


def _standby(player: Player, options: StandbyOptions | None, say: Say) -> Standby | None:
    """Attach the hot-standby link asked for (None without --role)."""
    if options is None:
        return None
    standby = Standby(player, options)
    say(f"hot standby: {options.role}, show {standby.show[:12]}, listening on "
        f"{options.listen[0]}:{options.listen[1]}, peer osc.udp://{options.peer[0]}:"
        f"{options.peer[1]}")
    return standby


def _start_link(player: Player, mode: str | None) -> Any:
    """Join the Link session ``--link``/``--link-follow`` ask for (None: neither)."""
    if mode is None:
        return None
    from sequencer.live.link.session import LinkError
    from sequencer.live.link.show import start_link

    try:
        return start_link(player, follow=mode == "follow")
    except (LinkError, ImportError) as exc:
        raise UserError(f"--link: {exc} (pip install aalink)") from None


def _start_hearing(player: Player, options: LiveOptions, say: Say) -> None:
    """Hear the drum (``--hear``) and follow it (``--follow``) — before the player opens."""
    if options.hear is None:
        return
    from sequencer.live.hearing.follow import DrumFollow
    from sequencer.live.hearing.heard import HeardDrum
    from sequencer.live.hearing.hearer import Hearer, HearingError
    from sequencer.live.hearing.source import parse_hear

    spec = parse_hear(options.hear)
    hearer = Hearer(spec, extra_latency_s=options.hear_latency_ms / 1000,
                    refractory_s=_refractory_s(player))
    try:
        hearer.open()
    except HearingError as exc:
        raise UserError(f"--hear {options.hear}: {exc}") from None
    heard = HeardDrum(player, hearer).attach()
    ready = hearer.ready
    assert ready is not None
    say(f"hearing {spec.describe()}" + (f" on {ready.own_name}" if ready.own_name else "")
        + f" ({ready.rate} Hz)")
    if options.follow is not None:
        DrumFollow(player, heard, options.follow, _output_latency_s(options.output)).attach()


def _refractory_s(player: Player) -> float:
    """After a stroke nothing counts for half the closest stroke spacing of the show's 射節
    (between 50 and 150 ms): the stroke's own attack and echoes."""
    from sequencer.check.stroke_stream import DEFAULT_REFRACTORY_S
    from sequencer.live.hearing.heard import jie_shape

    spacings = [shape.spacing_s for info in player.machine.cues if info.kind == "射節"
                if (shape := jie_shape(player, info.id)) is not None]
    if not spacings:
        return DEFAULT_REFRACTORY_S
    return min(0.15, max(DEFAULT_REFRACTORY_S, min(spacings) / 2))


def _output_latency_s(output: str) -> float:
    """How much later than its deadline the output delivers a message (a JACK output: a
    constant few periods; the others send at once)."""
    if parse_spec(output).kind not in ("jack", "jack-virtual"):
        return 0.0
    from instruments.ports.jacklib import LATENCY_PERIODS, jack_period

    frames, rate = jack_period()
    return LATENCY_PERIODS * frames / rate


def _start_screens(player: Player, screens: ScreenOptions, say: Say, *,
                   quiet: bool) -> PlayerView | None:
    """Start the screens asked for (None: none); say where the web pages are unless ``quiet``."""
    if not screens.wanted:
        return None
    view, url = start_screens(player, screens)
    if url:
        player.status.provide("web", lambda: url)  # on the console's first lines
        if not quiet:
            say(f"web pages on {url} (operator: {url}operator)")
    return view


def _console(player: Player, plain_view: PlayerView | None, out: Say) -> None:
    """The operator's console: curses; with --plain, a line per change (through ``out``)."""
    if plain_view is None:
        from sequencer.live.screens.console import run_console

        run_console(player)
    else:
        from sequencer.live.screens.plain import run_plain_console

        run_plain_console(player, plain_view, out)
