"""The book's editions link to each other: a language link in every page's header, and
``<link rel="alternate" hreflang=...>`` in every page's head.

The English edition is the site's root; every other edition is a folder of it named by its
Sphinx language (``zh_CN/``), built from the same sources by ``make book`` (see
book/_ext/edition_config.py). A page has the same name in every edition, so the link from a page
is the same page in the other edition. The link goes in the article header, before
sphinx-book-theme's own buttons, through the theme's ``article_header_end`` components.

The interface around the text (buttons, tooltips, the footer, solution titles) is in the
edition's language too: INTERFACE below holds the edition's words where Sphinx, the themes and
the extensions ship none, or wrong ones (sphinx-book-theme's zh_CN says 列印 for 打印).
"""

import json
import re
from os import path
from pathlib import Path

from docutils import nodes
from sphinx import addnodes
from sphinx.errors import ExtensionError
from sphinx.locale import get_translator
from sphinx.locale import init as init_locale
from sphinx.transforms import SphinxTransform
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util.i18n import docname_to_domain

HERE = Path(__file__).parent

# Each edition: its folder under the site's root, its BCP 47 tag, and the name of its language
# written in that language (the link's text).
EDITIONS = {
    "en": {"folder": "", "hreflang": "en", "name": "English"},
    "zh_CN": {"folder": "zh_CN/", "hreflang": "zh-CN", "name": "中文"},
}


def current_edition(config) -> str:
    return config.language if config.language in EDITIONS else "en"


def site_root_url(config) -> str:
    """The English edition's absolute URL (html_baseurl names this edition's folder)."""
    base = (config.html_baseurl or "").rstrip("/") + "/"
    folder = EDITIONS[current_edition(config)]["folder"]
    return base[: len(base) - len(folder)] if folder and base.endswith(folder) else base


def add_edition_links(app, pagename, templatename, context, doctree):
    if app.builder.name != "html":
        return  # a single-page build (the PDF's) has no same page in the other edition
    edition = current_edition(app.config)
    to_site_root = "../" * pagename.count("/") + "../" * EDITIONS[edition]["folder"].count("/")
    page = f"{pagename}.html"
    root = site_root_url(app.config)
    links = []
    for name, other in EDITIONS.items():
        links.append(f'<link rel="alternate" hreflang="{other["hreflang"]}" '
                     f'href="{root}{other["folder"]}{page}" />')
        if name != edition:
            context["other_editions"] = context.get("other_editions", []) + [{
                "url": f"{to_site_root}{other['folder']}{page}",
                "hreflang": other["hreflang"], "name": other["name"]}]
    links.append(f'<link rel="alternate" hreflang="x-default" href="{root}{page}" />')
    context["metatags"] = context.get("metatags", "") + "\n" + "\n".join(links)
    header = context.get("theme_article_header_end") or []
    if isinstance(header, str):
        header = [item.strip() for item in header.split(",") if item.strip()]
    if "language-switcher.html" not in header:
        context["theme_article_header_end"] = ["language-switcher.html", *header]


class TranslateTocCaptions(SphinxTransform):
    """Translate the captions of _toc.yml's parts.

    sphinx-external-toc inserts the root page's toctrees (priority 100) after Sphinx's Locale
    transform (priority 20) has translated the page, so their captions, which the gettext builder
    does extract into the root page's catalog, would stay English. This applies the same catalog.
    """

    default_priority = 101

    def apply(self, **kwargs):
        if not self.config.language or self.config.language == "en":
            return
        domain = docname_to_domain(self.env.docname, self.config.gettext_compact)
        dirs = [path.join(self.env.srcdir, folder) for folder in self.config.locale_dirs]
        catalog, has_catalog = init_locale(dirs, self.config.language, domain)
        if not has_catalog:
            return
        for toctree in self.document.findall(addnodes.toctree):
            caption = toctree.get("rawcaption") or toctree.get("caption")
            translated = catalog.gettext(caption) if caption else ""
            if translated and translated != caption:
                toctree.apply_translated_message(caption, translated)


# The edition's words for the interface, by where the English comes from.
INTERFACE = {
    "zh_CN": {
        # gettext catalogs, by domain; these words come before the catalog's own translations.
        # "sphinx": Sphinx's own words (the permalinks' tooltips) and pydata-sphinx-theme's.
        "sphinx": {
            "Link to this heading": "链接到本标题", "Link to this equation": "链接到本公式",
            "Link to this image": "链接到本图", "Link to this table": "链接到本表",
            "Link to this term": "链接到本术语", "Link to this code": "链接到本代码",
            "Link to this definition": "链接到本定义",
            "Color mode": "颜色模式", "System Settings": "跟随系统设置",
            "© Copyright %(copyright)s.": "版权所有 © %(copyright)s",
        },
        # sphinx-book-theme's header buttons ("Launch on" + " Binder", "Binder" + " logo")
        "booktheme": {
            "Print to PDF": "打印为 PDF", "Launch interactive content": "运行交互式内容",
            "Launch on": "运行于", "logo": "标志",
        },
        # Written without gettext, as title or aria-label: into sphinx-book-theme's templates,
        # and by sphinx-togglebutton's script (the solutions' and hidden cells' buttons).
        "attributes": {
            "Toggle primary sidebar": "显示或隐藏全书目录",
            "Toggle secondary sidebar": "显示或隐藏本页目录",
            "Main": "全书导航", "Page": "本页目录", "Toggle hidden content": "显示或隐藏内容",
        },
        # sphinx-exercise's solution title, "Solution to Exercise 3.1" in English.
        "solution title": "{exercise} 解答",
        # myst-nb's execution-statistics table, which has no catalog.
        "execution table": {
            "Document": "文档", "Modified": "修改时间", "Method": "执行方式",
            "Run Time (s)": "运行时间（秒）", "Status": "状态", "cache": "缓存",
        },
    },
}


