r"""Gallery: batched verifiers whose randomness repeats across calls (:mod:`spectheory.testing.sequential`).

Each entry is standard token verification (p = target, q = draft; the rule of
:func:`~spectheory.testing.reference_verify_batch`) whose uniforms come from a source that does
not move between an engine's decode steps. Within one call every row has fresh uniforms, so
the one-call checks (:func:`~spectheory.testing.check_verifier`, all rows in one call) pass;
called as an engine calls it, row ``b`` meets the same uniforms at every step.
:data:`SEQUENTIAL_BUGS` maps a name to ``(factory, description, checks expected to fail)``;
a factory returns a fresh object (the cached entries keep state).

>>> from spectheory.testing.gallery_sequential import SEQUENTIAL_BUGS
>>> sorted(SEQUENTIAL_BUGS)
['counter_keyed_on_shape', 'generator_seeded_in_call', 'uniforms_cached', 'uniforms_reused_next_step']
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..verifiers.token import TOKEN
from .reference import PAD, BatchedVerifier

__all__ = ["SEQUENTIAL_BUGS", "token_verify_with"]


def token_verify_with(
    t: np.ndarray, d: np.ndarray, x: np.ndarray, ua: np.ndarray, ur: np.ndarray
) -> np.ndarray:
    """Token verification of a batch with given uniforms ``ua [N, k]`` (acceptance) and ``ur [N]`` (last token)."""
    N, k = x.shape
    n, y = TOKEN._rule(t, d, x, np.full(N, k, dtype=np.int64), ua, ur)
    out = np.full((N, k + 1), PAD, dtype=np.int64)
    xx = np.concatenate([x, np.zeros((N, 1), np.int64)], axis=1)
    out = np.where(np.arange(k + 1)[None, :] < n[:, None], xx, out)
    out[np.arange(N), n] = y
    return out


def _with_source(name: str, uniforms: Callable[[Any, tuple, Any], tuple]) -> Callable[[], BatchedVerifier]:
    """A factory of verifiers drawing ``(ua, ur) = uniforms(state, (N, k), rng)`` (``state``: a dict per object)."""

    def factory() -> BatchedVerifier:
        state: dict[str, Any] = {}

        def verify_batch(t, d, x, rng):
            x = np.asarray(x, dtype=np.int64)
            ua, ur = uniforms(state, x.shape, rng)
            return token_verify_with(np.asarray(t, float), np.asarray(d, float), x, ua, ur)

        return BatchedVerifier(verify_batch, name=name)

    return factory


def _seeded_in_call(state, shape, rng):
    g = np.random.default_rng(1234)  # a generator created and seeded inside the call
    return g.random(shape), g.random(shape[0])


def _cached(state, shape, rng):
    if state.get("shape") != shape:  # drawn once per batch shape, then kept "for speed"
        state.update(shape=shape, u=(rng.random(shape), rng.random(shape[0])))
    return state["u"]


def _reused_next_step(state, shape, rng):
    calls = state.get("calls", 0)
    state["calls"] = calls + 1
    if calls % 2 == 0 or state.get("shape") != shape:  # refreshed every other step only
        state.update(shape=shape, u=(rng.random(shape), rng.random(shape[0])))
    return state["u"]


def _counter_keyed(state, shape, rng):
    # Philox keyed on the batch shape, counter from 0: the stream does not move between steps
    bits = np.random.Philox(key=shape[0] * 1_000 + shape[1], counter=0)
    g = np.random.Generator(bits)
    return g.random(shape), g.random(shape[0])


#: name -> (factory of a fresh verifier, description, checks expected to fail)
SEQUENTIAL_BUGS: dict[str, tuple[Callable[[], BatchedVerifier], str, tuple[str, ...]]] = {
    "generator_seeded_in_call": (
        _with_source("generator_seeded_in_call", _seeded_in_call),
        "a generator created and seeded inside the call (the same uniforms at every step)",
        ("calls_independent", "acceptance_serial", "sequence_across_calls"),
    ),
    "uniforms_cached": (
        _with_source("uniforms_cached", _cached),
        "uniforms cached between steps (drawn once per batch shape)",
        ("calls_independent", "acceptance_serial", "sequence_across_calls"),
    ),
    "uniforms_reused_next_step": (
        _with_source("uniforms_reused_next_step", _reused_next_step),
        "uniforms reused by the next step (refreshed every other call)",
        ("calls_independent", "acceptance_serial"),
    ),
    "counter_keyed_on_shape": (
        _with_source("counter_keyed_on_shape", _counter_keyed),
        "counter-based (Philox) stream keyed on the batch shape, counter restarted each call",
        ("calls_independent", "acceptance_serial", "sequence_across_calls"),
    ),
}
