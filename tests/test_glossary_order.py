"""The Chinese glossary's order (book/_ext/glossary_order.py): a Chinese dictionary's, by pinyin.

The English glossary is checked in tests/test_book_pages.py (alphabetical in the source); the
order of both built pages, English and Chinese, in tests/test_browser.py.
"""

import sys
from pathlib import Path

from docutils import nodes
from sphinx import addnodes

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "book" / "_ext"))
from glossary_order import READINGS, chinese_term, pinyin_key, sort_glossary

# Terms of the book's glossary in the order of a Chinese dictionary, worked out by hand:
# bǎo < bìng < cán chā lián < cán chā liú < céng < cháng chéng < cháng duǎn < cí < …
DICTIONARY_ORDER = [
    "饱和（saturation）", "并行扫描（parallel scan）", "残差连接（residual connection）",
    "残差流（residual stream）", "层归一化（layer normalisation）",
    "长程依赖（long-range dependency）", "长短期记忆网络（long short-term memory）",
    "词元袋（bag of tokens）", "计算图（computational graph）", "键回忆（key recall）",
    "键值缓存（KV cache）", "奇异值（singular value）", "起始段（burn-in）",
    "前置层归一化（Pre-LN）", "瞬态放大（transient amplification）",
    "隐藏状态（hidden state）", "自注意力（self-attention）",
    # terms that begin with a Latin letter come last, in Latin order
    "Post-LN（后置层归一化）", "Pre-LN（前置层归一化）", "softmax 饱和（softmax saturation）"]


def test_terms_sort_as_in_a_chinese_dictionary():
    shuffled = DICTIONARY_ORDER[::2] + DICTIONARY_ORDER[1::2]
    assert sorted(shuffled, key=pinyin_key) == DICTIONARY_ORDER


def test_polyphones_are_read_as_in_these_terms():
    # 长 is cháng in 长程 (not zhǎng), 奇 is qí in 奇异 (not jī), 藏 is cáng in 隐藏
    assert pinyin_key("长程依赖")[1][0] == ("chang", 2)
    assert pinyin_key("奇异值")[1][0] == ("qi", 2)
    assert pinyin_key("隐藏状态")[1][1] == ("cang", 2)
    # 差 in 残差 is chā, which pypinyin reads chà unless told (READINGS)
    assert "残差" in READINGS and pinyin_key("残差流")[1][1] == ("cha", 1)


def test_a_syllable_is_compared_by_its_letters_before_its_tone():
    # qǐ (起) before qián (前): the letters qi < qian decide, although tone 3 > tone 2
    assert pinyin_key("起始段") < pinyin_key("前置层归一化")
    # with the same letters, the tone decides: qí (奇) before qǐ (起)
    assert pinyin_key("奇异值") < pinyin_key("起始段")


def test_the_chinese_term_is_read_before_its_english_in_brackets():
    assert chinese_term("残差流（residual stream）") == "残差流"
    assert chinese_term("softmax 饱和（softmax saturation）") == "softmax 饱和"


def glossary_of(terms: list[str]) -> addnodes.glossary:
    items = [nodes.definition_list_item("", nodes.term("", term),
                                        nodes.definition("", nodes.paragraph("", f"{i}")))
             for i, term in enumerate(terms)]
    glossary = addnodes.glossary()
    glossary += nodes.definition_list("", *items)
    return glossary


def test_sorting_a_glossary_moves_each_definition_with_its_term():
    shuffled = DICTIONARY_ORDER[::-1]
    glossary = glossary_of(shuffled)
    sort_glossary(glossary, pinyin_key)
    items = glossary[0].children
    assert [item[0].astext() for item in items] == DICTIONARY_ORDER
    assert [int(item[1].astext()) for item in items] == [
        shuffled.index(term) for term in DICTIONARY_ORDER]
