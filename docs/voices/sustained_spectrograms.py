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
from cues.repertoire import get_piece  # noqa: E402
from instruments import mixer  # noqa: E402
from instruments.voices import render_note  # noqa: E402
from sequencer.plots import find_cjk_font  # noqa: E402

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

stanza = get_piece("關雎").stanzas[0]  # the 詩譜 melody, first line
lyric, semis = stanza.lyric[:8], stanza.semitones[:8]
d = 0.9
ge = place([(i * d, render_note("歌", 261.63 * 2 ** (s / 12), d, lyric=c))
            for i, (c, s) in enumerate(zip(lyric, semis, strict=True))], len(lyric) * d + 0.4)
plot(ge, "歌: 關關雎鳩在河之洲 (guan guan ju jiu zai he zhi zhou), two singers", "ge.png",
     5000)
sheng = place([(0, render_note("笙", 261.63, 1.5)), (1.6, render_note("笙", 392.4, 1.5)),
               (3.2, render_note("和", 261.63, 1.5))], 5.0)
plot(sheng, "笙 chords (note, fifth, octave) on C4 and G4, then 和 on C4", "sheng.png")
guan = place([(0, render_note("管", 392.0, 2.5)), (2.7, render_note("管", 523.25, 1.5))], 4.6)
plot(guan, "管: two unequal pipes (6 cents apart, 15 dB apart)", "guan.png")
notes = [mixer.RenderNote(t, "瑟", f, 0.5, 100, 0.0, 0.0, "瑟")
         for t, f in ((0.0, 196.0), (0.6, 196.0), (1.2, 261.63), (2.4, 196.0))]
se = np.concatenate(list(mixer.render(notes)))[:, 0]
plot(se, "瑟: plucks on G3, G3 again (the first is damped), C4, G3", "se.png", 6000)
