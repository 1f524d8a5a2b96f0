"""What the 歌 sings for a syllable: vowel targets (formants), the final's glides and coda, and
the consonant of the initial.  Numbers only (no synthesis); ``instruments.voices.sung`` voices them.

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
``iou`` i-ɔ-ʊ, ``ao`` ɑ-ʊ.  A consonant is sung as its parts (``Consonant``): a stop's closure
(the voice stops), its burst (by place) and aspiration, a fricative's noise, a nasal's murmur
(with its anti-resonance: ``NASAL_ZEROS``), and the formants' transition from the consonant's
locus into the vowel — round textbook values, a model rather than a measurement.
"""

from __future__ import annotations

from dataclasses import dataclass

UPPER_FORMANTS = ((3300.0, 250.0), (3850.0, 300.0))
BANDWIDTHS = (80.0, 90.0, 120.0)
NASAL_BANDWIDTHS = (100.0, 350.0, 450.0)
"""A nasal murmur's F1–F3 bandwidths: the nasal tract's walls absorb, its formants above the
first are broad and weak (Fujimura 1962; PROJECT APPROXIMATION of the figures)."""

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
    # the loci a consonant's release starts the vowel's formants from (Delattre, Liberman and
    # Cooper, "Acoustic loci and transitional cues for consonants", JASA 27, 1955: the F2 locus
    # of labials near 720 Hz, of alveolars near 1800 Hz; velars: F2 and F3 close together, the
    # "velar pinch" (Stevens, *Acoustic Phonetics*, 1998)); F1 starts low after any closure
    "B": (250.0, 800.0, 2200.0),
    "D": (250.0, 1800.0, 2700.0),
    "G": (250.0, 2000.0, 2300.0),
    "J": (250.0, 2200.0, 2900.0),
    "R": (300.0, 1500.0, 1850.0),
}
MURMURS = frozenset({"n", "ŋ", "m", "l"})  # sung softer than a vowel (MURMUR_GAIN)
MURMUR_GAIN = 0.4
NASAL_ZEROS: dict[str, tuple[float, float]] = {"n": (1700.0, 250.0), "ŋ": (3000.0, 350.0),
                                               "m": (1000.0, 200.0)}
"""The anti-resonance of each nasal murmur (Hz, bandwidth): the mouth closed behind the nasal
tract's side branch (Fujimura, "Analysis of nasal consonants", JASA 34, 1962: the zero near 1
kHz for [m], 1.5–2 kHz for [n], above 3 kHz for [ŋ]); the murmur's energy is then all low."""

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
    """The onset of a syllable, in the order it is sung (times from the note's onset, s):

    * ``closure_s`` of silence (a stop's or affricate's closure: the voice stops);
    * a ``burst`` (centre Hz, bandwidth Hz, level relative to the vowel's RMS, length s) at the
      closure's end: the release's transient (stops) or the frication (fricatives, affricates);
    * ``aspiration_s`` of breath shaped by the vowel's own formants (aspirated stops and
      affricates; the whole of ``h``, at ``aspiration_level``);
    * a voiced ``murmur`` (a ``VOWELS`` target: the nasals, l, r) from ``voice_s`` for
      ``murmur_s``, released quickly;
    * the voice from ``voice_s``, its formants moving from ``locus`` to the vowel's over
      ``TRANSITION_S``."""

    closure_s: float = 0.0
    burst: tuple[float, float, float, float] | None = None
    aspiration_s: float = 0.0
    aspiration_level: float = 0.12
    voice_s: float = 0.0
    murmur: str | None = None
    murmur_s: float = 0.0
    locus: str | None = None

    @property
    def noise_s(self) -> float:
        """How long the consonant's noise lasts (0: none)."""
        burst = self.burst[3] if self.burst else 0.0
        return self.closure_s + burst + self.aspiration_s if (burst or self.aspiration_s) else 0.0


