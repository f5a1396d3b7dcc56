"""Different vocabularies: merged-token drafts and TLI (spectheory.laws.vocabularies, docs/vocabularies.md).

Exact = Fraction laws through the literal enumeration of token verification; Monte Carlo at
5 SE against the exact engine on a byte chain.
"""

import importlib.util
import json
from fractions import Fraction as F
from pathlib import Path

import numpy as np
import pytest
from _helpers import assert_within_se

import spectheory as st
from spectheory.analysis.verdicts import law_total_variation
from spectheory.chain.ngram import NGramChain
from spectheory.laws.vocabularies import (
    byte_targets,
    merged_token_counts,
    merged_token_draft,
    merged_tokenize,
    shared_mass,
    tli_draft_law,
    top_byte_pairs,
)
from spectheory.verifiers.round_laws import exact_round_law, generation_law, mean_accepted, target_law

ROOT = Path(__file__).resolve().parents[2]


def test_tokenisation_is_greedy_longest_match_and_counts_every_token():
    data = np.frombuffer(b"the then they", np.uint8)
    toks = merged_tokenize(data, [b"th", b"the"])
    strings = [bytes([b]) for b in range(256)] + [b"th", b"the"]
    assert b"".join(strings[t] for t in toks) == bytes(data)
    assert [strings[t] for t in toks] == [b"the", b" ", b"the", b"n", b" ", b"the", b"y"]
    _, counts = merged_token_counts(data, [b"th", b"the"])
    assert counts.sum() == len(toks) and counts[ord(" "), 257] == 2 and counts[10, 257] == 1
    assert top_byte_pairs(data, 2) == [b"he", b"th"] and top_byte_pairs(data, 0) == []  # 3 each: ties by pair
    for bad in ([b"t"], [b"th", b"th"]):
        with pytest.raises(ValueError, match="merges"):
            merged_tokenize(data, bad)
    with pytest.raises(ValueError, match="pad_byte"):
        merged_token_counts(data, [], pad_byte=256)


def test_tli_law_is_the_restricted_renormalised_draft():
    rng = np.random.default_rng(0)
    q = rng.dirichlet(np.ones(6), size=4)
    m = np.array([2, -1, 0, -1, 1, 3])
    qi = tli_draft_law(q, m, 5)
    np.testing.assert_allclose(qi.sum(1), 1)
    np.testing.assert_allclose(qi[:, [2, 0, 1, 3]], q[:, [0, 2, 4, 5]] / shared_mass(q, m)[:, None])
    assert np.all(qi[:, 4] == 0)  # a target token the draft does not have
    with pytest.raises(ValueError, match="no mass"):
        tli_draft_law([[0.0, 1.0]], [0, -1], 2)
    with pytest.raises(ValueError, match="to_target"):
        tli_draft_law([[0.5, 0.5]], [0, 0], 2)
    with pytest.raises(ValueError, match="to_target"):
        tli_draft_law([[0.5, 0.5]], [0, 2], 2)
    assert byte_targets([b"a", b"ab", b"\x00"]).tolist() == [97, -1, 0]


def _tiny():
    """A 3-byte target alphabet {a, b, c}; a draft with merged tokens 'ab' and 'ca', in Fractions."""
    data = np.frombuffer(b"abcabacabbcaab", np.uint8)
    alphabet = [ord("a"), ord("b"), ord("c")]
    strings, counts = merged_token_counts(data, [b"ab", b"ca"])
    keep = alphabet + [256, 257]
    c = counts[np.ix_(alphabet, keep)]
    qd = [[F(int(x) + 1, int(r.sum()) + r.size) for x in r] for r in c]
    target = [[F(1, 6), F(1, 2), F(1, 3)], [F(1, 2), F(1, 4), F(1, 4)], [F(2, 3), F(1, 3), F(0)]]
    qi = tli_draft_law(np.array(qd, dtype=object), [0, 1, 2, -1, -1], 3).tolist()
    return target, qd, qi


def test_exact_fractions_on_a_tiny_case():
    target, qd, qi = _tiny()
    for row_d, row_i in zip(qd, qi):  # q_I = q_d on the bytes / q_d(bytes), exactly
        mass = sum(row_d[:3])
        assert row_i == [x / mass for x in row_d[:3]] and sum(row_i) == 1
    # renormalising never hurts (docs/vocabularies.md, corollary); on this instance it helps
    for p, row_d, row_i in zip(target, qd, qi):
        assert sum(map(min, p, row_i)) > sum(map(min, p, row_d[:3]))
    t_fn = lambda c: target[c[-1]] if c else target[0]  # noqa: E731
    d_fn = lambda c: qi[c[-1]] if c else qi[0]  # noqa: E731
    # the one-draft round accepts sum_x min(p, q_I)(x) (token verification of q_I)
    assert mean_accepted(exact_round_law("token", t_fn, d_fn, 3, 1)) == sum(map(min, target[0], qi[0]))
    for gamma in (1, 2):  # lossless: the first three tokens have the target's law, exactly
        law = generation_law(lambda c, k: exact_round_law("token", t_fn, d_fn, 3, k, c), gamma, 3)
        assert law_total_variation(law, target_law(t_fn, 3, 3)) == 0


def test_monte_carlo_within_5_se_on_a_byte_chain():
    data = np.frombuffer((b"def f(x):\n    return x + 1\n" * 40) + b"print(f(2))\n" * 20, np.uint8)
    P = NGramChain.from_bytes(data, order=2, alpha=0.5).kernel()
    strings, q = merged_token_draft(data, top_byte_pairs(data, 6), alpha=0.5)
    chain = st.DecodingChain(P, tli_draft_law(q, byte_targets(strings), 256), initial=np.eye(256)[10])
    exact = chain.protocol(12, 3)
    sim = st.simulate(chain, 12, 3, 3000, rng=7)
    for stat in ("accepted", "target_calls"):
        assert_within_se(*sim.mean_se(stat), getattr(exact, stat), stat)


def test_script_at_quick_size(tmp_path):
    spec = importlib.util.spec_from_file_location("_voc", ROOT / "simulations" / "vocabularies.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.main(["--quick", "--out", str(tmp_path)])
    data = json.loads((tmp_path / "vocabularies.json").read_text())
    rows = data["rows"]
    assert data["tiny_tv"] == "0" and rows[0]["merges"] == 0
    assert rows[0]["mass_overlap"] == pytest.approx(1.0) and rows[0]["vocab_overlap"] == 1.0
    assert all(0 < r["mass_overlap"] <= 1 + 1e-12 and 0 < r["acceptance"] < 1 for r in rows)
    spec = importlib.util.spec_from_file_location("_fig21", ROOT / "figures" / "fig21_vocabularies.py")
    fig = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fig)
    fig.main(["--quick", "--out", str(tmp_path / "fig"), "--results", str(tmp_path)])
    saved = json.loads((tmp_path / "fig" / "fig21_vocabularies.json").read_text())
    assert saved["merges"] == [r["merges"] for r in rows]
