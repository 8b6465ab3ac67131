"""What a cell shows in both languages (longdep.book and longdep.plots.style): bilingual texts,
tables, glued words and figures, each one output holding both languages; a plain figure call
draws the English figure as before."""

import base64
import logging
import re
import warnings

import matplotlib

matplotlib.use("Agg")
import matplotlib.figure
import numpy as np
import pytest
from longdep import book
from longdep.plots import style
from longdep.plots.rnn import plot_bptt_contributions

CJK = re.compile(r"[\u4e00-\u9fff]")


def divs(html: str) -> dict[str, str]:
    """The parts of a bilingual output's HTML, by language tag."""
    found = re.findall(r'<div class="longdep-lang" lang="([\w-]+)">(.*?)</div>', html, re.DOTALL)
    assert "".join(f'<div class="longdep-lang" lang="{lang}">{part}</div>'
                   for lang, part in found) == html, "the HTML is the divs and nothing else"
    return dict(found)


# ---- texts ---------------------------------------------------------------------------------

def test_a_bilingual_text_shows_both_languages_in_html_and_in_plain_text():
    text = book.Bilingual("largest |x - y| <= 1e-14", "|x - y| 的最大值 ≤ 1e-14")
    assert repr(text) == "largest |x - y| <= 1e-14\n|x - y| 的最大值 ≤ 1e-14"
    assert divs(text._repr_html_()) == {"en": "<pre>largest |x - y| &lt;= 1e-14</pre>",
                                        "zh-CN": "<pre>|x - y| 的最大值 ≤ 1e-14</pre>"}
    two_lines = book.Bilingual("a\nb", "甲\n乙")
    assert repr(two_lines) == "a\nb\n\n甲\n乙", "texts of several lines: a blank line between"


def test_show_displays_its_lines_as_one_output(monkeypatch):
    shown = []
    monkeypatch.setattr(book, "display", shown.append)
    book.show(book.Bilingual("seeds: 8", "种子数：8"), "||dL/dh|| = 1.5e-04", ("limit", "极限"))
    assert shown == [book.Bilingual("seeds: 8\n||dL/dh|| = 1.5e-04\nlimit",
                                    "种子数：8\n||dL/dh|| = 1.5e-04\n极限")]


@pytest.mark.parametrize("value", [True, None, ["a", "b"], ("a", "b", "c")])
def test_what_is_not_a_text_is_refused(value):
    with pytest.raises(TypeError, match="a bilingual text must be"):
        book.bilingual(value)
    with pytest.raises(TypeError, match="a bilingual text must be"):
        book.show(value)


def test_show_needs_a_line():
    with pytest.raises(ValueError, match="at least one line"):
        book.show()


# ---- tables --------------------------------------------------------------------------------

def test_a_table_with_bilingual_cells_is_one_table_per_language():
    table = book.Table([("hidden size n", "隐藏层大小 n"), "rho"],
                       [[16, "0.58"], [("limit", "极限"), 0.5]])
    assert repr(table) == ("hidden size n  rho\n16             0.58\nlimit          0.5\n\n"
                           "隐藏层大小 n  rho\n16            0.58\n极限          0.5")
    parts = divs(table._repr_html_())
    assert parts["en"] == table.html("en") and parts["zh-CN"] == table.html("zh")
    assert "<th>隐藏层大小 n</th><th>rho</th>" in parts["zh-CN"]
    assert "<td>极限</td><td>0.5</td>" in parts["zh-CN"] and "<td>limit</td>" in parts["en"]


def test_a_chinese_character_takes_two_columns_of_the_aligned_text():
    text = book.Table([("a", "种子数"), "b"], [[("long cell", "长"), 1]]).text("zh")
    header, row = text.splitlines()
    assert header == "种子数  b" and row == "长      1", "b and 1 in one column (CJK: 2 wide)"


def test_a_table_in_one_language_is_shown_once_as_before():
    table = book.Table(["n", "mean"], [[16, "0.58"], ["limit", "0.58"]])
    assert repr(table) == "n      mean\n16     0.58\nlimit  0.58"
    assert table._repr_html_() == ("<table><thead><tr><th>n</th><th>mean</th></tr></thead>"
                                   "<tbody><tr><td>16</td><td>0.58</td></tr><tr><td>limit</td>"
                                   "<td>0.58</td></tr></tbody></table>")


# ---- glue ----------------------------------------------------------------------------------