# stops: a 40 ms closure, a 6 ms burst, the voice 15 ms later (unaspirated) or after 70 ms of
# aspiration; bursts by place (Stevens 1998: labial diffuse and low, alveolar diffuse and high,
# velar compact at the vowel's F2–F3); fricatives by place (alveolar sibilants near 6 kHz,
# retroflex near 3 kHz, palatal near 4 kHz: Ladefoged & Maddieson 1996; Mandarin h a velar
# fricative, breath through the vowel with a band at 1–2 kHz); nasal murmurs of 80 ms, the
# lateral's 50 ms.  Round textbook values, a model rather than a measurement.
_CLOSE = 0.04
_BURST = 0.006
CONSONANTS: dict[str, Consonant] = {
    "": Consonant(),
    "b": Consonant(_CLOSE, (900.0, 1800.0, 0.5, _BURST), 0.0, voice_s=0.06, locus="B"),
    "p": Consonant(_CLOSE, (1000.0, 2000.0, 0.5, _BURST), 0.07, voice_s=0.115, locus="B"),
    "m": Consonant(voice_s=0.0, murmur="m", murmur_s=0.08, locus="B"),
    "f": Consonant(0.0, (5000.0, 6000.0, 0.12, 0.09), voice_s=0.09, locus="B"),
    "d": Consonant(_CLOSE, (4000.0, 3000.0, 0.6, _BURST), 0.0, voice_s=0.06, locus="D"),
    "t": Consonant(_CLOSE, (4000.0, 3000.0, 0.6, _BURST), 0.07, voice_s=0.115, locus="D"),
    "n": Consonant(voice_s=0.0, murmur="n", murmur_s=0.08, locus="D"),
    "l": Consonant(voice_s=0.0, murmur="l", murmur_s=0.05, locus="D"),
    "g": Consonant(_CLOSE, (2200.0, 1200.0, 0.7, _BURST + 0.004), 0.0, voice_s=0.065,
                   locus="G"),
    "k": Consonant(_CLOSE, (2200.0, 1400.0, 0.7, _BURST + 0.004), 0.075, voice_s=0.125,
                   locus="G"),
    "h": Consonant(0.0, (1500.0, 1200.0, 0.08, 0.085), 0.085, 0.2, voice_s=0.085),
    "j": Consonant(_CLOSE, (3800.0, 2500.0, 0.3, 0.04), 0.0, voice_s=0.08, locus="J"),
    "q": Consonant(_CLOSE, (3800.0, 2500.0, 0.3, 0.05), 0.05, voice_s=0.14, locus="J"),
    "x": Consonant(0.0, (4200.0, 3000.0, 0.3, 0.11), voice_s=0.11, locus="J"),
    "zh": Consonant(_CLOSE, (2900.0, 1800.0, 0.3, 0.04), 0.0, voice_s=0.08, locus="R"),
    "ch": Consonant(_CLOSE, (2900.0, 1800.0, 0.3, 0.05), 0.05, voice_s=0.14, locus="R"),
    "sh": Consonant(0.0, (2900.0, 2000.0, 0.3, 0.11), voice_s=0.11, locus="R"),
    "r": Consonant(0.0, (2600.0, 1500.0, 0.06, 0.04), voice_s=0.0, murmur="ʅ", murmur_s=0.06,
                   locus="R"),
    "z": Consonant(_CLOSE, (6000.0, 3000.0, 0.3, 0.04), 0.0, voice_s=0.08, locus="D"),
    "c": Consonant(_CLOSE, (6000.0, 3000.0, 0.3, 0.05), 0.05, voice_s=0.14, locus="D"),
    "s": Consonant(0.0, (6500.0, 3500.0, 0.35, 0.12), voice_s=0.12, locus="D"),
}


def syllable_targets(initial: str, final: str) -> tuple[str | None, str, str | None]:
    """(medial glide, nucleus, coda) of a syllable; the bare final ``i`` after a sibilant is
    the apical vowel, an unknown final is sung on /ɑ/."""
    if final == "i" and initial in APICAL:
        return (None, APICAL[initial], None)
    return FINALS.get(final, (None, "ɑ", None))


def formants(target: str, scale: float = 1.0) -> tuple[tuple[float, float], ...]:
    """The five (Hz, bandwidth) formants of a target, F1–F3 scaled by ``scale`` (a shorter or
    longer vocal tract); a nasal murmur's upper formants are broad (``NASAL_BANDWIDTHS``)."""
    widths = NASAL_BANDWIDTHS if target in NASAL_ZEROS else BANDWIDTHS
    low = tuple((f * scale, bw) for f, bw in zip(VOWELS[target], widths, strict=True))
    return low + UPPER_FORMANTS
