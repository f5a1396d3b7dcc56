r"""The :class:`Verifier` protocol: one object per verification rule, and the registry.

A single-path speculative round (``docs/protocol.md``) drafts ``k <= g`` tokens
``x_0..x_{k-1}`` along the draft's path, scores them with the target in one call and hands
the rule, per row ``r`` of a batch (p = target, q = draft):

- ``target_laws`` ``[R, g+1, V]``: the target's law at each drafted position and, at index
  ``k[r]``, the law after all drafts (the bonus law);
- ``draft_laws`` ``[R, g, V]``: the draft's laws the tokens were sampled from;
- ``draft_tokens`` ``[R, g]`` int; ``k`` ``[R]`` int in ``[1, g]`` (slots ``>= k`` are padding);
- ``u_accept`` ``[R, g]`` and ``u_final`` ``[R]``: uniforms in ``[0, 1)``.

It returns ``(n_accepted [R], final_token [R])``: a prefix of ``n_accepted`` drafts is kept,
then one token -- the correction after a rejection (``n_accepted < k``) or the bonus token
(``n_accepted == k``; the protocol drops it when ``bonus=False`` or the horizon is reached).

A :class:`Verifier` carries everything each engine needs, so a new rule is one class:

====================  ==============================================================  ===========================
engine                method                                                          default
====================  ==============================================================  ===========================
pure rule (tests)     :meth:`~Verifier.rule` (validates, then ``_rule``)              --  (``_rule`` is abstract)
Monte Carlo           :meth:`~Verifier.verify_round` (draws the uniforms)             uniforms + ``_rule``
exact (chains)        :meth:`~Verifier.exact` from :meth:`~Verifier.phase_masses` or  ``NotImplementedError``
                      :meth:`~Verifier.round_transition`                              naming both
real decoder (torch)  :meth:`~Verifier.torch_rule`                                    the numpy rule, adapted
round law             :meth:`~RoundLawRule.round_law` (Fractions exact),              ValueError naming
                      :meth:`~RoundLawRule.round_stats`                               the rule
====================  ==============================================================  ===========================

The conformance kit reads ``lossless``: a rule with ``lossless = False`` is
reported lossy with the exact loss of its round law, not failed.

Every entry point (``chain.protocol``, :func:`spectheory.simulate`,
``speculative_generate``, the conformance kit) takes a Verifier or a registered name;
:func:`get_verifier` resolves it. The one registry holds single-path rules and tree
verifiers alike: a verifier says what it checks with :attr:`Verifier.accepts_paths` and
:attr:`Verifier.accepts_trees` (tree verifiers,
:class:`spectheory.verifiers.tree_base.TreeVerifier`, check a whole
:class:`~spectheory.trees.DraftTree`); :meth:`Verifier.require_path` is the check a
single-path engine makes, :meth:`Verifier.for_tree` the verifier a tree round uses (token
verification's tree form is recursive rejection, ``tree_rrs``). ``docs/verifiers.md`` has a worked "add your own rule"
example.

Examples
--------
>>> from spectheory.verifiers import get_verifier
>>> token = get_verifier("token")
>>> token.name, token.lossless
('token', True)
>>> get_verifier(token) is token
True
>>> token.for_tree().name, get_verifier("tree_rrs").accepts_paths
('tree_rrs', False)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, overload

import numpy as np
from numpy.typing import ArrayLike

from .._guards import as_rng
from .._typing import RNGLike
from ..laws.sampling import check_round_laws
from .inputs import FusedRoundInputs, TorchRoundInputs
from .round_law_rule import RoundLawRule

if TYPE_CHECKING:  # annotations only: tree_base imports this module
    from .._protocols import TreeRule

if TYPE_CHECKING:
    from .._protocols import ChainLike
    from ..exact.result import ProtocolResult
    from .torch_forms import Verdict

__all__ = [
    "Verifier",
    "register_verifier",
    "get_verifier",
    "list_verifiers",
    "check_round_arrays",
]


def check_round_arrays(
    target_laws: ArrayLike, draft_laws: ArrayLike, draft_tokens: ArrayLike, k: ArrayLike
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Shape, dtype and range checks of a round's arrays (ValueError naming the argument).

    Returns float64 ``target_laws``, ``draft_laws`` and int64 ``draft_tokens``, ``k``. Law
    values are not checked here (see :func:`spectheory.laws.sampling.check_round_laws`).
    """
    t = np.asarray(target_laws, dtype=np.float64)
    d = np.asarray(draft_laws, dtype=np.float64)
    x = np.asarray(draft_tokens)
    kk = np.asarray(k)
    if d.ndim != 3:
        raise ValueError(f"draft_laws: expected shape (R, g, V), got {d.shape}")
    R, g, V = d.shape
    if g < 1:
        raise ValueError("draft_laws: need at least one drafted position (g >= 1)")
    if t.shape != (R, g + 1, V):
        raise ValueError(f"target_laws: expected shape {(R, g + 1, V)}, got {t.shape}")
    if x.shape != (R, g) or not np.issubdtype(x.dtype, np.integer):
        raise ValueError(f"draft_tokens: expected an int array of shape {(R, g)}, got {x.dtype} {x.shape}")
    if x.size and (x.min() < 0 or x.max() >= V):
        raise ValueError(f"draft_tokens: entries must lie in [0, {V})")
    if kk.ndim == 0 and np.issubdtype(kk.dtype, np.integer):
        kk = np.full(R, int(kk))
    if kk.shape != (R,) or not np.issubdtype(kk.dtype, np.integer):
        raise ValueError(f"k: expected an int array of shape ({R},), got {kk.dtype} {kk.shape}")
    if kk.size and (kk.min() < 1 or kk.max() > g):
        raise ValueError(f"k: entries must lie in [1, {g}]")
    return t, d, x.astype(np.int64), kk.astype(np.int64)


