"""Figures read well (issue 14): legends off the data, Monte Carlo shown with error bars, titles
without Python lists, the draft length spelled with the Greek letter gamma. The figure
object is captured just before it is written (the scripts run in quick mode into tmp)."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def capture(name, argv, monkeypatch):
    spec = importlib.util.spec_from_file_location(f"_fig_{name}", ROOT / "figures" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    seen = {}

    def fake_save(fig, fname, data=None, out_dir=None):
        seen["fig"], seen["data"] = fig, data
        return []

    monkeypatch.setattr(mod, "save_figure", fake_save)
    mod.main(argv)
    return seen["fig"], seen["data"]


def labels(fig):
    out = []
    for ax in fig.axes:
        out += [ax.get_xlabel(), ax.get_ylabel(), ax.get_title()]
    return out


def no_plain_gamma(fig):
    for text in labels(fig):
        assert "gamma" not in text.replace("\\gamma", ""), text


def test_fig8_titles_and_spread(monkeypatch, tmp_path):
    if not (ROOT / "results" / "decoder_theory.json").exists():
        pytest.skip("needs the committed decoder results")
    out = tmp_path / "figures"
    (tmp_path / "results").symlink_to(ROOT / "results")
    fig, _ = capture("fig8_decoder", ["--out", str(out)], monkeypatch)
    title_b = fig.axes[1].get_title()
    assert "[" not in title_b and "\\gamma" in title_b  # was "gamma in [1, 2, 4, 8]"
    no_plain_gamma(fig)


@pytest.mark.slow
def test_fig3_one_legend_for_the_rule_families(monkeypatch, tmp_path):
    fig, _ = capture("fig3_pareto", ["--quick", "--out", str(tmp_path)], monkeypatch)
    assert fig.legends, "a figure-level legend, outside the panels"
    texts = [t.get_text() for t in fig.legends[0].get_texts()]
    assert {"additive eps", "ratio eps", "lenience l", "typical (Medusa)"} <= set(texts)
    assert len(fig.axes[0].get_legend().get_texts()) <= 2  # no 8 tiny entries over the data


@pytest.mark.slow
def test_fig7_monte_carlo_error_bars_beside_the_lines(monkeypatch, tmp_path):
    fig, data = capture("fig7_block", ["--quick", "--out", str(tmp_path)], monkeypatch)
    for ax in fig.axes:
        bars = [c for c in ax.containers if c.__class__.__name__ == "ErrorbarContainer"]
        assert len(bars) == 2
        for c in bars:
            x = c.lines[0].get_xdata()
            assert all(abs(v - round(v)) > 0.05 for v in x)  # set beside the integer gammas
            assert c.lines[0].get_markerfacecolor() in ("white", (1.0, 1.0, 1.0, 1.0))
    no_plain_gamma(fig)


@pytest.mark.slow
def test_fig5_near_zero_curves_get_their_own_panel(monkeypatch, tmp_path):
    fig, _ = capture("fig5_iid_formula_gap", ["--quick", "--out", str(tmp_path)], monkeypatch)
    assert len(fig.axes) == 3 and len(fig.axes[2].lines) >= 4
    no_plain_gamma(fig)


@pytest.mark.slow
def test_fig2_limits_in_the_legend(monkeypatch, tmp_path):
    fig, _ = capture("fig2_batch", ["--quick", "--out", str(tmp_path)], monkeypatch)
    texts = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert sum("\\infty" in t for t in texts) == 4