def interface_words(config, part: str):
    return INTERFACE.get(config.language or "en", {}).get(part, {})


# The literal attributes that scripts write once the page has loaded.
TRANSLATE_ATTRIBUTES = """window.addEventListener('load', () => {
  const words = %s;
  for (const element of document.querySelectorAll('[title], [aria-label]')) {
    for (const name of ['title', 'aria-label']) {
      const english = element.getAttribute(name);
      if (english !== null && Object.hasOwn(words, english)) {
        element.setAttribute(name, words[english]);
      }
    }
  }
});"""


def translate_interface(app):
    """Put the edition's words before the catalogs' own, and translate the literal attributes
    in every page the builder renders and, once it has loaded, in the reader's browser
    (builder-inited: every catalog is loaded)."""
    for domain in ("sphinx", "booktheme"):
        words = interface_words(app.config, domain)
        # gettext's translator looks a message up in its own catalog (_catalog) before its
        # fallbacks: the first catalog found for the domain (Sphinx's, sphinx-book-theme's).
        catalog = getattr(get_translator(domain), "_catalog", None)
        if words and catalog is None:
            raise ExtensionError(f"editions: no {app.config.language} catalog {domain!r} "
                                 "to add the edition's interface words to")
        if words:
            catalog.update(words)
    words = interface_words(app.config, "attributes")
    templates = getattr(app.builder, "templates", None)
    if words and app.builder.format == "html" and templates is not None:
        literal = re.compile(rf'\b(title|aria-label)="({"|".join(map(re.escape, words))})"')
        render = templates.render

        def render_translated(template, context):
            return literal.sub(lambda m: f'{m[1]}="{words[m[2]]}"', render(template, context))

        templates.render = render_translated
        app.add_js_file(None, body=TRANSLATE_ATTRIBUTES % json.dumps(words, ensure_ascii=False))


class SolutionTitles(SphinxPostTransform):
    """A solution's title in the edition's word order: "练习 3.1 解答", where sphinx-exercise
    writes its word before the exercise's linked name and number ("解答 练习 3.1")."""

    default_priority = 23  # after sphinx-exercise resolves the titles (21, 22)

    def run(self, **kwargs):
        order = interface_words(self.config, "solution title")
        if not order:
            return
        from sphinx_exercise.nodes import solution_node

        before, after = order.split("{exercise}")
        for solution in self.document.findall(solution_node):
            title = solution.children[0]
            if len(title) != 2 or not isinstance(title[1], nodes.reference):
                continue  # a solution with a title of its own
            exercise = title[1]
            exercise.replace(exercise[0], nodes.Text(str(exercise[0]).lstrip()))
            title.clear()
            title += [nodes.Text(before), exercise, nodes.Text(after)]
            solution["title"] = title.astext()


# myst-nb marks a chapter's status with emoji, which a machine without an emoji font (headless
# Chromium in CI, the PDF) draws as boxes: the check mark and the cross of DejaVu Sans instead.
STATUS_MARKS = {"✅": "✓", "❌": "✗"}


class TranslateExecutionTable(SphinxPostTransform):
    """The table of ``{nb-exec-table}``, which myst-nb writes (priority 8) in English and with
    emoji status marks: its headers in the edition's language, its marks drawable by any font."""

    default_priority = 9

    def run(self, **kwargs):
        words = interface_words(self.config, "execution table")
        for table in self.document.findall(nodes.table):
            if "Run Time (s)" not in {str(t) for t in table.findall(nodes.Text)}:
                continue
            for text in list(table.findall(nodes.Text)):
                replaced = words.get(str(text), STATUS_MARKS.get(str(text)))
                if replaced:
                    text.parent.replace(text, nodes.Text(replaced))


def add_paths(app, config):
    config.templates_path = [*config.templates_path, str(HERE / "templates")]
    config.html_static_path = [*config.html_static_path, str(HERE / "static")]


def setup(app):
    app.connect("config-inited", add_paths)
    # after pydata-sphinx-theme has turned the theme's component lists into lists (priority 500)
    app.connect("html-page-context", add_edition_links, priority=950)
    app.add_css_file("editions.css")
    app.add_transform(TranslateTocCaptions)
    app.add_post_transform(TranslateExecutionTable)
    app.add_post_transform(SolutionTitles)
    app.connect("builder-inited", translate_interface)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
