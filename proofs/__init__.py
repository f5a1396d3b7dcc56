"""Machine-checked symbolic proofs (sympy) of the results spectheory relies on.

Each module states one result in its docstring, proves it symbolically (for a general
vocabulary size V where sympy can, otherwise on every case of V = 2 and V = 3 with symbolic
probabilities) and exposes ``check()``, which raises AssertionError when sympy fails to
reduce an identity to the expected form. Notation: p = target, q = draft.

>>> import proofs
>>> [r.ok for r in proofs.run_all(["acceptance_tv"])]
[True]

Run all of them with ``python -m proofs``.
"""

from __future__ import annotations

import importlib
import time
import traceback
from dataclasses import dataclass

__all__ = ["PROOFS", "ProofResult", "run_all", "run_one"]

#: Module names, in the order of issue 6's list of results.
PROOFS = (
    "one_step_law",  # 1. the one-step speculative law equals the target
    "acceptance_tv",  # 2. acceptance = sum min(target, draft) = 1 - TV
    "tokens_per_call",  # 3. expected tokens per call and the optimal gamma
    "theorem1_chain",  # 4. Theorem 1 of Yin et al. on a symbolic two-step chain
    "pareto_line",  # 5. rejection + optimal TV loss = TV for over-accepting rules
    "kseq_residual",  # 6. validity of the K-SEQ residual of SpecTr
    "sequence_front_lp",  # 7. the sequence-level front is a linear program (issue 15)
)


@dataclass(frozen=True)
class ProofResult:
    """Outcome of one proof: module ``name``, its ``title``, ``ok``, ``seconds`` and the
    failure ``message`` (empty when it passed)."""

    name: str
    title: str
    ok: bool
    seconds: float
    message: str = ""

    @property
    def passed(self) -> bool:
        """Alias of ``ok``."""
        return self.ok


def run_one(name: str) -> ProofResult:
    """Import ``proofs.<name>`` and run its ``check()``; never raises for a failed proof."""
    if name not in PROOFS:
        raise ValueError(f"name: unknown proof {name!r}; choose from {', '.join(PROOFS)}")
    start = time.perf_counter()
    try:
        module = importlib.import_module(f"{__name__}.{name}")
        title = getattr(module, "TITLE", name)
        module.check()
    except AssertionError as exc:
        return ProofResult(
            name,
            locals().get("title", name),
            False,
            time.perf_counter() - start,
            str(exc) or "assertion failed",
        )
    except Exception as exc:  # a crash is a failure to prove, reported, not raised
        return ProofResult(
            name,
            locals().get("title", name),
            False,
            time.perf_counter() - start,
            f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=3)}",
        )
    return ProofResult(name, title, True, time.perf_counter() - start)


def run_all(names=None) -> list[ProofResult]:
    """Run the proofs ``names`` (default: all of :data:`PROOFS`, in order)."""
    return [run_one(n) for n in (PROOFS if names is None else names)]
