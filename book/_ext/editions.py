"""The book's editions link to each other: a language link in every page's header, and
``<link rel="alternate" hreflang=...>`` in every page's head.

The English edition is the site's root; every other edition is a folder of it named by its
Sphinx language (``zh_CN/``), built from the same sources by ``make book`` (see
book/_ext/edition_config.py). A page has the same name in every edition, so the link from a page
is the same page in the other edition. The link goes in the article header, before
sphinx-book-theme's own buttons, through the theme's ``article_header_end`` components.
"""

from pathlib import Path

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


def add_paths(app, config):
    config.templates_path = [*config.templates_path, str(HERE / "templates")]
    config.html_static_path = [*config.html_static_path, str(HERE / "static")]


def setup(app):
    app.connect("config-inited", add_paths)
    # after pydata-sphinx-theme has turned the theme's component lists into lists (priority 500)
    app.connect("html-page-context", add_edition_links, priority=950)
    app.add_css_file("editions.css")
    return {"parallel_read_safe": True, "parallel_write_safe": True}
