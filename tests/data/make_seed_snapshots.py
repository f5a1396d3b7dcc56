"""Record the seed snapshots of the Monte Carlo simulators: ``python tests/data/make_seed_snapshots.py``.

Each case runs one simulation with a fixed seed and keeps, per per-run array (and the tokens),
its sum and the SHA-256 of its values as little-endian int64. ``tests/montecarlo/
test_seed_snapshots.py`` re-runs the cases and asserts the same sums and hashes: the refactor to
one round driver (issue 20) must not move a single draw of the path, tree and policy rounds.

The batch cases (``batch_*``) were recorded from the position-by-position simulators that the
driver replaced; they draw in another order now, so only their means and standard errors were
kept (section ``"batch_reference"``), and regenerating leaves that section as it is (``--batch``
re-records it from the current code). The committed file is the one recorded before the
refactor: regenerating it now gives the same fingerprints plus those of the counters the old
policy simulator did not report (rejections, accepted, the accepted-count histogram).
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
SNAPSHOT = HERE / "seed_snapshots.json"
ARRAYS = ("target_calls", "rejections", "draft_tokens", "accepted", "target_time", "tokens")


def _chains():
    import spectheory as st
    from spectheory.chain.transitions import random_transition_law

    base = st.DecodingChain.random(4, n_states=5, rng=3)
    law = random_transition_law(5, 4, concentration=0.7, rng=103)
    big = np.random.default_rng(5)
    t, d = big.dirichlet(np.full(1500, 0.3)), big.dirichlet(np.full(1500, 0.3))
    return {
        "first_order": st.DecodingChain.random(4, rng=0, similarity=0.4),
        "hidden_states": st.DecodingChain.random(3, n_states=6, rng=1),
        "inhomogeneous": st.DecodingChain.random(3, horizon=12, rng=2),
        "stochastic": st.DecodingChain(base.target, base.draft, base.initial, law),
        "wide": st.DecodingChain.iid(t, d),  # V = 1500: several chunks
    }


def cases():
    """``{name: (chain name, callable(chain) -> SimulationResult)}`` of the identity cases.

    Recorded (before the one driver, with 0.1 functions removed in 0.2.0) with ``st.simulate(chain, T, gamma, ...)``,
    ``simulate_tree(chain, T, tree, verifier, ...)`` and ``simulate_policy(chain, policy, T, cost,
    ...)``; the same calls through ``st.simulate`` are below."""
    import spectheory as st
    from spectheory.stopping import ConfidenceThreshold, FixedGamma, HFSchedule
    from spectheory.trees import DraftTree, TreeRound

    tree = DraftTree.from_branching([2, 2, 1])
    wide_tree = DraftTree.from_branching([3, 1])
    out = {
        "path_token_bonus": ("first_order", lambda c: st.simulate(c, 16, 3, 700, rng=1)),
        "path_token_nobonus": ("first_order", lambda c: st.simulate(c, 16, 3, 700, rng=2, bonus=False)),
        "path_block_bonus": ("hidden_states", lambda c: st.simulate(c, 14, 4, 600, rng=3, verifier="block")),
        "path_block_nobonus": (
            "hidden_states",
            lambda c: st.simulate(c, 14, 2, 600, rng=4, verifier="block", bonus=False),
        ),
        "path_tokens": ("first_order", lambda c: st.simulate(c, 9, 4, 300, rng=5, return_tokens=True)),
        "path_block_tokens": (
            "first_order",
            lambda c: st.simulate(c, 9, st.PathRound(3, "block"), 300, rng=6, return_tokens=True),
        ),
        "path_gamma_over_horizon": ("first_order", lambda c: st.simulate(c, 3, 5, 300, rng=7)),
        "path_stochastic_token": (
            "stochastic",
            lambda c: st.simulate(c, 10, 3, 500, rng=8, return_tokens=True),
        ),
        "path_stochastic_block": (
            "stochastic",
            lambda c: st.simulate(c, 10, gamma=2, n_runs=500, rng=9, verifier="block", bonus=False),
        ),
        "path_inhomogeneous_token": ("inhomogeneous", lambda c: st.simulate(c, 12, 3, 600, rng=10)),
        "path_inhomogeneous_block": (
            "inhomogeneous",
            lambda c: st.simulate(c, 12, 3, 600, rng=11, verifier="block", return_tokens=True),
        ),
        "path_wide_block": ("wide", lambda c: st.simulate(c, 6, 3, 700, rng=12, verifier="block")),
        "path_wide_token": ("wide", lambda c: st.simulate(c, 6, 3, 700, rng=13)),
    }
    for name in ("tree_rrs", "tree_rrs_wo", "tree_topk", "traversal", "traversal_iid"):
        out[f"tree_{name}"] = (
            "first_order",
            lambda c, v=name: st.simulate(c, 12, tree, 500, rng=20, verifier=v),
        )
    out["tree_rrs_nobonus_tokens"] = (
        "hidden_states",
        lambda c: st.simulate(c, 10, TreeRound(tree), 400, rng=21, bonus=False, return_tokens=True),
    )
    out["tree_traversal_inhomogeneous"] = (
        "inhomogeneous",
        lambda c: st.simulate(c, 12, tree=tree, verifier="traversal", n_runs=400, rng=22, return_tokens=True),
    )
    out["tree_wide_wo"] = (
        "wide",
        lambda c: st.simulate(c, 6, TreeRound(wide_tree, "tree_rrs_wo"), 1000, rng=23),
    )
    for name, policy in (
        ("fixed", FixedGamma(3)),
        ("threshold", ConfidenceThreshold(0.5, max_depth=6)),
        ("schedule", HFSchedule(2, max_depth=6)),
    ):
        out[f"policy_{name}"] = (
            "first_order",
            lambda c, p=policy: st.simulate(c, 16, p, 600, rng=30, cost=0.1, progress=False),
        )
    out["policy_threshold_inhomogeneous"] = (
        "inhomogeneous",
        lambda c: st.simulate(
            c, 12, policy=ConfidenceThreshold(0.4, max_depth=5), n_runs=500, rng=31, cost=0.2, progress=False
        ),
    )
    return out


def batch_cases():
    """``{name: (chain name, callable(chain) -> {stat: per-run array})}`` of the batch cases.

    Recorded with the 0.1 functions ``simulate_batch(chain, T, gamma, M, 4000, rng=seed, bonus=bonus)`` and
    ``simulate_batch_tree(chain, T, M, 4000, gamma=gamma, rng=seed, bonus=bonus)``."""
    import spectheory as st
    from spectheory.trees import BatchRound

    def run(c, T, gamma, M, bonus, seed, reading):
        r = st.simulate(c, T, BatchRound(M, gamma, reading), 4000, rng=seed, bonus=bonus)
        return {k: getattr(r, k) for k in ("target_calls", "rejections", "draft_tokens", "accepted")}

    return {
        "batch_first_token": ("first_order", lambda c: run(c, 8, 2, 3, False, 40, "first_token")),
        "batch_first_token_bonus": ("hidden_states", lambda c: run(c, 8, 3, 2, True, 41, "first_token")),
        "batch_first_token_to_horizon": (
            "first_order",
            lambda c: run(c, 6, None, 3, False, 42, "first_token"),
        ),
        "batch_tree": ("first_order", lambda c: run(c, 8, 2, 3, False, 43, "tree")),
        "batch_tree_bonus": ("hidden_states", lambda c: run(c, 8, 3, 2, True, 44, "tree")),
        "batch_tree_to_horizon": ("first_order", lambda c: run(c, 6, None, 3, False, 45, "tree")),
    }


def fingerprint(a) -> dict:
    """Sum and SHA-256 of an integer-valued array (as little-endian int64)."""
    v = np.asarray(a, dtype=np.float64)
    if not np.array_equal(v, np.round(v)):  # times under a cost: hash rounded to 1e-9
        return {"sum": float(v.sum()), "sha256": _sha(np.round(v * 1e9)), "shape": list(v.shape)}
    return {"sum": int(v.sum()), "sha256": _sha(v), "shape": list(v.shape)}


def _sha(v) -> str:
    return hashlib.sha256(np.ascontiguousarray(v, dtype="<i8").tobytes()).hexdigest()


def record(result) -> dict:
    """The fingerprints of a result's per-run arrays (those it has)."""
    out = {}
    for name in ARRAYS:
        value = getattr(result, name, None)
        if value is not None:
            out[name] = fingerprint(value)
    counts = getattr(result, "accepted_counts", None)
    if counts is None:
        counts = getattr(result, "length_counts", None)
    if counts is not None:
        counts = np.asarray(counts)
        out["accepted_hist"] = fingerprint(counts.sum(0) if counts.ndim == 2 else counts)
    return out


def main() -> None:
    chains = _chains()
    old = json.loads(SNAPSHOT.read_text()) if SNAPSHOT.exists() else {}
    identical = {name: record(run(chains[c])) for name, (c, run) in cases().items()}
    batch = old.get("batch_reference")
    if batch is None or "--batch" in sys.argv:
        batch = {}
        for name, (c, run) in batch_cases().items():
            per_run = run(chains[c])
            batch[name] = {
                k: {"mean": float(np.mean(v)), "se": float(np.std(v, ddof=1) / np.sqrt(v.size))}
                for k, v in per_run.items()
            }
    SNAPSHOT.write_text(json.dumps({"identical": identical, "batch_reference": batch}, indent=1) + "\n")
    print(f"wrote {SNAPSHOT} ({len(identical)} identity cases, {len(batch)} batch cases)")


if __name__ == "__main__":
    main()
