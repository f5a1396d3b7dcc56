"""One entry point: the real decoder takes the same round object as ``st.simulate``.

:func:`generate` turns its ``round`` argument into a :class:`~spectheory.rounds.Round`
(:func:`~spectheory.rounds.as_round`: an ``int``, a ``DraftTree`` or a draft-length ``Policy``
work too) and hands it to the decoder loop that plays it -- no loop of its own:

- :class:`~spectheory.rounds.PathRound` -> :func:`~spectheory.decoder.speculative_generate`
  with its ``gamma`` and verifier;
- :class:`~spectheory.stopping.PolicyRound` -> :func:`~spectheory.decoder.speculative_generate`
  with ``gamma = policy.max_depth`` and ``policy=``;
- :class:`~spectheory.trees.TreeRound` -> :func:`~spectheory.decoder.tree_generate` with its
  tree and tree verifier;
- :class:`~spectheory.trees.BatchRound` (first-token reading, finite ``gamma``) ->
  :func:`~spectheory.decoder.tree_generate` on its ``M``-path tree with ``tree_rrs``;
  ``reading="gls"`` (finite ``gamma``) -> :func:`~spectheory.decoder.gls_decode.gls_generate`;
- a draft-only :class:`~spectheory.trees.DynamicTreeRound` (``Eagle2Tree``, ``OptTree``) ->
  :func:`~spectheory.decoder.dynamic_tree.dynamic_tree_generate`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..rounds import PathRound
from ..rounds.normalize import round_handler
from ..stopping import PolicyRound
from ..trees import BatchRound, DynamicTreeRound, TreeRound
from .dynamic_tree import dynamic_tree_generate
from .speculative import speculative_generate
from .tree_decode import tree_generate

if TYPE_CHECKING:
    from ..rounds import Round
    from .batching import CausalLM, Prompt
    from .stats import GenerationResult

__all__ = ["generate"]

#: The arguments a round fixes; passing them again in ``options`` is an error.
_ROUND_ARGS = ("gamma", "tree", "verifier", "policy", "children")


def _path(rnd: PathRound) -> tuple[Callable[..., GenerationResult], tuple[Any, ...], dict[str, Any]]:
    return speculative_generate, (rnd.gamma,), {"verifier": rnd.verifier}


def _policy(rnd: PolicyRound) -> tuple[Callable[..., GenerationResult], tuple[Any, ...], dict[str, Any]]:
    return speculative_generate, (rnd.max_depth,), {"policy": rnd.policy}


def _tree(rnd: TreeRound) -> tuple[Callable[..., GenerationResult], tuple[Any, ...], dict[str, Any]]:
    return tree_generate, (rnd.tree,), {"verifier": rnd.verifier}


def _dynamic(
    rnd: DynamicTreeRound,
) -> tuple[Callable[..., GenerationResult], tuple[Any, ...], dict[str, Any]]:
    return dynamic_tree_generate, (rnd,), {}


def _batch(rnd: BatchRound) -> tuple[Callable[..., GenerationResult], tuple[Any, ...], dict[str, Any]]:
    if rnd.reading == "gls" and rnd.gamma is not None:
        from .gls_decode import gls_generate

        return gls_generate, (rnd.M, rnd.gamma), {}
    if rnd.all_agreeing:
        raise ValueError(
            f"round: the decoder cannot run {rnd.name} (the {rnd.reading!r} reading); "
            "use BatchRound(M, gamma) (first-token reading)"
        )
    if rnd.tree is None:
        raise ValueError(f"round: the decoder needs a finite draft length; got {rnd.name} (give gamma)")
    return _tree(rnd)


#: round class -> its dispatcher (looked up along the round's MRO, so subclasses come first).
_DISPATCH: dict[
    type, Callable[[Any], tuple[Callable[..., GenerationResult], tuple[Any, ...], dict[str, Any]]]
] = {
    PathRound: _path,
    PolicyRound: _policy,
    BatchRound: _batch,
    TreeRound: _tree,
    DynamicTreeRound: _dynamic,
}


def generate(
    target: CausalLM,
    draft: CausalLM | None,
    prompts: Sequence[Prompt],
    max_new_tokens: int,
    round: Round | Any,
    **options: Any,
) -> GenerationResult:
    """Speculative decoding of ``prompts`` with the round ``st.simulate`` takes.

    Parameters
    ----------
    target, draft : models of the decoder contract (:mod:`spectheory.decoder.batching`).
    prompts : list of token sequences
    max_new_tokens : int >= 1
    round : Round, int, DraftTree or Policy
        Anything :func:`~spectheory.rounds.as_round` accepts: a
        :class:`~spectheory.rounds.PathRound`, :class:`~spectheory.trees.TreeRound`,
        :class:`~spectheory.trees.BatchRound` (first-token reading, finite ``gamma``) or
        :class:`~spectheory.stopping.PolicyRound`, or their shorthands.
    **options
        The sampling and placement options of the loop it dispatches to (``temperature``,
        ``top_k``, ``top_p``, ``bonus``, ``seed``, ``device``, ``dtype``, ...); not the ones the
        round fixes (``gamma``, ``tree``, ``verifier``, ``policy``, ``children``).

    Returns
    -------
    GenerationResult
        Token for token what :func:`~spectheory.decoder.speculative_generate` or
        :func:`~spectheory.decoder.tree_generate` returns for the same round and seed.

    Raises
    ------
    ValueError
        ``round`` is not a round the decoder can run, or ``options`` repeat what it fixes.

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory.decoder.model import GPT, GPTConfig
    >>> t = GPT(GPTConfig(n_layer=1, n_head=2, n_embd=16, block_size=64)).eval()
    >>> d = GPT(GPTConfig(n_layer=1, n_head=2, n_embd=16, block_size=64)).eval()
    >>> res = generate(t, d, [[1, 2, 3]], 6, st.PathRound(3), seed=1)
    >>> ref = speculative_generate(t, d, [[1, 2, 3]], 6, 3, seed=1)
    >>> all((a == b).all() for a, b in zip(res.tokens, ref.tokens))
    True
    """
    rnd, dispatch = round_handler(round, _DISPATCH, options, _ROUND_ARGS, "generate", "the decoder runs")
    loop, args, kwargs = dispatch(rnd)
    return loop(target, draft, prompts, max_new_tokens, *args, **kwargs, **options)
