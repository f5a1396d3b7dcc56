"""How far the draft-length rules that engines ship are from the exact optimum (spectheory.stopping).

For random chains (V = 4, and V = 16 against the state optimum only), the easy/hard chain whose
acceptance depends on the context (group size 2, stay 0.5 and 0.9) and draft step costs c, the
exact expected time of: Leviathan's fixed gamma for the chain's mean acceptance, the best fixed
gamma, HuggingFace's confidence threshold (0.4) and +2/-1 schedule (alone and with the
confidence rule), an entropy rule and SpecDec++'s threshold on the true rejection probability
(both tuned on a grid: their best case), and the two optima (state information: the round's
length from its start state, by dynamic programming; path information: the oracle, by
enumerating drafted paths). Every time is reported as a ratio to the path optimum (to the
state optimum for V = 16). Then Monte Carlo of each rule on one chain (z = (MC - exact)/SE),
and the long-run optimum (Dinkelbach) of the easy/hard chain. In full mode, when torch is
installed, also order-1 chains fitted to samples of the shipped target and each draft (S up to
257 contexts, V = 256 bytes; state optimum only). Writes ``stopping_policies.json``.

Usage: python simulations/stopping_policies.py [--quick] [--out DIR]
"""

from __future__ import annotations

import numpy as np
from tqdm.auto import tqdm

import spectheory as st
from spectheory.app.results import headline, script_parser, write_results
from spectheory.chain.examples import easy_hard_chain
from spectheory.cost import Cost
from spectheory.stopping import (
    ConfidenceThreshold,
    EntropyRule,
    HFSchedule,
    RejectionThreshold,
    evaluate_policy,
    leviathan_policy,
    long_run_optimum,
    optimal_policy,
)
from spectheory.stopping.optimal import long_run_rate
from spectheory.stopping.sweep import POLICY_NAMES, policy_table


def chains(quick):
    out = []
    settings = [(0.3, 0.3), (1.0, 0.7)] if quick else [(0.3, 0.3), (0.3, 0.7), (1.0, 0.3), (1.0, 0.7)]
    for i, (conc, sim) in enumerate(settings):
        out.append(
            (
                "random V=4",
                f"conc={conc}, sim={sim}",
                st.DecodingChain.random(4, concentration=conc, similarity=sim, rng=100 + i),
            )
        )
    for stay in [0.9] if quick else [0.5, 0.9]:
        out.append(("easy/hard", f"stay={stay}", easy_hard_chain(stay, group_size=2)))
    if not quick:
        for i, (conc, sim) in enumerate([(0.3, 0.6), (1.0, 0.6)]):
            out.append(
                (
                    "random V=16 (vs state optimum)",
                    f"conc={conc}, sim={sim}",
                    st.DecodingChain.random(16, concentration=conc, similarity=sim, rng=200 + i),
                )
            )
    return out


MODEL_FAMILY = "shipped models, order-1 fits (vs state optimum)"


def model_chains(T):
    """Order-1 chains fitted to samples of the shipped target and each draft (soft counts); needs torch."""
    try:
        import torch

        from spectheory.abstraction import fit_order_k_chain
        from spectheory.decoder import load_model
        from spectheory.decoder.corpus import heldout_windows
        from spectheory.validation import path_statistics, repeat_prompts, resolve_models, sample_paths
    except ImportError:
        print("torch is not installed: skipping the shipped models' fitted chains")
        return []
    torch.set_num_threads(1)
    L, N = 16, 96
    prompts = heldout_windows(24, L)
    pr = repeat_prompts(prompts, N)
    target_name, drafts = resolve_models(None, None)
    target = load_model(target_name)
    tpaths = sample_paths(target, pr, T, seed=10_000_019)
    out = []
    for name in drafts:
        draft = load_model(name)
        st_ = path_statistics(target, draft, tpaths, L, keep_laws=True)
        dpaths = sample_paths(draft, pr, T, seed=30_000_001)
        sd = path_statistics(target, draft, dpaths, L, keep_laws=True)
        chain = fit_order_k_chain(1, tpaths, st_.target_laws, dpaths, sd.draft_laws, L, prompts)
        out.append((MODEL_FAMILY, f"{target_name}/{name}", chain))
    return out


