"""The theory checked against the real decoder, at small sizes (issue 4, validation).

Uses shipped models: ``draft-small`` plays the target (fast on CPU; any model of the
contract can) and ``draft-ngram`` / ``draft-tiny`` the drafts. Seeds are fixed; statistical
criteria are stated where used: chi-square p-values (pass > 1e-4, broken rule < 1e-6) and
|z| < 5 with z over the combined standard error of prediction and measurement.
"""

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import spectheory.abstraction as A  # noqa: E402
import spectheory.validation as V  # noqa: E402
from spectheory.decoder import list_models, load_model  # noqa: E402
from spectheory.decoder.corpus import heldout_windows  # noqa: E402
from spectheory.validation.lossless import BROKEN_RULES  # noqa: E402

pytestmark = pytest.mark.skipif(
    not {"draft-small", "draft-tiny", "draft-ngram"} <= set(list_models()),
    reason="shipped draft models not present",
)


@pytest.fixture(scope="module", autouse=True)
def _threads():
    old = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(old)


@pytest.fixture(scope="module")
def models():
    return load_model("draft-small"), load_model("draft-ngram"), load_model("draft-tiny")


def test_round_dp_matches_brute_force_enumeration():
    # exact: enumerate all 2**T rejection patterns of a short path and run the protocol
    rng = np.random.default_rng(3)
    r = rng.uniform(size=(1, 5))
    for gamma in (1, 2, 3):
        for bonus in (False, True):
            exp = {"target_calls": 0.0, "rejections": 0.0, "counts": np.zeros(gamma + 1)}
            for mask in range(2**5):
                rej = [(mask >> i) & 1 for i in range(5)]
                prob = np.prod([r[0, i] if rej[i] else 1 - r[0, i] for i in range(5)])
                n, calls, rejs, counts = 0, 0, 0, np.zeros(gamma + 1)
                while n < 5:  # the protocol, reading outcome rej[m] when position m is checked
                    k, j = min(gamma, 5 - n), 0
                    calls += 1
                    while j < k and not rej[n + j]:
                        j += 1
                    counts[j] += 1
                    if j < k:
                        rejs += 1
                        n += j + 1
                    else:
                        n += k + (1 if bonus and n + k < 5 else 0)
                exp["target_calls"] += prob * calls
                exp["rejections"] += prob * rejs
                exp["counts"] += prob * counts
            out = V.round_dp(r, gamma, bonus)
            np.testing.assert_allclose(out["target_calls"][0], exp["target_calls"], rtol=1e-12)
            np.testing.assert_allclose(out["rejections"][0], exp["rejections"], rtol=1e-12)
            np.testing.assert_allclose(out["counts"][0], exp["counts"], rtol=1e-12, atol=1e-14)


def test_exact_two_token_law_is_a_law_and_matches_uncached_model(models):
    target = models[0]
    prompt = heldout_windows(1, 10)[0].tolist()
    law = V.exact_two_token_law(target, prompt)
    assert law.shape == (256, 256)
    np.testing.assert_allclose(law.sum(), 1.0, rtol=1e-12)
    with torch.no_grad():
        p1 = torch.softmax(target(torch.tensor([prompt]))[0, -1].double(), -1).numpy()
    np.testing.assert_allclose(law.sum(1), p1, atol=1e-6)


def test_lossless_passes_for_decoder_and_fails_for_broken_rules(models):
    target, ngram, _ = models
    prompt = heldout_windows(1, 12)[0].tolist()
    law = V.exact_two_token_law(target, prompt)
    real = V.lossless_check(target, ngram, prompt, 3000, 1, seed=11, law=law)
    assert real["pvalue"] > 1e-4, real  # fixed seed; a correct decoder fails w.p. 1e-4
    for rule in BROKEN_RULES:
        broken = V.lossless_check(target, ngram, prompt, 3000, 1, seed=11, rule=rule, law=law)
        assert broken["pvalue"] < 1e-6, (rule, broken)


def test_theory_agrees_with_decoder_within_5_se(models):
    target, _, tiny = models
    res = V.compare_theory(target, tiny, heldout_windows(8, 16), 10, [1, 4], 80, seed=0)
    zs = np.array([row["z"] for row in res["rows"]])
    assert np.all(np.isfinite(zs))
    assert np.abs(zs).max() < 5.0, [r for r in res["rows"] if not r["agree"]]  # 5 combined SE, seeds fixed
    stats = {r["stat"] for r in res["rows"]}
    assert {"rejections_tv", "target_calls", "count[0]", "first[4]"} <= stats
    # a wrong prediction (rejections off by 50 %) is detected at these sizes
    rej = next(r for r in res["rows"] if r["stat"] == "rejections_tv")
    z_wrong = (1.5 * rej["predicted"] - rej["measured"]) / np.hypot(rej["predicted_se"], rej["measured_se"])
    assert abs(z_wrong) > 5.0


def test_markov_chain_fit_backs_off_and_gap_shrinks_with_order(models):
    target, ngram, _ = models
    L, T = 8, 10
    prompts = heldout_windows(6, L)
    pr = V.repeat_prompts(prompts, 36)
    tp = V.sample_paths(target, pr, T, seed=5)
    st = V.path_statistics(target, ngram, tp, L, keep_laws=True)
    dp = V.sample_paths(ngram, pr, T, seed=6)
    sd = V.path_statistics(target, ngram, dp, L, keep_laws=True)
    truth = st.tv.sum(1).mean()
    gaps = []
    for k in (0, 1, 2):
        chain = A.fit_order_k_chain(k, tp, st.target_laws, dp, sd.draft_laws, L, prompts)
        assert chain.n_states >= 1 and chain.next_state.max() < chain.n_states
        gaps.append(abs(chain.rejection_lower_bound(T) - truth))
    # the order-0 chain (one state) is the i.i.d. abstraction: its rejections are T * TV of the mean laws
    mean_t = st.target_laws.reshape(-1, 256).mean(0)
    mean_d = sd.draft_laws.reshape(-1, 256).mean(0)
    chain0 = A.fit_order_k_chain(0, tp, st.target_laws, dp, sd.draft_laws, L, prompts)
    np.testing.assert_allclose(
        chain0.rejection_lower_bound(T), T * 0.5 * np.abs(mean_t - mean_d).sum(), rtol=1e-5
    )
    assert gaps[2] < gaps[0]


def test_gpu_script_quick_cpu_writes_valid_json(tmp_path):
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).resolve().parents[2] / "simulations" / "decoder_gpu.py"
    spec = importlib.util.spec_from_file_location("decoder_gpu", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.main(["--quick", "--device", "cpu", "--target", "draft-small", "--out", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "decoder_gpu.json").read_text())
    assert {"command", "date", "device", "headline", "lossless", "theory", "speed"} <= set(data)
    assert all({"name", "value", "note"} <= set(h) for h in data["headline"])
    real = [r for r in data["lossless"] if r["rule"] == "decoder"]
    assert real and all(r["pvalue"] > 1e-4 for r in real)
