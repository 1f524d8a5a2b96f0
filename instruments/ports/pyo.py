"""The ``pyo`` output: the built-in voices played live through pyo's audio server.

It is an ``OutputPort`` like the MIDI outputs, so the live sender drives it with the very
messages it sends to a synth, and it behaves as a General MIDI synth laid out as yuezheng's
files are: each instrument on its catalog channel (the drums on channel 10 by their GM keys),
pitch from the key's MIDI Tuning Standard pitch (single-note tuning changes, in the tuning
program RPN 4 and 3 select; every channel plays program 0 of bank 0 until told otherwise, as
RP-020 has it) plus the channel's pitch bend (range from RPN 0), loudness from the velocity.
A tuning change reaches the notes struck after it; a note's pitch is fixed at its note-on.

The sound is the offline renderer's: before the audio server starts, every note the show will
play is rendered once by ``instruments.voices.notes`` into a table (the same tables ``yuezheng
render`` mixes); a note-on starts the table of its instrument, pitch and velocity, at the level a
dry render of the show has it: the offline pan law (1/d from 5 m), each voice at its catalog level
(``instruments.mix.levels.voice_gain``) and the show's ``gain`` — the loudness gain its render
gets (``instruments.mix.mixer.loudness_gain``: the same notes in the dry room at the render's
default −23 LUFS), so that the show is heard as loud as its file. A note with no table of its
own (MIDI the show did not announce) plays the nearest table of its instrument transposed, as a
sampler would. Struck and plucked voices ring out as the offline ones do (a note-off does not damp a
bell); sustained voices (笙 和 管 歌) are rendered as long as the show's longest such note and end
with their release time when the note-off comes. At the end of a show what still rings dies
away (up to 1.2 s, then a 150 ms fade); a panic's CC 120/123 stops every voice in 20 ms. The
offline look-ahead limiter becomes a compressor (−2 dB threshold, 30:1, 5 ms look-ahead) and a
clip at 0.98.

A JACK server that dies under the output (pyo's server then stops: it is no longer booted) is
the output lost: ``maintain()`` reports it once, the voices that sounded are gone with it, and
the MIDI that comes meanwhile is tracked (tunings, bends) but starts nothing; when a JACK server
answers again (and the ``pyo:jack:CLIENT`` target is back on it) pyo's server is booted on it
again, the master chain rebuilt on the same tables and the ports connected as at the start: the
output regained, the show goes on from where it is. The show's summary and log say so either
way (``OUTPUT LOST … regained``, or ``never regained``; exit 1).

Specs: ``pyo`` (JACK when a JACK server runs, else PortAudio's default device),
``pyo:jack`` or ``pyo:portaudio`` (that backend), ``pyo:jack:CLIENT`` (JACK, connected to the
first two audio inputs of CLIENT instead of the system playback ports: a recorder or a mixer).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from cues.catalog import CATALOG, GM_PERCUSSION_CHANNEL
from instruments.midi import (
    KeyPitches,
    channel_of,
    is_all_off,
    is_note_off,
    is_note_on,
)
from instruments.mix.levels import voice_gain
from instruments.mix.placement import pan_gains
from instruments.ports.base import (
    DEFAULT_CLIENT_NAME,
    DEFAULT_PORT_NAME,
    OutputPort,
    PortError,
    PortSpec,
)
from instruments.ports.jacklib import JackWatch, jack_running
from instruments.ports.pyotables import (
    LiveNote,
    Table,
    channel_map,
    fill_table,
    nearest_table,
    render_tables,
)
from instruments.voices import notes as voices
from instruments.voices.models import RELEASE_S

BACKENDS = ("jack", "portaudio")
PANIC_FADE_S = 0.02
RING_OUT_S = 1.2  # at the end of a show, what still rings may (ShowSender.close waits 3 s)
RING_OUT_FADE_S = 0.15


def parse_pyo_spec(name: str) -> tuple[str | None, str | None]:
    """(backend or None for automatic, JACK client to connect to or None) from what follows
    ``pyo:``."""
    if not name:
        return None, None
    backend, _, target = name.partition(":")
    if backend not in BACKENDS:
        raise PortError(f"bad output spec 'pyo:{name}': the audio backend must be one of "
                        f"{', '.join(BACKENDS)} (e.g. pyo:jack or pyo:jack:CLIENT)")
    if target and backend != "jack":
        raise PortError(f"bad output spec 'pyo:{name}': only a JACK output names a client "
                        "to connect to")
    return backend, target or None


def check_spec(spec: PortSpec) -> None:
    """The factory's check of a ``pyo`` spec's name (raises PortError)."""
    parse_pyo_spec(spec.name)


@contextmanager
def _quiet_stdout() -> Iterator[None]:
    """File descriptor 1 points nowhere within the block (what C code prints is dropped)."""
    sys.stdout.flush()
    saved, null = os.dup(1), os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    try:
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(null)


class PyoOutput(OutputPort):
    """See the module docstring. ``notes``, ``places`` and ``gain`` come from the compiled rite;
    ``port_name``, which every output takes, is unused (pyo names its JACK ports itself)."""

    callback_needs_gil = True  # pyo's audio callback runs in this process

    def __init__(self, spec: PortSpec, *, client_name: str = DEFAULT_CLIENT_NAME,
                 port_name: str = DEFAULT_PORT_NAME,
                 notes: Iterable[LiveNote] = (),
                 places: Mapping[str, tuple[float, float]] | None = None,
                 bell_interval: str = "minor", gain: float = 1.0) -> None:
        super().__init__(str(spec))
        self.spec = spec
        self.backend, self.target = parse_pyo_spec(spec.name)
        self.client_name = client_name
        self.notes = tuple(notes)
        self.places = dict(places or {})
        self.bell_interval = bell_interval
        self.gain = gain
        self.sample_rate = 48000
        self.own_name: str | None = None
        self.destination: str | None = None
        self._melodic, self._drums = channel_map()
        self._pyo: Any = None
        self._server: Any = None
        self._chain: list[Any] = []
        self._tables: dict[str, list[Table]] = {}
        self._voices: dict[int, tuple[float, tuple[int, int], Any, Any, Any]] = {}
        self._by_note: dict[tuple[int, int], list[int]] = {}
        self._next_voice = 0
        self._backend_used: str | None = None  # the backend opened (``backend`` None: chosen)
        self._lost = False  # the JACK server went away under pyo's server
        self._pitches = KeyPitches()  # each key's pitch: MTS tuning, bend, bend range

    # opening -----------------------------------------------------------------------------------
    def _open(self) -> None:
        backend = self.backend
        if backend is None:
            backend = "jack" if jack_running() else "portaudio"
        self._backend_used = backend
        watch = None
        if backend == "jack":  # one JACK client looks and connects for the whole opening
            try:
                watch = JackWatch(f"{self.client_name}-look").open()
            except (OSError, PortError) as exc:
                raise PortError(f"output {self.spec}: the JACK server is not running") from exc
        try:
            self._open_server(backend, watch)
        finally:
            if watch is not None:
                watch.close()

    def _open_server(self, backend: str, watch: Any) -> None:
        if watch is not None:
            self.sample_rate = watch.period()[1]
        os.environ.setdefault("PYO_GUI_WX", "0")
        import pyo  # only when the output opens

        self._pyo = pyo
        if backend == "portaudio" and pyo.pa_get_default_output() < 0:
            raise PortError(f"output {self.spec}: PortAudio finds no audio output device on "
                            "this machine; start a JACK server and use pyo:jack")
        inputs = self._jack_audio_inputs(watch, self.target) if self.target else []
        arrays = render_tables(self.notes, self.sample_rate, self.bell_interval)
        server = pyo.Server(sr=self.sample_rate, nchnls=2, duplex=0, audio=backend,
                            jackname=self.client_name, buffersize=256)
        server.setVerbosity(1)
        server.deactivateMidi()
        if inputs:
            server.setJackAuto(False, False)
            self.destination = ", ".join(inputs)
        before = set(watch.audio_ports(inputs=False)) if watch is not None else set()
        server.boot()
        if not server.getIsBooted():
            raise PortError(f"output {self.spec}: pyo could not start its {backend} audio "
                            "server (no audio device?)")
        server.start()
        try:
            self._server = server
            self.own_name = f"{self.client_name} ({backend})"
            if watch is not None:
                # pyo's JACK client is renamed (…-01) when the name is taken: find its ports
                # by what appeared
                mine = sorted(set(watch.audio_ports(inputs=False)) - before)
                if mine:
                    self.own_name = ", ".join(mine)
                if inputs:
                    self._connect_jack(watch, mine, inputs)
            self._start(pyo, arrays)
            self._lost = False
        except BaseException:
            self._server = None
            server.stop()
            server.shutdown()
            raise

    def _start(self, pyo: Any, arrays: dict[str, list[Table]]) -> None:
        """Load the tables and build the master chain on the running server."""
        for name, entries in arrays.items():
            for hz, velocity, arr, _length in entries:
                table = pyo.DataTable(size=max(1, arr.size))
                fill_table(table, arr)
                self._tables.setdefault(name, []).append((hz, velocity, table, arr.size))
        self._build_chain(pyo)
        # everything a note-on needs, ready before the show (the first note must not wait)
        self._gain = {name: self._gains(name) for name in self._tables}
        self._release = {name: RELEASE_S.get(name, PANIC_FADE_S) for name in self._tables}
        self._sustain = {name: voices.is_sustained(name) for name in self._tables}
        self._warm_up()

    def _build_chain(self, pyo: Any) -> None:
        """The master chain (mixer, compressor, clip) on the running server."""
        # (a Mixer with time=0 puts NaNs out; inputs must be playing objects)
        mixer = pyo.Mixer(outs=1, chnls=2, time=0.002)
        comp = pyo.Compress(mixer[0], thresh=-2, ratio=30, risetime=0.001, falltime=0.25,
                            lookahead=5, knee=0)
        out = pyo.Clip(comp, -0.98, 0.98).out()
        self._chain = [mixer, comp, out]

    def _jack_audio_inputs(self, watch: Any, client: str) -> list[str]:
        names = watch.audio_ports(inputs=True)
        mine = [n for n in names if n.split(":", 1)[0] == client]
        if not mine:
            listing = ", ".join(sorted({n.split(':', 1)[0] for n in names})) or "none"
            raise PortError(f"output {self.spec}: no JACK client {client!r} with audio inputs; "
                            f"clients with audio inputs: {listing}")
        return mine[:2] if len(mine) >= 2 else mine * 2

    def _connect_jack(self, watch: Any, mine: list[str], inputs: list[str]) -> None:
        if len(mine) < 2:
            raise PortError(f"output {self.spec}: pyo's JACK outputs did not appear")
        for src, dst in zip(mine[:2], inputs, strict=True):
            if not watch.connect(src, dst):
                raise PortError(f"output {self.spec}: JACK refused to connect {src} to {dst}")

    # MIDI in -----------------------------------------------------------------------------------
    def _send(self, data: bytes) -> None:
        if self._server is None:
            return
        self._pitches.track(data)
        if self._lost or not self._server.getIsBooted():
            return  # JACK went away: nothing can sound until it is rejoined (maintain)
        self._prune()
        ch = channel_of(data)
        if is_note_on(data):
            self._note_on(ch, data[1], data[2])
        elif is_note_off(data):
            self._note_off(ch, data[1])
        elif is_all_off(data):
            for vid in [v for v, voice in self._voices.items() if voice[1][0] == ch]:
                self._stop_voice(vid, PANIC_FADE_S)

    def _warm_up(self) -> None:
        """Start and drop one silent voice: pyo's first objects of a kind cost more."""
        pyo = self._pyo
        name, entries = next(iter(self._tables.items()))
        table = entries[0][2]
        fader = pyo.Fader(fadein=2.0 / self.sample_rate, fadeout=0.01, dur=0).play()
        read = pyo.TableRead(table, freq=table.getRate(), loop=0, mul=fader * 0.0).play()
        sig = (read * [0.0, 0.0]).play()
        self._chain[0].addInput(-1, sig)
        self._chain[0].setAmp(-1, 0, 0.0)
        time.sleep(0.02)
        self._chain[0].delInput(-1)
        for obj in (sig, read, fader):
            obj.stop()

    def _instrument(self, ch: int, key: int) -> str | None:
        if ch == GM_PERCUSSION_CHANNEL:
            return self._drums.get(key)
        return self._melodic.get(ch)

    def _note_on(self, ch: int, key: int, velocity: int) -> None:
        name = self._instrument(ch, key)
        if name is None or name not in self._tables:
            return
        pitched = CATALOG[name].pitched
        hz = 440.0 * 2 ** ((self._pitches.key(ch, key) - 69) / 12) if pitched else None
        hz_t, _vel, table, size = nearest_table(self._tables[name], hz, velocity)
        ratio = hz / hz_t if hz is not None and hz_t is not None else 1.0
        gain = (velocity / _vel) ** 1.5 if _vel != velocity else 1.0
        left, right = self._gain[name]
        pyo = self._pyo
        # (a Fader with fadein=0 puts a NaN out at its first sample: two samples of fade-in)
        fader = pyo.Fader(fadein=2.0 / self.sample_rate, fadeout=self._release[name],
                          dur=0).play()
        read = pyo.TableRead(table, freq=table.getRate() * ratio, loop=0, mul=fader).play()
        sig = (read * [left * gain, right * gain]).play()
        vid = self._next_voice
        self._next_voice += 1
        self._chain[0].addInput(vid, sig)
        self._chain[0].setAmp(vid, 0, 1.0)
        end = time.perf_counter() + size / self.sample_rate / ratio + 0.1
        self._voices[vid] = (end, (ch, key), fader, read, sig)
        self._by_note.setdefault((ch, key), []).append(vid)

    def _note_off(self, ch: int, key: int) -> None:
        vids = self._by_note.get((ch, key))
        if not vids:
            return
        vid = vids.pop(0)
        voice = self._voices.get(vid)
        if voice is None:
            return
        name = self._instrument(ch, key)
        if name is not None and self._sustain.get(name, False):
            voice[2].stop()  # the Fader's release
            end = time.perf_counter() + self._release[name] + 0.05
            self._voices[vid] = (min(voice[0], end), *voice[1:])

    def _stop_voice(self, vid: int, fade: float) -> None:
        voice = self._voices.get(vid)
        if voice is None:
            return
        voice[2].setFadeout(fade)
        voice[2].stop()
        self._voices[vid] = (min(voice[0], time.perf_counter() + fade + 0.05), *voice[1:])

    def _prune(self) -> None:
        now = time.perf_counter()
        for vid in [v for v, voice in self._voices.items() if voice[0] <= now]:
            _, note, *_ = self._voices.pop(vid)
            self._chain[0].delInput(vid)
            left = self._by_note.get(note)
            if left and vid in left:
                left.remove(vid)

    def _gains(self, name: str) -> tuple[float, float]:
        x, y = self.places.get(name, (0.0, -10.0))
        left, right = pan_gains(x, y)
        level = self.gain * voice_gain(name, self.sample_rate)
        return left * level, right * level

    # closing ------------------------------------------------------------------------------------
    # release_notes() (panic stage one, a hold, the end of a show) sends note-offs as for any
    # synth: sustained voices release, struck ones ring on; stage two's CC 120/123 stops them.

    def _close(self) -> None:
        """Let what still rings die away (at most ``RING_OUT_S``, then a short fade), then stop
        the server. After a panic nothing rings, so an abnormal end is silent at once."""
        server, self._server = self._server, None
        if server is None:
            return
        deadline = time.perf_counter() + RING_OUT_S
        while time.perf_counter() < deadline:
            self._prune()
            if not self._voices:
                break
            time.sleep(0.02)
        for vid in list(self._voices):
            self._stop_voice(vid, RING_OUT_FADE_S)
        if self._voices:
            time.sleep(RING_OUT_FADE_S + 0.03)
        self._voices.clear()
        self._chain.clear()
        if server.getIsBooted():
            server.stop()
            server.shutdown()
            return
        with _quiet_stdout():  # JACK went away: pyo complains the server is not booted
            server.stop()
            server.shutdown()

    def maintain(self) -> str | None:
        """Prune the voices that ended; notice a JACK server gone under pyo's server
        (``"lost"``, once) and boot it again on a new one (``"reconnected"``)."""
        with self._lock:
            server = self._server
            if self.closed or server is None:
                return None
            if self._lost:
                return "reconnected" if self._rejoin() else None
            if server.getIsBooted():
                self._prune()
                return None
            self._lost = True
            self._voices.clear()  # they went with the server
            self._by_note.clear()
            return "lost"

    def _rejoin(self) -> bool:
        """Boot pyo's server again on the JACK server that answers now (the same tables, a
        new master chain, the ports connected as at the start); False while none does."""
        if self._backend_used != "jack":
            return False  # PortAudio: pyo's server is not stopped by a JACK server's death
        try:
            watch = JackWatch(f"{self.client_name}-look").open()
        except (OSError, PortError):
            return False  # no server yet
        server = self._server
        try:
            inputs = self._jack_audio_inputs(watch, self.target) if self.target else []
            with _quiet_stdout():  # pyo says "The Server must be booted!" on stdout
                server.shutdown()
            before = set(watch.audio_ports(inputs=False))
            server.boot()
            if not server.getIsBooted():
                return False
            server.start()
            mine = sorted(set(watch.audio_ports(inputs=False)) - before)
            if mine:
                self.own_name = ", ".join(mine)
            if inputs:
                self._connect_jack(watch, mine, inputs)
            self._build_chain(self._pyo)
        except PortError:
            return False  # the target is not back yet (or refused): try again later
        finally:
            watch.close()
        self._lost = False
        return True


OUTPUT = PyoOutput
