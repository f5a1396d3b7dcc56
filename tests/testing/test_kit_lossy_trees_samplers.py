"""Declared-lossy tree rules and whole samplers: reported lossy with a measured loss, not failed.

The tree kit and ``check_sampler`` read ``lossless = False`` as ``check_verifier`` does: the law
tests still run, their failures become notes, and ``loss`` states the measured TV of the
completed output from the target; ``lossy=False`` restores the strict judgment, and a rule that
claims to be lossless but is not still fails. Every kit entry takes ``rng``.
"""

import numpy as np
import pytest

import spectheory as st
from spectheory.testing import check_round, check_sampler, check_verifier, reference_verify
from spectheory.testing.gallery_samplers import make_sampler
from spectheory.testing.trees import check_tree_verifier, reference_tree_verify

TREE_KW = dict(n_samples=3000, rng=0)
SAMPLER_KW = dict(n_samples=2000, rng=0, families=["markov"], vocab_sizes=(3,), gammas=(2,), progress=False)


def _greedy_tree(lossless):
    """A lossy tree rule: follow the drafted child of largest target probability to a leaf,
    then emit the target's argmax (no randomness; every emitted token has target mass)."""

    def verify(tree, tokens, target_laws, draft_laws, rng):
        R = tokens.shape[0]
        node = np.zeros(R, dtype=np.int64)
        for r in range(R):
            u = 0
            while True:
                kids = [c for c in tree.children[u] if tokens[r, c] >= 0]
                mass = [target_laws[r, u, tokens[r, c]] for c in kids]
                if not kids or max(mass) == 0:
                    break
                u = kids[int(np.argmax(mass))]
            node[r] = u
        tok = np.argmax(target_laws[np.arange(R), node], axis=-1).astype(np.int64)
        return node, tok

    verify.lossless = lossless
    verify.children = "iid"
    return verify


def test_declared_lossy_tree_rule_is_reported_lossy_not_failed():
    report = check_tree_verifier(_greedy_tree(False), **TREE_KW)
    assert report.passed and report.lossy and report.failed == [], str(report)
    assert not all(r["law_passed"] for r in report.rows)  # the law test still ran, and sees the loss
    assert all("measured TV" in r["loss"] for r in report.rows)
    assert max(r["loss_interval"][0] for r in report.rows) > 0.05  # a loss, proven
    assert "declared lossy" in str(report) and "BIASED" not in str(report)
    strict = check_tree_verifier(_greedy_tree(False), lossy=False, **TREE_KW)
    assert not strict.passed and not strict.lossy and "law" in strict.failed


def test_tree_rule_claiming_lossless_still_fails():
    report = check_tree_verifier(_greedy_tree(True), **TREE_KW)
    assert not report.passed and "law" in report.failed and not report.lossy


def test_lossless_tree_controls_still_pass():
    ref = reference_tree_verify("traversal")
    assert ref.lossless is True
    report = check_tree_verifier(ref, "wo", **TREE_KW)
    assert report.passed and not report.lossy and all("loss" not in r for r in report.rows)
    forced = check_tree_verifier(ref, "wo", lossy=True, **TREE_KW)  # measured: close to 0
    assert forced.passed and all(r["loss_interval"][0] == 0 for r in forced.rows)
    with pytest.raises(ValueError, match="lossy"):
        check_tree_verifier(ref, "wo", lossy="yes", **TREE_KW)


def _declared(sampler, lossless):
    def wrapped(*args):
        return sampler(*args)

    wrapped.lossless = lossless
    return wrapped


def test_declared_lossy_sampler_is_reported_lossy_not_failed():
    lossy = _declared(make_sampler(bug="greedy_draft_soft_q"), False)
    report = check_sampler(lossy, **SAMPLER_KW)
    assert report.passed and report.config["protocol"]["lossy"] is True, str(report)
    assert "measured TV" in report["loss"].note
    assert not check_sampler(lossy, lossy=False, **SAMPLER_KW).passed  # the strict judgment


def test_sampler_claiming_lossless_still_fails_and_controls_pass():
    assert not check_sampler(_declared(make_sampler(bug="greedy_draft_soft_q"), True), **SAMPLER_KW).passed
    good = check_sampler(make_sampler(), **SAMPLER_KW)
    assert good.passed and good.config["protocol"]["lossy"] is False
    assert "loss" not in [c.name for c in good.checks]


def test_every_kit_entry_takes_rng():
    a = check_verifier(reference_verify, n_samples=200, rng=5).to_dict()
    b = check_verifier(reference_verify, n_samples=200, rng=np.random.SeedSequence(5)).to_dict()
    assert a["checks"] == b["checks"]  # an int seeds the same SeedSequence as before
    g1 = check_verifier(reference_verify, n_samples=200, rng=np.random.default_rng(1)).to_dict()
    g2 = check_verifier(reference_verify, n_samples=200, rng=np.random.default_rng(1)).to_dict()
    assert g1["checks"] == g2["checks"]  # a Generator: reproducible
    assert check_sampler(
        make_sampler(), n_samples=100, rng=np.random.default_rng(2), families=["markov"]
    ).passed
    assert check_round(st.PathRound(2), n_samples=300, rng=0).passed
    with pytest.raises(TypeError, match="rng"):
        check_verifier(reference_verify, n_samples=50, rng="abc")
    with pytest.raises(TypeError, match="seed"):
        check_verifier(reference_verify, n_samples=50, seed=0)  # no alias: release 0.2.0
