"""Tuning: 三分損益 from the chain in pitch_facts.json, Hz, MIDI + cents, pitch bends, names."""

from __future__ import annotations

import json
import math
import re
from fractions import Fraction
from importlib import resources

import pytest

from cues.errors import UserError
from cues.repertoire import LU_NAMES as REPERTOIRE_LU_NAMES
from instruments.tuning import (
    DEFAULT_HUANGZHONG_HZ,
    LU_NAMES,
    TUNING_SYSTEMS,
    Tuning,
    cents,
    cents_ratio,
    hz_midi_key,
    lu_name,
    midi_key_hz,
    octave_mark,
    parse_tuning,
    sanfen_pipe_lengths,
    sanfen_ratios,
)


def _pitch_facts() -> dict:
    path = resources.files("cues").joinpath("data/sources/reference/pitch_facts.json")
    return json.loads(path.read_text(encoding="utf-8"))


def _cents(ratio: float) -> float:
    return 1200 * math.log2(ratio)


def test_names_agree_with_the_repertoire() -> None:
    assert LU_NAMES == REPERTOIRE_LU_NAMES
    assert LU_NAMES == tuple(_pitch_facts()["twelve_lu_in_pitch_order"])


def test_chain_in_the_json_applied_step_by_step_with_fractions() -> None:
    """Recompute the pipe lengths from the chain strings here, then compare with the table."""
    facts = _pitch_facts()
    lengths = {"黃鍾": Fraction(9)}
    for step in facts["generation_rule_primary_source"]["chain"]:
        src, dst = re.findall(r"(\S+?)→(\S+?) ", step)[0]
        factor = Fraction(2, 3) if "三分損一" in step else Fraction(4, 3)
        assert f"×{factor}" in step
        lengths[dst] = lengths[src] * factor
    table = {row["name"]: row for row in facts["lu_table"]}
    for name, length in lengths.items():
        assert length / 9 == Fraction(table[name]["length_ratio_to_huangzhong"]), name
        assert 9 / length == Fraction(table[name]["frequency_ratio"]), name
    assert dict(sanfen_pipe_lengths()) == lengths


def test_sanfen_ratios_are_the_pythagorean_ones() -> None:
    facts = {row["name"]: row for row in _pitch_facts()["lu_table"]}
    ratios = dict(zip(LU_NAMES, sanfen_ratios(), strict=True))
    # well-known values, written out
    assert ratios["黃鍾"] == 1
    assert ratios["林鍾"] == Fraction(3, 2)
    assert ratios["太蔟"] == Fraction(9, 8)
    assert ratios["南呂"] == Fraction(27, 16)
    assert ratios["姑洗"] == Fraction(81, 64)
    assert ratios["應鍾"] == Fraction(243, 128)
    assert ratios["蕤賓"] == Fraction(729, 512)
    assert ratios["大呂"] == Fraction(2187, 2048)
    assert ratios["仲呂"] == Fraction(177147, 131072)
    # independently: the k-th rising fifth folded into one octave
    fifths = ("黃鍾", "林鍾", "太蔟", "南呂", "姑洗", "應鍾",
              "蕤賓", "大呂", "夷則", "夾鍾", "無射", "仲呂")
    for k, name in enumerate(fifths):
        r = Fraction(3, 2) ** k
        while r >= 2:
            r /= 2
        assert ratios[name] == r, name
    for name, ratio in ratios.items():
        assert ratio == Fraction(facts[name]["frequency_ratio"])
        assert _cents(ratio) == pytest.approx(facts[name]["cents_above_huangzhong"], abs=0.006)


def test_octaves_are_exact_powers_of_two() -> None:
    t = Tuning()
    for s in range(12):
        for k in (-2, -1, 1, 2):
            assert t.ratio(s + 12 * k) == t.ratio(s) * Fraction(2) ** k
    assert t.ratio(12) == 2 and t.ratio(-12) == Fraction(1, 2)
    # 三分損益 does not close: twelve fifths overshoot seven octaves by the Pythagorean comma
    comma = Fraction(3, 2) ** 12 / 2**7
    assert comma == Fraction(531441, 524288)
    assert _cents(comma) == pytest.approx(
        _pitch_facts()["non_closure"]["excess_pitch_cents"], abs=0.005)


@pytest.mark.parametrize("ref", [DEFAULT_HUANGZHONG_HZ, 293.66, 345.0, 220.0])
def test_hz_within_a_cent_of_the_ratio(ref: float) -> None:
    t = Tuning("sanfen", ref)
    for s in range(-12, 27):
        exact = float(t.ratio(s))
        assert abs(_cents(t.hz(s) / ref) - _cents(exact)) < 1.0
        assert t.hz(s) == pytest.approx(ref * exact, rel=1e-12)


@pytest.mark.parametrize("system", TUNING_SYSTEMS)
@pytest.mark.parametrize("ref", [DEFAULT_HUANGZHONG_HZ, 293.66, 345.0, 27.5, 1000.0])
def test_midi_and_cents_reproduce_hz(system: str, ref: float) -> None:
    t = Tuning(system, ref)
    for s in range(-12, 27):
        note, offset = t.midi(s)
        assert isinstance(note, int)
        assert -50 < offset <= 50
        assert 440 * 2 ** ((note - 69 + offset / 100) / 12) == pytest.approx(t.hz(s), rel=1e-9)


