"""Spectrograms of the sustained voices (歌 笙 和 管 瑟) for docs/voices.md.

    python docs/voices/sustained_spectrograms.py     (from the repository root)
"""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from cues.melody_octaves import melody_octave  # noqa: E402
from cues.repertoire import get_piece  # noqa: E402
from instruments.mix import mixer  # noqa: E402
from instruments.voices.notes import render_note  # noqa: E402
from sequencer.pictures.common import find_cjk_font  # noqa: E402
from sequencer.timeline.phrasing import stanza_levels, velocity  # noqa: E402

OUT = ROOT / "docs" / "voices"

SR = 48000
def place(parts: list[tuple[float, np.ndarray]], total: float) -> np.ndarray:
    out = np.zeros(int(total * SR), dtype=np.float64)
    for t, x in parts:
        i = int(t * SR)
        out[i:i + len(x)] += x[: len(out) - i]
    return out

def plot(x: np.ndarray, title: str, name: str, fmax: float = 8000) -> None:
    path = OUT / name
    family = find_cjk_font()
    if family:
        plt.rcParams["font.family"] = [family]
    fig, ax = plt.subplots(figsize=(9, 4), dpi=110)
    ax.specgram(x, NFFT=2048, Fs=SR, noverlap=1536, cmap="magma", vmin=-140)
    ax.set_ylim(0, fmax)
    ax.set_xlabel("s")
    ax.set_ylabel("Hz")
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)

def mixed(notes: list[mixer.RenderNote]) -> np.ndarray:
    """The notes through the mixer (dry, the catalog level): legato links, re-plucks, seeds."""
    return np.concatenate(list(mixer.render(notes, how=mixer.Mastering(room="dry"))))[:, 0]


stanza = get_piece("關雎").stanzas[0]  # the 詩譜 melody, first line, as the 工 sing it
lyric, semis = stanza.lyric[:8], stanza.semitones[:8]
octave = melody_octave("歌")  # an octave under the written 律
levels = stanza_levels("關雎", 0)
ge = mixed([mixer.RenderNote(float(i), "歌", 261.63 * 2 ** ((s + octave) / 12), 1.0,
                             velocity(88, levels[i]), 0.0, 0.0, "歌", lyric=c)
            for i, (c, s) in enumerate(zip(lyric, semis, strict=True))])
plot(ge, "歌: 關關雎鳩在河之洲 (guan guan ju jiu zai he zhi zhou), two men, legato", "ge.png",
     5000)
sheng = place([(0, render_note("笙", 261.63, 8.0)), (8.4, render_note("和", 261.63, 2.0))], 11.0)
plot(sheng, "笙 chord (note, fifth, octave) on C4 held 8 s: the breath moves; then 和 on C4",
     "sheng.png")
guan = place([(0, render_note("管", 392.0, 2.5)), (2.7, render_note("管", 523.25, 1.5))], 4.6)
plot(guan, "管: two edge-blown pipes (6 cents, 15 dB apart), edge noise at the harmonics",
     "guan.png")
se = mixed([mixer.RenderNote(t, "瑟", f, 0.5, 100, x, 0.0, "瑟", seed=k)
            for k, (t, f, x) in enumerate(((0.0, 196.0, 0.0), (0.6, 196.0, 0.0),
                                           (1.2, 261.63, 0.0), (2.4, 196.0, 1.0),
                                           (3.0, 196.0, 2.0), (3.6, 196.0, 3.0)))])
plot(se, "瑟: G3, G3 again (the first is damped), C4, then G3 on three strings: each pluck its "
     "own point and force", "se.png", 6000)
