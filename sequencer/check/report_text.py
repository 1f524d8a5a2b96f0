"""``yuezheng check``'s report as lines of text: a line per block, each violation with
``verbose``, and the verdict (「間若一」 or how many blocks fail)."""

from __future__ import annotations

from sequencer.check.tempo import CheckReport

KINDS = {
    "midi-markers": "MIDI, 節 markers",
    "midi-notes": "MIDI, note onsets",
    "audio": "audio onsets",
    "log": "live show log, 節 records",
    "audio-timeline": "audio onsets in the 射節 of {rite}",
    "midi-timeline": "MIDI note onsets in the 射節 of {rite}",
    "audio-found": "audio, strokes found in the recording",
}


def report_lines(report: CheckReport, rite: str | None = None, *,
                 verbose: bool = False) -> list[str]:
    """The report of ``check`` (``rite``: the name the user gave with --rite)."""
    kind = KINDS.get(report.kind, report.kind).format(rite=rite or report.rite)
    lines = [f"{report.source} — {kind}, tolerance ±{report.tolerance_ms:g} ms"]
    if report.made_with:
        lines.append(f"  made with: {report.made_with}  (the file's provenance)")
    number = 0
    for found, said in zip(report.found, report.found_lines, strict=True):
        number += found.get("judged", True)
        lines.append(f"  found {number if found.get('judged', True) else '–':>2}: {said[0]}")
        lines += [f"            {more}" for more in said[1:]]
    if verbose:
        lines += [f"  note: {note}" for note in report.notes]
    lines += [f"  warning: {warning}" for warning in report.warnings]
    timeline = report.kind.endswith("-timeline")
    offset = f"  {'offset':>10}" if timeline else ""
    lines.append(f"  {'#':>2}  {'count':>9}  {'mean interval':>14}  {'max dev':>10}  "
                 f"{'CV':>8}{offset}  {'result':<7}  block")
    jie = report.kind in ("midi-markers", "log")
    for number, block in enumerate(report.blocks, start=1):
        count = (f"{block.count}/{block.expected_count}" if block.expected_count is not None
                 else str(block.count))
        shift = f"  {block.offset_s:>+8.3f} s" if block.offset_s is not None else ""
        bad = f" ({len(block.violations)} off the grid)" if block.violations else ""
        label = block.label.replace("\n", "\\n")
        result = ("FAIL" if not block.ok else "stopped" if block.stopped
                  else "ok" if block.tested else "short")
        if block.tested:
            numbers = (f"{block.mean_interval_s:>12.6f} s  {block.max_deviation_ms:>7.3f} ms  "
                       f"{block.cv * 100:>7.3f}%")
        else:
            mean = f"{block.mean_interval_s:>12.6f} s" if block.count > 1 else f"{'—':>14}"
            numbers = f"{mean}  {'—':>10}  {'—':>8}"
        lines.append(f"  {number:>2}  {count:>9}  {numbers}{shift}  {result:<7}  {label}{bad}")
        if block.stopped and not verbose:
            lines.append(f"        stopped: {block.stopped}")
        if block.drift_pct is not None and (not block.ok or verbose):
            lines.append(f"        drift {block.drift_pct:+.2f} % across the block · jitter "
                         f"sd {block.jitter_sd_ms:.2f} ms, largest {block.jitter_max_ms:.2f} ms")
        if not verbose:
            continue
        for v in block.violations:
            which = f"節 {v.index + 1}" if jie else \
                f"{'stroke' if timeline else 'onset'} {v.index + 1}"
            lines.append(f"        {which} at {v.time_s:.6f} s: {v.deviation_ms:+.3f} ms "
                         f"({'late' if v.deviation_ms > 0 else 'early'})")
        lines += [f"        note: {note}" for note in block.notes]
    lines.append(_verdict(report, verbose))
    return lines


def _verdict(report: CheckReport, verbose: bool) -> str:
    blocks = report.blocks
    failed = sum(not b.ok for b in blocks)
    plural = "s" if len(blocks) != 1 else ""
    if failed:
        more = "" if verbose else " (--verbose for each violation)"
        return (f"{failed} of {len(blocks)} block{plural} "
                f"{'fails' if failed == 1 else 'fail'}: the timing does not hold{more}")
    if not any(b.tested for b in blocks):
        return (f"no block has the 3 onsets an equal-interval test needs ({len(blocks)} "
                f"block{plural}): nothing to hold or to fail")
    stopped = sum(b.stopped is not None for b in blocks)
    short = sum(not b.tested and b.stopped is None for b in blocks)
    extra = "".join(f"; {count} {what}" for count, what in (
        (stopped, "stopped short (not a failure of the timing)"),
        (short, "too short to test")) if count)
    return f"every block holds ({len(blocks)} block{plural}{extra}): 間若一"
