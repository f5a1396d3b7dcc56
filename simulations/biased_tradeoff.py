"""Biased acceptance (Yin et al. 2024, Theorems 4-5): rejection against TV loss, per step and per sequence.

Per step, on one random target/draft pair (V = 8): the Pareto line rho + loss = TV and the
(rho, loss) of the over-acceptance families min(1, (t + eps)/d) and min(1, t/d + eps),
Leviathan's lenience l and Medusa's typical acceptance, each with the optimal rejection law
and with the naive law (the target). Sequence level, on a first-order chain with V = 3,
T = 6 (all 729 sequences enumerated): exact expected rejections (bonus off) against the
exact TV between the generated sequence law and the target's, plus Monte Carlo checks of
both at 5 SE. Writes ``biased_tradeoff.json`` into ``--out``.

Usage: python simulations/biased_tradeoff.py [--quick] [--out DIR]
"""

import numpy as np

import spectheory as st
from spectheory.analysis.pareto import pareto_front, sequence_front
from spectheory.app.results import headline, script_parser, write_results
from spectheory.montecarlo import sequence_tv_mc
from spectheory.verifiers.biased import (
    additive_acceptance,
    biased_rule,
    biased_step,
    lenient_acceptance,
    ratio_acceptance,
    typical_acceptance,
)
from spectheory.verifiers.rejection import rule_expected_rejections

EPS = [0.0, 0.01, 0.02, 0.05, 0.1, 0.2, 0.4]
LEN = [1.0, 0.9, 0.75, 0.5, 0.3, 0.15]
TYP = [(0.09, 0.3), (0.05, 0.2), (0.15, 0.4), (0.3, 0.6)]


def families():
    """(family name, parameter, acceptance) over the grids."""
    out = [("additive", e, additive_acceptance(e)) for e in EPS]
    out += [("ratio", e, ratio_acceptance(e)) for e in EPS]
    out += [("lenience", lv, lenient_acceptance(lv)) for lv in LEN]
    out += [("typical", f"{e:g}/{dl:g}", typical_acceptance(e, dl)) for e, dl in TYP]
    return out


def main(argv=None):
    args = script_parser(__doc__).parse_args(argv)
    n_runs = 4000 if args.quick else 40000
    rng = np.random.default_rng(11)
    t = rng.dirichlet(np.full(8, 0.6))
    d = rng.dirichlet(np.full(8, 0.6))
    front = pareto_front(t, d)
    step_rows = []
    print(f"per step: V = 8, TV = {front.tv:.4f}")
    print(f"{'family':>9} {'param':>8} {'law':>8} {'rho':>7} {'loss':>7} {'rho+loss-TV':>12}")
    for fam, par, acc in families():
        for rej in ("optimal", "target"):
            s = biased_step(t, d, acc, rej)
            step_rows.append(
                {
                    "family": fam,
                    "param": par,
                    "rejection_law": rej,
                    "rejection": float(s.rejection),
                    "loss": float(s.loss),
                    "excess": float(s.excess),
                }
            )
            print(
                f"{fam:>9} {str(par):>8} {rej:>8} {float(s.rejection):7.4f} {float(s.loss):7.4f} "
                f"{float(s.excess):12.2e}"
            )
    chain = st.DecodingChain.random(3, concentration=0.8, rng=5)
    T = 6
    rules = [biased_rule(acc, rej) for _, _, acc in families() for rej in ("optimal", "target")]
    seq = sequence_front(chain, T, rules, gamma=None, bonus=False)
    meta = [(fam, par, rej) for fam, par, _ in families() for rej in ("optimal", "target")]
    for row, (fam, par, rej) in zip(seq, meta):
        row.update(family=fam, param=par, rejection_law=rej)
    # Monte Carlo checks of a few rules (sequence TV estimator and rejections)
    checks = []
    print(f"\nsequence level: V = 3, T = {T}, exact (enumeration) vs Monte Carlo ({n_runs} runs)")
    print(f"{'rule':>34} {'TV exact':>9} {'TV MC':>8} {'SE':>7} {'rej exact':>9} {'rej MC':>8} {'SE':>6}")
    for idx in (2, 9, 16, 29, 33, len(rules) - 1):
        rule = rules[idx]
        est, se, rej = sequence_tv_mc(chain, T, rule, n_runs, rng)
        ex_rej = rule_expected_rejections(chain, T, rule)
        rse = rej.std(ddof=1) / np.sqrt(rej.size)
        checks.append(
            {
                "rule": rule.name,
                "tv_exact": seq[idx]["sequence_tv"],
                "tv_mc": est,
                "tv_se": se,
                "rej_exact": ex_rej,
                "rej_mc": float(rej.mean()),
                "rej_se": float(rse),
            }
        )
        print(
            f"{rule.name:>34} {seq[idx]['sequence_tv']:9.4f} {est:8.4f} {se:7.4f} {ex_rej:9.4f} "
            f"{rej.mean():8.4f} {rse:6.4f}"
        )
    on_line = max(
        abs(r["excess"]) for r in step_rows if r["rejection_law"] == "optimal" and r["family"] != "typical"
    )
    data = {
        "step": {"target": t.tolist(), "draft": d.tolist(), "tv": front.tv, "rows": step_rows},
        "sequence": {
            "vocab": 3,
            "horizon": T,
            "rows": seq,
            "mc_checks": checks,
            "theorem1": float(chain.tv_profile(T).sum()),
        },
    }
    path = write_results(
        __file__,
        data,
        args.out,
        argv,
        [headline("over-accepting rules with optimal law: max |rho + loss - TV|", on_line)],
    )
    print(f"wrote {path}")
    for c in checks:
        assert abs(c["tv_mc"] - c["tv_exact"]) <= 5 * c["tv_se"] + 1e-12
        assert abs(c["rej_mc"] - c["rej_exact"]) <= 5 * c["rej_se"] + 1e-12


if __name__ == "__main__":
    main()
