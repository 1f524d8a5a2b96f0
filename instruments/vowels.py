"""What the 歌 sings for a syllable: vowel targets (formants), the final's glides and coda, and
the consonant of the initial.  Numbers only (no synthesis); ``instruments.sung`` voices them.

Formants (Hz) are adult male means.  Sources:

* Peterson & Barney (1952), "Control methods used in a study of the vowels", JASA 24, 175–184,
  table II, men: /i/ 270 2290 3010, /ɪ/ 390 1990 2550, /ɛ/ 530 1840 2480, /æ/ 660 1720 2410,
  /ɑ/ 730 1090 2440, /ɔ/ 570 840 2410, /ʊ/ 440 1020 2240, /u/ 300 870 2240, /ʌ/ 640 1190 2390,
  /ɝ/ 490 1350 1690.
* The Mandarin vowels Peterson & Barney lack are PROJECT APPROXIMATIONS, marked below: /y/ (ü)
  as /i/ with F2 and F3 lowered by lip rounding; the apical vowels of zi/ci/si [ɿ] and
  zhi/chi/shi/ri [ʅ]; the nasal murmurs of the codas -n and -ng (F1 near 250 Hz, weak above).
* F4 3300 Hz and F5 3850 Hz, and the bandwidths (F1 80, F2 90, F3 120, F4 250, F5 300 Hz) follow
  the usual male settings of cascade formant synthesizers (Klatt 1980, JASA 67, 971–995).

A final is (medial glide, nucleus, coda) in these targets, after the usual phonology of
standard Mandarin (e.g. Duanmu, *The Phonology of Standard Chinese*, 2007): ``ian`` is i-ɛ-n,
``iou`` i-ɔ-ʊ, ``ao`` ɑ-ʊ.  Consonant onsets are a noise burst whose centre and length follow
the initial's place and manner (stops ~12 ms, aspirated stops and affricates ~70–100 ms,
fricatives ~110 ms; alveolar sibilants near 6 kHz, retroflex near 2.8 kHz, palatal near
3.5–4 kHz) — round textbook values, a model rather than a measurement.
"""

from __future__ import annotations

from dataclasses import dataclass

UPPER_FORMANTS = ((3300.0, 250.0), (3850.0, 300.0))
BANDWIDTHS = (80.0, 90.0, 120.0)

VOWELS: dict[str, tuple[float, float, float]] = {
    # Peterson & Barney (1952), men
    "i": (270.0, 2290.0, 3010.0),
    "ɪ": (390.0, 1990.0, 2550.0),
    "ɛ": (530.0, 1840.0, 2480.0),
    "æ": (660.0, 1720.0, 2410.0),
    "ɑ": (730.0, 1090.0, 2440.0),
    "ɔ": (570.0, 840.0, 2410.0),
    "ʊ": (440.0, 1020.0, 2240.0),
    "u": (300.0, 870.0, 2240.0),
    "ʌ": (640.0, 1190.0, 2390.0),
    "ɝ": (490.0, 1350.0, 1690.0),
    # PROJECT APPROXIMATIONS (see the module docstring)
    "y": (280.0, 1850.0, 2250.0),
    "ɿ": (380.0, 1400.0, 2600.0),
    "ʅ": (400.0, 1600.0, 2100.0),
    "n": (250.0, 1450.0, 2400.0),
    "ŋ": (250.0, 1000.0, 2300.0),
    "m": (250.0, 1100.0, 2200.0),
    "l": (360.0, 1300.0, 2700.0),
}
MURMURS = frozenset({"n", "ŋ", "m", "l"})  # sung softer than a vowel (MURMUR_GAIN)
MURMUR_GAIN = 0.45

