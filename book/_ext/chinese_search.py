"""The Chinese edition's search: the index and a reader's query are cut into the same words.

Sphinx's Chinese search language (``html_search_language: zh``) cuts the index into words with
jieba at build time, but searchtools.js looks a query up whole: 梯度消失, typed into the search
box, is one term, which an index holding 梯度 and 消失 does not have. This extension makes the two
agree, in the edition whose search language is Chinese; the English edition is left as it is.

- At build time the book's own terms, the Chinese of every glossary term, go into jieba's
  dictionary before the index is built, so that the index holds 梯度消失 as a word, besides the
  words 梯度 and 消失 that ``jieba.cut_for_search`` also gives. Headings do not: a heading is a
  phrase, and a dictionary word of more than three characters hides its four-character parts.
  A glossary word that jieba leaves inside a longer word (门, the term for a gate, inside 遗忘门)
  is indexed for that page too, and a one-character glossary word is kept in the index, which
  otherwise drops every word of one character.
- In the browser, ``chinese_search.js`` cuts the query against the index's own vocabulary,
  finds the pages that hold every word, puts those that hold the whole phrase first, and centres
  the snippet on it. Sphinx writes it into ``_static/language_data.js`` as the language's query
  splitter (``SearchLanguage.js_splitter_code``): no dictionary is downloaded, and only the
  Chinese edition's search page runs it.
- The search box of the edition says ``book_search_bar_text`` (set per edition by
  book/_ext/edition_config.py), instead of Jupyter Book's "Search this book...", and the page has
  one search box, the sidebar's (both editions).
"""

import re
from pathlib import Path

HERE = Path(__file__).parent
# Runs of Chinese characters (CJK Unified Ideographs): what jieba cuts.
HAN = re.compile(r"[\u4e00-\u9fff]+")


class LatinTerms(set):
    """A set with the one list method that SearchChinese.split calls on its Latin words."""

    extend = set.update


def chinese_search_language():
    """Sphinx 7.4's Chinese search language, with the book's query splitter and its Latin words
    kept in a set.

    ``sphinx.search.zh.SearchChinese`` appends every Latin word it meets to a list and searches
    that list each time it stems a word: quadratic in the size of the book (12 s of a build while
    the chapters were still English). A set gives the same words and the same stems.
    """
    from sphinx.search.zh import SearchChinese

    class SearchChineseBook(SearchChinese):
        js_splitter_code = (HERE / "chinese_search.js").read_text(encoding="utf-8")
        book_words = frozenset()  # the glossary's Chinese words (add_book_words sets them)

        def init(self, options):
            super().init(options)
            self.latin_terms = LatinTerms()

        def split(self, input):
            words = super().split(input)
            return words + [term for word in words for term in self.book_words
                            if term in word and term != word]

        def word_filter(self, stemmed_word):
            return super().word_filter(stemmed_word) or stemmed_word in self.book_words

    return SearchChineseBook


def searches_chinese(config) -> bool:
    language = config.html_search_language or config.language or ""
    return language.split("_")[0] == "zh"


def glossary_words(env) -> list[str]:
    """The Chinese words of the glossary's terms, as the edition's glossary writes them
    ("梯度消失（vanishing gradient）" gives 梯度消失; "softmax 饱和（...）" gives 饱和)."""
    objects = env.get_domain("std").objects
    return sorted({word for objtype, name in objects if objtype == "term"
                   for word in HAN.findall(name)})


def add_book_words(app, env):
    """Before the HTML builder creates the index (prepare_writing), once the glossary is read."""
    if not searches_chinese(app.config):
        return
    import jieba

    words = glossary_words(env)
    for word in words:
        # No frequency: jieba then gives the word one just high enough to be cut whole.
        if len(word) > 1:
            jieba.add_word(word)
    from sphinx.search import languages  # what app.add_search_language registered

    languages["zh"].book_words = frozenset(words)


def configure_search_box(app, config):
    """One search box, the sidebar's, in the edition's words. pydata-sphinx-theme 0.17 puts a
    second one in a top bar of its own unless ``navbar_persistent`` is set (it ignores
    sphinx-book-theme's empty default)."""
    options = {**config.html_theme_options, "navbar_persistent": []}
    if config.book_search_bar_text:
        options["search_bar_text"] = config.book_search_bar_text
    config.html_theme_options = options


def setup(app):
    app.add_config_value("book_search_bar_text", "", "html")
    app.connect("config-inited", configure_search_box)
    app.connect("env-updated", add_book_words)
    app.add_search_language(chinese_search_language())
    return {"parallel_read_safe": True, "parallel_write_safe": True}
