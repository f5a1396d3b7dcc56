"""Claimed vs exact (spectheory.analysis.verdicts, simulations/verification_rules.py, fig20).

Exact = the literal Fraction enumerations; checked against the values proved in
docs/sequence_rules.md and docs/proposal_modes.md, against the exact engine
(``chain.protocol``) and against Monte Carlo at 5 SE.
"""

import importlib.util
import json
from fractions import Fraction as F
from pathlib import Path

import numpy as np
import pytest
from _helpers import assert_within_se

import spectheory as st
from spectheory.analysis.verdicts import (
    RULE_CLAIMS,
    RuleClaim,
    law_total_variation,
    protocol_accepted,
    random_fraction_table,
    rule_exact,
    settle_claims,
    table_law_fn,
)
from spectheory.trees import GBV, BatchRound, DraftTree, TreeRound
from spectheory.verifiers import get_verifier, list_verifiers
from spectheory.verifiers.block_exact import block_emission_law
from spectheory.verifiers.gbv import GBV_K2
from spectheory.verifiers.gls import GLS_K2
from spectheory.verifiers.hsd import hsd_round_law
from spectheory.verifiers.round_laws import (
    PROPOSAL_MODES,
    exact_round_law,
    proposal_round_law,
    target_law,
)
from spectheory.verifiers.spechub_rounds import RRS_BINARY, SPECHUB_BINARY
from spectheory.verifiers.spechub_tree import SPECHUB
from spectheory.verifiers.tli import TLI

ROOT = Path(__file__).resolve().parents[2]
P, Q = [F(1, 3), F(2, 3)], [F(2, 3), F(1, 3)]
SUN_T, SUN_D = (lambda c: P), (lambda c: Q)
SUN = [("sun g2", SUN_T, SUN_D, 2, 2), ("sun g3", SUN_T, SUN_D, 2, 3)]

#: docs/sequence_rules.md and docs/proposal_modes.md: E[accepted] at gamma 2, 3 (proved there).
DOCS = {
    "token": ("10/9", "38/27"),
    "block": ("11/9", "5/3"),
    "hsd": ("11/9", "5/3"),
    "hsd_listing": ("4/3", "16/9"),
    "hsd_naive": ("13/9", "1417/729"),  # drafted tokens emitted; 4/3 and 47/27 target calls
    "point_mass": ("52/81", "532/729"),
    "sample_match": ("52/81", "532/729"),
    "argmax_onehot": ("4/9", "13/27"),
    "argmax_soft": ("3/4", "7/8"),
    "gbv_k2": ("131/81", "1621/729"),
    "gls_k2": ("1030/729", "36058/19683"),
    "spechub_binary": ("2", "3"),  # V = 2: the pair is the vocabulary, every node accepts
    "tli": ("10/9", "38/27"),  # one vocabulary: TLI is token verification (docs/vocabularies.md)
}


#: The rule objects that are not registered Verifiers, with the round the exact engine runs for
#: each (the multi-draft rules at two drafts; the Verifiers run as path rounds of themselves).
OTHER_RULES = {
    GBV_K2: lambda g: TreeRound(DraftTree.paths(2, g), GBV),
    GLS_K2: lambda g: BatchRound(2, g, reading="gls"),
    SPECHUB_BINARY: lambda g: TreeRound(DraftTree.from_branching([2] * g), SPECHUB),
    RRS_BINARY: lambda g: TreeRound(DraftTree.from_branching([2] * g), "tree_rrs"),
    TLI: lambda g: st.PathRound(g, "token"),  # the instances share one vocabulary: q_I = q
}
#: Every rule with a round law: the registered Verifiers that have one, then the others.
RULES = [get_verifier(n) for n in list_verifiers() if get_verifier(n).has_round_law] + list(OTHER_RULES)


def engine_round(rule, gamma):
    """The round the exact engine runs for ``rule``."""
    return OTHER_RULES[rule](gamma) if rule in OTHER_RULES else st.PathRound(gamma, rule)


def test_each_rule_object_enumerates_its_own_round():
    from spectheory.verifiers.gbv import gbv_round_law
    from spectheory.verifiers.gls import gls_round_law
    from spectheory.verifiers.hsd_naive import naive_hsd_round_law

    assert {r.name for r in RULES} == set(PROPOSAL_MODES) | {
        "block",
        "hsd",
        "hsd_listing",
        "hsd_naive",
        "gbv_k2",
        "gls_k2",
        "spechub_binary",
        "rrs_binary",
        "tli",
    }
    tab_t, tab_d = random_fraction_table(3, 3), random_fraction_table(4, 3)
    t, d = table_law_fn(tab_t), table_law_fn(tab_d)
    for c in ((), (2,)):
        assert exact_round_law("block", t, d, 3, 2, c) == block_emission_law(t, d, 3, 2, c)
        assert exact_round_law("hsd_listing", t, d, 3, 2, c) == hsd_round_law(t, d, 3, 2, c, "listing")
        assert exact_round_law(GBV_K2, t, d, 3, 2, c) == gbv_round_law(t, d, 3, 2, 2, c)
        assert GLS_K2.round_law(t, d, 3, 2, c) == gls_round_law(t, d, 3, 2, 2, c)
        assert TLI.round_law(t, d, 3, 2, c) == proposal_round_law("token", t, d, 3, 2, c)
        assert get_verifier("hsd_naive").round_law(t, d, 3, 2, c) == naive_hsd_round_law(t, d, 3, 2, c)
        for mode in PROPOSAL_MODES:
            assert exact_round_law(mode, t, d, 3, 2, c) == proposal_round_law(mode, t, d, 3, 2, c)
    with pytest.raises(ValueError, match="unknown verifier 'clever'"):
        exact_round_law("clever", t, d, 3, 2)
    with pytest.raises(ValueError, match="'tree_rrs' .* has no literal round law"):
        exact_round_law("tree_rrs", t, d, 3, 2)
    assert [r.name for r in RULES if r.multi_call] == ["hsd_naive"]


