"""Losslessness of the real decoder, measured: exact two-token law and a chi-square test.

For a fixed prompt, the target's exact law of the next two tokens is

.. math:: P(x_1, x_2) = p(x_1 \\mid \\text{prompt})\\, p(x_2 \\mid \\text{prompt}, x_1),

computed for all ``V**2`` pairs with one forward pass over the prompt and one batched pass
over the ``V`` one-token extensions (p = target, after temperature/top-k/top-p). The
decoder's samples of two new tokens (independent sequences with distinct seeds) are
compared with it by Pearson's chi-square test, cells with expected count below
``min_expected`` pooled into one cell. At a large vocabulary the law is computed on pooled
cells directly (:mod:`.pooled_law`: the top first tokens, their top continuations and
"rest" cells, each with its exact probability), which :func:`lossless_check` does by itself.

To show that the test has power, :data:`BROKEN_RULES` holds deliberately wrong rules:
:class:`~spectheory.verifiers.Verifier` objects whose torch rule draws the correction from
the wrong law; the decoder runs them like any other verifier (``verifier=``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import torch

from .._guards import check_int
from ..decoder.logits import logits_to_probs, sample_from_uniform
from ..montecarlo.chisquare import pooled_chisquare
from ..verifiers import TokenVerifier, get_verifier
from ..verifiers.inputs import TorchRoundInputs
from ..verifiers.torch_forms import Verdict
from .pooled_law import DENSE_MAX_VOCAB, CellLaw, exact_cell_law

if TYPE_CHECKING:
    from ..decoder.batching import CausalLM
    from ..verifiers import Verifier

__all__ = [
    "model_device",
    "exact_two_token_law",
    "decoder_two_token_samples",
    "pooled_chisquare",
    "BROKEN_RULES",
    "BrokenCorrection",
    "lossless_check",
    "resolve_models",
]


def model_device(model: CausalLM | torch.nn.Module) -> torch.device:
    """The device of a model's first parameter or buffer (CPU if it has none)."""
    for t in list(model.parameters()) + list(model.buffers()):
        return t.device
    return torch.device("cpu")


@torch.inference_mode()
def exact_two_token_law(
    target: CausalLM,
    prompt: Sequence[int],
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    device: str | torch.device = "cpu",
) -> np.ndarray:
    r"""The target's exact joint law of the two tokens following ``prompt``.

    Parameters
    ----------
    target : model of the decoder contract (``target(ids [B, L]) -> logits [B, L, V]``)
    prompt : 1-d sequence of int token ids (non-empty)
    temperature, top_k, top_p : sampling options, as in the decoder

    Returns
    -------
    ndarray, float64, shape (V, V)
        ``law[x1, x2] = p(x1 | prompt) * p(x2 | prompt, x1)``; sums to 1.

    Examples
    --------
    >>> import torch
    >>> class Bigram(torch.nn.Module):
    ...     vocab_size, max_seq_len = 3, 16
    ...     def forward(self, ids, cache=None, start=None):
    ...         return torch.log(torch.tensor([[.5, .5, 0.], [0., .2, .8], [1., 0., 0.]]))[ids]
    >>> law = exact_two_token_law(Bigram(), [2])
    >>> law.round(3).tolist()
    [[0.5, 0.5, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
    """
    ids = torch.as_tensor(list(prompt), dtype=torch.long, device=device)
    if ids.ndim != 1 or ids.numel() == 0:
        raise ValueError("prompt: expected a non-empty 1-d sequence of token ids")
    law = lambda z: logits_to_probs(z, temperature, top_k, top_p)  # noqa: E731
    first = law(target(ids[None])[0, -1])  # [V]
    V = first.shape[-1]
    ext = torch.cat([ids[None].expand(V, -1), torch.arange(V, device=device)[:, None]], 1)
    second = law(target(ext)[:, -1])  # [V, V]
    joint = (first[:, None] * second).cpu().numpy().astype(np.float64)
    return joint / joint.sum()


def decoder_two_token_samples(
    target: CausalLM,
    draft: CausalLM,
    prompt: Sequence[int],
    n_samples: int,
    gamma: int,
    seed: int = 0,
    batch_size: int = 1024,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    device: str | torch.device | None = None,
    dtype: torch.dtype | str | None = None,
    verifier: str | Verifier = "token",
) -> np.ndarray:
    """``n_samples`` independent pairs ``(x1, x2)`` from :func:`speculative_generate`.

    Sequence ``i`` has the row seed ``row_seeds(seed, n)[i]``, the same as one unbatched call
    with ``seed`` (the decoder is batch invariant, so the batching does not change the samples). Returns an int64 array ``[n_samples, 2]``.
    The shared prompt is prefilled once per batch (:func:`~spectheory.validation.shared_prefill`;
    same samples, about 5 times faster on CPU).
    """
    from ..decoder.rng import row_seeds
    from ..decoder.speculative import speculative_generate
    from .prefill_view import shared_prefill

    n_samples = check_int(n_samples, "n_samples", 1)
    target, draft = shared_prefill(target), shared_prefill(draft)
    out = []
    for lo in range(0, n_samples, batch_size):
        b = min(batch_size, n_samples - lo)
        res = speculative_generate(
            target,
            draft,
            [list(prompt)] * b,
            2,
            gamma,
            temperature=temperature,
            top_k=top_k,
            top_p=top_p,
            seed=row_seeds(seed, b, start=lo),
            device=device,
            dtype=dtype,
            verifier=verifier,
        )
        out.append(np.stack(res.tokens))
    return np.concatenate(out).astype(np.int64)


