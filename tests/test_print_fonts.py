"""The PDF's CJK face (book/_ext/print_pdf.py): required where the PDF is, a note elsewhere.

Where the PDF is required (CI=true or LONGDEP_REQUIRE_BROWSER=1: the tests, publishing), a
missing Noto Sans CJK SC fails the print, naming the Debian package to install, as a missing
Chromium does; a reader's `make book` prints the Chinese text in a fallback face and says so.
The lookup is fontconfig's, so pointing FONTCONFIG_FILE at a configuration whose only font folder
is empty is a machine without the face.
"""

import shutil
from pathlib import Path

import pytest
from print_pdf import CJK_FACE, cjk_face, cjk_faces, pdf_required

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def no_fonts(tmp_path, monkeypatch):
    """fontconfig with one empty font folder: no face of any family is installed."""
    if shutil.which("fc-match") is None:
        pytest.skip("needs fontconfig's fc-match (Debian's fontconfig, which fonts-noto-cjk needs)")
    (tmp_path / "fonts").mkdir()
    (tmp_path / "fonts.conf").write_text(
        '<?xml version="1.0"?>\n<!DOCTYPE fontconfig SYSTEM "fonts.dtd">\n<fontconfig>'
        f"<dir>{tmp_path / 'fonts'}</dir><cachedir>{tmp_path / 'cache'}</cachedir>"
        "</fontconfig>\n")
    monkeypatch.setenv("FONTCONFIG_FILE", str(tmp_path / "fonts.conf"))
    return tmp_path


@pytest.fixture
def pdf_not_required(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("LONGDEP_REQUIRE_BROWSER", raising=False)


@pytest.mark.parametrize("variable, value", [("LONGDEP_REQUIRE_BROWSER", "1"), ("CI", "true")])
def test_a_missing_cjk_face_fails_the_print_naming_the_package(no_fonts, pdf_not_required,
                                                               monkeypatch, variable, value):
    monkeypatch.setenv(variable, value)
    assert cjk_face("regular") is None
    with pytest.raises(SystemExit) as failure:
        cjk_faces("梯度消失 vanishing gradient", no_fonts / "site", "zh_CN")
    message = str(failure.value.code)
    assert CJK_FACE in message and "apt-get install -y fonts-noto-cjk" in message, message
    assert not (no_fonts / "site" / "_print_fonts").exists()


def test_without_the_requirement_a_missing_face_is_a_note(no_fonts, pdf_not_required, capsys):
    assert cjk_faces("梯度消失", no_fonts / "site", "zh_CN") == ""
    note = capsys.readouterr().out
    assert "falls back" in note and "fonts-noto-cjk" in note, note


def test_a_page_without_chinese_needs_no_cjk_face(no_fonts, monkeypatch):
    monkeypatch.setenv("LONGDEP_REQUIRE_BROWSER", "1")
    assert cjk_faces("vanishing gradient", no_fonts / "site", "en") == ""


def test_the_installed_face_is_found_and_copied_as_truetype(tmp_path):
    """On a machine with fonts-noto-cjk (CI installs it): the face, as rules for the page."""
    if cjk_face("regular") is None:
        message = f"{CJK_FACE} is not installed: `apt-get install -y fonts-noto-cjk`"
        if pdf_required():
            pytest.fail(message)
        pytest.skip(message)
    rules = cjk_faces("梯度消失", tmp_path, "zh_CN")
    assert rules.count("@font-face") == 2
    for style in ("Regular", "Bold"):
        copy = tmp_path / "_print_fonts" / f"NotoSansCJKSC-{style}.ttf"
        assert copy.read_bytes()[:4] == b"\x00\x01\x00\x00"  # TrueType outlines, not CFF
