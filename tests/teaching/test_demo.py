"""The teaching demo (spectheory.teaching.demo, spectheory.teaching) and its notebook."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from _helpers import assert_mean_within_se  # noqa: E402

import spectheory as st
from spectheory.teaching import accepts, expected_accepted, play_round, rejection_probability, toy_models
from spectheory.teaching.demo import main, run_demo

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "simulations" / "teaching_demo.ipynb"


def _run(**kw):
    buf = io.StringIO()
    kw.setdefault("auto", True)
    result = run_demo(out=buf, **kw)
    return result, buf.getvalue()


def test_toy_models_are_laws_and_context_dependent():
    m = toy_models()
    for law in (m.target, m.draft):
        assert law.shape == (10, 10) and np.all(law >= 0)
        np.testing.assert_allclose(law.sum(axis=1), 1.0, atol=1e-12)
    beta = st.acceptance_rate(m.target, m.draft)
    assert beta.max() - beta.min() > 0.1  # acceptance varies with the context
    with pytest.raises(ValueError, match="draft_weight"):
        toy_models(1.5)


def test_accept_rule_with_hand_picked_uniforms():
    assert accepts(0.3, 0.6, 0.49) and not accepts(0.3, 0.6, 0.5)
    assert accepts(0.6, 0.3, 0.999999)  # ratio above 1: always accepted
    assert not accepts(0.0, 0.2, 0.0)  # a forbidden word is never accepted


def test_expected_accepted_matches_path_enumeration():
    """The matrix recursion against explicit enumeration of every draft path (gamma = 3)."""
    m = toy_models()
    gamma, V = 3, m.vocab_size
    acc = np.minimum(1.0, m.target / m.draft)  # draft > 0 everywhere in the toy pair
    for s in range(V):
        # P(N >= i) = sum over draft paths x1..xi of prod_j q(x_j | x_{j-1}) min(1, p/q)
        p1 = p2 = p3 = 0.0
        for x1 in range(V):
            w1 = m.draft[s, x1] * acc[s, x1]
            p1 += w1
            for x2 in range(V):
                w2 = w1 * m.draft[x1, x2] * acc[x1, x2]
                p2 += w2
                p3 += w2 * sum(m.draft[x2, x3] * acc[x2, x3] for x3 in range(V))
        np.testing.assert_allclose(expected_accepted(m, gamma)[s], p1 + p2 + p3, rtol=1e-12)
        np.testing.assert_allclose(rejection_probability(m, gamma)[s], 1 - p3, rtol=1e-12)


def test_play_round_monte_carlo_matches_theory():
    """3000 rounds from "and" (seed fixed); tolerances 5 standard errors."""
    m = toy_models()
    rng = np.random.default_rng(11)
    start, gamma, n = m.words.index("and"), 2, 3000
    rounds = [play_round(m, start, gamma, rng) for _ in range(n)]
    n_acc = np.array([r.n_accepted for r in rounds])
    rej = np.array([r.rejected for r in rounds], dtype=float)
    assert_mean_within_se(n_acc, expected_accepted(m, gamma)[start], "accepted per round")
    p_rej = rejection_probability(m, gamma)[start]
    assert abs(rej.mean() - p_rej) < 5 * np.sqrt(p_rej * (1 - p_rej) / n)
    first = np.bincount([r.emitted[0] for r in rounds], minlength=m.vocab_size) / n
    t = m.target[start]
    assert np.all(np.abs(first - t) <= 5 * np.sqrt(t * (1 - t) / n))  # lossless first word
    assert all(len(r.emitted) == r.n_accepted + 1 for r in rounds)


def test_auto_output_has_every_piece():
    result, text = _run(seed=0, gamma=3, n_rounds=12)
    for piece in (
        "Round 1 of 12",
        "The draft proposes 3 words",
        "target p",
        "draft q",
        "u = ",
        "p/q = ",
        "min(1, p/q)",
        "sum min(p, q)",
        "Running tally",
        "observed",
        "theory",
        "accepted draft words",
        "rejections",
        "Generated text",
    ):
        assert piece in text, piece
    assert any(r.rejected for r in result.rounds) and any(r.bonus is not None for r in result.rounds)
    assert "REJECT" in text and "residual norm(max(p - q, 0))" in text
    assert "ACCEPT" in text and "Bonus word" in text
    # the tally is consistent with the rounds and the theory
    m = toy_models()
    starts = [r.state for r in result.rounds]
    assert result.accepted == sum(r.n_accepted for r in result.rounds)
    assert result.rejections == sum(r.rejected for r in result.rounds)
    np.testing.assert_allclose(result.predicted_accepted, expected_accepted(m, 3)[starts].sum())
    np.testing.assert_allclose(result.predicted_rejections, rejection_probability(m, 3)[starts].sum())
    assert len(result.words) - 1 == sum(len(r.emitted) for r in result.rounds)
    assert "Generated text: " + " ".join(result.words) in " ".join(text.split())
    assert max(len(line) for line in text.splitlines()) <= 90  # fits a projected terminal


def test_same_seed_same_demo_and_seeds_differ():
    _, a = _run(seed=5, n_rounds=3)
    _, b = _run(seed=5, n_rounds=3)
    _, c = _run(seed=6, n_rounds=3)
    assert a == b and a != c


def test_save_writes_one_png_per_step(tmp_path):
    result, text = _run(seed=0, gamma=2, n_rounds=4, save=tmp_path / "slides")
    n_steps = sum(len(r.steps) + (r.bonus is not None) for r in result.rounds)
    files = sorted((tmp_path / "slides").glob("*.png"))
    assert len(files) == n_steps == len(result.saved)
    assert all(f.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for f in files)
    assert f"Saved {n_steps} figures" in text


def test_driven_mode_waits_between_steps():
    prompts = []

    def fake_input(prompt):
        prompts.append(prompt)
        return ""

    result, text = _run(seed=2, n_rounds=3, auto=False, input_fn=fake_input)
    expected = 1 + sum(len(r.steps) + (r.bonus is not None) + 1 for r in result.rounds)
    assert len(prompts) == expected and all("Enter" in p for p in prompts)
    _, auto_text = _run(seed=2, n_rounds=3)
    assert text == auto_text  # pauses change nothing else


def test_driven_mode_quit_and_eof():
    answers = iter(["", "", "q"])
    result, text = _run(seed=2, n_rounds=5, auto=False, input_fn=lambda _p: next(answers))
    assert result.quit_early and len(result.rounds) < 5
    assert "stopped by the presenter" in text and "Generated text" in text

    def eof(_prompt):
        raise EOFError

    result, _ = _run(seed=2, n_rounds=2, auto=False, input_fn=eof)
    assert len(result.rounds) == 2 and not result.quit_early


@pytest.mark.parametrize(
    "kw, match", [({"gamma": 0}, "gamma"), ({"gamma": 1.5}, "gamma"), ({"n_rounds": 0}, "n_rounds")]
)
def test_bad_arguments_raise(kw, match):
    with pytest.raises(ValueError, match=match):
        run_demo(auto=True, out=io.StringIO(), **kw)


@pytest.mark.parametrize("argv", [["--gamma", "0"], ["--rounds", "-1"], ["--bogus"], ["--gamma", "two"]])
def test_main_bad_arguments_give_one_line(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and err.startswith("spectheory demo: error:")


def test_main_runs_and_help_has_an_example(capsys):
    assert main(["--auto", "--rounds", "1", "--seed", "4", "--gamma", "2"]) == 0
    assert "Round 1 of 1" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0 and "example:" in capsys.readouterr().out


def test_notebook_executes():
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(
        nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOK.parent)}}
    )
    client.execute()  # raises CellExecutionError on any failure
    outputs = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert "one-step law equals the target in all 10 contexts" in outputs
    assert "accepted per round: MC" in outputs
    # the real-model section: run with the real extra, one line without it
    from spectheory.decoder import pretrained

    if pretrained.is_available("smollm2-135m"):
        assert "V = 49,152" in outputs and "the one-step law equals the target" in outputs
        assert "Generated text:" in outputs
    else:
        assert "skipped: the real LLM needs the real extra" in outputs


def test_default_seed_shows_a_rejection_discarded_drafts_and_a_bonus_word():
    """The default demo (no --seed) must show every case a teacher wants to explain."""
    from spectheory.teaching.demo import DEFAULT_ROUNDS, DEFAULT_SEED

    result, text = _run(seed=DEFAULT_SEED, gamma=3, n_rounds=DEFAULT_ROUNDS)
    assert any(r.bonus is not None for r in result.rounds)
    assert any(r.rejected for r in result.rounds)
    flat = " ".join(text.split())
    assert "discarded" in flat and "drafted after a rejected word" in flat


def test_tally_explains_the_theory_column():
    _, text = _run(seed=1, gamma=2, n_rounds=2)
    assert "probability that the round ends in a rejection" in " ".join(text.split())
