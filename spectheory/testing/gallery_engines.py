r"""Bug classes met when the kit was run on real engines' verifiers (spectheory issue 23).

Each entry of :data:`ENGINE_BUGS` is ``(verify, description, checks that must fail, checks that
must carry a note, check_verifier options)``; the verifiers need torch where they say so
(:func:`available` lists the runnable ones). p = target, q = draft.

* ``torchscript_residual_draw`` -- correct, but the residual draw happens inside a
  ``@torch.jit.script`` function, which draws from torch's *global* generator where no Python
  patch reaches: the kit seeds that generator around each run (so runs are reproducible) and
  says so in a note on ``uncontrolled_randomness``; nothing fails.
* ``manual_seed_each_draw`` -- calls ``torch.manual_seed(SEED)`` before every draw, so every
  position (and round) gets the same uniform: ``reseeding`` fails (and the laws).
* ``python_random_leq`` -- ``random.random() <= p/q`` with Python's ``random``: the kit routes
  ``random`` too, so its forced uniforms reach it (``forced_uniforms`` fails: ``u = 0`` accepts
  a draft of target probability 0, with probability 2^-53 per draw).
* ``leq_bfloat16_torch`` -- ``<=`` with bfloat16 ``torch.rand`` uniforms: ``u = 0`` with
  probability 2^-9 per draw, so zero-probability tokens come out at a visible rate: the
  forced finding states it per million emitted tokens, and from a few hundred samples per
  instance the sampled run's ``zero_probability`` finding shows the measured rate.
* ``longest_joint_ratio_prefix`` -- a "sequence-level" rule: one uniform ``u``, accept the
  longest prefix whose joint ratio :math:`\prod_{j \le i} p_j(x_j)/q_j(x_j)` exceeds ``u``.
  :math:`P(\tau \ge i) \ge \sum_{x_{1:i}} \min(p, q)(x_{1:i})` for every ``i`` at once, more than
  block verification (the lossless optimum) accepts on average: ``above_optimum`` fails.

Temperature 0 (``check_verifier(..., greedy=True)``): :func:`greedy_verify` is a correct greedy
verifier (accept while the draft is the target's argmax, then emit the argmax);
``greedy_bonus_sampled`` samples the bonus token instead of taking the argmax (the greedy and
sampled paths of a mixed batch crossed): ``zero_probability`` fails; ``greedy_stops_early``
accepts at most one draft: lossless, but ``greedy_acceptance`` fails.

>>> from spectheory.testing.gallery_engines import ENGINE_BUGS
>>> "longest_joint_ratio_prefix" in ENGINE_BUGS and "greedy_stops_early" in ENGINE_BUGS
True
"""

from __future__ import annotations

import random
import warnings
from typing import Any

import numpy as np

from .gallery import (
    _accepted,
    _accepted_leq,
    _first_failure,
    _inv_cdf,
    _torch_draw,
    _torch_leq,
    _variant,
)

__all__ = [
    "ENGINE_BUGS",
    "available",
    "torchscript_residual_draw",
    "manual_seed_each_draw",
    "python_random_leq",
    "leq_bfloat16_torch",
    "longest_joint_ratio_prefix",
    "greedy_verify",
    "SEED",
]

SEED = 1234


def _draw(w: torch.Tensor) -> int:
    return int(torch.multinomial(w, 1).item())


try:  # compiled outside any kit context (the compiler must see torch's own functions)
    import torch

    with warnings.catch_warnings():  # torch >= 2.10 deprecates TorchScript; engines still ship it
        warnings.simplefilter("ignore", DeprecationWarning)
        _script_draw = torch.jit.script(_draw)

except ImportError:  # pragma: no cover - depends on the environment
    torch = None  # type: ignore[assignment]


torchscript_residual_draw = _variant(
    "torchscript_residual_draw",
    "Correct verification; the residual / bonus token drawn inside TorchScript (needs torch).",
    draw=lambda law, rng: _script_draw(torch.from_numpy(np.ascontiguousarray(law))),
)


def _reseeded_accept(t, d, x, rng):
    u = np.empty(len(x))
    for i in range(len(x)):
        torch.manual_seed(SEED)  # BUG: every position (and round) restarts the same stream
        u[i] = float(torch.rand(1, dtype=torch.float64))
    return _accepted(t, d, x, u)


def _reseeded_draw(law, rng):
    torch.manual_seed(SEED)
    return _torch_draw(law, rng)


manual_seed_each_draw = _variant(
    "manual_seed_each_draw",
    "Reseeds torch with a fixed seed before every draw: the same uniform everywhere (needs torch).",
    accept=_reseeded_accept,
    draw=_reseeded_draw,
)

