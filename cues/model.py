"""The immutable model of a rite: what is played, by whom, when it is called, and why.

Every value here is a frozen dataclass built only by the loader (``cues.sheet.loader``), which has
validated it; nothing in this module touches files or hardware.  Kinds come from one table,
``KINDS``, as mido's message specs do.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType

# ── kinds ───────────────────────────────────────────────────────────────────────────────────
# kind → (is music, short description)
KINDS: MappingProxyType[str, tuple[bool, str]] = MappingProxyType({
    "金奏": (True, "bells and drums: 「以鐘鑮播之，鼓磬應之，所謂金奏也」"),
    "升歌": (True, "the 工 sing on the hall with 瑟"),
    "笙": (True, "the mouth organs play below the hall, 「立于縣中」"),
    "管": (True, "the bamboo pipes (簜) play below the hall"),
    "間歌": (True, "alternation: 「一歌則一吹」"),
    "合樂": (True, "「歌樂與眾聲俱作」: all together"),
    "射節": (True, "drum-paced shooting music, 「間若一」"),
    "無算樂": (True, "open-ended music after 無算爵: 「升歌間合無數也」"),
    "陔": (True, "the guest's exit music, 陔夏, 「以鍾鼓奏之」"),
    "驁": (True, "the lord's return music, 驁夏"),
    "舞": (True, "a dance, e.g. 勺"),
    "遷樂": (False, "the musicians move (the layout changes)"),
    "獻": (False, "a pause while the musicians are offered wine (獻工, 獻笙)"),
    "告備": (False, "the report that the set music is complete: 「正歌備」"),
    "射": (False, "a round of shooting without music"),
    "停": (False, "a pause held by the operator"),
})
MUSIC_KINDS = frozenset(k for k, (music, _) in KINDS.items() if music)
# each kind's tone-less pinyin: a sheet may write a kind so, or in simplified characters
KIND_PINYIN: MappingProxyType[str, str] = MappingProxyType({
    "金奏": "jin-zou", "升歌": "sheng-ge", "笙": "sheng", "管": "guan", "間歌": "jian-ge",
    "合樂": "he-yue", "射節": "she-jie", "無算樂": "wu-suan-yue", "陔": "gai", "驁": "ao",
    "舞": "wu", "遷樂": "qian-yue", "獻": "xian", "告備": "gao-bei", "射": "she", "停": "ting",
})

# ── triggers ────────────────────────────────────────────────────────────────────────────────
TRIGGER_GO = "go"  # the operator presses GO at the ritual moment named by ``at``
TRIGGER_FOLLOW = "follow"  # starts when the previous cue ends
TRIGGER_AFTER = "after"  # starts when a named earlier cue ends (``after:CUE``)
TRIGGER_SIGNAL = "signal"  # waits for a named signal declared by the rite (``signal:NAME``)


# the keys a sheet's [settings] may hold: the compiler's settings, the player's, the readings
SETTING_KEYS = frozenset({
    "tempo_bpm", "jie_seconds", "huangzhong_hz", "tuning", "lost_zhong_seconds",
    "drum_pattern", "drum_reading", "release_rule", "jiu_xia_order", "bell_interval",
    "ticks_per_beat", "readings",
})

# who performs a piece
BY_SINGERS = "歌"
BY_SHENG = "笙"
BY_GUAN = "管"
BY_BELLS = "鍾鼓"
BY_VALUES = (BY_SINGERS, BY_SHENG, BY_GUAN, BY_BELLS)

ARROWS = 4  # 乘矢: each archer shoots four arrows, one 拾 per 節

# the 五聲 on 黃鍾 (宮): semitones above it.  大射 疏: 「宮數八十一，商數七十二」 — the 商 string
# is 8/9 of the 宮's, so 商 sounds 9:8 above it (太簇 over 黃鍾 in the 三分損益 tuning)
WU_SHENG: MappingProxyType[str, int] = MappingProxyType(
    {"宮": 0, "商": 2, "角": 4, "徵": 7, "羽": 9})


@dataclass(frozen=True)
class Source:
    """Where a cue comes from: the work, the file under ``cues/data/sources``, a verbatim quote."""

    work: str
    quote: str
    file: str | None = None
    note: str = ""


@dataclass(frozen=True)
class Count:
    """A performer or an instrument with how many there are; an instrument that does not sound
    says why in ``silent`` (e.g. the 工 of a piece whose melody is lost)."""

    name: str
    count: int
    silent: str = ""


@dataclass(frozen=True)
class ProjectChoice:
    """A value of a cue that no source fixes (``field``: a cue key or a setting), and why."""

    field: str
    reason: str


@dataclass(frozen=True)
class PieceRef:
    """One piece as a cue plays it: its canonical title and who plays it (歌, 笙, 管, 鍾鼓)."""

    title: str
    by: str
    realization: str | None = None  # a user's own MIDI/MusicXML file for a lost piece


@dataclass(frozen=True)
class Trigger:
    kind: str  # TRIGGER_GO, TRIGGER_FOLLOW, TRIGGER_AFTER or TRIGGER_SIGNAL
    target: str | None = None  # the cue id (after) or the signal name (signal)

    def __str__(self) -> str:
        return self.kind if self.target is None else f"{self.kind}:{self.target}"


@dataclass(frozen=True)
class Stop:
    """A stop rule from the text: the music ends (``event``, e.g. 樂闋) at the moment ``at``."""

    event: str
    at: str


@dataclass(frozen=True)
class Ou:
    """A pair of archers (耦) in the shooting order; ``exempt`` sides are not judged by the drum."""

    name: str
    upper: str = "上射"
    lower: str = "下射"
    exempt: tuple[str, ...] = ()  # "右" (the 上射's side) and/or "左"
    note: str = ""


@dataclass(frozen=True)
class Call:
    """A pitched call at the shooting: ``words`` called by ``who`` (a layout position) on each
    of ``pitches`` (五聲 names) in turn, each held ``seconds``; in a round without music it is
    called ``times`` times, in a 射節 once in each 耦's turn."""

    who: str
    words: str
    pitches: tuple[str, ...]
    seconds: tuple[float, ...]
    source: Source
    times: int = 1


