"""Speed of the vectorised simulator, as ratios measured in one run.

Compares ``spectheory.simulate`` (V = 1000, gamma = 4, T = 64 by default) with

1. a straightforward per-run, per-token Python loop of the same protocol (the reference,
   tokens drawn with ``rng.choice(V, p=law)``); the simulator must be >= 100x faster per
   simulated run. Also reported: the same loop with a tuned per-token sampler
   (``searchsorted(cumsum(law), u)``), a harder baseline;
2. the floor: drawing the same number of categorical samples (draft tokens + one final
   token per round) vectorised, with the same exact inverse-CDF primitive on precomputed
   guide tables, ``n_runs`` at a time; the simulator must be within 4x of it.

Both simulators are checked to agree on the mean number of target calls (5 SE), so the
speed is not bought by doing something else. Writes ``simulator_speed.json`` into ``--out``
(default ``results/``).

Usage: python benchmarks/simulator_speed.py [--quick] [--runs N] [--ref-runs N] [--out DIR]
"""

from __future__ import annotations

import time

import numpy as np

import spectheory as st
from spectheory.app.results import headline, script_parser, write_results
from spectheory.laws.sampling import CdfTable
from spectheory.rounds import mean_and_se
from spectheory.rounds import sampler as sampler_module


def reference_simulate(chain, horizon, gamma, n_runs, rng, bonus=True, sampler="choice"):
    """Per-run, per-token loop of the protocol (DESIGN.md).

    ``sampler="choice"``: tokens drawn with ``rng.choice(V, p=law)``, the straightforward
    idiom; ``"cumsum"``: a tuned per-token inverse CDF (``searchsorted(cumsum(law), u)``).
    """
    rng = np.random.default_rng(rng)

    def draw(law):
        if sampler == "choice":
            return int(rng.choice(V, p=law))
        return min(int(np.searchsorted(np.cumsum(law) / law.sum(), rng.random(), side="right")), V - 1)

    T, V = horizon, chain.vocab_size
    calls = np.zeros(n_runs, dtype=np.int64)
    rejections = np.zeros(n_runs, dtype=np.int64)
    for r in range(n_runs):
        s = int(np.searchsorted(np.cumsum(chain.initial), rng.random(), side="right"))
        n = 0
        while n < T:
            k = min(gamma, T - n)
            calls[r] += 1
            xs, states = [], [s]
            for i in range(k):  # draft k tokens along the path
                target, draft = chain.kernels(n + i)
                x = draw(draft[states[-1]])
                xs.append(x)
                states.append(int(chain.next_state[states[-1], x]))
            j = 0
            while j < k:  # verify left to right
                target, draft = chain.kernels(n + j)
                t, d = target[states[j]], draft[states[j]]
                if rng.random() * d[xs[j]] < t[xs[j]]:
                    j += 1
                    continue
                break
            if j < k:  # rejection: residual token
                rejections[r] += 1
                target, draft = chain.kernels(n + j)
                t, d = target[states[j]], draft[states[j]]
                res = np.maximum(t - d, 0.0)
                res = res / res.sum() if res.sum() > 1e-15 else t
                y = draw(res)
                s = int(chain.next_state[states[j], y])
                n += j + 1
            elif bonus and n + k < T:  # bonus token from the target
                target, _ = chain.kernels(n + k)
                y = draw(target[states[k]])
                s = int(chain.next_state[states[k], y])
                n += k + 1
            else:
                s = states[k]
                n += k
    return calls, rejections


def floor_sampling(chain, n_samples, batch, rng):
    """Draw ``n_samples`` categorical samples vectorised, with the simulator's own fastest
    exact primitive (inverse CDF on a precomputed guide table), ``batch`` at a time, each
    batch continuing from the states the previous one reached (a random walk of the draft)."""
    rng = np.random.default_rng(rng)
    table = CdfTable(chain.draft)
    s = rng.integers(0, chain.n_states, batch)
    done = 0
    while done < n_samples:
        m = min(batch, n_samples - done)
        x = table.sample(s[:m], rng.random(m))
        s[:m] = chain.next_state[s[:m], x]
        done += m
    return s