def test_a_bilingual_glued_value_is_two_keys_the_second_for_the_chinese_catalogs(monkeypatch):
    calls = []
    monkeypatch.setattr(book, "glue", lambda *args, **kwargs: calls.append((args, kwargs)))
    book.chapter_glue("ch6")(outcome=book.Bilingual("solved", "已解决"), count=3)
    assert calls == [(("ch6_outcome", "solved"), {"display": False}),
                     (("ch6_outcome_zh", "已解决"), {"display": False}),
                     (("ch6_count", 3), {"display": False})]


# ---- figures -------------------------------------------------------------------------------

def bptt_data(ratio: float = 1.5e-4, smallest_bar: float = 1.0):
    """Chapter 1's figure's arguments, with the last row's ratio 10 steps back set to ``ratio``
    and one bar of height ``smallest_bar`` beside bars of height 2."""
    loss_to_step = np.tril(np.ones((12, 12)))
    loss_to_step[-1, -11] = ratio
    step_terms = np.full(12, 2.0)
    step_terms[0], step_terms[5] = 0.0, smallest_bar
    return loss_to_step, step_terms


def texts_of(fig: matplotlib.figure.Figure) -> list[str]:
    return [t.get_text() for t in fig.findobj(matplotlib.text.Text) if t.get_text().strip()]


def test_words_are_the_language_being_drawn_and_english_outside():
    assert style.words("gradient norm", "梯度范数") == "gradient norm"
    with style.in_language("zh"):
        assert style.words("gradient norm", "梯度范数") == "梯度范数"
        assert style.localised(book.Bilingual("bag of tokens", "词元袋")) == "词元袋"
        assert style.localised("LSTM") == "LSTM"
    with pytest.raises(ZeroDivisionError), style.in_language("zh"):
        raise ZeroDivisionError
    assert style.words("gradient norm", "梯度范数") == "gradient norm", "reset after an error"
    assert style.localised(book.Bilingual("bag of tokens", "词元袋")) == "bag of tokens"


def test_a_plain_call_draws_the_english_figure_as_before():
    fig = plot_bptt_contributions(*bptt_data())
    assert isinstance(fig, matplotlib.figure.Figure)
    assert {"state step k", "loss step t", "gradient norm"} <= set(texts_of(fig))
    assert not any(CJK.search(text) for text in texts_of(fig))
    assert "10 steps back" in style.alt_text(fig)


def test_a_chinese_figure_is_drawn_in_a_chinese_font_with_no_warning(caplog):
    assert style.chinese_font() == "Noto Sans CJK SC", "install Debian's fonts-noto-cjk"
    with warnings.catch_warnings(), caplog.at_level(logging.WARNING):
        warnings.simplefilter("error")  # matplotlib warns of every glyph its fonts lack
        with style.in_language("zh"):
            fig = plot_bptt_contributions(*bptt_data())
            style.png(fig)
    assert not caplog.records, [r.getMessage() for r in caplog.records]
    texts = texts_of(fig)
    assert {"状态的步 k", "损失的步 t", "梯度范数"} <= set(texts)
    assert not any(re.search("[A-Za-z]{3,}", t) for t in texts if "$" not in t), texts
    families = {t.get_fontfamily()[0] for t in fig.findobj(matplotlib.text.Text)}
    assert families == {"Noto Sans CJK SC"}


def test_a_chinese_font_installed_after_matplotlibs_font_list_is_found(monkeypatch):
    """matplotlib's font list is cached across runs: a font installed later is missing from it
    (this machine's list predates fonts-noto-cjk) and chinese_font adds it."""
    manager = style.font_manager.fontManager
    monkeypatch.setattr(manager, "ttflist", [f for f in manager.ttflist if "CJK" not in f.name])
    assert style.chinese_font.__wrapped__() == "Noto Sans CJK SC"


def test_both_languages_draws_two_figures_and_two_alt_texts_from_the_same_data():
    drawings = style.both_languages(plot_bptt_contributions, *bptt_data(ratio=1.5e-4))
    assert list(drawings) == ["en", "zh"]
    (en_png, en_alt), (zh_png, zh_alt) = drawings["en"], drawings["zh"]
    assert en_png.startswith(b"\x89PNG") and zh_png.startswith(b"\x89PNG") and en_png != zh_png
    assert "1.5e-04" in en_alt and "1.5e-04" in zh_alt, "the measured number, as the prose has it"
    assert "12 steps" in en_alt and "12 步" in zh_alt
    assert not CJK.search(en_alt) and len(CJK.findall(zh_alt)) > 50
    assert "similar size" in en_alt and "大小相近" in zh_alt
    uneven = style.both_languages(plot_bptt_contributions, *bptt_data(smallest_bar=0.1))
    assert "very different sizes" in uneven["en"][1] and "大小悬殊" in uneven["zh"][1]


