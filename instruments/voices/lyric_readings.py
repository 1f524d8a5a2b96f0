"""The reading of every character the 風雅十二詩譜 songs sing: its pinyin initial and final.

One idea, a data table.  The 歌 (``instruments.voices.sung``) sings a vowel per syllable: it needs
the syllable's final (the vowel and its coda) and its initial (the consonant onset), nothing else.
The table covers the 314 characters of the twelve songs' lyrics (``cues.repertoire``) and the
獲者's two calls, 獲 and 諾 (``sequencer.timeline.calls``), and was
generated once with pypinyin 0.55.0 (``Style.INITIALS`` / ``Style.FINALS``, ``strict=True``, the
first reading of a heteronym), so the project needs no pinyin library at run time.  The readings
are modern standard Mandarin — a documented choice: the Zhou pronunciation is reconstructed only
in part and a singer of these songs today sings them in Mandarin; no reconstruction is
attempted.  A character that is not in the table is sung on /a/ with no consonant.

Format: ``<character><initial>.<final>`` separated by spaces; ``-`` is the empty initial; the
finals are pypinyin's strict finals (``iou`` for yōu, ``v`` for ü, ``uei`` for wèi …).
"""

from __future__ import annotations

from types import MappingProxyType

_TABLE = """
㵎j.ian 下x.ia 不b.u 且q.ie 中zh.ong 之zh.i 事sh.i 于-.v 云-.vn 人r.en 以-.i 何h.e
作z.uo 來l.ai 侯h.ou 保b.ao 倭-.uo 偕x.ie 側c.e 傚x.iao 傷sh.ang 僕p.u 僮t.ong
光g.uang 兕s.i 兩l.iang 公g.ong 六l.iou 兮x.i 其q.i 刈-.i 則z.e 北b.ei 南n.an
卷j.van 原-.van 參c.an 又-.iou 及j.i 友-.iou 反f.an 只zh.i 右-.iou 吁x.v 君j.vn
否f.ou 吹ch.uei 告g.ao 呦-.iou 周zh.ou 和h.e 咨z.i 哉z.ai 啟q.i 喈j.ie 嗟j.ie 嘉j.ia
嘽ch.an 四s.i 在z.ai 均j.vn 基j.i 壽sh.ou 夙s.u 多d.uo 夜-.ie 夫f.u 奠d.ian 女n.v
好h.ao 如r.u 姑g.u 子z.i 孔k.ong 季j.i 宗z.ong 室sh.i 宮g.ong 害h.ai 家j.ia 寐m.ei
寘zh.i 寤-.u 寧n.ing 將j.iang 尸sh.i 居j.v 山sh.an 岡g.ang 崔c.uei 嵬-.uei 巢ch.ao
左z.uo 差ch.a 已-.i 師sh.i 度d.u 式sh.i 彼b.i 征zh.eng 後h.ou 得d.e 御-.v 德d.e
心x.in 思s.i 恌t.iao 悠-.iou 悲b.ei 懷h.uai 成ch.eng 我-.uo 承ch.eng 敖-.ao 斁-.i
方f.ang 施sh.i 既j.i 旨zh.i 昭zh.ao 是sh.i 時sh.i 有-.iou 服f.u 期q.i 木m.u 李l.i
杞q.i 杻ch.ou 枸g.ou 栩x.v 栲k.ao 桑s.ang 楊-.iang 楰-.v 樂l.e 樛j.iou 歌g.e 止zh.i
歸g.uei 母m.u 每m.ei 氏sh.i 民m.in 永-.iong 求q.iou 汕sh.an 污-.u 沃-.uo 沚zh.i
河h.e 沼zh.ao 洲zh.ou 流l.iou 淑sh.u 湘x.iang 湛zh.an 潦l.ao 澣h.uan 濡r.u 濩h.uo
濱b.in 灌g.uan 為-.uei 烝zh.eng 無-.u 然r.an 燕-.ian 爰-.van 父f.u 爾-.er 牖-.iou
牡m.u 物-.u 獲h.uo 玄x.van 王-.uang 琴q.in 瑟s.e 瓠h.u 甘g.an 用-.iong 疆j.iang 痡f.u 瘏t.u
百b.ai 皇h.uang 盈-.ing 盛sh.eng 盬g.u 眉m.ei 矣-.i 砠j.v 示sh.i 祁q.i 私s.i 窈-.iao
窕t.iao 笙sh.eng 筐k.uang 筥j.v 簧h.uang 絲s.i 絺ch.i 綌x.i 綏s.uei 維-.uei 纍l.ei
罍l.ei 罩zh.ao 罶l.iou 翩p.ian 者zh.e 耇g.ou 耳-.er 臺t.ai 艾-.ai 芩q.in 芼m.ao
苞b.ao 若r.uo 苹p.ing 茂m.ao 荇x.ing 莫m.o 菜c.ai 華h.ua 萊l.ai 萋q.i 萬-.uan 葉-.ie
葛g.e 蒿h.ao 薄b.ao 藻z.ao 蘋p.ing 蘩f.an 處ch.u 虺h.uei 行x.ing 衎k.an 衣-.i 被b.ei
覃t.an 視sh.i 觥g.ong 言-.ian 詢x.vn 誰sh.uei 諏z.ou 諗sh.en 諾n.uo 謀m.ou 谷g.u 豈q.i
賓b.in 載z.ai 輾zh.an 轉zh.uan 轡p.ei 逑q.iou 遐x.ia 遑h.uang 道d.ao 遲ch.i 還h.ai
邦b.ang 酌zh.uo 酒j.iou 采c.ai 野-.ie 金j.in 釜f.u 錡q.i 鍾zh.ong 關g.uan 陟zh.i
隤t.uei 隰x.i 集j.i 雎j.v 靡m.i 音-.in 頃q.ing 飛f.ei 食sh.i 馬m.a 馳ch.i 駒j.v
駕j.ia 駪sh.en 駰-.in 駱l.uo 駸q.in 騏q.i 騑f.ei 驅q.v 驟zh.ou 高g.ao 魚-.v 魴f.ang
鯉l.i 鯊sh.a 鰋-.ian 鱧l.i 鱨ch.ang 鳥n.iao 鳩j.iou 鳴m.ing 鵲q.ve 鵻zh.uei 鹿l.u
麗l.i 黃h.uang 鼓g.u 齊q.i
"""


def _parse(table: str) -> dict[str, tuple[str, str]]:
    out: dict[str, tuple[str, str]] = {}
    for item in table.split():
        initial, final = item[1:].split(".")
        out[item[0]] = ("" if initial == "-" else initial, final)
    return out


READINGS: MappingProxyType[str, tuple[str, str]] = MappingProxyType(_parse(_TABLE))
"""character → (pinyin initial, pinyin final)"""


def reading(syllable: str | None) -> tuple[str, str]:
    """(initial, final) of a sung syllable; ``("", "a")`` for no lyric or an unknown one."""
    if syllable:
        found = READINGS.get(syllable[0])
        if found is not None:
            return found
    return ("", "a")
