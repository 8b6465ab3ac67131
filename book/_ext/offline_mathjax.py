"""Serve MathJax 3 from the Python package django-static-mathjax, so math renders with no network.

`pip install -r requirements.txt` is then all a reader needs before `jupyter-book build .`: no npm
step and no CDN. Each HTML build copies MathJax into its own output folder, `<outdir>/mathjax/`,
outside `_static/`; `mathjax_path` is relative to `_static/`, so every page, at any depth, loads
it relatively. A translated build into `_build/html/zh_CN/` or a `singlehtml` build into
`_build/singlehtml/` thus gets its own copy. Without the package the build fails at once, before
any notebook is executed, saying what to install: a site whose math stays raw TeX is never built.
"""

import shutil
from importlib import resources
from pathlib import Path

from sphinx.errors import ExtensionError

PACKAGE = "django-static-mathjax==3.2.2.1"  # the pin in requirements.txt
ENTRY_POINT = "tex-chtml.js"
TARGET = "mathjax"


def mathjax_es5():
    """MathJax's es5/ folder in the package `mathjax` that django-static-mathjax installs.

    An ExtensionError says what to install if the package is missing, or if another module named
    `mathjax` comes first on the path.
    """
    try:
        es5 = resources.files("mathjax") / "static" / "mathjax" / "es5"
        found = (es5 / ENTRY_POINT).is_file()
    except (ModuleNotFoundError, TypeError):  # not installed, or `mathjax` is a plain module
        found = False
    if not found:
        raise ExtensionError(
            "MathJax 3 not found. This book typesets its math offline with the MathJax files of "
            f"the Python package {PACKAGE}: install it with `pip install {PACKAGE}` "
            "(or `pip install -r requirements.txt`), then build again.")
    return es5


def copy_mathjax(app):
    """Copy the entry point and the components it loads on demand into <outdir>/mathjax/.

    Each top-level file of es5/ is a separate entry point and a page loads only one, so of those
    only tex-chtml.js is copied (about 10 MB of MathJax's 24). The subfolders hold what it loads
    later: fonts, TeX extensions (autoload, \\require), and the menu's accessibility and SVG parts.
    """
    if app.builder.format != "html":
        return
    target = Path(app.outdir) / TARGET
    with resources.as_file(mathjax_es5()) as es5:
        target.mkdir(parents=True, exist_ok=True)
        shutil.copy2(es5 / ENTRY_POINT, target / ENTRY_POINT)
        for folder in (p for p in es5.iterdir() if p.is_dir()):
            shutil.copytree(folder, target / folder.name, dirs_exist_ok=True)


def use_local_mathjax(app, config):
    """Point every page at the copy; Sphinx reads mathjax_path relative to `<outdir>/_static/`."""
    config.mathjax_path = f"../{TARGET}/{ENTRY_POINT}"


def setup(app):
    app.connect("config-inited", use_local_mathjax)
    app.connect("builder-inited", copy_mathjax)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
