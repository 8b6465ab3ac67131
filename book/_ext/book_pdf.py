"""A link to the book's PDF in every page's download menu.

`make book` prints the whole book, from a single-page build, to
``<edition's html root>/_downloads/<book_pdf_filename>`` (see print_pdf.py beside this file).
Every page of the HTML site gets a "Book (.pdf)" entry in sphinx-book-theme's download dropdown,
next to the theme's own ".pdf" (which prints only the page being read). Each edition links to
the PDF in its own root, so a Chinese edition at ``_build/html/zh_CN/`` links to its own PDF;
``book_pdf_root`` (a path relative to the edition's root, empty by default) could point an
edition without a PDF of its own at another edition's; both editions now have their own.

The single-page build leaves out every collapsed (hide-cell) code cell: myst-nb registers its
collapsible node for the ``html`` builder only, and a collapsed cell, each chapter's Colab install
block, is for the reader of the site, not of the printed book.
"""

import posixpath

from docutils import nodes
from myst_nb.sphinx_ import HideCodeCellNode


def add_book_pdf_button(app, pagename, templatename, context, doctree):
    # The single-page build is what gets printed: it needs no link to itself.
    if app.builder.name != "html":
        return
    for button in context.get("header_buttons", []):
        if button.get("label") == "download-buttons":
            button["buttons"].append({
                "type": "link",
                "url": context["pathto"](posixpath.join(
                    app.config.book_pdf_root, "_downloads", app.config.book_pdf_filename), 1),
                "text": app.config.book_pdf_label,
                "tooltip": app.config.book_pdf_tooltip,
                "icon": "fas fa-book",
                "label": "download-book-pdf-button",
            })


def skip_node(translator, node):
    raise nodes.SkipNode


def setup(app):
    app.add_node(HideCodeCellNode, override=True, singlehtml=(skip_node, None))
    app.add_config_value("book_pdf_filename", "book.pdf", "html", types=[str])
    app.add_config_value("book_pdf_root", "", "html", types=[str])
    app.add_config_value("book_pdf_label", "Book (.pdf)", "html", types=[str])
    app.add_config_value("book_pdf_tooltip", "Download the whole book as a PDF", "html",
                         types=[str])
    # sphinx-book-theme fills the header buttons at priority 501; this runs after it.
    app.connect("html-page-context", add_book_pdf_button, priority=600)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
