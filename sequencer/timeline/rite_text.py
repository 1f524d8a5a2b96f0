"""``yuezheng show``'s table: the rite's heading, variants, readings, groups, one row per cue with
its ritual moment and passage, and the project's own choices (marked ``*``) with their reasons.
Made from the ``show --json`` data (``sequencer.timeline.rite_json``), so the two never differ."""

from __future__ import annotations

from typing import Any

from cues.model import Rite
from cues.text import clock, pad
from sequencer.timeline.groups import PLURALS

KIND_WIDTH = 6  # a cue's kind in the table: up to three characters (無算樂)


def show_lines(rite: Rite, data: dict[str, Any], length_s: float) -> list[str]:
    """The table ``show`` prints for ``data`` (``rite_json`` with its ``groups``)."""
    lines = [f"{data['title']} ({data['rite']}) — {rite.work}; hang: {rite.hang}; "
             f"{clock(length_s)} offline"]
    if rite.variants:
        chosen = set(rite.active_variants)
        lines.append("variants: " + "; ".join(
            f"{'[x]' if v.id in chosen else '[ ]'} {v.id} = {v.title}" for v in rite.variants))
    lines += readings_lines(data["readings"])
    lines.append(groups_line(data["groups"]))
    lines.append("")
    lines.append(f"{'#':>2}  {'cue':<18} {pad('kind', KIND_WIDTH)} {'start':>8} {'length':>8}  "
                 "trigger     pieces")
    for i, cue in enumerate(data["cues"], start=1):
        lines += _cue_rows(i, cue)
    return lines + choices_lines(data["cues"]) + texts_lines(data.get("texts", []))


def texts_lines(texts: list[dict[str, Any]]) -> list[str]:
    """The texts the rite cites, each with its edition (``yuezheng source CUE`` shows a passage
    in its context)."""
    if not texts:
        return []
    return ["", "texts cited (a quote's [經], [記], [注], [疏] or [modern note] is where its file "
            "puts it, or as cited; `yuezheng source CUE` shows it in context):"] + [
        f"    {t['file']}: {t['edition']}" for t in texts]


def _cue_rows(number: int, cue: dict[str, Any]) -> list[str]:
    chosen = {c["field"] for c in cue["choices"]}
    mark = {field: "*" if field in chosen else "" for field in (
        "duration_s", "trigger", "pieces", "zhong", "jie_s")}
    start = clock(cue["start_s"])
    length = clock(cue["duration_s"]) if cue["duration_s"] is not None else "operator"
    pieces = " ".join(f"《{t}》" for t in cue["pieces"]) + mark["pieces"]
    if cue["zhong"]:
        pieces += f" {cue['zhong']}終{mark['zhong']}"
    if cue.get("lost"):
        pieces += " (lost: structure only)"
    for realized in cue.get("realizations", ()):
        pieces += f" (《{realized['piece']}》: the user's realization, {realized['file']})"
    for title, words in cue.get("fragments", {}).items():
        pieces += f" (《{title}》 text a fragment: 「{words}」)"
    if cue["kind"] == "射節":
        pieces += f" — {cue['jie']}節{mark['jie_s']}, {cue['listen']} to listen"
    return [f"{number:>2}  {cue['id'] + ('*' if chosen else ''):<18} "
            f"{pad(cue['kind'], KIND_WIDTH)} {start:>8} "
            f"{length + mark['duration_s']:>8}  {cue['trigger'] + mark['trigger']:<10}  "
            f"{pieces}",
            f"    at {_moment(cue)} — {cited(cue['source'])}: 「{cue['source']['quote']}」",
            *_call_rows(cue),
            *(f"    rule: 「{r['quote']}」 — {cited(r)}" for r in cue.get("rules", ()))]


def _moment(cue: dict[str, Any]) -> str:
    """The cue's ``at``: between 「」 when it is the texts' words, else marked a paraphrase."""
    if cue.get("at_verbatim", True):
        return f"「{cue['at']}」"
    return f"(paraphrase) {cue['at']}"


def _call_rows(cue: dict[str, Any]) -> list[str]:
    """Each pitched call of a round: who calls what on which 聲, and the passage."""
    rows = []
    for call in cue.get("calls", ()):
        each = "each 耦" if cue["kind"] == "射節" else f"×{call['times']}"
        sung = " then ".join(f"{p['name']} {p['seconds']:g} s" for p in call["pitches"])
        rows.append(f"    call: {call['who']} 「{call['words']}」 on {sung}, {each} — "
                    f"{call['source']['work']}: 「{call['source']['quote']}」")
    return rows


def groups_line(groups: list[dict[str, Any]]) -> str:
    """The groups --only/--except may name, by kind (° marks one without a note here)."""
    kinds: dict[str, list[str]] = {}
    for g in groups:
        kinds.setdefault(g["kind"], []).append(g["name"] + ("" if g["notes"] else "°"))
    return ("groups (--only/--except): " + "; ".join(
        f"{PLURALS[kind]} {' '.join(names)}" for kind, names in kinds.items())
        + "  (°: no note here)")


def readings_lines(readings: list[dict[str, Any]]) -> list[str]:
    """Each reading: its value in force, and every value with the passage behind it."""
    lines = []
    for reading in readings:
        values = ", ".join(c["value"] for c in reading["choices"])
        needs = "".join(f", with variant {v}" for v in reading.get("when", ()))
        lines.append(f"reading {reading['name']} = {reading['value']} (choices: {values}{needs})")
        lines += [f"    {choice['value']}: {cited(choice['source'])}: "
                  f"「{choice['source']['quote']}」"
                  for choice in reading["choices"] if "source" in choice]
    return lines


def choices_lines(cues: list[dict[str, Any]]) -> list[str]:
    """Under the table: the project's own choices (marked *), each with its reason."""
    rows = [(cue["id"], c) for cue in cues for c in cue["choices"]]
    if not rows:
        return []
    return ["", "* the project's own choices (no source fixes them):"] + [
        f"    {cue_id} {choice['field']}: {choice['reason']}" for cue_id, choice in rows]


def cited(source: dict[str, Any]) -> str:
    """A citation's work and what the quote is: 「儀禮·大射 注」, 「儀禮·鄉射禮 經」; a layer the
    file does not mark is the work's own word (「(as cited)」)."""
    layers = " and ".join(source.get("layers", ()))
    if not layers:
        return source["work"]
    return f"{source['work']} [{layers}{'' if source.get('layers_marked') else ', as cited'}]"
