"""Hostile numerics (spectheory.testing.hostile): the families hand what they say, the reference
samplers meet every requirement, the gallery's numerical habits are flagged with a call that
reproduces them, and the default run is unchanged."""

from fractions import Fraction

import numpy as np
import pytest

from spectheory.testing import as_batched, check_verifier, reference_verify, reference_verify_batch
from spectheory.testing._runner import fmt_call
from spectheory.testing.gallery_hostile import HOSTILE_BUGS
from spectheory.testing.hostile import HOSTILE_SET, hostile_families
from spectheory.testing.instances import FAMILIES, OPT_IN_FAMILIES, constant_uniform_rng, make_instance


def _handed(family, n=2000, V=5, k=3, seed=0):
    inst = make_instance(family, V, k, seed)
    tp, dp, x = inst.sample_drafts(n, np.random.default_rng(seed + 1))
    return inst, tp, dp, x


def _at(a, x):
    return np.take_along_axis(a[:, : x.shape[1]], x[..., None], axis=2)[..., 0]


def test_hostile_families_are_opt_in():
    assert set(HOSTILE_SET) <= set(OPT_IN_FAMILIES) and not set(HOSTILE_SET) & set(FAMILIES)
    assert hostile_families(None) == [] and hostile_families(True) == list(HOSTILE_SET)
    with pytest.raises(ValueError, match="unknown family"):
        hostile_families(["zeros"])


def test_the_families_hand_what_they_say():
    inst, tp, dp, x = _handed("masked_drafts")
    zero_zero = (_at(dp, x) == 0) & (_at(tp, x) == 0)
    assert zero_zero.any()  # 0/0 in p/q, on drafts drawn from the unmasked draft law
    assert np.all(_at(inst.draft[:, inst.s0][None].repeat(len(x), 0), x) > 0)
    _, tp, dp, _ = _handed("neg_inf_logits")
    assert tp.dtype == np.float32 and (tp == 0).any() and (dp == 0).any()
    _, tp, _, _ = _handed("nan_rows")
    assert np.isnan(tp).any()
    _, tp, dp, _ = _handed("float16")
    sub = (tp != 0) & (np.abs(tp) < np.finfo(np.float16).tiny)
    assert tp.dtype == np.float16 and sub.any() and np.any(tp.astype(np.float64).sum(-1) != 1.0)
    _, tp, _, _ = _handed("bfloat16")
    assert tp.dtype == np.float32 and np.all(tp.view(np.uint32) & 0xFFFF == 0)
    _, tp, dp, _ = _handed("denormals")
    assert np.any((tp > 0) & (tp < np.finfo(np.float64).tiny))


def test_masking_where_the_target_is_zero_keeps_token_verification_lossless():
    """Exact in Fractions: with q shown as q * [p > 0] (not renormalised), a drafted x ~ q is
    accepted w.p. min(1, p/q) (0/0 -> reject), else y ~ (p - q_shown)_+ / Z: the output law is p."""
    p = [Fraction(1, 2), Fraction(1, 2), Fraction(0), Fraction(0)]
    q = [Fraction(1, 10), Fraction(2, 5), Fraction(3, 10), Fraction(1, 5)]
    shown = [qi if pi > 0 else Fraction(0) for pi, qi in zip(p, q)]
    acc = [min(Fraction(1), pi / si) if si > 0 else Fraction(0) for pi, si in zip(p, shown)]
    res = [max(pi - si, Fraction(0)) for pi, si in zip(p, shown)]
    z = sum(res)
    reject = sum(qi * (1 - ai) for qi, ai in zip(q, acc))
    out = [q[y] * acc[y] + reject * res[y] / z for y in range(4)]
    assert out == p


@pytest.mark.parametrize(
    "verify, n",
    [(reference_verify, 300), (as_batched(reference_verify_batch), 3000)],
    ids=["rounds", "batch"],
)
def test_the_reference_samplers_meet_every_requirement(verify, n):
    report = check_verifier(verify, n_samples=n, rng=11, hostile=True, families=["zeros"])
    assert report.passed, str(report)
    assert [h["family"] for h in report.config["hostile"]] == list(HOSTILE_SET)
    assert all(h["passed"] for h in report.config["hostile"])
    assert "refused the non-finite input" in report.notes["runs_without_error"]  # the NaN: refused