def test_half_way_rounds_to_plus_fifty() -> None:
    t = Tuning("equal", DEFAULT_HUANGZHONG_HZ * 2 ** (0.5 / 12))  # C4 + 50 cents
    note, offset = t.midi(0)
    assert (note, round(offset, 6)) in ((60, 50.0), (61, -50.0))
    assert -50 < offset <= 50


def test_equal_temperament_is_exact() -> None:
    t = Tuning("equal")
    for s in range(-24, 37):
        assert t.ratio(s) == 2.0 ** (s / 12)
        assert t.cents_from_equal(s) == 0.0
        note, offset = t.midi(s)
        assert note == 60 + s
        assert abs(offset) < 1e-9
        assert t.pitch_bend(s) == (60 + s, 0)
    assert t.hz(12) == pytest.approx(2 * DEFAULT_HUANGZHONG_HZ, rel=1e-15)


def test_default_huangzhong_is_c4() -> None:
    assert DEFAULT_HUANGZHONG_HZ == pytest.approx(261.6256, abs=1e-4)
    assert Tuning().midi(0)[0] == 60
    assert abs(Tuning().midi(0)[1]) < 1e-9
    assert Tuning(huangzhong_hz=293.66).midi(0)[0] == 62  # D4


def test_cents_from_equal_matches_the_table() -> None:
    t = Tuning()
    rows = _pitch_facts()["lu_table"]
    for row in rows:
        s = row["index"]
        for k in (-1, 0, 1):
            assert t.cents_from_equal(s + 12 * k) == pytest.approx(
                row["deviation_from_ET_cents"], abs=0.006)
        # with 黃鍾 on a MIDI note, the offset from the nearest note is that deviation
        assert t.midi(s)[1] == pytest.approx(row["deviation_from_ET_cents"], abs=0.006)


def test_pitch_bend() -> None:
    t = Tuning()
    assert t.pitch_bend(0) == (60, 0)
    note, bend = t.pitch_bend(7)  # 林鍾 +1.955 cents
    assert note == 67 and bend == round(1.955 / 200 * 8192)
    assert t.pitch_bend(5, bend_range_semitones=12)[1] == round(21.505 / 1200 * 8192)
    for s in range(-12, 27):
        _, value = t.pitch_bend(s)
        assert -8192 <= value <= 8191
    high = Tuning("equal", DEFAULT_HUANGZHONG_HZ * 2 ** (0.5 / 12))
    assert -8192 <= high.pitch_bend(0, 1)[1] <= 8191
    with pytest.raises(ValueError):
        t.pitch_bend(0, 0)


def test_lu_names_with_qing_and_zhuo() -> None:
    assert [lu_name(s) for s in range(12)] == list(LU_NAMES)
    assert lu_name(12) == "黃鍾清"
    assert lu_name(14) == "太蔟清"
    assert lu_name(24) == "黃鍾清清"
    assert lu_name(-1) == "應鍾濁"
    assert lu_name(-2) == "無射濁"
    assert lu_name(-12) == "黃鍾濁"
    assert lu_name(-13) == "應鍾濁濁"


def test_parse_tuning() -> None:
    assert parse_tuning("sanfen", 293.66) == Tuning("sanfen", 293.66)
    assert parse_tuning(" Equal ", 440).system == "equal"
    for system, hz in (("pythagorean", 261.6), ("sanfen", 0), ("sanfen", -3), ("equal", 1e6),
                       ("sanfen", float("nan")), ("sanfen", float("inf")), ("sanfen", "abc")):
        with pytest.raises(UserError):
            parse_tuning(system, hz)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        Tuning("just")
    with pytest.raises(ValueError):
        Tuning("sanfen", 0.0)


def test_tuning_is_frozen_and_hashable() -> None:
    t = Tuning()
    with pytest.raises(AttributeError):
        t.system = "equal"  # type: ignore[misc]
    assert {t: 1}[Tuning("sanfen", DEFAULT_HUANGZHONG_HZ)] == 1
    assert "261.63 Hz" in t.describe() and "C4" in t.describe()


def test_key_hz_and_cents_conversions_are_inverse() -> None:
    assert midi_key_hz(69) == 440.0
    assert midi_key_hz(60) == DEFAULT_HUANGZHONG_HZ
    assert midi_key_hz(60.5) == pytest.approx(DEFAULT_HUANGZHONG_HZ * 2 ** (1 / 24))
    for key in (21, 60, 69.25, 108):
        assert hz_midi_key(midi_key_hz(key)) == pytest.approx(key)
    assert cents_ratio(1200) == 2.0
    assert cents(cents_ratio(-4.0)) == pytest.approx(-4.0)
    assert Tuning("equal").midi_float(7) == pytest.approx(67.0)


def test_octave_marks() -> None:
    assert [octave_mark(s) for s in (0, 11, 12, 26, -1, -12, -13)] == [
        "", "", "清", "清清", "濁", "濁", "濁濁"]
