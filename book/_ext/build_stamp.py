"""Every page's footer says which build it is: the commit's short hash and date, from git.

    Build 1a2b3c4, 2026-03-10                                  (English)
    构建 1a2b3c4，2026-03-10；工作区有未提交的修改               (简体中文, a tree with changes)

git is read once per build, when the configuration is read (``config-inited``), so that the
stamp is part of the configuration Sphinx compares between builds: a new commit rewrites every
page, never only the changed ones. The date is the commit's (UTC), so both editions, and the two
PDFs, built from one commit say the same; "uncommitted changes" when ``git status`` lists any
file that .gitignore does not ignore. Outside a git checkout the stamp says so, with the date of
the build. print_pdf.py copies the single-page build's stamp onto each PDF's title page.
"""

import datetime
import subprocess
from pathlib import Path

TEMPLATES = Path(__file__).parent / "templates"  # build-stamp.html

# What the stamp says, per edition language.
LABELS = {
    "en": {"commit": "Build {commit}, {date}", "dirty": "; uncommitted changes",
           "no git": "Build of {date}, not from a git checkout"},
    "zh_CN": {"commit": "构建 {commit}，{date}", "dirty": "；工作区有未提交的修改",
              "no git": "构建于 {date}，不在 git 仓库中"},
}


def git(folder: Path, *arguments: str) -> str | None:
    """git's output in `folder`, or None when git or the repository is missing."""
    try:
        done = subprocess.run(["git", "-C", str(folder), *arguments], capture_output=True,
                              text=True, check=False, timeout=30)
    except OSError:
        return None
    return done.stdout if done.returncode == 0 else None


def read_stamp(folder: Path) -> dict:
    """The build's commit (short hash, or None outside git), its date and whether it is dirty."""
    head = git(folder, "log", "-1", "--format=%h %ct")
    if not head:
        today = datetime.datetime.now(datetime.UTC).date().isoformat()
        return {"commit": None, "date": today, "dirty": False}
    commit, seconds = head.split()
    date = datetime.datetime.fromtimestamp(int(seconds), datetime.UTC).date().isoformat()
    return {"commit": commit, "date": date, "dirty": bool(git(folder, "status", "--porcelain"))}


def stamp_text(stamp: dict, language: str) -> str:
    labels = LABELS.get(language, LABELS["en"])
    if stamp["commit"] is None:
        return labels["no git"].format(**stamp)
    return labels["commit"].format(**stamp) + (labels["dirty"] if stamp["dirty"] else "")


def add_stamp_to_context(app, config):
    stamp = read_stamp(Path(app.srcdir))
    stamp["text"] = stamp_text(stamp, config.language or "en")
    config.html_context = {**config.html_context, "build_stamp": stamp}
    if str(TEMPLATES) not in config.templates_path:
        config.templates_path = [*config.templates_path, str(TEMPLATES)]


def add_stamp_to_footer(app, pagename, templatename, context, doctree):
    items = context.get("theme_footer_content_items") or []
    if isinstance(items, str):
        items = [item.strip() for item in items.split(",") if item.strip()]
    if "build-stamp.html" not in items:
        context["theme_footer_content_items"] = [*items, "build-stamp.html"]


def setup(app):
    app.connect("config-inited", add_stamp_to_context)
    # after sphinx-book-theme has turned its footer's component list into a list (priority 500)
    app.connect("html-page-context", add_stamp_to_footer, priority=950)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
