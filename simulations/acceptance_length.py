"""Acceptance-length tables: AL(K) never falls for prefix-only drafters, need not be concave, and a synthetic schedule misleads.

Exact long-run AL(K) (tokens per target call at fixed draft length K) of random first-order
chains (counting falls, which the monotonicity theorem of docs/acceptance_length.md forbids,
and non-concave curves, which it allows) and of the two-token non-concave example; the table
checker on simulated benchmarks (an honest table and one whose last row came from a worse
drafter); and, at i.i.d. acceptance alpha, what the min-variance synthetic accepted-count
schedule changes: the law of target calls a request of N tokens needs, and the long run of
HF's adaptive schedule. Everything but the simulated benchmarks is exact.

    python simulations/acceptance_length.py [--quick] [--out DIR]
"""

import numpy as np

import spectheory as st
from spectheory.app.results import headline, script_parser, write_results
from spectheory.stopping import HFSchedule
from spectheory.stopping.al_check import check_al_table, request_means
from spectheory.stopping.al_curves import acceptance_length_curve, is_concave, nonconcave_example
from spectheory.stopping.al_synthetic import calls_law, controller_long_run, iid_count_law, min_variance_law


def benchmark(alpha_by_k, n_requests, steps, rng):
    """Per-request accepted-count histograms of i.i.d. rounds, and the pooled AL per K."""
    table, hists = {}, {}
    for k, alpha in alpha_by_k.items():
        law = iid_count_law(alpha, k)
        h = np.stack(
            [np.bincount(rng.choice(k + 1, size=steps, p=law), minlength=k + 1) for _ in range(n_requests)]
        )
        tokens, n = request_means(h)
        table[k], hists[k] = float(tokens.sum() / n.sum()), h
    return table, hists


def quantile(law, p):
    return int(np.searchsorted(np.cumsum(law), p))


def main(argv=None):
    args = script_parser(__doc__).parse_args(argv)
    ks = list(range(1, 7 if args.quick else 11))
    n_chains = 40 if args.quick else 400
    rng = np.random.default_rng(0)
    curves, falls, nonconcave = [], 0, 0
    for i in range(n_chains):
        vocab = int(rng.integers(2, 5))
        chain = st.DecodingChain.random(
            vocab, concentration=float(rng.uniform(0.2, 1.5)), similarity=float(rng.uniform(0, 1)), rng=i
        )
        curve = acceptance_length_curve(chain, ks)
        falls += bool(np.any(np.diff(curve) < -1e-10))
        nonconcave += not is_concave(curve, tol=1e-9)
        if i < 12:
            curves.append({"vocab": vocab, "seed": i, "al": curve.tolist()})
    example = acceptance_length_curve(nonconcave_example(), ks).tolist()
    print(f"{n_chains} random chains, K = 1..{ks[-1]}: {falls} falling curves, {nonconcave} non-concave")
    print("two-token example:", np.round(example, 4).tolist())

    honest, h1 = benchmark({k: 0.7 for k in (1, 2, 3, 4)}, 40, 50, rng)
    broken, h2 = benchmark({1: 0.7, 2: 0.7, 3: 0.7, 4: 0.35}, 40, 50, rng)
    reports = {
        "honest": check_al_table(honest, h1, rng=1),
        "last row from a worse drafter": check_al_table(broken, h2, rng=1),
    }
    for name, rep in reports.items():
        print(f"\n{name}:\n{rep}")

    alpha, k, n_tokens = 0.8, 5, 256
    true_law = iid_count_law(alpha, k)
    syn_law = min_variance_law(float(true_law @ np.arange(k + 1)), k)
    lat = {name: calls_law(law, n_tokens) for name, law in (("true", true_law), ("min-variance", syn_law))}
    latency = {
        name: {
            "p50": quantile(v, 0.5),
            "p99": quantile(v, 0.99),
            "sd": float(np.sqrt(v @ np.arange(v.size) ** 2 - (v @ np.arange(v.size)) ** 2)),
            "law": v.tolist(),
        }
        for name, v in lat.items()
    }
    policy = HFSchedule(5, max_depth=10)
    laws = {
        "true": {j: iid_count_law(alpha, j) for j in range(1, 11)},
        "min-variance": {
            j: min_variance_law(float(iid_count_law(alpha, j) @ np.arange(j + 1)), j) for j in range(1, 11)
        },
    }
    controller = {name: controller_long_run(policy, law) for name, law in laws.items()}
    for name in lat:
        c = controller[name]
        print(
            f"{name:13s}: calls for {n_tokens} tokens p50 {latency[name]['p50']} p99 {latency[name]['p99']} "
            f"sd {latency[name]['sd']:.2f}; HF schedule mean K {c.mean_length:.3f}, tokens/call {c.tokens_per_call:.4f}"
        )
    data = {
        "ks": ks,
        "n_chains": n_chains,
        "falls": falls,
        "nonconcave": nonconcave,
        "curves": curves,
        "example": example,
        "checker": {name: [r.__dict__ for r in rep.rows] for name, rep in reports.items()},
        "synthetic": {
            "alpha": alpha,
            "k": k,
            "n_tokens": n_tokens,
            "latency": latency,
            "controller": {
                n: {
                    "mean_length": c.mean_length,
                    "tokens_per_call": c.tokens_per_call,
                    "length_law": c.length_law.tolist(),
                }
                for n, c in controller.items()
            },
        },
    }
    rows = [
        headline(
            f"AL(K) falls on {n_chains} random chains (theorem: none)",
            falls,
            note=f"K = 1..{ks[-1]}, long run",
        ),
        headline(f"AL(K) non-concave on {n_chains} random chains", nonconcave, note="allowed by the theorem"),
        headline(
            "two-token example AL(1), AL(2), AL(3) (exact: 2, 7/3, 3)",
            ", ".join(f"{v:.4f}" for v in example[:3]),
        ),
        headline(
            "AL checker: rows flagged in an honest / a falling table",
            f"{sum(r.flagged for r in reports['honest'].rows)} / {sum(r.flagged for r in reports['last row from a worse drafter'].rows)}",
        ),
        headline(
            f"calls for {n_tokens} tokens, p99, true law vs min-variance schedule (alpha {alpha}, K {k})",
            f"{latency['true']['p99']} vs {latency['min-variance']['p99']}",
        ),
        headline(
            "HF schedule long-run mean draft length, true law vs min-variance schedule",
            f"{controller['true'].mean_length:.3f} vs {controller['min-variance'].mean_length:.3f}",
            note=f"alpha {alpha}, max depth 10",
        ),
    ]
    path = write_results(__file__, data, args.out, argv, rows)
    print(f"wrote {path}")
    return data


if __name__ == "__main__":
    main()
