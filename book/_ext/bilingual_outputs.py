"""Cell outputs in both languages: each edition's pages keep those of their own language.

The chapters execute once for both editions, so what a cell shows holds both languages
(longdep.book's Bilingual texts, bilingual Tables and BilingualFigures): one output whose HTML,
as longdep.book writes it, is one ``<div class="longdep-lang" lang="...">``
per language ("en", "zh-CN"), and whose text holds both (what nbval compares, and what plain
Jupyter or Colab shows beside the HTML: both languages, one under the other).

While Sphinx reads a page, this transform replaces each such output by its part in the
edition's language, as the node myst-nb makes for the same output shown in one language: a
printed text becomes a printed output (a literal block, as ``print`` gives), a figure's PNG an
image written to myst-nb's output folder (Sphinx copies it to _images/, as any notebook image)
with its alt text, a table stays the HTML table. So a page holds only its own language: no
hidden copy to download, to index for search, to read aloud or to print into the PDF, and the
images are files rather than data inside the page.
"""

import base64
import hashlib
import html
import os
import re
from pathlib import Path

from docutils import nodes
from sphinx.transforms import SphinxTransform
from sphinx.util import logging

LOGGER = logging.getLogger(__name__)
DIV = '<div class="longdep-lang"'
PART = re.compile(DIV + r' lang="([\w-]+)">(.*?)</div>(?=' + DIV + "|$)", re.DOTALL)
TEXT = re.compile(r"<pre>(.*)</pre>", re.DOTALL)
IMAGE = re.compile(r'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)" alt="([^"]*)">')


def edition_language(config) -> str:
    """The edition's language as longdep.book tags the parts: "zh-CN" or "en"."""
    return "zh-CN" if (config.language or "en").startswith("zh") else "en"


class KeepTheEditionsLanguage(SphinxTransform):
    """Replace every bilingual output by its part in the edition's language (module docstring)."""

    default_priority = 500

    def apply(self, **kwargs):
        language = edition_language(self.config)
        for raw in list(self.document.findall(nodes.raw)):
            if "html" in raw.get("format", "").split() and raw.astext().startswith(DIV):
                parts = dict(PART.findall(raw.astext()))
                if language not in parts:
                    LOGGER.warning(f"a bilingual output without a {language!r} part: "
                                   f"{raw.astext()[:80]!r}", location=raw)
                    continue
                raw.parent.replace(raw, self.node_for(parts[language], raw))

    def node_for(self, part: str, raw: nodes.raw) -> nodes.Element:
        if text := TEXT.fullmatch(part):
            lexer = self.env.mystnb_config.render_text_lexer
            text = html.unescape(text.group(1))
            return nodes.literal_block(text, text, language=lexer, classes=["output", "stream"])
        if image := IMAGE.fullmatch(part):
            return nodes.image(uri=self.written(base64.b64decode(image.group(1))),
                               alt=html.unescape(image.group(2)))
        return nodes.raw(part, part, format="html", classes=raw["classes"])

    def written(self, png: bytes) -> str:
        """Write a PNG where myst-nb writes a notebook's images; its URI for Sphinx."""
        name = f"{hashlib.sha256(png).hexdigest()}.png"
        path = Path(self.env.mystnb_config.output_folder) / name
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(png)
        return "/" + Path(os.path.relpath(path, self.app.srcdir)).as_posix()


def setup(app):
    app.setup_extension("myst_nb")
    app.add_transform(KeepTheEditionsLanguage)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