def monte_carlo(chain, T, cost, D, n_runs, rng):
    policies = [
        leviathan_policy(chain, T, cost, max_depth=D),
        ConfidenceThreshold(0.4, max_depth=D),
        HFSchedule(min(5, D), max_depth=D),
        HFSchedule(min(5, D), max_depth=D, confidence=0.4),
        EntropyRule(1.0, max_depth=D),
        RejectionThreshold(0.5, max_depth=D),
        optimal_policy(chain, T, cost, max_depth=D).extra["policy"],
    ]
    rows = []
    for policy in policies:
        exact = evaluate_policy(chain, policy, T, cost)
        sim = st.simulate(chain, T, policy, n_runs, rng=rng, cost=cost, progress=False)
        m, se = sim.mean_se("time")
        mc, sc = sim.mean_se("target_calls")
        rows.append(
            {
                "policy": policy.name,
                "exact_time": exact.time(),
                "mc_time": m,
                "se_time": se,
                "z_time": (m - exact.time()) / se,
                "exact_calls": exact.target_calls,
                "mc_calls": mc,
                "se_calls": sc,
                "z_calls": (mc - exact.target_calls) / sc,
            }
        )
    return rows


def main(argv=None):
    args = script_parser(__doc__).parse_args(argv)
    T, D = (16, 4) if args.quick else (32, 6)
    costs = [0.05, 0.2] if args.quick else [0.01, 0.05, 0.1, 0.2, 0.4]
    rows = []
    families = chains(args.quick) + ([] if args.quick else model_chains(T))
    todo = [(fam, label, ch, c) for fam, label, ch in families for c in costs]
    for fam, label, chain, c in tqdm(todo, desc="policies x chains x costs"):
        tab = policy_table(chain, T, c, max_depth=D)
        for name, r in tab.items():
            rows.append(
                {
                    "family": fam,
                    "chain": label,
                    "c": c,
                    "policy": name,
                    "ratio": r["ratio"],
                    "reference": r["reference"],
                    "time": r["time"],
                    "tokens_per_call": r["tokens_per_call"],
                    "detail": r["detail"],
                    "states": chain.n_states,
                    "vocab": chain.vocab_size,
                }
            )
    print(f"\ntime / optimum (path optimum; state optimum for V=16 and the models), T={T}, max depth {D}")
    summary = {}
    for fam in dict.fromkeys(r["family"] for r in rows):
        print(f"\n{fam}")
        print(f"{'policy':30s}" + "".join(f"  c={c:<6g}" for c in costs))
        for name in POLICY_NAMES:
            vals = [
                np.mean(
                    [r["ratio"] for r in rows if r["family"] == fam and r["policy"] == name and r["c"] == c]
                )
                if any(r["family"] == fam and r["policy"] == name and r["c"] == c for r in rows)
                else np.nan
                for c in costs
            ]
            if np.all(np.isnan(vals)):
                continue
            summary.setdefault(fam, {})[name] = dict(zip(map(str, costs), vals))
            print(f"{name:30s}" + "".join(f"  {v:8.4f}" for v in vals))

    mc_chain = chains(True)[0][2]
    mc = monte_carlo(mc_chain, T, Cost(0.1), D, 3000 if args.quick else 20_000, np.random.default_rng(1013))
    print("\nMonte Carlo vs exact (random V=4, c=0.1): time")
    for r in mc:
        print(
            f"  {r['policy']:34s} exact {r['exact_time']:.4f}  MC {r['mc_time']:.4f} +- {r['se_time']:.4f}"
            f"  z={r['z_time']:+.2f}"
        )
    max_z = max(max(abs(r["z_time"]), abs(r["z_calls"])) for r in mc)

    eh = easy_hard_chain(0.9, group_size=2)
    long_run = []
    for c in costs:
        res = long_run_optimum(eh, c, max_depth=64)
        alpha = float(1 - eh.tv_profile(64).mean())
        g = st.iid_optimal_gamma(alpha, c, max_gamma=64)
        lev = long_run_rate(eh, g, c)
        best_fixed = max(long_run_rate(eh, k, c) for k in range(1, 65))
        long_run.append(
            {
                "c": c,
                "rate": res.rate,
                "k_easy": int(res.lengths[0]),
                "k_hard": int(res.lengths[2]),
                "leviathan_gamma": g,
                "leviathan_rate": lev,
                "best_fixed_rate": best_fixed,
                "leviathan_formula_rate": st.iid_speedup(alpha, g, c),
            }
        )
        print(
            f"easy/hard stay 0.9, c={c:g}: long-run optimum {res.rate:.4f} tokens/unit time with k = "
            f"{res.lengths[0]} (easy) / {res.lengths[2]} (hard); best fixed gamma {best_fixed:.4f}; "
            f"Leviathan's gamma={g}: {lev:.4f} (his formula predicts {st.iid_speedup(alpha, g, c):.4f})"
        )

    def mean_ratio(fam, name, c):
        return float(
            np.mean([r["ratio"] for r in rows if r["family"] == fam and r["policy"] == name and r["c"] == c])
        )

    c_head = 0.05 if 0.05 in costs else costs[0]
    heads = [
        headline(
            f"{name}: time / path optimum, random V=4 chains, c={c_head} (mean)",
            mean_ratio("random V=4", name, c_head),
        )
        for name in (
            "Leviathan gamma",
            "HF confidence 0.4",
            "HF schedule",
            "SpecDec++ threshold (tuned)",
            "optimum (state)",
        )
    ]
    heads.append(
        headline(
            f"HF confidence 0.4: time / path optimum, easy/hard chain stay 0.9, c={costs[-1]}",
            float(
                np.mean(
                    [
                        r["ratio"]
                        for r in rows
                        if r["family"] == "easy/hard"
                        and r["chain"] == "stay=0.9"
                        and r["policy"] == "HF confidence 0.4"
                        and r["c"] == costs[-1]
                    ]
                )
            ),
        )
    )
    lr = next(r for r in long_run if r["c"] == c_head)
    heads.append(
        headline(
            f"easy/hard chain stay 0.9, c={c_head}: long-run optimum rate / best fixed gamma's",
            lr["rate"] / lr["best_fixed_rate"],
            note=f"k = {lr['k_easy']} easy, {lr['k_hard']} hard",
        )
    )
    for name in ("Leviathan gamma", "HF confidence 0.4", "HF schedule"):
        sel = [
            r["ratio"]
            for r in rows
            if r["family"] == MODEL_FAMILY and r["policy"] == name and r["c"] == c_head
        ]
        if sel:
            heads.append(
                headline(
                    f"{name}: time / state optimum, shipped models' order-1 chains, c={c_head} "
                    "(mean over drafts)",
                    float(np.mean(sel)),
                )
            )
    heads.append(headline("stopping policies exact vs Monte Carlo, max |z|", max_z))
    data = {
        "T": T,
        "max_depth": D,
        "costs": costs,
        "rows": rows,
        "summary": summary,
        "monte_carlo": mc,
        "long_run_easy_hard": long_run,
    }
    path = write_results(__file__, data, args.out, argv, heads)
    print(f"wrote {path}")
    assert max_z < 5, "exact and Monte Carlo disagree beyond 5 SE"
    start_class = ("Leviathan gamma", "best fixed gamma", "HF schedule", "optimum (state)")
    assert all(
        r["ratio"] >= 1 - 1e-12 for r in rows if r["reference"] == "path" or r["policy"] in start_class
    )


if __name__ == "__main__":
    main()
