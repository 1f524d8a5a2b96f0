"""How loud each voice plays: every voice calibrated by loudness to the catalog's balance.

Voice calibration (``voice_gain``): every voice's reference note — velocity 100, at
``REFERENCE_HZ`` for pitched voices, 1 s for sustained ones — is rendered once and measured
(BS.1770 integrated loudness, estimated as the renders' is: ``instruments.mix.loudness_estimate``);
the voice's gain brings it to ``CATALOG_LEVEL_LUFS`` + its ``ENSEMBLE_BALANCE_LU``
(cues.catalog).  So the balance is the
catalog's table whatever a voice's synthesis level happens to be.
"""

from __future__ import annotations

from cues.catalog import CATALOG, CATALOG_LEVEL_LUFS, ENSEMBLE_BALANCE_LU
from instruments.mix.loudness_estimate import wave_loudness
from instruments.voices import notes as voices
from instruments.voices.models import REFERENCE_HZ

_GAINS: dict[tuple[str, int], float] = {}


def reference_loudness(instrument: str, sample_rate: int) -> float:
    """The integrated loudness (LUFS) of the voice's reference note, as synthesized."""
    hz = REFERENCE_HZ if CATALOG[instrument].pitched else None
    wave = voices.render_note(instrument, hz, 1.0, 100, sample_rate)
    return wave_loudness(wave, sample_rate)


def voice_gain(instrument: str, sample_rate: int) -> float:
    """The gain that puts ``instrument``'s reference note at its catalog level."""
    found = _GAINS.get((instrument, sample_rate))
    if found is None:
        target = CATALOG_LEVEL_LUFS + ENSEMBLE_BALANCE_LU[instrument]
        found = 10.0 ** ((target - reference_loudness(instrument, sample_rate)) / 20.0)
        _GAINS[(instrument, sample_rate)] = found
    return found
