"""The site's own markup made accessible: what axe-core (tests/test_accessibility.py) found
serious on every page of both editions, fixed where it comes from.

- Bibliography: docutils writes each citation as ``role="doc-biblioentry"`` inside a
  ``role="list"``. DPUB-ARIA 1.1 deprecated that role, so browsers and axe see the list's
  entries as plain text and its links as children a list may not have ("aria-required-children",
  critical). Each entry becomes a ``listitem``, the role DPUB-ARIA names in its place.
- Link colours (static/accessibility.css): the theme's blue is 4.3:1 on an exercise's tinted
  box, under the 4.5:1 of WCAG 2 AA ("color-contrast", serious).
- Header buttons (templates/search-button-field.html, templates/theme-switcher.html): the
  theme's buttons name themselves with an ``aria-label`` that leaves out what they show ("Ctrl+K",
  the colour mode's icon title), so a speech-input user who says what they see misses the button
  ("label-content-name-mismatch", serious).
- A collapsed code cell (myst-nb's hide-cell, each chapter's Colab install block): its
  ``<summary>`` is named "Toggle hidden content" by an ``aria-label`` while it shows "Show code
  cell content" ("label-content-name-mismatch", serious). Without the label, its name is the
  words it shows.
- Code revealed by a dropdown (static/accessibility.js): a code block too wide for the page must
  be reachable by keyboard to scroll it ("scrollable-region-focusable", serious).

The templates and static files sit in the folders that editions.py adds to the build's paths.
"""

from docutils import nodes
from myst_nb.sphinx_ import HideCodeCellNode, depart_HideCellInput, visit_HideCellInput


def visit_citation(self, node):
    """The translator's own citation markup, with the entry's role that ARIA still has."""
    type(self).visit_citation(self, node)
    self.body[-1] = self.body[-1].replace('role="doc-biblioentry"', 'role="listitem"')


def visit_hidden_cell(self, node):
    """myst-nb's <details> for a collapsed cell, its <summary> named by the words it shows."""
    opened = len(self.body)
    visit_HideCellInput(self, node)
    self.body[opened:] = [part.replace(' aria-label="Toggle hidden content"', "")
                          for part in self.body[opened:]]


def setup(app):
    app.setup_extension("editions")
    app.add_node(nodes.citation, override=True, html=(visit_citation, None))
    app.add_node(HideCodeCellNode, override=True, html=(visit_hidden_cell, depart_HideCellInput))
    app.add_css_file("accessibility.css")
    app.add_js_file("accessibility.js", loading_method="defer")
    return {"parallel_read_safe": True, "parallel_write_safe": True}