def test_sun_example_matches_the_proved_tables():
    rows = {r["rule"]: r for r in settle_claims(SUN)}
    assert set(rows) == {c.name for c in RULE_CLAIMS} == set(DOCS)
    for name, want in DOCS.items():
        assert [c["mean_accepted"] for c in rows[name]["instances"]] == [F(w) for w in want], name
    # the listing moves 1/9 from first tokens (1, 1) to (1, 0) (docs/sequence_rules.md, Theorem 2)
    assert rule_exact("hsd_listing", SUN_T, SUN_D, 2, 2, length=2)["tv"] == F(1, 9)
    # argmax_soft's first token is a fair coin (docs/proposal_modes.md, Proposition 3)
    assert rule_exact("argmax_soft", SUN_T, SUN_D, 2, 2, length=1)["tv"] == F(1, 6)
    for name in ("token", "block", "hsd", "point_mass", "sample_match", "argmax_onehot", "tli"):
        assert all(c["tv"] == 0 for c in rows[name]["instances"]) and rows[name]["lossless_claim_holds"]
    for name in ("hsd_listing", "argmax_soft"):
        assert all(c["tv"] > 0 for c in rows[name]["instances"]) and not rows[name]["lossless_claim_holds"]
    assert rows["hsd"]["efficiency_claim_holds"] is False and "exactly as block" in rows["hsd"]["verdict"]
    assert rows["hsd_listing"]["efficiency_claim_holds"] is True
    assert rows["argmax_onehot"]["efficiency_claim_holds"] is False  # Proposition 4
    assert rows["block"]["efficiency_claim_holds"] is True
    for name in ("gbv_k2", "gls_k2"):  # lossless; GBV beats block on this example
        assert all(c["tv"] == 0 for c in rows[name]["instances"]) and rows[name]["lossless_claim_holds"]
    assert rows["gbv_k2"]["efficiency_claim_holds"] is True
    assert rows["spechub_binary"]["lossless_claim_holds"] and rows["spechub_binary"]["efficiency_claim_holds"]


def test_total_variation_and_target_law():
    law = target_law(SUN_T, 2, 3)
    assert sum(law.values()) == 1 and law[(1, 1, 0)] == F(4, 27)
    a, b = {(0,): F(1, 4), (1,): F(3, 4)}, {(1,): F(1)}
    assert law_total_variation(a, b) == law_total_variation(b, a) == F(1, 4)
    assert law_total_variation(law, law) == 0


def test_protocol_accepted_equals_the_exact_engine():
    tab_t, tab_d = random_fraction_table(7, 3), random_fraction_table(8, 3)
    chain = st.DecodingChain(np.array(tab_t, float), np.array(tab_d, float), initial=np.eye(3)[0])
    for rule in RULES:
        if rule.multi_call:  # naive HSD: not a one-call round
            with pytest.raises(ValueError, match="more than once per round"):
                protocol_accepted(rule, table_law_fn(tab_t), table_law_fn(tab_d), 3, 2, 4)
            continue
        exact = protocol_accepted(rule, table_law_fn(tab_t), table_law_fn(tab_d), 3, 2, 4)
        assert abs(float(exact) - chain.protocol(4, engine_round(rule, 2)).accepted) < 1e-12, rule


def test_monte_carlo_within_5_se():
    chain = st.DecodingChain.iid([1 / 3, 2 / 3], [2 / 3, 1 / 3])
    for name in ("hsd_listing", "argmax_soft", "point_mass"):
        sim = st.simulate(chain, 5, st.PathRound(2, name), 4000, rng=11)
        assert_within_se(
            *sim.mean_se("accepted"), float(protocol_accepted(name, SUN_T, SUN_D, 2, 2, 5)), name
        )


def test_a_lossless_claim_on_a_biased_rule_and_the_guards():
    rows = settle_claims(
        SUN[:1], [RuleClaim("argmax_soft", "declared", False), RuleClaim("token", "x", False)]
    )
    assert [r["verdict"] for r in rows] == ["biased, as declared", "lossless (not claimed)"]
    with pytest.raises(ValueError, match="relation"):
        RuleClaim("hsd", "x", True, "block", "<")
    tab = random_fraction_table(np.random.default_rng(0), 4, max_weight=1)
    assert all(sum(r) == 1 and all(x >= 0 for x in r) for r in tab)


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_script_and_figure_at_quick_size(tmp_path):
    _load(ROOT / "simulations" / "verification_rules.py", "_vr").main(["--quick", "--out", str(tmp_path)])
    data = json.loads((tmp_path / "verification_rules.json").read_text())
    by = {r["rule"]: r for r in data["rules"]}
    assert by["hsd_listing"]["instances"][0]["tv"] == "1/9" and not by["hsd_listing"]["lossless"]
    assert data["engine_max_abs_diff"] < 1e-9
    assert data["headline"][0]["value"] == "hsd_listing, hsd_naive, argmax_soft"
    fig = _load(ROOT / "figures" / "fig20_verification_rules.py", "_fig20")
    fig.main(["--quick", "--out", str(tmp_path / "fig"), "--results", str(tmp_path)])
    saved = json.loads((tmp_path / "fig" / "fig20_verification_rules.json").read_text())
    assert saved["rules"]["argmax_soft"]["tv_sun"][0] == "13/54"
    assert saved["rules"]["hsd_naive"]["target_calls_sun"] == ["4/3", "47/27"]
