"""Draw the spectrogram of each struck voice into docs/voices/ (run from the repository root:
``python docs/voices/spectrograms.py``)."""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from instruments import voices  # noqa: E402

SR = 48000
OUT = Path(__file__).resolve().parent
STRUCK = [("編鐘 正鼓", "編鐘", 262.0, "正鼓"), ("編鐘 側鼓", "編鐘", 314.4, "側鼓"),
          ("鑮", "鑮", 131.0, "正鼓"), ("編磬", "編磬", 262.0, "正鼓"),
          ("建鼓", "建鼓", None, "正鼓"), ("鼓", "鼓", None, "正鼓"), ("鼙", "鼙", None, "正鼓"),
          ("朔鼙", "朔鼙", None, "正鼓"), ("鼗", "鼗", None, "正鼓")]
FILES = {"編鐘 正鼓": "bianzhong-zhenggu", "編鐘 側鼓": "bianzhong-cegu", "鑮": "bo",
         "編磬": "bianqing", "建鼓": "jiangu", "鼓": "gu", "鼙": "pi", "朔鼙": "shuopi",
         "鼗": "tao"}


def main() -> None:
    plt.rcParams["font.family"] = ["WenQuanYi Micro Hei", "DejaVu Sans"]
    for title, name, hz, strike in STRUCK:
        x = np.asarray(voices.render_note(name, hz, 1.0, 100, strike=strike), dtype=float)
        fig, ax = plt.subplots(figsize=(7, 3.2), dpi=100)
        ax.specgram(x[: 3 * SR], NFFT=4096, Fs=SR, noverlap=3584, cmap="magma", vmin=-160)
        ax.set_ylim(0, 4000 if hz is None or hz < 300 else 8000)
        ax.set_xlabel("s")
        ax.set_ylabel("Hz")
        ax.set_title(f"{title}" + (f" ({hz:g} Hz)" if hz else ""))
        fig.tight_layout()
        fig.savefig(OUT / f"{FILES[title]}.png")
        plt.close(fig)


if __name__ == "__main__":
    main()