# Python's ``random`` (a module the kit routes too) instead of ``rng``
python_random_leq = _variant(
    "python_random_leq",
    "Accepts when ``random.random() <= p/q`` (Python's ``random``): u = 0 accepts p = 0.",
    accept=lambda t, d, x, rng: _accepted_leq(t, d, x, np.array([random.random() for _ in x])),  # noqa: S311
    draw=lambda law, rng: _inv_cdf(law, random.random()),  # noqa: S311
)

leq_bfloat16_torch = _variant(
    "leq_bfloat16_torch",
    "``torch.rand(dtype=bfloat16) <= p/q``: u = 0 once in 2^9 draws accepts p = 0 (needs torch).",
    accept=_torch_leq(
        lambda ratio: torch.rand(len(ratio), dtype=torch.bfloat16).float()
    ),  # BUG: <= with bfloat16
)


def _longest_prefix(t, d, x, rng):
    j = np.arange(len(x))
    with np.errstate(divide="ignore", invalid="ignore"):
        w = np.cumprod(np.where(d[j, x] > 0, t[j, x] / d[j, x], 0.0))
    ok = rng.random() < np.minimum(1.0, w)
    return int(np.flatnonzero(ok)[-1]) + 1 if ok.any() else 0  # BUG: longest, not first failure


longest_joint_ratio_prefix = _variant(
    "longest_joint_ratio_prefix",
    "One uniform; the longest prefix with joint ratio above it is accepted (out-accepts block).",
    accept=_longest_prefix,
)


def _argmax_accept(t, d, x, rng):
    top = np.argmax(t[: len(x)], axis=-1)
    return _first_failure(np.asarray(x) == top)


def _argmax_token(t, d, n, rng):
    return np.argmax(t[n])


greedy_verify = _variant(
    "greedy_verify",
    "Temperature-0 verification: accept while ``x_j = argmax p_j``, then emit ``argmax p_n``.",
    accept=_argmax_accept,
    token=_argmax_token,
)

greedy_bonus_sampled = _variant(
    "greedy_bonus_sampled",
    "Greedy acceptance, but the bonus token sampled from ``p_k`` (not its argmax).",
    accept=_argmax_accept,
    token=lambda t, d, n, rng: _inv_cdf(t[n], rng.random()) if n == len(d) else np.argmax(t[n]),  # BUG
)

greedy_stops_early = _variant(
    "greedy_stops_early",
    "Greedy verification of the first draft only (lossless at temperature 0, wasteful).",
    accept=lambda t, d, x, rng: _argmax_accept(t, d, x[:1], rng),
    token=_argmax_token,
)


#: name -> (verify, description, checks that must fail, checks that must carry a note, options)
ENGINE_BUGS: dict[str, tuple[Any, str, tuple, tuple, dict]] = {
    "torchscript_residual_draw": (
        torchscript_residual_draw,
        "residual draw inside TorchScript (torch's global generator)",
        (),
        ("uncontrolled_randomness",),
        {},
    ),
    "manual_seed_each_draw": (
        manual_seed_each_draw,
        "torch.manual_seed(k) before each draw (the same uniform at every position)",
        ("reseeding",),
        (),
        {},
    ),
    "python_random_leq": (
        python_random_leq,
        "`<=` with Python's random (u = 0 accepts p = 0)",
        ("forced_uniforms",),
        (),
        {},
    ),
    "leq_bfloat16_torch": (
        leq_bfloat16_torch,
        "`<=` with bfloat16 torch uniforms (u = 0 once in 2^9 draws accepts p = 0)",
        ("forced_uniforms",),
        (),
        {},
    ),
    "longest_joint_ratio_prefix": (
        longest_joint_ratio_prefix,
        "sequence-level rule accepting the longest prefix with joint ratio above one uniform",
        ("above_optimum",),
        (),
        {},
    ),
    "greedy_bonus_sampled": (
        greedy_bonus_sampled,
        "temperature 0: bonus token sampled instead of the argmax",
        ("zero_probability",),
        (),
        {"greedy": True},
    ),
    "greedy_stops_early": (
        greedy_stops_early,
        "temperature 0: only the first draft verified (lossless, wasteful)",
        ("greedy_acceptance",),
        (),
        {"greedy": True},
    ),
}

_NEEDS_TORCH = ("torchscript_residual_draw", "manual_seed_each_draw", "leq_bfloat16_torch")


def available() -> list[str]:
    """Names of the entries runnable here (the torch ones need torch)."""
    return [name for name in ENGINE_BUGS if torch is not None or name not in _NEEDS_TORCH]
