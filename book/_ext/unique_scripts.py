"""Drop repeated inline <script> blocks from every page.

With Jupyter Book 1.0.4 and Sphinx 7.4, inline scripts that extensions add after the builder
starts (sphinx-thebe's configuration, sphinx-togglebutton's selector) are emitted twice, and the
second ``const THEBE_JS_URL = ...`` throws "Identifier 'THEBE_JS_URL' has already been declared"
in the browser. Sphinx de-duplicates script *files* by name but not inline bodies; this does.
"""


def _script_key(script):
    # An inline script's filename is None or "" depending on who added it: both mean "none".
    filename = getattr(script, "filename", script) or ""
    attributes = getattr(script, "attributes", {})
    return filename, tuple(sorted((k, str(v)) for k, v in attributes.items()))


def drop_repeated_scripts(app, pagename, templatename, context, doctree):
    seen, unique = set(), []
    for script in context.get("script_files", []):
        key = _script_key(script)
        if key not in seen:
            seen.add(key)
            unique.append(script)
    context["script_files"] = unique


def setup(app):
    app.connect("html-page-context", drop_repeated_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