FINALS: dict[str, tuple[str | None, str, str | None]] = {
    "a": (None, "ɑ", None), "ai": (None, "æ", "ɪ"), "an": (None, "æ", "n"),
    "ang": (None, "ɑ", "ŋ"), "ao": (None, "ɑ", "ʊ"), "e": (None, "ʌ", None),
    "ei": (None, "ɛ", "ɪ"), "en": (None, "ʌ", "n"), "eng": (None, "ʌ", "ŋ"),
    "er": (None, "ɝ", None), "i": (None, "i", None), "ia": ("i", "ɑ", None),
    "ian": ("i", "ɛ", "n"), "iang": ("i", "ɑ", "ŋ"), "iao": ("i", "ɑ", "ʊ"),
    "ie": ("i", "ɛ", None), "in": (None, "i", "n"), "ing": (None, "i", "ŋ"),
    "iong": ("i", "ʊ", "ŋ"), "iou": ("i", "ɔ", "ʊ"), "o": ("u", "ɔ", None),
    "ong": (None, "ʊ", "ŋ"), "ou": (None, "ʌ", "ʊ"), "u": (None, "u", None),
    "ua": ("u", "ɑ", None), "uai": ("u", "æ", "ɪ"), "uan": ("u", "æ", "n"),
    "uang": ("u", "ɑ", "ŋ"), "uei": ("u", "ɛ", "ɪ"), "uen": ("u", "ʌ", "n"),
    "ueng": ("u", "ʌ", "ŋ"), "uo": ("u", "ɔ", None), "v": (None, "y", None),
    "van": ("y", "ɛ", "n"), "ve": ("y", "ɛ", None), "vn": (None, "y", "n"),
}
APICAL = {"z": "ɿ", "c": "ɿ", "s": "ɿ", "zh": "ʅ", "ch": "ʅ", "sh": "ʅ", "r": "ʅ"}


@dataclass(frozen=True)
class Consonant:
    """The onset of a syllable: a noise burst (``noise_s`` long, centred on ``centre_hz``,
    ``level`` relative to the vowel) and/or a voiced murmur (a ``VOWELS`` target) before the
    vowel, which starts at ``voice_s``."""

    noise_s: float
    centre_hz: float
    bandwidth_hz: float
    level: float
    voice_s: float
    murmur: str | None = None


_STOP = (0.012, 0.4, 0.02)  # burst length, level, voice onset
_ASPIRATED = (0.075, 0.3, 0.08)
CONSONANTS: dict[str, Consonant] = {
    "": Consonant(0.0, 1000.0, 500.0, 0.0, 0.0),
    "b": Consonant(_STOP[0], 700.0, 900.0, _STOP[1], _STOP[2]),
    "p": Consonant(_ASPIRATED[0], 900.0, 1800.0, _ASPIRATED[1], _ASPIRATED[2]),
    "m": Consonant(0.0, 1000.0, 500.0, 0.0, 0.0, murmur="m"),
    "f": Consonant(0.09, 4500.0, 6000.0, 0.12, 0.09),
    "d": Consonant(_STOP[0], 4000.0, 2500.0, _STOP[1], _STOP[2]),
    "t": Consonant(_ASPIRATED[0], 4000.0, 3000.0, _ASPIRATED[1], _ASPIRATED[2]),
    "n": Consonant(0.0, 1000.0, 500.0, 0.0, 0.0, murmur="n"),
    "l": Consonant(0.0, 1000.0, 500.0, 0.0, 0.0, murmur="l"),
    "g": Consonant(0.015, 1800.0, 1200.0, _STOP[1], 0.025),
    "k": Consonant(0.08, 1800.0, 2000.0, _ASPIRATED[1], 0.085),
    "h": Consonant(0.08, 1500.0, 2500.0, 0.22, 0.08),
    "j": Consonant(0.05, 3500.0, 2500.0, 0.3, 0.05),
    "q": Consonant(0.1, 3500.0, 2500.0, 0.3, 0.1),
    "x": Consonant(0.11, 4200.0, 3000.0, 0.3, 0.11),
    "zh": Consonant(0.05, 2800.0, 1800.0, 0.3, 0.05),
    "ch": Consonant(0.1, 2800.0, 1800.0, 0.3, 0.1),
    "sh": Consonant(0.11, 2800.0, 2000.0, 0.3, 0.11),
    "r": Consonant(0.05, 2600.0, 1500.0, 0.08, 0.0, murmur="ʅ"),
    "z": Consonant(0.05, 6000.0, 3000.0, 0.3, 0.05),
    "c": Consonant(0.1, 6000.0, 3000.0, 0.3, 0.1),
    "s": Consonant(0.12, 6500.0, 3500.0, 0.35, 0.12),
}


def syllable_targets(initial: str, final: str) -> tuple[str | None, str, str | None]:
    """(medial glide, nucleus, coda) of a syllable; the bare final ``i`` after a sibilant is
    the apical vowel, an unknown final is sung on /ɑ/."""
    if final == "i" and initial in APICAL:
        return (None, APICAL[initial], None)
    return FINALS.get(final, (None, "ɑ", None))


def formants(target: str, scale: float = 1.0) -> tuple[tuple[float, float], ...]:
    """The five (Hz, bandwidth) formants of a target, F1–F3 scaled by ``scale`` (a shorter or
    longer vocal tract)."""
    low = tuple((f * scale, bw) for f, bw in zip(VOWELS[target], BANDWIDTHS, strict=True))
    return low + UPPER_FORMANTS
