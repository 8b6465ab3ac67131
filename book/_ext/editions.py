"""The book's editions link to each other: a language link in every page's header, and
``<link rel="alternate" hreflang=...>`` in every page's head.

The English edition is the site's root; every other edition is a folder of it named by its
Sphinx language (``zh_CN/``), built from the same sources by ``make book`` (see
book/_ext/edition_config.py). A page has the same name in every edition, so the link from a page
is the same page in the other edition. The link goes in the article header, before
sphinx-book-theme's own buttons, through the theme's ``article_header_end`` components.
"""

from os import path
from pathlib import Path

from docutils import nodes
from sphinx import addnodes
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


# Interface strings of extensions that ship no catalog: myst-nb's execution-statistics table
# (its headers, and "cache", the method of every chapter).
INTERFACE = {
    "zh_CN": {"Document": "文档", "Modified": "修改时间", "Method": "执行方式",
              "Run Time (s)": "运行时间（秒）", "Status": "状态", "cache": "缓存"},
}


# myst-nb marks a chapter's status with emoji, which a machine without an emoji font (headless
# Chromium in CI, the PDF) draws as boxes: the check mark and the cross of DejaVu Sans instead.
STATUS_MARKS = {"✅": "✓", "❌": "✗"}


class TranslateExecutionTable(SphinxPostTransform):
    """The table of ``{nb-exec-table}``, which myst-nb writes (priority 8) in English and with
    emoji status marks: its headers in the edition's language, its marks drawable by any font."""

    default_priority = 9

    def run(self, **kwargs):
        words = INTERFACE.get(self.config.language or "en", {})
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
    return {"parallel_read_safe": True, "parallel_write_safe": True}