def _check_uniforms(u_accept, u_final, R, g):
    ua = np.asarray(u_accept, dtype=np.float64)
    uf = np.asarray(u_final, dtype=np.float64)
    if ua.shape != (R, g):
        raise ValueError(f"u_accept: expected shape {(R, g)}, got {ua.shape}")
    if uf.shape != (R,):
        raise ValueError(f"u_final: expected shape ({R},), got {uf.shape}")
    if np.any((ua < 0) | (ua >= 1)) or np.any((uf < 0) | (uf >= 1)):
        raise ValueError("u_accept, u_final: uniforms must lie in [0, 1)")
    return ua, uf


class Verifier(RoundLawRule):
    """Base class of single-path verification rules (see the module docstring).

    Subclasses set ``name`` and :attr:`lossless` and implement ``_rule``; they
    provide exact values by implementing :meth:`phase_masses` (rules that check one draft
    token at a time) or :meth:`round_transition` (rules that decide on the whole round; with
    :meth:`round_extra_calls` when a round calls the target more than once), and may override
    :meth:`torch_rule` with a native torch implementation.
    """

    #: Registry key and the label results carry.
    name: str = "verifier"
    #: Whether the verifier checks a single drafted path (``draft_tokens [R, g]``).
    accepts_paths: bool = True
    #: Whether the verifier checks a whole draft tree itself (a tree verifier).
    accepts_trees: bool = False
    #: How the round drafts the tokens this rule checks: ``"sample"`` (``x_i ~ q_i``, the
    #: protocol's default) or ``"argmax"`` (``x_i = argmax q_i``, greedy drafting;
    #: :mod:`spectheory.verifiers.proposal`). Single-path rounds and the kit draft through
    #: :meth:`draft`.
    drafting: str = "sample"
    #: Whether a draft-length policy's round (:class:`~spectheory.kinds.policy.PolicyRound`)
    #: checks the drafts inline as token verification (acceptance ``min(1, p / q)`` as it
    #: drafts, no law arrays) instead of through :meth:`verify_round`. True on
    #: :class:`~spectheory.verifiers.TokenVerifier` only: a subclass, which may change the
    #: rule, goes through :meth:`verify_round` unless it sets this itself.
    inline_token_round: bool = False

    # ----------------------------------------------------------------- capabilities
    def require_path(self) -> Verifier:
        """``self`` if it verifies single paths, else a ValueError saying it needs a tree.

        What single-path entry points call (``chain.protocol(T, gamma, verifier=...)``,
        ``st.simulate``) before using the path methods.

        Examples
        --------
        >>> from spectheory.verifiers import get_verifier
        >>> get_verifier("tree_rrs").require_path()
        Traceback (most recent call last):
        ...
        ValueError: verifier: 'tree_rrs' verifies token trees, not a single path; pass tree= (a DraftTree) instead of gamma
        """
        if not self.accepts_paths:
            raise ValueError(
                f"verifier: {self.name!r} verifies token trees, not a single path; "
                "pass tree= (a DraftTree) instead of gamma"
            )
        return self

    def for_tree(self) -> TreeRule:
        """The tree verifier this verifier stands for in a tree round (itself for a tree
        verifier, :meth:`TokenVerifier.for_tree <spectheory.verifiers.TokenVerifier.for_tree>`
        for token verification); ValueError if it has none."""
        raise ValueError(
            f"verifier: {self.name!r} verifies single paths and has no tree form; "
            f"tree verifiers: {list_verifiers(trees=True)}"
        )

    # ----------------------------------------------------------------- drafting
    def draft(self, draft_rows: np.ndarray, u: np.ndarray) -> np.ndarray:
        """The drafted tokens ``[R]`` from the draft's laws ``draft_rows [R, V]`` and uniforms ``u [R]``.

        ``drafting == "sample"``: inverse-CDF sampling (``x ~ q``); ``"argmax"``: the most
        probable token (the smallest index on ties), ``u`` unused.

        Examples
        --------
        >>> import numpy as np
        >>> from spectheory.verifiers import get_verifier
        >>> q = np.array([[0.3, 0.7], [0.6, 0.4]])
        >>> get_verifier("token").draft(q, np.array([0.2, 0.2])).tolist()
        [0, 0]
        >>> get_verifier("argmax_soft").draft(q, np.array([0.2, 0.2])).tolist()
        [1, 0]
        """
        from ..laws.sampling import sample_categorical

        if self.drafting == "argmax":
            return np.argmax(draft_rows, axis=-1).astype(np.int64)
        if self.drafting != "sample":
            raise ValueError(f"drafting: expected 'sample' or 'argmax', got {self.drafting!r}")
        return sample_categorical(draft_rows, u)

    # ----------------------------------------------------------------- the pure rule
    def _rule(self, target_laws, draft_laws, draft_tokens, k, u_accept, u_final):
        """The rule on checked arrays (float64 laws, int64 tokens and ``k``, uniforms)."""
        raise NotImplementedError(f"verifier {self.name!r}: define _rule (the pure rule on given uniforms)")

    def rule(
        self,
        target_laws: ArrayLike,
        draft_laws: ArrayLike,
        draft_tokens: ArrayLike,
        k: ArrayLike,
        u_accept: ArrayLike,
        u_final: ArrayLike,
    ) -> tuple[np.ndarray, np.ndarray]:
        """The rule on hand-given uniforms, with every input validated.

        Returns ``(n_accepted [R], final_token [R])`` as int64 arrays.
        """
        t, d, x, kk = check_round_arrays(target_laws, draft_laws, draft_tokens, k)
        ua, uf = _check_uniforms(u_accept, u_final, *x.shape)
        check_round_laws(t, d)
        return self._rule(t, d, x, kk, ua, uf)

    def verify_round(
        self,
        target_laws: ArrayLike,
        draft_laws: ArrayLike,
        draft_tokens: ArrayLike,
        k: ArrayLike,
        rng: RNGLike = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """One round per row with fresh uniforms from ``rng`` (``u_accept`` first, then
        ``u_final``). Checks shapes, token range and ``k``; skips the law-value pass (the
        simulator's hot path: its laws come from a validated chain)."""
        t, d, x, kk = check_round_arrays(target_laws, draft_laws, draft_tokens, k)
        rng = as_rng(rng)
        R, g = x.shape
        return self._rule(t, d, x, kk, rng.random((R, g)), rng.random(R))

    def fused_round(self, inputs: FusedRoundInputs, rng: np.random.Generator) -> Any:
        """Optional fast path of the simulator that drafts and verifies without gathering
        the full ``[R, g+1, V]`` laws; return ``NotImplemented`` to use :meth:`verify_round`.

        Parameters
        ----------
        inputs : FusedRoundInputs
            The round: sampler, horizon, ``gamma``, ``n`` and ``k`` per run, the ``states``
            and ``x`` buffers to fill along the kept path, the drafting uniforms ``u``.
        rng : numpy.random.Generator
            The source of the rule's own uniforms (drawn after ``u``).

        Returns
        -------
        tuple or NotImplemented
            ``(j, y)`` (int64 ``[R]``: drafts kept, the token after them) with ``inputs.x`` and
            ``inputs.states`` filled along the kept path, or ``(j, y, extra_calls)`` for a
            round that calls the target more than once; ``NotImplemented`` here.
        """
        return NotImplemented

    # ----------------------------------------------------------------- exact values
    def phase_masses(self, chain: ChainLike) -> tuple[Any, Any, bool] | None:
        """``(accept_mass, reject_mass, phase_dependent)`` for
        :func:`spectheory.exact.phase_recursion`, or ``None`` if the rule is not a
        token-by-token rule."""
        return None

    def round_transition(self, chain: ChainLike) -> Callable[[int, int, bool], np.ndarray] | None:
        """``(n0, k, emit_bonus) -> Q [S, k+1, S]`` for :func:`spectheory.exact.round_recursion`,
        or ``None``."""
        return None

    def round_extra_calls(self, chain: ChainLike) -> Callable[[int, int], np.ndarray] | None:
        """``(n0, k) -> [S]``: expected target calls of a round beyond its first, per start
        state (each drafting one more token; naive HSD's forward passes), or ``None`` (one call
        per round). :meth:`exact` adds them up as ``ProtocolResult.extra_calls``."""
        return None

    def exact(self, chain: ChainLike, horizon: int, gamma: int, bonus: bool = True) -> ProtocolResult:
        """Exact :class:`~spectheory.exact.ProtocolResult` of one generation on ``chain``."""
        import dataclasses

        from ..exact import phase_recursion, round_recursion

        masses = self.phase_masses(chain)
        if masses is not None:
            acc, rej, phase_dependent = masses
            return phase_recursion(chain, horizon, gamma, bonus, acc, rej, phase_dependent=phase_dependent)
        transition = self.round_transition(chain)
        if transition is not None:
            res = round_recursion(chain, horizon, gamma, bonus, transition)
            extra = self.round_extra_calls(chain)
            if extra is None:
                return res
            T = res.horizon
            calls = sum(
                float(res.round_starts[n0] @ extra(n0, min(gamma, T - n0)))
                for n0 in range(T)
                if res.round_starts[n0].any()
            )
            return dataclasses.replace(res, extra_calls=calls)
        raise NotImplementedError(
            f"verifier {self.name!r}: exact values need phase_masses(chain) "
            "(token-by-token rules) or round_transition(chain) (whole-round rules)"
        )

    # ----------------------------------------------------------------- torch
    def torch_rule(self, inputs: TorchRoundInputs) -> Verdict:
        """The rule on torch tensors, for the real decoder (rows with ``k = 0`` are inactive).

        Parameters
        ----------
        inputs : TorchRoundInputs
            The round's laws ``[B, K+1, V]`` and ``[B, K, V]``, drafts ``[B, K]``, ``k [B]``,
            uniforms ``[B, K]`` and ``[B]`` and ``allow_bonus [B]``.

        Returns
        -------
        Verdict
            :class:`spectheory.verifiers.torch_forms.Verdict`. The default moves the tensors to
            numpy, applies ``_rule`` in float64 and moves the result back (correct for any
            rule; a native torch version is faster on a GPU).
        """
        import torch

        from .torch_forms import Verdict

        target_probs, draft_probs, draft_tokens, k, u_accept, u_emit, allow_bonus = inputs.tensors()
        dev = draft_tokens.device
        kk = k.detach().cpu().numpy().astype(np.int64)
        B = kk.shape[0]
        n = np.zeros(B, dtype=np.int64)
        y = np.full(B, -1, dtype=np.int64)
        live = np.flatnonzero(kk > 0)
        if live.size:
            t = target_probs.detach().to(torch.float64).cpu().numpy()[live]
            d = draft_probs.detach().to(torch.float64).cpu().numpy()[live]
            x = draft_tokens.detach().cpu().numpy().astype(np.int64)[live]
            ua = u_accept.detach().to(torch.float64).cpu().numpy()[live]
            uf = u_emit.detach().to(torch.float64).cpu().numpy()[live]
            j, tok = self._rule(t, d, x, kk[live], ua, uf)
            n[live] = j
            y[live] = tok
        rejected = n < kk
        emit = rejected | (allow_bonus.detach().cpu().numpy() & (kk > 0))
        y = np.where(emit, y, -1)
        as_t = lambda a: torch.as_tensor(a, device=dev)  # noqa: E731
        return Verdict(as_t(n), as_t(y), as_t(rejected))


_REGISTRY: dict[str, Verifier] = {}
V = TypeVar("V", bound=Verifier)


def register_verifier(verifier: V, *, replace: bool = False) -> V:
    """Make ``verifier`` available by its name to every entry point; returns it.

    Raises ValueError if the object is not a :class:`Verifier` or its name is taken (pass
    ``replace=True`` to overwrite).
    """
    if not isinstance(verifier, Verifier):
        raise ValueError(f"verifier: expected a Verifier instance, got {type(verifier).__name__}")
    name = verifier.name
    if not isinstance(name, str) or not name:
        raise ValueError("verifier: its name must be a non-empty string")
    if name in _REGISTRY and _REGISTRY[name] is not verifier and not replace:
        raise ValueError(f"verifier: the name {name!r} is already registered (pass replace=True)")
    _REGISTRY[name] = verifier
    return verifier


@overload
def get_verifier(verifier: str | Verifier) -> Verifier: ...
@overload
def get_verifier(verifier: TreeRule) -> TreeRule: ...  # a tree form (``for_tree()``), as it is
def get_verifier(verifier: str | Verifier | TreeRule) -> Verifier | TreeRule:
    """The :class:`Verifier` for a registered name, or the object itself.

    Examples
    --------
    >>> from spectheory.verifiers import get_verifier
    >>> get_verifier("block").name
    'block'
    """
    if isinstance(verifier, Verifier):
        return verifier
    if isinstance(verifier, str):
        if verifier in _REGISTRY:
            return _REGISTRY[verifier]
        raise ValueError(f"verifier: unknown verifier {verifier!r}; registered: {sorted(_REGISTRY)}")
    raise ValueError(f"verifier: expected a registered name or a Verifier, got {type(verifier).__name__}")


def list_verifiers(*, trees: bool | None = None) -> list[str]:
    """Names of the registered verifiers (``trees=True``: those that verify trees,
    ``trees=False``: those that verify single paths).

    Examples
    --------
    >>> from spectheory.verifiers import list_verifiers
    >>> list_verifiers(trees=True)[:4]
    ['traversal', 'traversal_iid', 'tree_greedy', 'tree_rrs']
    """
    if trees is None:
        return sorted(_REGISTRY)
    if trees:
        return sorted(n for n, v in _REGISTRY.items() if v.accepts_trees)
    return sorted(n for n, v in _REGISTRY.items() if v.accepts_paths)
