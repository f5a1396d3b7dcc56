r"""Hypothesis strategies for property-testing speculative samplers (needs ``hypothesis``).

Every strategy draws its randomness from an integer seed (and a few small structural
choices), so failing examples shrink to small seeds and small vocabularies. p = target,
q = draft.

* :func:`laws` -- probability vectors, including exact zeros, one-hots, near-one-hots
  (``1 - 1e-6`` and the rest spread), tiny entries (``~1e-6``) and uniform laws;
* :func:`law_pairs` -- ``(target, draft)`` with total variation in a chosen band;
* :func:`verification_instances` -- ``(target_probs [k+1,V], draft_probs [k,V], draft_tokens [k])``
  with the drafts sampled from the draft rows, ready for ``verify(..., rng)``;
* :func:`chains` -- small first-order chains as arrays ``(target [S,V], draft [S,V], initial [S])``;
  :func:`decoding_chains` -- the same as :class:`spectheory.DecodingChain`;
* :func:`kit_instances` -- :class:`~spectheory.testing.Instance` objects for
  :func:`~spectheory.testing.check_verifier` (``instances=[...]``);
* :func:`tree_kit_instances` -- ``(name, chain, tree)`` for
  :func:`~spectheory.testing.check_tree_verifier` (``instances=[...]``).

Examples
--------
>>> from hypothesis import given, settings
>>> from spectheory.testing import strategies as sst, reference_verify
>>> @settings(max_examples=20, deadline=None)
... @given(sst.verification_instances(), sst.seeds())
... def test_prefix(instance, seed):
...     target_probs, draft_probs, draft_tokens = instance
...     out = reference_verify(target_probs, draft_probs, draft_tokens, seed)
...     assert list(out[:-1]) == list(draft_tokens[:len(out) - 1])
>>> test_prefix()
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from hypothesis import strategies as st

from .._guards import check_int
from .instances import FAMILIES, make_instance
from .random_laws import LAW_KINDS, random_law

if TYPE_CHECKING:
    from ..chain import DecodingChain
    from .instances import Instance

__all__ = [
    "seeds",
    "laws",
    "law_pairs",
    "verification_instances",
    "chains",
    "decoding_chains",
    "kit_instances",
    "tree_kit_instances",
    "LAW_KINDS",
    "random_law",
]


def seeds() -> st.SearchStrategy[int]:
    """Integer seeds (shrink towards 0)."""
    return st.integers(0, 2**32 - 1)


def _vocab(vocab_size: int | None, min_vocab: int, max_vocab: int) -> st.SearchStrategy[int]:
    if vocab_size is None:
        return st.integers(check_int(min_vocab, "min_vocab", 1), check_int(max_vocab, "max_vocab", 1))
    return st.just(check_int(vocab_size, "vocab_size", 1))


@st.composite
def laws(
    draw: st.DrawFn,
    vocab_size: int | None = None,
    *,
    min_vocab: int = 2,
    max_vocab: int = 8,
    kinds: Sequence[str] = LAW_KINDS,
) -> np.ndarray:
    """A probability vector ``[V]`` (float64, sums to 1) of one of ``kinds`` (see :data:`LAW_KINDS`)."""
    V = draw(_vocab(vocab_size, min_vocab, max_vocab))
    kind = draw(st.sampled_from(tuple(kinds)))
    rng = np.random.default_rng(draw(seeds()))
    return random_law(rng, V, kind)


@st.composite
def law_pairs(
    draw: st.DrawFn,
    vocab_size: int | None = None,
    *,
    tv: tuple[float, float] = (0.0, 1.0),
    min_vocab: int = 2,
    max_vocab: int = 8,
    kinds: Sequence[str] = LAW_KINDS,
) -> tuple[np.ndarray, np.ndarray]:
    r"""``(target, draft)`` with :math:`\mathrm{TV}(p, q)` in the band ``tv = (lo, hi)``.

    The draft is the mixture :math:`q = (1 - \lambda) p + \lambda o` with ``o`` one-hot on a
    least likely target token, so :math:`\mathrm{TV}(p, q) = \lambda (1 - \min_x p(x))`;
    :math:`\lambda` is chosen to hit a TV drawn from the band (clipped to the largest TV this
    construction reaches, ``1 - min p``; use a band within it). With probability 1/4 the draft
    is instead an independent law of the same kinds (any TV, band not enforced) when
    ``tv`` is the full ``(0, 1)``.
    """
    lo, hi = float(tv[0]), float(tv[1])
    if not 0.0 <= lo <= hi <= 1.0:
        raise ValueError(f"tv: expected 0 <= lo <= hi <= 1, got {tv!r}")
    V = draw(_vocab(vocab_size, min_vocab, max_vocab))
    target = draw(laws(V, kinds=kinds))
    if lo == 0.0 and hi == 1.0 and draw(st.integers(0, 3)) == 0:
        return target, draw(laws(V, kinds=kinds))
    goal = draw(st.floats(lo, hi))
    a = int(np.argmin(target))
    reach = 1.0 - target[a]
    lam = 0.0 if reach == 0 else min(1.0, goal / reach)
    draft = (1.0 - lam) * target
    draft[a] += lam
    return target, draft / draft.sum()


@st.composite
def verification_instances(
    draw: st.DrawFn,
    vocab_size: int | None = None,
    k: int | None = None,
    *,
    min_vocab: int = 2,
    max_vocab: int = 6,
    max_k: int = 4,
    kinds: Sequence[str] = LAW_KINDS,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(target_probs [k+1, V], draft_probs [k, V], draft_tokens [k])``, drafts sampled from the draft rows."""
    V = draw(_vocab(vocab_size, min_vocab, max_vocab))
    kk = draw(st.integers(1, max_k)) if k is None else check_int(k, "k", 1)
    pairs = [draw(law_pairs(V, kinds=kinds)) for _ in range(kk)]
    target = np.array([p[0] for p in pairs] + [draw(laws(V, kinds=kinds))])
    draft = np.array([p[1] for p in pairs])
    rng = np.random.default_rng(draw(seeds()))
    tokens = np.array([rng.choice(V, p=row) for row in draft], dtype=np.int64)
    return target, draft, tokens


