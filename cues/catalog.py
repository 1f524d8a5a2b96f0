"""The instrument catalog: every instrument a cue sheet may name, by the 八音 it belongs to.

Names are the canonical traditional characters used in the texts; aliases (simplified forms and
the names the 大射 hang gives to the east and west sets) resolve to them.  Each entry carries the
General MIDI fallback used when the output is an external GM synth: a melodic program (0-based)
on the entry's channel, or, for drums, a key on the GM percussion channel (channel index 9).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from types import MappingProxyType

from cues.pinyin import add_names, name_key

GM_PERCUSSION_CHANNEL = 9


@dataclass(frozen=True)
class Instrument:
    """One instrument of the catalog."""

    name: str
    english: str
    bayin: str  # 金 石 絲 竹 匏 土 革 木, or 人聲 for the singers
    pitched: bool
    channel: int  # 0-based MIDI channel in yuezheng's files and live output
    gm_program: int | None  # 0-based GM program (melodic instruments)
    gm_key: int | None  # GM percussion key (drums, on channel 9)
    description: str
    aliases: tuple[str, ...] = field(default=())  # other Chinese names
    pinyin: str = ""  # tone-less (``bianzhong``): a name too, looked up as ``cues.pinyin`` says

    @property
    def is_drum(self) -> bool:
        return self.gm_key is not None


_ENTRIES: tuple[Instrument, ...] = (
    Instrument("編鐘", "bianzhong, graded bronze bells", "金", True, 0, 14, None,
               "two-tone bells hung sixteen to a frame (堵); 笙鍾 in the east, 頌鍾 in the west",
               ("编钟", "鐘", "鍾", "钟", "笙鍾", "笙鐘", "頌鍾", "頌鐘", "庸鍾"),
               pinyin="bianzhong"),
    Instrument("鑮", "bo, large single bell", "金", True, 1, 14, None,
               "「鑮如鍾而大」 (大射 鄭注); with the drum it marks the music's 節",
               ("镈", "鏄"), pinyin="bo"),
    Instrument("編磬", "bianqing, stone chimes", "石", True, 2, 13, None,
               "L-shaped stones hung sixteen to a frame; 笙磬 in the east, 頌磬 in the west",
               ("编磬", "磬", "笙磬", "頌磬", "颂磬"), pinyin="bianqing"),
    Instrument("瑟", "se, plucked zither", "絲", True, 3, 107, None,
               "carried in by the 相者 and played by the 工 on the hall", (), pinyin="se"),
    Instrument("笙", "sheng, free-reed mouth organ", "匏", True, 4, 20, None,
               "played below the hall, 「立于縣中」", (), pinyin="sheng"),
    Instrument("和", "he, small mouth organ", "匏", True, 5, 20, None,
               "「三笙一和而成聲」; 「笙小者謂之和」 (爾雅, quoted in 鄉射 記 注)", (),
               pinyin="he"),
    Instrument("管", "guan, paired bamboo pipes (簜)", "竹", True, 6, 75, None,
               "「管如笛而小，並兩而吹之」 (小師 注, quoted in 大射 疏)", ("簜", "篴"),
               pinyin="guan"),
    Instrument("歌", "the 工's singing voice", "人聲", True, 7, 52, None,
               "the blind singers (瞽矇) who sing the 詩 on the hall", ("工歌", "人聲"),
               pinyin="ge"),
    Instrument("建鼓", "jiangu, large drum on a post", "革", False, GM_PERCUSSION_CHANNEL,
               None, 35, "「建猶樹也。以木貫而載之」 (大射 鄭注)", (), pinyin="jiangu"),
    Instrument("鼓", "gu, drum", "革", False, GM_PERCUSSION_CHANNEL, None, 36,
               "the drum that paces the 射節 where the text names no particular drum", (),
               pinyin="gu"),
    Instrument("朔鼙", "shuopi, the first small drum (west)", "革", False,
               GM_PERCUSSION_CHANNEL, None, 50,
               "「先擊朔鼙，應鼙應之」; 「鼙，小鼓也」", (), pinyin="shuopi"),
    Instrument("應鼙", "yingpi, the answering small drum (east)", "革", False,
               GM_PERCUSSION_CHANNEL, None, 48, "「應鼙，應朔鼙也」", ("应鼙",), pinyin="yingpi"),
    Instrument("鼙", "pi, small drum", "革", False, GM_PERCUSSION_CHANNEL, None, 47,
               "a small drum; 投壺 ○ strokes", (), pinyin="pi"),
    Instrument("鼗", "tao, pellet drum with a handle", "革", False, GM_PERCUSSION_CHANNEL,
               None, 54, "「鼗如鼓而小，有柄。賓至，搖之以奏樂也」", ("鞉",), pinyin="tao"),
)

CATALOG_LEVEL_LUFS = -20.0
"""The loudness of a velocity-100 reference note of a voice whose balance is 0 LU, heard at the
reference distance (5 m): the level ``audition`` plays at; a render is then normalised."""

ENSEMBLE_BALANCE_LU: MappingProxyType[str, float] = MappingProxyType({
    # each voice's reference note relative to the singing voice, in LU (BS.1770 loudness)
    "歌": 0.0, "瑟": -8.0, "笙": -3.0, "和": -7.0, "管": -3.0,
    "編鐘": 1.0, "鑮": -2.0, "編磬": -3.0,
    "建鼓": 3.0, "鼓": 3.0, "朔鼙": -1.0, "應鼙": -1.0, "鼙": -1.0, "鼗": -6.0,
})
"""The ensemble's balance (project choice, issue 14): each voice's reference note (one note,
velocity 100) against the 歌's.  The 瑟 at −8 sits 4 LU under the 歌 it accompanies as the
升歌 is heard (measured on its stems: 4.1; the target 3–5 LU) — its plucks ring on under the
next ones, so as heard it is 4 LU louder than its single note (at −4 it sat 1.8 LU under);
the 鑮 under the 編鐘 and the 建鼓, the small drums under the large; the bells 2 LU over where
they were (issue 25), so that with the 金奏's velocities (bells harder, drums softer:
``sequencer.timeline.piece_notes``) the bells lead it: 「以鐘鏄播之，鼓磬應之」 (docs/voices.md)."""

CATALOG: MappingProxyType[str, Instrument] = MappingProxyType({i.name: i for i in _ENTRIES})
_ALIASES: dict[str, str] = {}  # every name keyed by ``name_key`` → the catalog name
for _inst in _ENTRIES:
    add_names(_ALIASES, (_inst.name, *_inst.aliases, _inst.pinyin), _inst.name, "instrument")


@lru_cache(maxsize=1024)
def canonical_instrument(name: str) -> str | None:
    """The catalog name for ``name`` (an alias, the pinyin or the name itself), or None
    (remembered: a render asks it twice for each of thousands of notes)."""
    return _ALIASES.get(name_key(name))


def get_instrument(name: str) -> Instrument:
    """Look an instrument up by name or alias; raises KeyError naming the known ones."""
    canon = canonical_instrument(name)
    if canon is None:
        raise KeyError(f"unknown instrument {name!r}; known: {', '.join(CATALOG)}")
    return CATALOG[canon]


def instrument_names() -> tuple[str, ...]:
    return tuple(CATALOG)