@pytest.mark.parametrize("name", sorted(HOSTILE_BUGS))
def test_each_numerical_habit_is_flagged_and_reproduced(name):
    verify, _, families, must_fail = HOSTILE_BUGS[name]
    assert check_verifier(verify, n_samples=300, rng=3, families=["zeros", "markov"]).passed
    report = check_verifier(verify, n_samples=300, rng=3, hostile=families, families=["zeros"])
    broken = {h["family"]: h["failed"] for h in report.config["hostile"] if not h["passed"]}
    assert set(broken) == set(families), str(report)
    assert all(set(f) & set(must_fail) for f in broken.values())
    text = str(report)
    assert "BROKE it" in text and "first broken hostile input:" in text
    # the printed call reproduces the failure (the uniforms forced to 0 accept every draft with p > 0)
    example = next(h["example"] for h in report.config["hostile"] if "example" in h)
    lines = example.splitlines()
    a = next(i for i, ln in enumerate(lines) if ln.startswith("target_probs"))
    b = next(i for i, ln in enumerate(lines) if ln.startswith("draft_tokens"))
    call = {}
    exec("\n".join(lines[a : b + 1]), {"np": np}, call)
    tp, dp, x = (np.asarray(call[k]) for k in ("target_probs", "draft_probs", "draft_tokens"))
    if "runs_without_error" in must_fail:
        with pytest.raises((ZeroDivisionError, ValueError)):
            for which in ("low", "high"):
                verify(tp, dp, np.array(x), constant_uniform_rng(which))
    else:
        out = verify(tp, dp, np.array(x), constant_uniform_rng("low"))
        assert np.any(tp[np.arange(len(out)), out] == 0)


def test_fmt_call_prints_hostile_arrays_exactly():
    tp = np.array([[0.1, 3e-6, np.nan], [0.5, 0.25, 0.25]]).astype(np.float16)
    dp = np.array([[0.5, 1e-310, 0.5]])
    text = fmt_call(tp, dp, [1])
    call = {}
    exec(text, {"np": np}, call)
    assert call["target_probs"].dtype == np.float16
    np.testing.assert_array_equal(call["target_probs"], tp)  # NaN in the same place, values to the bit
    assert call["draft_probs"][0, 1] == 1e-310


def test_the_default_run_is_unchanged_by_hostile_families():
    plain = check_verifier(reference_verify, n_samples=100, rng=5, families=["zeros", "equal"])
    more = check_verifier(
        reference_verify, n_samples=100, rng=5, families=["zeros", "equal"], hostile=["float16"]
    )
    n = plain.config["n_instances"]
    assert more.config["instances"][:n] == plain.config["instances"]
    a = [f.p_value for f in plain["first_token_law"].findings]
    b = [f.p_value for f in more["first_token_law"].findings][:n]
    assert a == b and "hostile" not in plain.config


def test_a_sampler_declares_hostile():
    class Declared:
        hostile = ("masked_drafts",)

        def __call__(self, *args):
            return HOSTILE_BUGS["nan_ratio_accepts"][0](*args)

    report = check_verifier(Declared(), n_samples=200, rng=0, families=["equal"])
    assert {h["family"] for h in report.config["hostile"]} == {"masked_drafts"}  # one per vocabulary size
    assert "zero_probability" in report.failed


def test_the_pytest_plugin_passes_hostile_and_names_the_broken_inputs():
    from spectheory.testing.pytest_plugin import KitCheck

    check = KitCheck("verifier", samples=200, seed=0, hostile=["masked_drafts"], families=["equal"])
    with pytest.raises(AssertionError, match="hostile masked_drafts V=3 k=3: BROKE it"):
        check(HOSTILE_BUGS["ratio_zero_division"][0])
    assert check(reference_verify).passed


def test_the_false_alarm_script_merges_its_hostile_runs(tmp_path):
    import importlib.util
    import json
    import pathlib

    root = pathlib.Path(__file__).resolve().parents[2]
    committed = json.loads((root / "results" / "testing_kit_false_alarms.json").read_text())
    assert all(r["runs_flagged"] <= 1 and r["n_seeds"] >= 200 for r in committed["hostile_runs"].values())
    spec = importlib.util.spec_from_file_location("fa", root / "simulations" / "testing_kit_false_alarms.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    (tmp_path / "testing_kit_false_alarms.json").write_text(json.dumps(committed))
    module.main(["--hostile", "--quick", "--samplers", "numpy", "--out", str(tmp_path)])
    new = json.loads((tmp_path / "testing_kit_false_alarms.json").read_text())
    assert new["runs"] == committed["runs"] and new["command"] == committed["command"]
    assert new["hostile_runs"]["numpy"]["n_seeds"] == 3 and new["hostile_runs"]["numpy"]["runs_flagged"] == 0
    assert set(new["hostile_runs"]) == set(committed["hostile_runs"])  # the other samplers' runs kept


def test_the_torch_reference_refuses_a_nan_and_meets_every_requirement():
    pytest.importorskip("torch")
    from spectheory.testing.torch_adapter import from_torch_sampler, torch_reference_sampler

    report = check_verifier(
        from_torch_sampler(torch_reference_sampler), n_samples=500, rng=4, hostile=True, families=["zeros"]
    )
    assert report.passed, str(report)
    assert "refused the non-finite input: ValueError" in report.notes["runs_without_error"]