def test_a_bilingual_figure_is_one_output_of_two_images_and_two_alt_texts():
    drawings = style.both_languages(plot_bptt_contributions, *bptt_data())
    figure = book.BilingualFigure(drawings)
    parts = divs(figure._repr_html_())
    assert set(parts) == {"en", "zh-CN"}
    for language, tag in (("en", "en"), ("zh", "zh-CN")):
        png, alt = drawings[language]
        src, shown_alt = re.fullmatch(r'<img src="data:image/png;base64,([^"]+)" alt="([^"]*)">',
                                      parts[tag]).groups()
        assert base64.b64decode(src) == png
        assert shown_alt == alt.replace("'", "&#x27;").replace('"', "&quot;")
    assert repr(figure) == f"{drawings['en'][1]}\n{drawings['zh'][1]}", "nbval compares both"


def test_without_a_chinese_font_the_english_figure_is_shown_and_the_font_named(monkeypatch,
                                                                              capsys):
    monkeypatch.setattr(style, "chinese_font", lambda: None)
    drawings = style.both_languages(plot_bptt_contributions, *bptt_data())
    assert drawings["zh"] == drawings["en"]
    out, err = capsys.readouterr()
    assert "apt-get install fonts-noto-cjk" in out and err == ""
    with pytest.raises(RuntimeError, match="fonts-noto-cjk"), style.in_language("zh"):
        pass


def test_a_name_the_chapter_passes_is_drawn_in_the_language_of_the_figure():
    """A model's name given as a Bilingual becomes the legend entry (and the alt text's name)
    of each language; the figure's own words come with it."""
    from longdep.plots.efficient import plot_mqar

    linear = book.Bilingual("linear attention", "线性注意力")
    accuracies = {linear: np.full((2, 2, 3), 0.8), "LSTM": np.full((2, 2, 3), 0.1)}
    recalled = {linear: ["2", book.Bilingual("8 (the most tried)", "8（所试的最大值）")],
                "LSTM": [book.Bilingual("fewer than 2", "不到 2")] * 2}
    drawn = {}
    for language in ("en", "zh"):
        with style.in_language(language):
            fig = plot_mqar([2, 4, 8], accuracies, [100, 400], 0.0625, 16, 4, recalled)
        drawn[language] = (fig.axes[0].get_legend(), style.alt_text(fig))
    (en_legend, en_alt), (zh_legend, zh_alt) = drawn["en"], drawn["zh"]
    assert [t.get_text() for t in en_legend.get_texts()] == [
        "linear attention", "LSTM", "chance (0.0625)", "$d_k$ = 4 pairs"]
    assert [t.get_text() for t in zh_legend.get_texts()] == ["线性注意力", "LSTM",
                                                            "随机猜测（0.0625）", "$d_k$ = 4 对"]
    assert ("after 400 steps, linear attention 8 (the most tried); LSTM fewer than 2"
            in en_alt)
    assert "训练 400 步后，线性注意力：8（所试的最大值）；LSTM：不到 2" in zh_alt


def test_the_figures_lists_and_spaces_follow_each_languages_typography():
    assert style.joined(["0.1", "1", "10"]) == "0.1, 1, 10"
    assert style.joined(["LSTM, bias 1 3e-28", "GRU 3e-59"], clauses=True) == \
        "LSTM, bias 1 3e-28; GRU 3e-59"
    with style.in_language("zh"):
        assert style.joined(["0.1", "1"]) == "0.1、1"
        assert style.joined(["a", "b"], clauses=True) == "a；b"
    assert style.spaced("tanh RNN的梯度为1e-03，W_hh（32 单元）") == \
        "tanh RNN 的梯度为 1e-03，W_hh（32 单元）"


def test_the_mqar_figure_checks_its_labels():
    from longdep.plots.efficient import plot_mqar

    with pytest.raises(ValueError, match="recalled must give every model of accuracies"):
        plot_mqar([2, 4], {"a": np.ones((2, 2, 2))}, [100, 400], 0.1, 16, 4, {"a": ["2"]})
