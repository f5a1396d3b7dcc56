"""Record the exact values of the package's exact engines into ``value_snapshots.json``.

The snapshot proves that a refactor of the exact entry points and result types (issue 20:
one ``chain.protocol(T, round)``, one result vocabulary) moved no number: the JSON was
recorded from the code *before* the refactor, and ``tests/exact/test_value_snapshots.py``
recomputes every case with the current code and compares to 1e-12.

Cases: ``chain.protocol`` for token and block verification, ``bonus`` True and False, on a
first-order, a general (random ``next_state``), an inhomogeneous and a stochastic-transition
chain; ``tree_protocol`` and ``tree_round_law`` for ``tree_rrs``, ``tree_rrs_wo``,
``tree_topk`` and ``traversal``; ``evaluate_policy`` for a fixed gamma (both engines), the
confidence, entropy, SpecDec++ and HF-schedule policies under two costs; ``optimal_policy``
with state and path information; ``long_run_optimum``; ``batch_tree_expected`` (finite and
infinite ``M``).

Each case is a function returning ``{name: float or nested list}``; :data:`CASES` maps case
names to them. Only the member names read here may change with the API (the recorded JSON
never does). Run ``python tests/data/make_value_snapshots.py`` to rewrite the JSON (only when
a number is *meant* to move, with the reason in the commit message).
"""

from __future__ import annotations

import json
import pathlib
from collections.abc import Callable

import numpy as np

import spectheory as st
from spectheory.chain.transitions import random_transition_law
from spectheory.cost import Cost
from spectheory.kinds.batch.exact import batch_tree_expected
from spectheory.stopping import (
    ConfidenceThreshold,
    EntropyRule,
    FixedGamma,
    HFSchedule,
    RejectionThreshold,
    evaluate_policy,
    long_run_optimum,
    optimal_policy,
)
from spectheory.trees import DraftTree, tree_protocol, tree_round_law

PATH = pathlib.Path(__file__).with_name("value_snapshots.json")
T = 9


def _chains() -> dict[str, st.DecodingChain]:
    base = st.DecodingChain.random(3, n_states=4, rng=11)
    law = random_transition_law(4, 3, concentration=0.7, rng=111)
    return {
        "first_order": st.DecodingChain.random(3, concentration=0.8, rng=0),
        "general": st.DecodingChain.random(3, n_states=5, concentration=0.6, rng=1),
        "inhomogeneous": st.DecodingChain.random(3, horizon=T, concentration=0.7, rng=2),
        "stochastic": st.DecodingChain(base.target, base.draft, base.initial, law),
    }


def _arr(x) -> float | list:
    a = np.asarray(x, dtype=np.float64)
    return float(a) if a.ndim == 0 else a.tolist()


def _path_case(chain_name: str, gamma: int, verifier: str, bonus: bool) -> Callable[[], dict]:
    def run() -> dict:
        chain = _chains()[chain_name]
        r = chain.protocol(T, gamma, verifier=verifier, bonus=bonus)
        out = {
            name: _arr(getattr(r, name))
            for name in (
                "target_calls",
                "rejections",
                "draft_tokens",
                "accepted",
                "tokens_per_call",
                "bonus_tokens",
                "accepted_counts",
                "accepted_count_law",
                "rejection_by_position",
                "round_starts",
            )
        }
        out["speedup(0.1)"] = float(r.speedup(0.1))
        if r.check_mass is not None:
            out["check_mass"] = _arr(r.check_mass)
        return out

    return run


TREES = {"2x1": [2, 1], "3": [3], "1x1x1": [1, 1, 1]}


def _tree_case(chain_name: str, tree: str, verifier: str, bonus: bool) -> Callable[[], dict]:
    def run() -> dict:
        chain = _chains()[chain_name]
        dt = DraftTree.from_branching(TREES[tree])
        r = tree_protocol(chain, T, dt, verifier, bonus)
        out = {
            name: _arr(getattr(r, name))
            for name in ("target_calls", "rejections", "draft_tokens", "accepted", "tokens_per_call")
        }
        out["accepted_count_law"] = _arr(r.accepted_count_law)
        out["round_starts"] = _arr(r.round_starts)
        out["round_law"] = _arr(tree_round_law(chain, dt, verifier, n0=2, horizon=T))
        return out

    return run