# ----------------------------------------------------------------------------- broken rules
def _correct_from(verdict, laws, u_emit):
    """``verdict`` with every rejected row's correction redrawn from ``laws[row, n_accepted]``."""
    n = verdict.n_accepted.clamp(max=laws.shape[1] - 1)
    wrong = sample_from_uniform(laws.to(torch.float64)[torch.arange(len(n), device=n.device), n], u_emit)
    return Verdict(
        verdict.n_accepted, torch.where(verdict.rejected, wrong, verdict.next_token), verdict.rejected
    )


class BrokenCorrection(TokenVerifier):
    """WRONG on purpose: token verification whose correction after a rejection is drawn from
    the ``target`` law (``source="target"``; first-token law ``min(p, q) + TV * p`` instead of
    ``p``) or from the ``draft`` law it was rejected under (``source="draft"``;
    ``min(p, q) + TV * q``), instead of the residual ``normalize(max(p - q, 0))``.

    Only the torch rule (what the decoder runs) is broken; the lossless check must flag it.
    """

    lossless = False

    def __init__(self, source: str) -> None:
        if source not in ("target", "draft"):
            raise ValueError(f"source: expected 'target' or 'draft', got {source!r}")
        self.source = source
        self.name = f"broken_{source}_correction"

    def torch_rule(self, inputs: TorchRoundInputs) -> Verdict:
        verdict = super().torch_rule(inputs)
        laws = inputs.target_probs if self.source == "target" else inputs.draft_probs
        return _correct_from(verdict, laws, inputs.u_emit)


#: Deliberately broken rules (name -> Verifier).
BROKEN_RULES = {
    "target_correction": BrokenCorrection("target"),
    "draft_correction": BrokenCorrection("draft"),
}


def lossless_check(
    target: CausalLM,
    draft: CausalLM,
    prompt: Sequence[int],
    n_samples: int,
    gamma: int,
    seed: int = 0,
    rule: str | Verifier | None = None,
    min_expected: float = 5.0,
    batch_size: int = 1024,
    device: str | torch.device | None = None,
    dtype: torch.dtype | str | None = None,
    law: np.ndarray | CellLaw | None = None,
    mass: float | None = None,
) -> dict:
    """Chi-square test of the decoder's two-token samples against the target's exact law.

    ``rule``: ``None`` (token verification), a name in :data:`BROKEN_RULES`, or any
    :class:`~spectheory.verifiers.Verifier` (or registered verifier name) the decoder runs. ``law``: the exact law if already computed: the full ``[V, V]`` table or a
    :class:`~spectheory.validation.pooled_law.CellLaw` (exact probabilities of pooled cells).
    Without one, the full table for ``V <= DENSE_MAX_VOCAB`` and ``mass=None``, else the cells
    of :func:`~spectheory.validation.pooled_law.exact_cell_law` at ``mass`` (default
    ``min_expected / n_samples``), which runs at any vocabulary. Returns the dict of
    :func:`pooled_chisquare` plus ``tv_empirical`` (TV between the empirical and exact
    laws, on the cells when the law is pooled), ``gamma``, ``rule``.
    """
    verifier = get_verifier(BROKEN_RULES.get(rule, rule) if isinstance(rule, str) else (rule or "token"))
    name = rule if isinstance(rule, str) else (None if rule is None else verifier.name)
    dev = device if device is not None else model_device(target)
    if law is None and mass is None and int(target.vocab_size) <= DENSE_MAX_VOCAB:
        law = exact_two_token_law(target, prompt, device=dev)
    elif law is None:
        law = exact_cell_law(target, prompt, 2, mass or min(1.0, min_expected / n_samples), device=dev)
    samples = decoder_two_token_samples(
        target,
        draft,
        prompt,
        n_samples,
        gamma,
        seed=seed,
        batch_size=batch_size,
        device=device,
        dtype=dtype,
        verifier=verifier,
    )
    if isinstance(law, CellLaw):  # a pooled law: the samples' cells against the cells' probabilities
        samples, law = law.cell_index(samples), law.probs
    out = pooled_chisquare(samples, law, min_expected)
    flat = samples if samples.ndim == 1 else np.ravel_multi_index(tuple(samples.T), law.shape)
    emp = np.bincount(flat, minlength=law.size) / len(samples)
    out.update(
        tv_empirical=float(0.5 * np.abs(emp - law.ravel()).sum()), gamma=int(gamma), rule=name or "decoder"
    )
    return out


def resolve_models(
    target: str | None = None, drafts: str | Sequence[str] | None = None
) -> tuple[str, list[str]]:
    """Names of the target and drafts to validate: ``target`` defaults to ``"target"``;
    ``drafts`` (comma-separated string or list) to every other shipped model."""
    from ..decoder.registry import list_models

    names = list_models()
    target = target or "target"
    if target not in names:
        raise ValueError(f"target: model {target!r} is not shipped (available: {', '.join(names)})")
    if drafts is None or drafts == "":
        drafts = [n for n in names if n != target and n != "target"]
    elif isinstance(drafts, str):
        drafts = [d for d in drafts.split(",") if d]
    for d in drafts:
        if d not in names:
            raise ValueError(f"drafts: model {d!r} is not shipped (available: {', '.join(names)})")
    return target, list(drafts)
