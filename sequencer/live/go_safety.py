"""GO safety, as the best show controllers have it (QLab's double-GO protection, Linux Show
Player's confirmations): pure decisions on the show clock, no I/O.

- **guard**: a press within ``guard_s`` (default 1 s) of the last GO that counted — accepted, or
  one that asked for a confirmation — is a bounce and does nothing.
- **follow first**: while a ``follow`` (or ``after:ID``) cue is scheduled and not yet started,
  GO starts nothing new: the cue that follows runs before the next GO.
- **confirm a cut**: a GO while music still sounds (a cue running, not already ending) asks for
  a second press within ``confirm_s`` (after the guard) and only then cuts that music and goes
  on; ``cuts=True`` (``--go-cuts``) cuts at the first press.
- **confirm a quit**: ``q`` while music sounds asks for a second ``q`` within ``confirm_s``.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_GO_GUARD_S = 1.0  # the least time between two GOs (--go-guard)
CONFIRM_S = 5.0  # a second press confirms within this long (after the guard)


@dataclass(frozen=True)
class GoDecision:
    """What a GO press does: ``go`` (start the standby, after cutting ``cut``), or nothing,
    with ``reason`` saying why (or what to press to confirm)."""

    go: bool
    cut: tuple[str, ...] = ()
    reason: str = ""


class GoSafety:
    """The guard and the confirmations of one show (see the module docstring)."""

    def __init__(self, guard_s: float = DEFAULT_GO_GUARD_S, *, cuts: bool = False,
                 confirm_s: float = CONFIRM_S) -> None:
        if guard_s < 0:
            raise ValueError("the GO guard must be >= 0 s")
        self.guard_s = guard_s
        self.cuts = cuts
        self.confirm_s = confirm_s
        self.last_go: float | None = None  # the last press that counted
        self._armed: tuple[str, float] | None = None  # (what a second press confirms, when)

    def _confirmed(self, what: str, now: float) -> bool:
        """A second press of ``what`` in the window; else this press arms it."""
        armed, self._armed = self._armed, None
        if armed is not None and armed[0] == what and now - armed[1] <= self.confirm_s:
            return True
        self._armed = (what, now)
        return False

    def go(self, now: float, target: str, sounding: list[str],
           pending_follow: list[str]) -> GoDecision:
        """Decide a GO press that would start ``target`` while ``sounding`` cues play and
        ``pending_follow`` cues wait for their turn."""
        if self.last_go is not None and now - self.last_go < self.guard_s:
            return GoDecision(False, reason=f"GO ignored: within {self.guard_s:g} s of the last")
        self.last_go = now
        if pending_follow:
            self._armed = None
            return GoDecision(False, reason=f"GO ignored: {', '.join(pending_follow)} follows "
                              "first")
        if sounding and not self.cuts and not self._confirmed(f"go {target}", now):
            return GoDecision(False, reason=f"GO again to cut {', '.join(sounding)} and start "
                              f"{target} (within {self.confirm_s:g} s)")
        self._armed = None
        return GoDecision(True, tuple(sounding))

    def quit(self, now: float, sounding: list[str]) -> str:
        """"" when a quit may go ahead; else what to press to confirm it."""
        if not sounding or self._confirmed("quit", now):
            return ""
        return (f"q again to quit: {', '.join(sounding)} still sounds "
                f"(within {self.confirm_s:g} s)")
