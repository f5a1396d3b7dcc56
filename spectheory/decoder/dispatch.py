"""One entry point: the real decoder takes the same round object as ``st.simulate``.

:func:`generate` turns its ``round`` argument into a :class:`~spectheory.rounds.Round`
(:func:`~spectheory.kinds.as_round`: an ``int``, a ``DraftTree`` or a draft-length ``Policy``
work too), asks it whether it runs in the decoder (:meth:`Round.require
<spectheory.rounds.Round.require>`, which names the round and the reason when not) and hands it
the decoder's loops (:data:`LOOPS`, a visitor): the round's :meth:`~spectheory.rounds.Round.decode`
calls the loop that plays it with its own data, e.g. a :class:`~spectheory.kinds.PathRound`
``loops.path(target, draft, prompts, max_new_tokens, gamma, verifier=...)``. No loop of its
own and no table of round classes: a round kind defined in a user's file runs here as soon as
it defines ``decode``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..kinds.normalize import round_for
from .dynamic_tree import dynamic_tree_generate
from .speculative import speculative_generate
from .text_prompts import encode_prompts
from .tree_decode import tree_generate

if TYPE_CHECKING:
    from ..rounds import Round
    from .batching import CausalLM, Prompt
    from .generation_result import GenerationResult

__all__ = ["generate", "LOOPS", "DecoderLoops"]

#: The arguments a round fixes; passing them again in ``options`` is an error.
_ROUND_ARGS = ("gamma", "tree", "verifier", "policy", "children", "schedule")


class DecoderLoops:
    """The decoder's loops, handed to :meth:`Round.decode <spectheory.rounds.Round.decode>`
    (the visitor of the real decoder; frozen: no attribute can be set).

    Attributes
    ----------
    path : callable
        :func:`~spectheory.decoder.speculative_generate` ``(target, draft, prompts,
        max_new_tokens, gamma, *, verifier=..., policy=None, **options)``.
    tree : callable
        :func:`~spectheory.decoder.tree_generate` ``(target, draft, prompts, max_new_tokens,
        tree, *, verifier, **options)``.
    dynamic_tree : callable
        :func:`~spectheory.decoder.dynamic_tree.dynamic_tree_generate` ``(target, draft,
        prompts, max_new_tokens, rule, **options)``.
    gls : callable
        :func:`~spectheory.decoder.gls_decode.gls_generate` ``(target, draft, prompts,
        max_new_tokens, M, gamma, **options)`` (imported on first use).
    naive_hsd : callable
        :func:`~spectheory.decoder.hsd_decode.naive_hsd_generate` ``(target, draft, prompts,
        max_new_tokens, gamma, **options)`` (imported on first use).
    medusa : callable
        :func:`~spectheory.decoder.medusa.medusa_generate` ``(target, heads, prompts,
        max_new_tokens, tree, verifier, **options)``: the draft is a block drafter (Medusa heads
        on the target's hidden state), imported on first use.

    Examples
    --------
    >>> LOOPS.path is speculative_generate
    True
    >>> LOOPS.path = None
    Traceback (most recent call last):
    ...
    AttributeError: 'DecoderLoops' object attribute 'path' is read-only
    """

    __slots__ = ()

    path = staticmethod(speculative_generate)
    tree = staticmethod(tree_generate)
    dynamic_tree = staticmethod(dynamic_tree_generate)

    @property
    def gls(self) -> Callable[..., GenerationResult]:
        from .gls_decode import gls_generate

        return gls_generate

    @property
    def naive_hsd(self) -> Callable[..., GenerationResult]:
        from .hsd_decode import naive_hsd_generate

        return naive_hsd_generate

    @property
    def medusa(self) -> Callable[..., GenerationResult]:
        from .medusa import medusa_generate

        return medusa_generate

    def __repr__(self) -> str:
        return "DecoderLoops(path, tree, dynamic_tree, gls, naive_hsd, medusa)"


#: The one :class:`DecoderLoops` every round's ``decode`` is handed.
LOOPS = DecoderLoops()


def generate(
    target: CausalLM,
    draft: CausalLM | None,
    prompts: Sequence[Prompt | str] | str,
    max_new_tokens: int,
    round: Round | Any,
    **options: Any,
) -> GenerationResult:
    """Speculative decoding of ``prompts`` with the round ``st.simulate`` takes.

    Parameters
    ----------
    target, draft : models of the decoder contract (:mod:`spectheory.decoder.batching`).
    prompts : list of token sequences, or of texts (``str``, or one ``str``)
        Texts are encoded by ``target.tokenizer``
        (:func:`~spectheory.decoder.text_prompts.encode_prompts`; ``ValueError`` if the target has
        none); token prompts are used as given. The option ``chat=True`` wraps each text as one
        user message of the tokenizer's chat template, generation prompt added (what an
        instruction-tuned model such as ``smollm2-135m`` expects).
    max_new_tokens : int >= 1
    round : Round, int, DraftTree or Policy
        Anything :func:`~spectheory.kinds.as_round` accepts whose kind defines ``decode``: a
        :class:`~spectheory.kinds.PathRound`, :class:`~spectheory.trees.TreeRound`,
        :class:`~spectheory.trees.BatchRound` (first-token or GLS reading, finite ``gamma``),
        :class:`~spectheory.stopping.PolicyRound`, a draft-only dynamic tree rule
        (``Eagle2Tree``, ``OptTree``), their shorthands, or a user's round kind.
    **options
        The sampling and placement options of the loop the round calls (``temperature``,
        ``top_k``, ``top_p``, ``bonus``, ``seed``, ``device``, ``dtype``, ...); not the ones the
        round fixes (``gamma``, ``tree``, ``verifier``, ``policy``, ``children``).

    Returns
    -------
    GenerationResult
        Token for token what :func:`~spectheory.decoder.speculative_generate` or
        :func:`~spectheory.decoder.tree_generate` returns for the same round and seed;
        ``.texts`` decodes the new tokens when the target has a tokenizer.

    Raises
    ------
    ValueError
        As :func:`~spectheory.kinds.normalize.round_for` (engine ``"decoder"``): ``round`` is not
        a round, ``options`` repeat what it fixes, or the round declares that the decoder
        cannot run it (:class:`~spectheory.rounds.UnsupportedRoundError`, naming the reason).

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
    chat = bool(options.pop("chat", False))  # how texts are encoded, not a loop option
    rnd = round_for("decoder", round, options, _ROUND_ARGS, "generate")
    token_prompts = encode_prompts(target, prompts, chat)
    result: GenerationResult = rnd.decode(LOOPS, target, draft, token_prompts, max_new_tokens, dict(options))
    result.tokenizer = getattr(target, "tokenizer", None)
    return result
