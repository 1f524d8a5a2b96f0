"""Where a sound is heard from: the courtyard's coordinates and the pan law.

Coordinates are the cue sheets' (metres; x grows to the east, y to the north; the hall is north,
facing south).  The listener stands in the courtyard, by default at (0, −15), facing north, so
east is on the listener's right.

Placement law (``pan_gains``):

* azimuth θ = atan2(x − lx, y − ly), 0 straight ahead (north), +90° due east (right); the pan
  position is p = sin θ (a source behind the listener folds onto the same side);
* constant-power pan: left = cos((p + 1)·π/4), right = sin((p + 1)·π/4), so left² + right² = 1;
* distance attenuation 1/d relative to ``REFERENCE_DISTANCE_M`` (5 m): gain = 5 / max(d, 5),
  i.e. clamped to 1 inside 5 m (no boost for close sources).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from instruments.voices.models import NoteKey

import math

DEFAULT_LISTENER: tuple[float, float] = (0.0, -15.0)
REFERENCE_DISTANCE_M = 5.0


def pan_gains(
    x: float, y: float, listener: tuple[float, float] = DEFAULT_LISTENER
) -> tuple[float, float]:
    """(left, right) gains for a source at (x, y) heard from ``listener`` facing north.

    Constant-power pan on p = sin(azimuth), times 1/d distance attenuation relative to 5 m
    (clamped to 1 inside 5 m).  See the module docstring for the exact law.
    """
    p, att = pan_position(x, y, listener)
    angle = (p + 1.0) * math.pi / 4.0
    return math.cos(angle) * att, math.sin(angle) * att


def pan_position(
    x: float, y: float, listener: tuple[float, float] = DEFAULT_LISTENER
) -> tuple[float, float]:
    """(p, attenuation) of a source at (x, y): the pan position p = sin(azimuth) from −1 (west,
    left) to +1 (east, right) and the 1/d distance gain (clamped to 1 inside 5 m)."""
    dx = float(x) - float(listener[0])
    dy = float(y) - float(listener[1])
    d = math.hypot(dx, dy)
    p = dx / d if d > 0 else 0.0  # sin(atan2(dx, dy))
    return p, REFERENCE_DISTANCE_M / max(d, REFERENCE_DISTANCE_M)


class PlacedNote(Protocol):
    """What mixing and the loudness estimate read of a placed note (``instruments.mix.mixer``'s
    plan): its first sample, its sound, its gain, where it sounds and in which stem, its end."""

    @property
    def start(self) -> int: ...

    @property
    def key(self) -> NoteKey: ...

    @property
    def gain(self) -> float: ...

    @property
    def place(self) -> tuple[float, float]: ...

    @property
    def stem(self) -> str: ...

    @property
    def end(self) -> int: ...