def timed(fn, repeat=1):
    best = np.inf
    out = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main(argv=None):
    ap = script_parser(__doc__)
    ap.add_argument("--vocab", type=int, default=1000)
    ap.add_argument("--gamma", type=int, default=4)
    ap.add_argument("--horizon", type=int, default=64)
    ap.add_argument("--runs", type=int, default=None, help="simulator runs (default 4000, quick 1000)")
    ap.add_argument("--ref-runs", type=int, default=None, help="reference-loop runs (default 40, quick 10)")
    args = ap.parse_args(argv)
    n_runs = args.runs or (1000 if args.quick else 4000)
    n_ref = args.ref_runs or (10 if args.quick else 40)
    V, g, T = args.vocab, args.gamma, args.horizon

    chain = st.DecodingChain.random(V, concentration=0.3, draft_concentration=0.3, similarity=0.5, rng=0)
    st.simulate(chain, T, g, 50, rng=0, progress=False)  # builds the CDF tables once (cached)
    t_sim, res = timed(lambda: st.simulate(chain, T, g, n_runs, rng=1, progress=False), repeat=2)
    t_ref, (ref_calls, _) = timed(lambda: reference_simulate(chain, T, g, n_ref, rng=2))
    t_ref2, (ref2_calls, _) = timed(lambda: reference_simulate(chain, T, g, n_ref, rng=4, sampler="cumsum"))
    n_samples = int(res.draft_tokens.sum() + res.target_calls.sum())
    batch = n_runs
    t_floor, _ = timed(lambda: floor_sampling(chain, n_samples, batch, rng=3), repeat=2)
    saved = sampler_module.TABLE_LIMIT
    sampler_module.TABLE_LIMIT = 0
    try:
        t_notab, _ = timed(lambda: st.simulate(chain, T, g, n_runs // 4, rng=1, progress=False))
        t_notab *= 4
    finally:
        sampler_module.TABLE_LIMIT = saved

    m_sim, se_sim = mean_and_se(res.target_calls)
    m_ref, se_ref = mean_and_se(ref_calls)
    m_ref2, se_ref2 = mean_and_se(ref2_calls)
    z2 = (m_sim - m_ref2) / np.hypot(se_sim, se_ref2)
    per_run_ref2 = t_ref2 / n_ref
    z = (m_sim - m_ref) / np.hypot(se_sim, se_ref)
    per_run_sim = t_sim / n_runs
    per_run_ref = t_ref / n_ref
    out = {
        "setting": {
            "vocab": V,
            "gamma": g,
            "horizon": T,
            "sim_runs": n_runs,
            "ref_runs": n_ref,
            "chain": "DecodingChain.random(V, concentration=0.3, similarity=0.5, rng=0)",
        },
        "seconds_per_run": {
            "simulator": per_run_sim,
            "reference_loop": per_run_ref,
            "reference_loop_tuned_cumsum": per_run_ref2,
            "floor_sampling": t_floor / n_runs,
            "simulator_without_cdf_tables": t_notab / n_runs,
        },
        "categorical_samples": n_samples,
        "speedup_vs_reference": per_run_ref / per_run_sim,
        "speedup_vs_tuned_reference": per_run_ref2 / per_run_sim,
        "ratio_to_floor": t_sim / t_floor,
        "ratio_to_floor_without_tables": t_notab / t_floor,
        "target_calls_mean": {
            "simulator": [m_sim, se_sim],
            "reference": [m_ref, se_ref],
            "z": z,
            "reference_tuned": [m_ref2, se_ref2],
            "z_tuned": z2,
        },
        "requirements": {
            "speedup_vs_reference >= 100": per_run_ref / per_run_sim >= 100,
            "ratio_to_floor <= 4": t_sim / t_floor <= 4,
        },
    }
    print(f"V={V} gamma={g} T={T}; simulator {n_runs} runs, reference {n_ref} runs")
    print(f"  simulator        {per_run_sim * 1e3:9.4f} ms/run")
    print(
        f"  reference loop   {per_run_ref * 1e3:9.4f} ms/run   -> simulator is {out['speedup_vs_reference']:.0f}x faster (rng.choice per token)"
    )
    print(
        f"  tuned reference  {per_run_ref2 * 1e3:9.4f} ms/run   -> simulator is {out['speedup_vs_tuned_reference']:.0f}x faster (cumsum+searchsorted per token)"
    )
    print(
        f"  sampling floor   {t_floor / n_runs * 1e3:9.4f} ms/run   -> simulator / floor = {out['ratio_to_floor']:.2f}"
    )
    print(
        f"  without CDF tables {t_notab / n_runs * 1e3:7.4f} ms/run   -> / floor = {out['ratio_to_floor_without_tables']:.2f}"
    )
    print(
        f"  mean target calls: simulator {m_sim:.3f} +- {se_sim:.3f}, reference {m_ref:.3f} +- {se_ref:.3f} (z = {z:.2f}), tuned {m_ref2:.3f} +- {se_ref2:.3f} (z = {z2:.2f})"
    )
    path = write_results(
        __file__,
        out,
        args.out,
        argv,
        [
            headline(
                f"simulator speedup vs per-token reference loop (V={V}, gamma={g}, T={T}; requirement >= 100x)",
                out["speedup_vs_reference"],
                note="rng.choice per token",
            ),
            headline(
                "simulator speedup vs tuned reference loop (cumsum + searchsorted per token)",
                out["speedup_vs_tuned_reference"],
            ),
            headline("simulator time / vectorised sampling floor (requirement <= 4)", out["ratio_to_floor"]),
            headline("simulator vs reference loop, mean target calls z", z),
        ],
    )
    print(f"wrote {path}")
    return out


if __name__ == "__main__":
    main()
