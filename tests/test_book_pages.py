"""The reader's pages, read as files (nothing is executed): the chapters' Colab cells, exercises,
key takeaways and labels; the glossary; the errata and notation pages (issue 7).

The build catches a broken reference too, but only after minutes of execution; these checks take
well under a second and say which page and which rule is broken.
"""

import json
import re
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
BOOK = REPO / "book"
CHAPTERS = sorted(BOOK.glob("[0-9][0-9]_*.ipynb"))
BACK_MATTER = [BOOK / "errata.md", BOOK / "notation.md", BOOK / "glossary.md"]
# The source article's title, exactly (its term 长时依赖 is the book's 长程依赖).
ARTICLE_TITLE = "《Transformer 从0到1：长时依赖问题的本质——梯度消失与爆炸》"
CATALOGS = BOOK / "locale" / "zh_CN" / "LC_MESSAGES" / "book"
MAX_CODE_LINE = 90

CJK = re.compile(r"[\u4e00-\u9fff]")
LABEL = re.compile(r"^\(([\w-]+)\)=$", re.M)
EXERCISE = re.compile(r"^`{3,}\{exercise\}[^\n]*\n:label: (\S+)", re.M)
SOLUTION = re.compile(r"^`{3,}\{solution\} (\S+)\n(:class: \w+)?", re.M)
GATED = re.compile(r"^`{3,}\{solution-(start|end)\}(?: (\S+))?\n(:class: \w+)?", re.M)
REF = re.compile(r"\{ref\}`([^`]+)`")
TERM = re.compile(r"\{term\}`([^`]+)`")
CITE = re.compile(r"\{cite:[pt]\}`([^`]+)`")
CROSS_GLUE = re.compile(r"\{glue:text\}`([\w.]+\.ipynb)::(\w+):[^`]*`")


def cells(chapter: Path, kind: str) -> list[str]:
    """The sources of a chapter's cells of one kind ("markdown" or "code"), in order."""
    notebook = json.loads(chapter.read_text(encoding="utf-8"))
    return ["".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == kind]


def markdown(chapter: Path) -> str:
    return "\n\n".join(cells(chapter, "markdown"))


def glued_names(chapter: Path) -> set[str]:
    """Names glued by a chapter's stored outputs."""
    notebook = json.loads(chapter.read_text(encoding="utf-8"))
    return {output["metadata"]["scrapbook"]["name"]
            for cell in notebook["cells"] for output in cell.get("outputs", [])
            if "scrapbook" in output.get("metadata", {})}


def target(role_text: str) -> str:
    """The target of a role written `target` or `title <target>`."""
    match = re.fullmatch(r".*<(.+)>", role_text, flags=re.S)
    return (match.group(1) if match else role_text).strip()


def glossary_terms() -> dict[str, str]:
    """Each glossary term with its definition."""
    text = (BOOK / "glossary.md").read_text(encoding="utf-8")
    block = text.split("```{glossary}\n", 1)[1].split("\n```", 1)[0]
    terms, current = {}, None
    for line in block.splitlines():
        if line and not line.startswith(" "):
            current = line.strip()
            terms[current] = ""
        elif current is not None:
            terms[current] += line.strip() + " "
    return terms


def chapter_labels() -> set[str]:
    labels = set()
    for chapter in CHAPTERS:
        text = markdown(chapter)
        labels |= set(LABEL.findall(text)) | set(EXERCISE.findall(text))
    return labels


