r"""The restricted draft family of the draft-objective lab: a draft that sees less context.

An unrestricted draft on a chain's own state space can equal the target, and then every
objective has the same minimiser. Real drafts are smaller than their targets; on a chain the
natural way to say "smaller" is that the draft sees a *coarser state*: a map ``groups`` from
the chain's states to ``G`` draft contexts, and one free next-token law per context,

.. math:: q(\cdot \mid s) = \mathrm{softmax}(\theta_{g(s)}), \qquad \theta \in \mathbb{R}^{G \times V}.

With the target a second-order chain (state = the last two tokens ``(a, b)``, ``S = V^2``) and
``g(a, b) = b``, the draft is a first-order model: it forgets the older token, as a small draft
forgets long context (the shipped ``draft-ngram`` sees one byte of context against the target's
256). ``G = 1`` is a unigram draft; ``g = identity`` is the unrestricted draft. The family is
closed under the limits of softmax (rows with zeros), which the total-variation fit reaches.

:func:`context_chain` builds the lab's targets: second-order chains whose next-token law mixes
a part the draft can see (a function of the last token) and a part it cannot,

.. math:: p(\cdot \mid a, b) = \lambda\, u(\cdot \mid b) + (1 - \lambda)\, v(\cdot \mid a, b),

with ``u`` and ``v`` Dirichlet rows of one concentration (small = low entropy) and
``lambda`` = ``visible`` the share of the target the family can represent exactly
(``visible = 1``: the best draft is the target). Derivation and results:
``docs/draft_objectives.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from numpy.typing import ArrayLike

from .._guards import as_law, as_rng, check_int, check_prob
from .._typing import RNGLike
from ..chain import DecodingChain

__all__ = ["TiedDraft", "context_chain"]


@dataclass(frozen=True)
class TiedDraft:
    r"""Drafts whose law depends on the state only through ``groups[s]``.

    Parameters
    ----------
    groups : array_like of int, shape (S,)
        Draft context of each chain state, values ``0..G-1`` (every context used).
    vocab_size : int

    Examples
    --------
    >>> import numpy as np
    >>> fam = TiedDraft.last_token(3)            # second-order chain over V = 3, draft sees 1 token
    >>> fam.n_groups, fam.groups.tolist()[:4]
    (3, [0, 1, 2, 0])
    >>> fam.expand(np.eye(3)).shape               # one law per context -> one per state
    (9, 3)
    """

    groups: np.ndarray
    vocab_size: int

    def __post_init__(self) -> None:
        g = np.asarray(self.groups)
        if g.ndim != 1 or g.size == 0 or not np.issubdtype(g.dtype, np.integer):
            raise ValueError(
                f"groups: expected a non-empty 1-d int array, got shape {g.shape} dtype {g.dtype}"
            )
        if g.min() < 0 or set(np.unique(g).tolist()) != set(range(int(g.max()) + 1)):
            raise ValueError("groups: values must be 0..G-1 with every context used")
        object.__setattr__(self, "groups", np.array(g, dtype=np.int64))
        object.__setattr__(self, "vocab_size", check_int(self.vocab_size, "vocab_size", 1))

    @classmethod
    def last_token(cls, vocab_size: int, order: int = 2) -> TiedDraft:
        """The draft of an order-``order`` chain (state index ``sum_i c_i V**(k - i)``, as
        :meth:`~spectheory.DecodingChain.ngram`) that sees the last token only."""
        V = check_int(vocab_size, "vocab_size", 1)
        k = check_int(order, "order", 1)
        return cls(np.arange(V**k) % V, V)

    @property
    def n_states(self) -> int:
        return int(self.groups.size)

    @cached_property
    def n_groups(self) -> int:
        """Number of draft contexts ``G``."""
        return int(self.groups.max()) + 1

    def expand(self, laws: ArrayLike) -> np.ndarray:
        """Per-context laws ``[G, V]`` -> the draft kernel ``[S, V]`` (row ``s`` is ``laws[groups[s]]``)."""
        q = as_law(laws, "laws", min_ndim=2)
        if q.shape != (self.n_groups, self.vocab_size):
            raise ValueError(f"laws: expected shape ({self.n_groups}, {self.vocab_size}), got {q.shape}")
        return q[self.groups]

    def chain(self, target_chain: DecodingChain, laws: ArrayLike) -> DecodingChain:
        """``target_chain`` with its draft replaced by :meth:`expand` ``(laws)`` (same target,
        initial law and transitions)."""
        self.check(target_chain)
        ns = target_chain.next_state
        if target_chain.is_stochastic:
            ns = target_chain.transition_law.toarray().reshape(self.n_states, self.vocab_size, -1)
        return DecodingChain(target_chain.target, self.expand(laws), target_chain.initial, ns)

    def check(self, chain: DecodingChain) -> None:
        """Raise ``ValueError`` unless ``chain`` is homogeneous with this family's sizes."""
        if not chain.is_homogeneous:
            raise ValueError("chain: the draft-objective lab needs a homogeneous chain (2-d kernels)")
        if (chain.n_states, chain.vocab_size) != (self.n_states, self.vocab_size):
            raise ValueError(
                f"chain: has S={chain.n_states}, V={chain.vocab_size}; the family has "
                f"S={self.n_states}, V={self.vocab_size}"
            )


def context_chain(
    vocab_size: int, concentration: float, visible: float, rng: RNGLike = None
) -> DecodingChain:
    r"""A second-order target chain with a ``visible`` share of its law in the last token.

    Row ``(a, b)`` (state ``a V + b``) is ``visible * u[b] + (1 - visible) * v[a, b]``, ``u``
    and ``v`` Dirichlet(``concentration``) rows; the initial law is uniform over the states.
    The chain's own draft is the uniform law (the lab replaces it, :meth:`TiedDraft.chain`).

    Examples
    --------
    >>> chain = context_chain(3, 0.5, 1.0, rng=0)   # visible = 1: a first-order target
    >>> bool(np.allclose(chain.target[0], chain.target[3]))
    True
    >>> chain.n_states, chain.vocab_size
    (9, 3)
    """
    V = check_int(vocab_size, "vocab_size", 1)
    conc = float(concentration)
    if not conc > 0:
        raise ValueError(f"concentration: must be > 0, got {concentration!r}")
    lam = float(check_prob(visible, "visible"))
    gen = as_rng(rng)
    u = gen.dirichlet(np.full(V, conc), size=V)
    v = gen.dirichlet(np.full(V, conc), size=V * V)
    target = lam * u[np.arange(V * V) % V] + (1.0 - lam) * v
    target = np.maximum(target, 1e-12)
    target /= target.sum(-1, keepdims=True)
    ns = (np.arange(V * V)[:, None] * V + np.arange(V)[None, :]) % (V * V)
    return DecodingChain(target, np.full((V * V, V), 1.0 / V), np.full(V * V, 1.0 / (V * V)), ns)
