"""The glossary of a translated edition in that language's dictionary order.

book/glossary.md lists its terms in English alphabetical order. The Chinese edition translates
each term through the catalog ("残差流（residual stream）"), and Sphinx keeps the source order, so a
Chinese reader would meet the terms in an order that means nothing to them. After Sphinx's Locale
transform has translated the page, :class:`SortGlossaries` re-sorts the entries of every glossary
by their translated term. For zh_CN that is the order of a Chinese dictionary: by Hanyu Pinyin,
character by character, a syllable's letters before its tone (pypinyin gives both); terms that
begin with a Latin letter ("softmax 饱和", "Post-LN") follow, in Latin order, as in the
Xiandai Hanyu Cidian (现代汉语词典). The English edition is left as written.
"""

import re

from docutils import nodes
from pypinyin import Style, lazy_pinyin, load_phrases_dict
from sphinx import addnodes
from sphinx.transforms import SphinxTransform

CJK = re.compile(r"[\u4e00-\u9fff]")
SYLLABLE = re.compile(r"([a-zü]+)([1-5])")
# Readings of the book's terms that pypinyin's phrase table gets wrong (现代汉语词典: 残差 cánchā).
READINGS = {"残差": [["cán"], ["chā"]]}
load_phrases_dict(READINGS)


def chinese_term(term: str) -> str:
    """The Chinese term of a translated glossary term, without its English in brackets."""
    return re.split(r"[（(]", term, maxsplit=1)[0].strip()


def pinyin_key(term: str) -> tuple:
    """Sort key of a translated term in dictionary order; Latin-initial terms come last."""
    head = chinese_term(term)
    if not CJK.match(head):
        return (1, head.casefold())
    syllables = []
    for item in lazy_pinyin(head, style=Style.TONE3, neutral_tone_with_five=True):
        match = SYLLABLE.fullmatch(item)
        syllables.append((match[1], int(match[2])) if match else (item.strip().casefold(), 0))
    return (0, tuple(syllables), head)


SORT_KEYS = {"zh_CN": pinyin_key}


class SortGlossaries(SphinxTransform):
    """Re-sort each glossary of a translated page by its translated terms."""

    # Sphinx's Locale transform, which translates the terms, has priority 20.
    default_priority = 21

    def apply(self, **kwargs):
        key = SORT_KEYS.get(self.config.language or "en")
        # the gettext builder extracts messages in the source's order
        if key is None or self.app.builder.name == "gettext":
            return
        for glossary in self.document.findall(addnodes.glossary):
            sort_glossary(glossary, key)


def sort_glossary(glossary: addnodes.glossary, key) -> None:
    """Order the entries of a glossary by `key` of their (first) term's text."""
    for entries in glossary.children:
        if isinstance(entries, nodes.definition_list):
            entries.children.sort(key=lambda item: key(item[0].astext()))


def setup(app):
    app.add_transform(SortGlossaries)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