def test_the_book_has_seven_chapters():
    assert [c.name[:2] for c in CHAPTERS] == ["01", "02", "03", "04", "05", "06", "07"]


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_first_code_cell_installs_the_package_on_colab_only_and_is_collapsed(chapter):
    config = yaml.safe_load((REPO / "_config.yml").read_text(encoding="utf-8"))
    notebook = json.loads(chapter.read_text(encoding="utf-8"))
    first, second = [c for c in notebook["cells"] if c["cell_type"] == "code"][:2]
    assert first["metadata"].get("tags") == ["hide-cell"], "the Colab block is collapsed"
    lines = "".join(first["source"]).splitlines()
    assert lines[:3] == ["import subprocess", "import sys", ""]
    assert lines[3].startswith('if "google.colab" in sys.modules:')
    guarded = lines[4:]
    assert guarded and all(line.startswith(" ") for line in guarded), "all of it under the guard"
    guarded_text = "\n".join(guarded)
    assert '"pip", "install"' in guarded_text and "longdep @ git+" in guarded_text
    urls = re.findall(r"https?://[^\s\"']+", "\n".join(lines))
    assert urls == [config["repository"]["url"]]
    # the house rules for the first visible cell: imports, then the seed and the style
    rest = "".join(second["source"])
    assert "pip" not in rest, "pip must run only inside the Colab guard"
    assert "reproducible(seed=0" in rest and "use_book_style()" in rest


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_opens_with_its_label_and_title(chapter):
    first = cells(chapter, "markdown")[0]
    assert re.match(r"\(chapter-[a-z0-9-]+\)=\n# \S", first), first[:80]


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_exercises_have_dropdown_solutions_and_one_runs_code(chapter):
    prefix = f"ex-ch{int(chapter.name[:2])}-"
    text = markdown(chapter)
    exercises = EXERCISE.findall(text)
    assert len(exercises) >= 3, exercises
    assert all(label.startswith(prefix) for label in exercises), exercises
    solutions = SOLUTION.findall(text)
    gated = [(kind, label, cls) for kind, label, cls in GATED.findall(text)]
    starts = [(label, cls) for kind, label, cls in gated if kind == "start"]
    solved = [label for label, _ in solutions] + [label for label, _ in starts]
    assert sorted(solved) == sorted(exercises), "one solution per exercise"
    assert all(cls == ":class: dropdown" for _, cls in solutions + starts)
    # walk the cells: a gated solution is open from its start to its end
    code_in_gated, open_label = {}, None
    notebook = json.loads(chapter.read_text(encoding="utf-8"))
    for cell in notebook["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] == "code":
            if open_label is not None:
                code_in_gated[open_label] += 1
            continue
        for kind, label, _ in GATED.findall(source):
            if kind == "start":
                assert open_label is None, f"{label} starts inside {open_label}"
                open_label = label
                code_in_gated[label] = 0
            else:
                assert open_label is not None, "solution-end without a start"
                open_label = None
    assert open_label is None, f"{open_label} is never ended"
    assert any(count >= 1 for count in code_in_gated.values()), code_in_gated


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_key_takeaways_are_three_to_six_bullets_before_the_exercises(chapter):
    text = markdown(chapter)
    headings = re.findall(r"^## (.+)$", text, flags=re.M)
    assert "Summary" not in headings
    assert headings.index("Key takeaways") == headings.index("Exercises") - 1
    section = text.split("## Key takeaways\n", 1)[1].split("\n## ", 1)[0]
    bullets = re.findall(r"^- ", section, flags=re.M)
    assert 3 <= len(bullets) <= 6, len(bullets)


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_no_tab_in_markdown(chapter):
    # a tab in TeX usually means that "\t" was read as a tab, as in "\tanh" or "\tfrac"
    for source in cells(chapter, "markdown"):
        assert "\t" not in source, source[:80]


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_code_lines_are_short(chapter):
    long_lines = [line for source in cells(chapter, "code") for line in source.splitlines()
                  if len(line) > MAX_CODE_LINE]
    assert long_lines == []


def test_glossary_terms_each_with_its_chinese_term_and_the_section_that_introduces_it():
    terms = glossary_terms()
    assert len(terms) >= 40
    assert list(terms) == sorted(terms, key=str.lower), "alphabetical order"
    # each definition opens with the Chinese term: "残差流. …" or "BPTT (随时间反向传播). …"
    opening = re.compile(r"^(\S+ )?\(?[^.()]*[\u4e00-\u9fff][^.]*?\)?\. ")
    assert [t for t, definition in terms.items() if not opening.match(definition)] == []
    labels = chapter_labels()
    unlinked = [t for t, d in terms.items()
                if not [r for r in REF.findall(d) if target(r) in labels]]
    assert unlinked == [], "a term without a link to its chapter section"


def test_the_glossary_gives_the_terms_the_chinese_reviews_asked_for():
    chinese = {t: d.split(". ", 1)[0] for t, d in glossary_terms().items()}
    expected = {"key recall": "键回忆", "bag of tokens": "词元袋", "burn-in": "起始段",
                "pre-activation": "预激活", "mean-field theory": "平均场理论",
                "transient amplification": "瞬态放大", "joint spectral radius": "联合谱半径",
                "KV cache": "键值缓存", "residual stream": "残差流", "gate": "门"}
    assert {t: chinese.get(t) for t in expected} == expected
    assert {"Post-LN", "Pre-LN"} <= set(chinese)
    # the article's own term beside the book's
    assert {"长时依赖", "长程依赖"} <= set(re.findall(r"长.依赖", chinese["long-range dependency"]))
    # 门控 is for gating and gated, not for the gate itself
    assert "门控" in glossary_terms()["gate"] and "gated" in glossary_terms()["gate"]


def test_every_glossary_term_is_linked_from_a_chapter_and_every_link_has_a_term():
    terms = {t.lower() for t in glossary_terms()}
    used = {target(t).lower() for chapter in CHAPTERS for t in TERM.findall(markdown(chapter))}
    assert terms - used == set(), "terms no chapter links with {term}"
    assert used - terms == set(), "{term} links to no glossary entry"


def msgstrs(page: str) -> list[str]:
    from babel.messages.pofile import read_po

    with (CATALOGS / f"{page}.po").open("rb") as f:
        return [m.string for m in read_po(f) if m.id and m.string]


def test_the_article_is_named_by_its_exact_title_in_both_editions():
    """Every title of the article on a page or in a catalog is the exact title, and the pages
    that present the article give it with its term 长时依赖 beside the book's 长程依赖."""
    pages = {p.stem: p.read_text(encoding="utf-8") for p in BOOK.glob("*.md")}
    chinese = {p.stem: "\n".join(msgstrs(p.stem)) for p in CATALOGS.glob("*.po")}
    for name, text in [*pages.items(), *(("zh " + k, v) for k, v in chinese.items())]:
        titles = re.findall(r"《Transformer[^》]*》", text)
        assert set(titles) <= {ARTICLE_TITLE}, name
    for page in ("intro", "errata"):
        for text in (pages[page], chinese[page]):
            assert ARTICLE_TITLE in text and "长时依赖" in text and "长程依赖" in text, page


@pytest.mark.parametrize("page", BACK_MATTER, ids=lambda p: p.name)
def test_back_matter_references_resolve(page):
    text = page.read_text(encoding="utf-8")
    labels = chapter_labels().union(
        *(LABEL.findall(other.read_text(encoding="utf-8")) for other in BACK_MATTER))
    refs = [target(r) for r in REF.findall(text)]
    assert refs, "a page of links without links"
    assert [r for r in refs if r not in labels] == []
    bib = (BOOK / "references.bib").read_text(encoding="utf-8")
    keys = set(re.findall(r"^@\w+\{([^,]+),", bib, flags=re.M))
    cited = {key.strip() for group in CITE.findall(text) for key in group.split(",")}
    assert cited - keys == set()
    for notebook, name in CROSS_GLUE.findall(text):
        assert name in glued_names(BOOK / notebook), f"{notebook} glues no {name}"


def errata_entries() -> tuple[list[str], str]:
    """The numbered entries of the errata page, and its closing section of traps."""
    text = (BOOK / "errata.md").read_text(encoding="utf-8")
    *entries, traps = re.split(r"^## ", text, flags=re.M)[1:]
    return entries, traps


def field(entry: str, name: str) -> str:
    return entry.split(f"- **{name}:** ", 1)[1].split("\n- **", 1)[0].split("\n\n", 1)[0]


def test_each_erratum_quotes_the_article_then_says_what_is_wrong_and_what_is_true():
    entries, traps = errata_entries()
    numbers = [entry.split(".", 1)[0] for entry in entries]
    assert numbers == [str(i) for i in range(1, len(entries) + 1)] and len(entries) >= 15
    fields = ["The article says", "What is wrong", "What is true", "Source", "Shown in"]
    for entry in entries:
        found = re.findall(r"^- \*\*(.+?):\*\* ", entry, flags=re.M)
        assert found == fields, entry[:60]
        assert REF.search(field(entry, "Shown in")), entry[:60]
        says = field(entry, "The article says")
        # its own words: a section number, a Chinese quotation, and an English translation
        assert re.match(r"§\d+(\.\d+)?[,:]", says), entry[:60]
        quotes = re.findall(r"“([^”]+)”", says)
        assert quotes and all(CJK.search(q) for q in quotes), entry[:60]
        translations = re.findall(r'\("([^"]+)"\)', says)
        assert len(translations) >= len(quotes), entry[:60]
        assert not any(CJK.search(t) for t in translations), entry[:60]
    assert traps.startswith("Traps in reusing the article's code")
    items = re.findall(r"^- \*\*.*?(?=^- |^---)", traps, flags=re.M | re.S)
    assert len(items) == 3 and all(REF.search(item) for item in items)


def test_errata_cover_every_correction_the_book_demonstrates():
    text = (BOOK / "errata.md").read_text(encoding="utf-8")
    refs = {target(r) for r in REF.findall(text)}
    demonstrated = {
        "ch2-sufficient-necessary", "ch2-saturation", "ch2-regimes", "ch2-hook", "ch2-probe",
        "ch3-forget-product", "ch3-gradient-distance", "ch3-key-recall", "ch4-equivariance",
        "ch4-residual-ln", "ch5-warmup", "ch5-crash", "ch5-swamped", "ch5-mask", "ch5-float16",
        "ch5-causal", "ch5-noise-demo", "ch5-gpt3", "ch6-sparse"}
    assert demonstrated - refs == set()


def test_notation_gives_each_symbol_one_meaning():
    text = (BOOK / "notation.md").read_text(encoding="utf-8")
    main, local = text.split("(notation-local)=", 1)
    symbols = [s for row in re.findall(r"^\* - (.+)$", main, flags=re.M) if row != "Symbol"
               for s in re.findall(r"\$([^$]+)\$", row)]
    repeated = {s for s in symbols if symbols.count(s) > 1}
    assert len(symbols) >= 50 and repeated == set()
    # every row of every table has its four cells
    for table in re.findall(r"```\{list-table\}(.*?)\n```", text, flags=re.S):
        for row in table.split("\n* - ")[1:]:
            assert len(re.findall(r"^  - ", row, flags=re.M)) == 3, row[:60]
    # the local meanings are stated, each with the section that uses it
    local_rows = local.split("\n* - ")[2:]
    assert local_rows and all(REF.search(row) for row in local_rows)