@st.composite
def chains(
    draw: st.DrawFn,
    vocab_size: int | None = None,
    *,
    min_vocab: int = 2,
    max_vocab: int = 5,
    kinds: Sequence[str] = LAW_KINDS,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A first-order chain as arrays ``(target [V, V], draft [V, V], initial [V])`` (state = last token)."""
    V = draw(_vocab(vocab_size, min_vocab, max_vocab))
    rows = [draw(law_pairs(V, kinds=kinds)) for _ in range(V)]
    initial = draw(laws(V, kinds=("dirichlet", "zeros", "one_hot", "uniform")))
    return np.array([r[0] for r in rows]), np.array([r[1] for r in rows]), initial


@st.composite
def decoding_chains(draw: st.DrawFn, vocab_size: int | None = None, **kwargs: Any) -> DecodingChain:
    """A :class:`spectheory.DecodingChain` built from :func:`chains`."""
    from ..chain.decoding_chain import DecodingChain

    target, draft, initial = draw(chains(vocab_size, **kwargs))
    return DecodingChain(target, draft, initial)


@st.composite
def kit_instances(
    draw: st.DrawFn,
    families: Sequence[str] | None = None,
    *,
    min_vocab: int = 2,
    max_vocab: int = 5,
    max_k: int = 3,
) -> Instance:
    """A kit :class:`~spectheory.testing.Instance` of one of ``families`` (default: all)."""
    fam = draw(st.sampled_from(tuple(families or FAMILIES)))
    V = draw(st.integers(max(2, min_vocab), max_vocab))
    k = draw(st.integers(1, max_k))
    return make_instance(fam, V, k, draw(seeds()))


@st.composite
def tree_kit_instances(
    draw: st.DrawFn,
    *,
    min_vocab: int = 2,
    max_vocab: int = 4,
    max_nodes: int = 4,
    kinds: Sequence[str] | None = None,
) -> tuple[str, Any, Any]:
    """A random ``(name, chain, tree)`` for :func:`~spectheory.testing.check_tree_verifier`
    (``instances=[...]``), from :func:`~spectheory.testing.trees.random_tree_instance` (``kinds``:
    default every shape, exact ties included); shrinks towards seed 0, two tokens and one node."""
    from ._tree_instances import TREE_KINDS
    from .trees import random_tree_instance

    V = draw(st.integers(max(2, min_vocab), max_vocab))
    n = draw(st.integers(1, check_int(max_nodes, "max_nodes", 1)))
    kind = draw(st.sampled_from(tuple(TREE_KINDS if kinds is None else kinds)))
    return random_tree_instance(draw(seeds()), V, n, kind)