@dataclass(frozen=True)
class Position:
    """Where something hangs or stands, in metres: x grows east, y north (the hall is north)."""

    name: str
    x: float
    y: float
    instrument: str | None = None
    facing: str | None = None
    source: Source | None = None


@dataclass(frozen=True)
class ShootingMusic:
    """The 射節 of a cue: the song, the number of 節, the listening 節, and the order of pairs."""

    song: str
    jie: int
    listen: int
    ou: tuple[Ou, ...]
    arrows: int = ARROWS


@dataclass(frozen=True)
class Cue:
    id: str
    kind: str
    at: str  # the ritual moment that calls the cue, in the text's words
    trigger: Trigger
    source: Source
    pieces: tuple[PieceRef, ...] = ()
    zhong: int | None = None
    performers: tuple[Count, ...] = ()
    instruments: tuple[Count, ...] = ()
    stop: Stop | None = None
    title: str = ""
    moves: tuple[Position, ...] = ()  # 遷樂: the new positions
    shooting: ShootingMusic | None = None
    pre_wait_s: float = 0.0
    post_wait_s: float = 0.0
    duration_s: float | None = None  # a fixed length given by the sheet (pauses)
    operator_ends: bool = False  # the operator ends it (無算樂): no fixed length
    when: tuple[str, ...] = ()  # played only when all these variants are chosen
    unless: tuple[str, ...] = ()  # left out when any of these variants is chosen
    choices: tuple[ProjectChoice, ...] = ()  # the values no source fixes, with their reasons
    calls: tuple[Call, ...] = ()  # the pitched calls at the shooting (the 獲者's 宮 and 商)
    rules: tuple[Source, ...] = ()  # what the texts forbid or require once the cue begins
    line: int | None = None  # where the cue starts in its sheet

    @property
    def is_music(self) -> bool:
        return self.kind in MUSIC_KINDS


@dataclass(frozen=True)
class Variant:
    id: str
    title: str
    source: Source | None = None
    note: str = ""


@dataclass(frozen=True)
class ReadingChoice:
    """One value of a reading: the passage behind it and what it changes — cues replaced by
    their overridden form (cue id → Cue), or compile settings (name → value); ``fields``: for
    each cue, the fields the value sets (the others are left as earlier readings set them)."""

    value: str
    source: Source | None = None
    cues: MappingProxyType[str, Cue] = field(default_factory=lambda: MappingProxyType({}))
    setting: MappingProxyType[str, str] = field(default_factory=lambda: MappingProxyType({}))
    fields: MappingProxyType[str, frozenset[str]] = field(
        default_factory=lambda: MappingProxyType({}))

    @property
    def changes_nothing(self) -> bool:
        return not self.cues and not self.setting


@dataclass(frozen=True)
class Setting:
    """A reading the sources leave open: the value in force, the values allowed (``choices``)
    and, per value, what it changes (``options``; empty for a sheet's old string form);
    ``when``: the variants it needs (without them it is not in force, nor listed)."""

    name: str
    value: str
    choices: tuple[str, ...]
    note: str = ""
    options: tuple[ReadingChoice, ...] = ()
    when: tuple[str, ...] = ()

    def option(self, value: str) -> ReadingChoice | None:
        return next((o for o in self.options if o.value == value), None)


@dataclass(frozen=True)
class Rite:
    id: str
    title: str
    work: str
    hang: str  # 宮縣 軒縣 判縣 特縣
    layout: tuple[Position, ...]
    cues: tuple[Cue, ...]
    variants: tuple[Variant, ...] = ()
    active_variants: tuple[str, ...] = ()
    signals: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    settings: MappingProxyType[str, object] = field(
        default_factory=lambda: MappingProxyType({})
    )
    readings: tuple[Setting, ...] = ()
    path: str | None = None
    layout_source: Source | None = None
    warnings: tuple[str, ...] = ()  # what the loader found doubtful but not wrong
    notices: tuple[str, ...] = ()  # what a run is told of its choices (a no-op --reading)

    def cited_files(self) -> tuple[str, ...]:
        """Every bundled source file the sheet cites (cues, positions, variants, readings)."""
        sources = [self.layout_source, *(c.source for c in self.cues),
                   *(call.source for c in self.cues for call in c.calls),
                   *(rule for c in self.cues for rule in c.rules),
                   *(p.source for p in self.layout), *(v.source for v in self.variants),
                   *(o.source for r in self.readings for o in r.options)]
        return tuple(dict.fromkeys(s.file for s in sources if s is not None and s.file))

    def cue(self, cue_id: str) -> Cue:
        for c in self.cues:
            if c.id == cue_id:
                return c
        raise KeyError(cue_id)
