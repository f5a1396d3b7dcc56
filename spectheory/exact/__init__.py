r"""Exact engines for the speculative decoding protocol on a :class:`DecodingChain`.

Two engines, both linear in the horizon ``T``:

* :func:`phase_recursion` -- for rules that verify draft tokens one position at a time
  (token verification, scaled and biased acceptance). It tracks the mass

  .. math:: Q_n[i, s] = P(\text{position } n,\ i \text{ drafts of the current round already
            accepted},\ \text{state } s)

  and moves it forward with vectorised matrix products ``Q[:gamma] @ M`` against the
  transition operators (:meth:`DecodingChain.transition_operator`) of the accept and
  reject masses and of the target kernel (bonus tokens).
* :func:`round_recursion` -- for rules that act on whole rounds (block verification):
  it moves the mass of round starts ``R_n[s]`` with a round transition
  ``Q[s, j, s']`` (dense, small ``S``).

Protocol (``docs/protocol.md``): a round starting at position ``n0`` (``n0`` tokens emitted)
drafts ``k = min(gamma, T - n0)`` tokens. Its phase at position ``n`` is ``i = n - n0``.
It ends by a rejection at phase ``j < k`` (one token from the rejection law, next
round at ``n0 + j + 1``) or with all ``k`` accepted; then, if ``bonus`` and
``n0 + k < T``, one bonus token from the target (next round at ``n0 + k + 1``),
otherwise the next round starts at ``n0 + k``. Because ``i == k`` happens exactly
when ``i == gamma`` or ``n == T``, every phase ``i < gamma`` at a position ``n < T``
drafts, and the all-accepted event is read off at phase ``gamma`` (or at ``n = T``).

Modules: :mod:`.result` (:class:`ExactResult`, the result vocabulary every exact result shares,
and :class:`ProtocolResult`), :mod:`.cost` (:class:`Cost`, what a round costs in time),
:mod:`.parts` (mass operators, token masses), :mod:`.phase`,
:mod:`.round_recursion`, :mod:`.sequence_laws`, :mod:`.expectations` (the chain-level expectations the
:class:`~spectheory.DecodingChain` methods return), :mod:`.enumeration` (Fractions) and
:mod:`.iid_gap` (Leviathan's i.i.d. formula against the exact chain values). This package never
imports :mod:`spectheory.chain` or :mod:`spectheory.verifiers`: callers hand it kernels (a chain
object, duck-typed) and rule objects. The protocol and its counters are documented in
``docs/protocol.md``.
"""

from ..cost.base import Cost, as_cost
from . import expectations
from .expectations import (  # noqa: F401  (its names: expectations.__all__)
    accepted_count_per_state,
    protocol_result,
    rejection_lower_bound,
    sequence_law,
    target_calls_law,
    tokens_per_call_per_generation,
    tv_profile,
)
from .parts import (
    PROGRESS_WORK,
    SINGLE_THREAD_STATES,
    ProtocolResult,
    blas_single_thread,
    scaled_masses,
    token_masses,
)
from .phase import calls_law, phase_recursion, token_accept_survival
from .result import ExactResult, NotComputedError
from .round_recursion import round_recursion, token_round_transition
from .sequence_laws import phase_sequence_law, target_sequence_law

__all__ = [
    "ExactResult",
    "ProtocolResult",
    "NotComputedError",
    "Cost",
    "as_cost",
    "phase_recursion",
    "round_recursion",
    "token_round_transition",
    "token_masses",
    "scaled_masses",
    "token_accept_survival",
    "phase_sequence_law",
    "target_sequence_law",
    "calls_law",
    "blas_single_thread",
    "PROGRESS_WORK",
    "SINGLE_THREAD_STATES",
    *expectations.__all__,
]