COSTS = {"c0.1": Cost(0.1), "latency": Cost(0.05, target_call=lambda k: 1.0 + 0.02 * k)}
POLICIES = {
    "fixed3": lambda: FixedGamma(3),
    "confidence": lambda: ConfidenceThreshold(0.5, max_depth=4),
    "entropy": lambda: EntropyRule(0.8, max_depth=4),
    "specdec": lambda: RejectionThreshold(0.4, max_depth=4),
    "hf": lambda: HFSchedule(initial=2, max_depth=4),
}


def _value(v) -> dict:
    out = {
        name: float(getattr(v, name))
        for name in ("target_calls", "draft_tokens", "target_time", "tokens_per_call")
    }
    out["time_per_token"] = float(v.time_per_token())
    out["time"] = float(v.time())
    out["speedup"] = float(v.speedup())
    return out


def _policy_case(chain_name: str, policy: str, cost: str, method: str) -> Callable[[], dict]:
    def run() -> dict:
        chain = _chains()[chain_name]
        return _value(evaluate_policy(chain, POLICIES[policy](), T, COSTS[cost], method=method))

    return run


def _optimal_case(chain_name: str, information: str, cost: str) -> Callable[[], dict]:
    def run() -> dict:
        chain = _chains()[chain_name]
        v = optimal_policy(chain, T, COSTS[cost], information, max_depth=4)
        out = _value(v)
        if "lengths" in v.extra:
            out["lengths"] = _arr(v.extra["lengths"])
        return out

    return run


def _long_run_case(cost: str) -> Callable[[], dict]:
    def run() -> dict:
        r = long_run_optimum(_chains()["first_order"], COSTS[cost], max_depth=8)
        return {
            "rate": r.rate,
            "lengths": _arr(r.lengths),
            "tokens_per_round": r.tokens_per_round,
            "time_per_round": r.time_per_round,
        }

    return run


def _batch_case(chain_name: str, M: float, gamma: int | None, bonus: bool) -> Callable[[], dict]:
    def run() -> dict:
        r = batch_tree_expected(_chains()[chain_name], T, M, gamma=gamma, bonus=bonus)
        out = {
            name: float(getattr(r, name))
            for name in ("rejections", "target_calls", "accepted", "draft_tokens")
        }
        out["rejection_by_position"] = _arr(r.rejection_by_position)
        return out

    return run


def _cases() -> dict[str, Callable[[], dict]]:
    cases: dict[str, Callable[[], dict]] = {}
    for chain in ("first_order", "general", "inhomogeneous", "stochastic"):
        for verifier in ("token", "block") if chain != "stochastic" else ("token",):  # block: deterministic
            for gamma in (1, 3):
                for bonus in (True, False):
                    cases[f"path/{chain}/{verifier}/g{gamma}/bonus{int(bonus)}"] = _path_case(
                        chain, gamma, verifier, bonus
                    )
    for chain in ("first_order", "general", "inhomogeneous"):
        for verifier in ("tree_rrs", "tree_rrs_wo", "tree_topk", "traversal"):
            for tree in TREES:
                for bonus in (True, False):
                    cases[f"tree/{chain}/{verifier}/{tree}/bonus{int(bonus)}"] = _tree_case(
                        chain, tree, verifier, bonus
                    )
    for chain in ("first_order", "inhomogeneous"):
        for cost in COSTS:
            for policy in POLICIES:
                cases[f"policy/{chain}/{policy}/{cost}/auto"] = _policy_case(chain, policy, cost, "auto")
            cases[f"policy/{chain}/fixed3/{cost}/rounds"] = _policy_case(chain, "fixed3", cost, "rounds")
            for information in ("state", "path"):
                cases[f"optimal/{chain}/{information}/{cost}"] = _optimal_case(chain, information, cost)
    for cost in COSTS:
        cases[f"long_run/{cost}"] = _long_run_case(cost)
    for chain in ("first_order", "general", "inhomogeneous"):
        for M in (1, 2, 3, np.inf):
            for gamma in (None, 2):
                for bonus in (True, False):
                    cases[f"batch/{chain}/M{M}/g{gamma}/bonus{int(bonus)}"] = _batch_case(
                        chain, M, gamma, bonus
                    )
    return cases


#: Case name -> function computing its values with the current code.
CASES = _cases()


def main() -> None:
    data = {name: fn() for name, fn in CASES.items()}
    PATH.write_text(json.dumps(data, indent=0, sort_keys=True) + "\n")
    print(f"{len(data)} cases written to {PATH}")


if __name__ == "__main__":
    main()
