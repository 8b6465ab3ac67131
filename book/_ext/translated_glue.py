"""Glued numbers in translated paragraphs, and no math in the translation catalogs.

Sphinx translates a page by parsing each translated message again, as a small document of its
own (``sphinx.transforms.i18n.publish_msgstr``, whose source ends in ``<translated>``). myst-nb
resolves ``{glue:text}`key``` while it parses a notebook, from the notebook's outputs that it
keeps on the page's document only during that parse (``document["nb_renderer"]``). The small
document of a translated message has no notebook, so myst-nb 1.4 pastes nothing and warns "No key
'x' found in glue data for this document".

myst-nb already knows how to paste a number later: a glue reference to another page becomes a
``PendingGlueReference`` that a post-transform fills in from the page's glue data, which myst-nb
writes to ``<output folder>/<page>.glue.json`` while it parses the page, before any translation.
So in a translated message this extension turns every glue role into such a pending reference,
to the current page for a plain key and to the named page for ``path::key``. The number is then
the same as on the English page, formatted by the same code. Outside translated messages the
roles are myst-nb's own, unchanged.

It also marks display math, and paragraphs of inline math alone, non-translatable: Sphinx
would otherwise put every equation into the catalogs, for translators to copy unchanged (and a
stale copy would replace the equation).
"""

from docutils import nodes
from myst_nb.ext.glue.roles import PasteRoleAny, PasteTextRole
from myst_nb.ext.glue.utils import PendingGlueReference, glue_warning
from sphinx.transforms import SphinxTransform


def in_translated_message(document: nodes.document) -> bool:
    return str(document.current_source or "").endswith("<translated>")


def pending_reference(role, key: str, **attributes) -> tuple[list, list]:
    """A reference to glue data, filled in by myst-nb's ReplacePendingGlueReferences."""
    env = role.document.settings.env
    refdoc = env.docname
    if "::" in key:
        path, key = key.split("::", 1)
        refdoc = env.path2doc(env.relfn2path(path, env.docname)[1])
        if refdoc is None:
            message = f"Pending glue reference document not found: {path!r}."
            return [], [glue_warning(message, role.document, role.line)]
    reference = PendingGlueReference(refdoc=refdoc, key=key, inline=True, **attributes)
    reference.source, reference.line = role.source, role.line
    return [reference], []


class TranslatedPasteText(PasteTextRole):
    """``{glue:text}`` that also works in a translated message."""

    def run(self):
        if not in_translated_message(self.document):
            return super().run()
        key, _, fmt_spec = self.text.rpartition(":")
        if not key:  # no format given
            key, fmt_spec = self.text, "s"
        return pending_reference(self, key, gtype="text", fmt_spec=fmt_spec)


class TranslatedPasteAny(PasteRoleAny):
    """``{glue}`` and ``{glue:any}`` that also work in a translated message."""

    def run(self):
        if not in_translated_message(self.document):
            return super().run()
        return pending_reference(self, self.text)


def only_math(paragraph: nodes.paragraph) -> bool:
    """A paragraph of inline math and punctuation only, such as a table cell "$t$, $k$"."""
    return any(isinstance(c, nodes.math) for c in paragraph.children) and all(
        isinstance(c, nodes.math) or (isinstance(c, nodes.Text) and not c.astext().strip(" ,;."))
        for c in paragraph.children)


class UntranslatableMath(SphinxTransform):
    """Keep equations out of the catalogs (run before Sphinx's Locale transform, priority 20)."""

    default_priority = 15

    def apply(self, **kwargs):
        for node in self.document.findall(nodes.math_block):
            node["translatable"] = False
        for node in self.document.findall(nodes.paragraph):
            if only_math(node):
                node["translatable"] = False


def adopt_translated_nodes(app, doctree):
    """Every node of a page belongs to the page's document, before the page is pickled.

    Sphinx's Locale transform parses each translated message as a small document of its own and
    moves the result into the page; the nodes nested in a moved node (the text of a **strong**,
    a glue reference) keep a reference to that small document, whose settings hold the whole
    build environment. Each translated page's doctree then pickled a copy of the environment
    (measured: intro 1.4 MB instead of 21 kB), and every later build that loads the doctrees,
    the single page printed to PDF above all, spent its time unpickling them.
    """
    for node in doctree.findall():
        if getattr(node, "_document", None) not in (None, doctree):
            node.document = doctree


def setup(app):
    app.setup_extension("myst_nb")
    app.connect("doctree-read", adopt_translated_nodes)
    app.add_role("glue", TranslatedPasteAny(), override=True)
    app.add_role_to_domain("glue", "", TranslatedPasteAny(), override=True)
    app.add_role_to_domain("glue", "any", TranslatedPasteAny(), override=True)
    app.add_role_to_domain("glue", "text", TranslatedPasteText(), override=True)
    app.add_transform(UntranslatableMath)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
