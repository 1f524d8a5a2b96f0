"""Draw the spectrograms of the struck voices into docs/voices/ (run from the repository root:
``python docs/voices/spectrograms.py``; ``… spectrograms.py courtyard`` draws the courtyard's
impulse response alone).

The bells and the stone: one stroke each at velocity 100, to 8 kHz (their strike is bright:
upper pairs to 16 × the struck tone).  The drums: a stroke each, and for the 鼓 a 射節's first
eight strokes as the render plays them (the 節 stroke at velocity 127, the others at 88, each
stroke its own), with the level in dB on a colour scale down to −100 dB under the loudest, so
that the tail ringing out into the floor shows."""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from instruments.mix import mixer  # noqa: E402
from instruments.voices import notes as voices  # noqa: E402
from sequencer.pictures.common import find_cjk_font  # noqa: E402

SR = 48000
OUT = Path(__file__).resolve().parent
STRUCK = [("編鐘 正鼓", "編鐘", 262.0, "正鼓", 8000), ("編鐘 側鼓", "編鐘", 314.4, "側鼓", 8000),
          ("鑮", "鑮", 131.0, "正鼓", 4000), ("編磬", "編磬", 262.0, "正鼓", 8000),
          ("建鼓", "建鼓", None, "正鼓", 4000), ("鼓", "鼓", None, "正鼓", 4000),
          ("鼙", "鼙", None, "正鼓", 4000), ("朔鼙", "朔鼙", None, "正鼓", 4000),
          ("鼗", "鼗", None, "正鼓", 8000)]
FILES = {"編鐘 正鼓": "bianzhong-zhenggu", "編鐘 側鼓": "bianzhong-cegu", "鑮": "bo",
         "編磬": "bianqing", "建鼓": "jiangu", "鼓": "gu", "鼙": "pi", "朔鼙": "shuopi",
         "鼗": "tao"}


def _plot(x: np.ndarray, title: str, name: str, fmax: float, seconds: float,
          size: tuple[float, float] = (7, 3.2)) -> None:
    fig, ax = plt.subplots(figsize=size, dpi=100)
    spec, _, _, image = ax.specgram(x[: int(seconds * SR)], NFFT=2048, Fs=SR, noverlap=1792,
                                    cmap="magma")
    top = 10 * np.log10(spec.max())
    image.set_clim(top - 100, top)  # 100 dB under the loudest: the tail into the floor
    fig.colorbar(image, ax=ax, label="dB", pad=0.01)
    ax.set_ylim(0, fmax)
    ax.set_xlabel("s")
    ax.set_ylabel("Hz")
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(OUT / f"{name}.png")
    plt.close(fig)


def courtyard() -> None:
    """The courtyard's impulse response heard from the default listener, a source at the
    drums' place (−1.5, −2): the left ear, to 12 kHz, from 20 ms before the direct sound to
    0.93 s, short windows (the direct sound and the ground's reflection full-band, the walls'
    images and the tail under the low-rate path's 4.6 kHz)."""
    from instruments.mix.blocks import heard
    from instruments.mix.room import Room

    place = (-1.5, -2.0)
    room = Room("courtyard", SR)
    room.start_at_nearest({place}, {place})
    impulse = np.zeros(1, dtype=np.float32)
    impulse[0] = 1.0
    ir = np.concatenate([np.zeros(SR // 50), heard(impulse, place, room)[0]])  # 20 ms before
    fig, ax = plt.subplots(figsize=(8, 3.4), dpi=100)
    spec, _, _, image = ax.specgram(ir[: int(0.95 * SR)], NFFT=512, Fs=SR, noverlap=448,
                                    cmap="magma", xextent=(-0.02 + 256 / SR, 0.93 - 256 / SR))
    top = 10 * np.log10(spec.max())
    image.set_clim(top - 90, top)
    fig.colorbar(image, ax=ax, label="dB", pad=0.01)
    ax.set_ylim(0, 12000)
    ax.set_xlabel("s")
    ax.set_ylabel("Hz")
    ax.set_title("the courtyard's impulse response (source at the drums, left ear)")
    fig.tight_layout()
    fig.savefig(OUT / "courtyard-ir.png")
    plt.close(fig)


def main() -> None:
    family = find_cjk_font()
    if family:
        plt.rcParams["font.family"] = [family]
    if sys.argv[1:] == ["courtyard"]:
        courtyard()
        return
    courtyard()
    for title, name, hz, strike, fmax in STRUCK:
        x = np.asarray(voices.render_note(name, hz, 1.0, 100, strike=strike), dtype=float)
        seconds = min(x.size / SR, 6.0 if hz is None else 4.0)
        _plot(x, title + (f" ({hz:g} Hz)" if hz else ""), FILES[title], fmax, seconds)
    # a drummer: the 鼓 of a 射節 of 2 s 節, its first eight strokes, each its own
    notes = [mixer.RenderNote(0.5 * k, "鼓", None, 0.125, 127 if k % 4 == 0 else 88, 0.0, 0.0,
                              "鼓", seed=k) for k in range(8)]
    x = np.concatenate(list(mixer.render(notes, how=mixer.Mastering(room="dry"))))[:, 0]
    _plot(x.astype(float), "鼓: a 射節's first eight strokes (the 節 stroke 127, the others 88)",
          "gu-she-jie", 2000, 8.0, (9, 3.6))


if __name__ == "__main__":
    main()
