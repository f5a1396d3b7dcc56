"""Rejection probability against TV loss for biased (lossy) acceptance (Yin et al. 2024,
Theorems 4-5). (a) One position (V = 8): every rule satisfies rejection + loss >= TV, so
the Pareto front is the line from (0, TV) to (TV, 0) (grey). The over-acceptance families
min(1, (t + eps)/d) and min(1, t/d + eps) and Leviathan's lenience l, with the optimal
rejection law norm(max(t - d b, 0)) (filled markers), lie on it; with the naive rejection
law (the target itself; open markers, dashed) they lie strictly above it. Medusa's typical
acceptance (diamonds), which also rejects tokens standard sampling accepts, lies above it
with either law. (b) The same rules on a first-order chain with V = 3, T = 6: exact
expected rejections (bonus off) against the exact TV between the generated sequence law
and the target's (all 729 sequences enumerated); the grey curve is the mixture
acceptance (1 - lambda) min(1, t/d) + lambda with the optimal law, and the black point
standard speculative sampling (Theorem 1: loss 0, rejections = sum of E[TV]). Over a
sequence the per-step line is no longer a bound: the lenience and ratio families fall
below the mixture curve, while the naive law stays above the optimal one.
"""

import numpy as np
from matplotlib.lines import Line2D

import spectheory as st
from spectheory.analysis.pareto import pareto_front, sequence_front
from spectheory.app.plotting import PALETTE, figure, figure_args, save_figure
from spectheory.verifiers.biased import (
    additive_acceptance,
    biased_rule,
    biased_step,
    lenient_acceptance,
    ratio_acceptance,
    typical_acceptance,
)
from spectheory.verifiers.rejection import RejectionRule, standard_acceptance


def fams(quick):
    eps = (
        [0.0, 0.02, 0.05, 0.1, 0.2, 0.4] if quick else [0.0, 0.01, 0.02, 0.04, 0.07, 0.1, 0.15, 0.2, 0.3, 0.4]
    )
    ratio = [0.0, 0.1, 0.3, 0.6, 1.0] if quick else [0.0, 0.05, 0.1, 0.2, 0.3, 0.45, 0.6, 0.8, 1.0]
    len_ = [1.0, 0.8, 0.5, 0.3, 0.1] if quick else [1.0, 0.9, 0.8, 0.65, 0.5, 0.4, 0.3, 0.2, 0.1, 0.05]
    typ = [(0.09, 0.3), (0.05, 0.2), (0.2, 0.45), (0.3, 0.6)]
    return [
        ("additive eps", [additive_acceptance(e) for e in eps], eps, "o"),
        ("ratio eps", [ratio_acceptance(e) for e in ratio], ratio, "s"),
        ("lenience l", [lenient_acceptance(v) for v in len_], len_, "^"),
        ("typical (Medusa)", [typical_acceptance(e, d) for e, d in typ], [f"{e}/{d}" for e, d in typ], "D"),
    ]


def mixture(lam):
    return RejectionRule(lambda t, d: (1 - lam) * standard_acceptance(t, d) + lam, "optimal", f"mix({lam:g})")


def main(argv=None):
    args = figure_args(__doc__, argv)
    rng = np.random.default_rng(11)
    t, d = rng.dirichlet(np.full(8, 0.6)), rng.dirichlet(np.full(8, 0.6))
    front = pareto_front(t, d)
    fig, (ax, bx) = figure(ncols=2)
    ax.plot(front.rejection, front.loss, color="0.6", lw=3, alpha=0.6, label="Pareto front")
    data = {"panel_a": {"tv": front.tv, "families": {}}, "panel_b": {"families": {}}}
    families = fams(args.quick)
    for j, (name, accs, params, mk) in enumerate(families):
        c = PALETTE[j]
        entry = {"params": params}
        for rej, fill, ls in (("optimal", c, "-"), ("target", "none", "--")):
            steps = [biased_step(t, d, a, rej) for a in accs]
            x = [float(s.rejection) for s in steps]
            y = [float(s.loss) for s in steps]
            ax.plot(x, y, ls=ls, marker=mk, color=c, mfc=fill, lw=0.8, ms=3.5)
            entry[rej] = {"rejection": x, "loss": y}
        data["panel_a"]["families"][name] = entry
    ax.set_xlabel("rejection probability")
    ax.set_ylabel("TV(output, target)")
    ax.set_title(f"(a) one position, TV(target, draft) = {front.tv:.2f}")
    ax.legend(fontsize=6, loc="upper right")

    chain = st.DecodingChain.random(3, concentration=0.8, rng=5)
    T = 6
    lams = np.linspace(0, 1, 6 if args.quick else 21)
    mix = sequence_front(chain, T, [mixture(float(v)) for v in lams])
    bx.plot(
        [r["rejections"] for r in mix],
        [r["sequence_tv"] for r in mix],
        color="0.6",
        lw=3,
        alpha=0.6,
        label="mixture, optimal law",
    )
    data["panel_b"]["mixture"] = {
        "lambda": lams,
        "rejections": [r["rejections"] for r in mix],
        "sequence_tv": [r["sequence_tv"] for r in mix],
    }
    for j, (name, accs, params, mk) in enumerate(families):
        c = PALETTE[j]
        entry = {"params": params}
        for rej, fill, ls in (("optimal", c, "-"), ("target", "none", "--")):
            rows = sequence_front(chain, T, [biased_rule(a, rej) for a in accs])
            x = [r["rejections"] for r in rows]
            y = [r["sequence_tv"] for r in rows]
            bx.plot(x, y, ls=ls, marker=mk, color=c, mfc=fill, lw=0.8, ms=3.5)
            entry[rej] = {"rejections": x, "sequence_tv": y}
        data["panel_b"]["families"][name] = entry
    theorem1 = float(chain.tv_profile(T).sum())
    bx.plot([theorem1], [0.0], "o", color="k", ms=4, label="standard (Theorem 1)")
    data["panel_b"]["theorem1"] = theorem1
    bx.set_xlabel(f"expected rejections (T = {T}, bonus off)")
    bx.set_ylabel("TV(generated sequence law, target's)")
    bx.set_title("(b) sequences on a chain (V = 3, exact)")
    bx.legend(fontsize=6, loc="upper right")
    # one legend for both panels, outside the data: colour/marker = rule family, fill/line = rejection law
    handles = [
        Line2D([], [], color=PALETTE[j], marker=mk, ls="-", lw=0.8, ms=4)
        for j, (_, _, _, mk) in enumerate(families)
    ]
    labels = [name for name, _, _, _ in families]
    handles += [
        Line2D([], [], color="0.3", marker="o", mfc="0.3", ls="-", lw=0.8, ms=4),
        Line2D([], [], color="0.3", marker="o", mfc="none", ls="--", lw=0.8, ms=4),
    ]
    labels += ["filled, solid: optimal rejection law", "open, dashed: naive law (the target)"]
    fig.legend(handles, labels, loc="outside lower center", ncol=3, fontsize=6.5, frameon=False)
    save_figure(fig, "fig3_pareto", data=data, out_dir=args.out)


if __name__ == "__main__":
    main()
