r"""The distilled draft of a real target: its architecture, its shipped weights, its training losses.

**Architecture.** The target's first ``n_layers`` decoder layers and its final norm (copied),
the target's embedding and head (*shared*, frozen). Training adds a rank-``r`` update
:math:`W + B A` to every linear of the copied layers (:class:`LowRankDelta`, ``B = 0`` at the
start) and trains it with the copied norms' gains; loading merges :math:`B A` into the weights,
so the loaded draft is a plain ``n_layers``-layer model costing exactly what the early exit
``exit<n_layers>`` (:mod:`spectheory.decoder.real_drafts`) costs. Before training it *is* that
early exit, so training starts from the compression draft it must beat.

**Weights.** ``spectheory/decoder/real_weights/<target>-distilled-<objective>.pt`` (float16: the
factors ``A``, ``B`` and the norms' gains, about 0.7 MB at ``n_layers = 2``, ``r = 16``) and
``<target>-distilled.json`` (metadata of every run, and ``"default"``: the objective
``"<target>:distilled"`` loads). The draft derives from SmolLM2 (Apache-2.0): the folder ships the
licence and a NOTICE. Trained by ``simulations/train_real_draft.py``.

**Losses** (per position ``n`` of a target-sampled path, ``p_n`` the target's law, ``q_n`` the
draft's, both at temperature 1; the objectives of the draft-objective lab, ``docs/draft_objectives.md``):

* ``kl``: :math:`\mathrm{KL}(p_n \| q_n)`, averaged over positions;
* ``tv``: :math:`\mathrm{TV}(p_n, q_n) = 1 - \sum_x \min(p_n, q_n)(x)`, whose sum along target
  paths is the expected number of rejections with the bonus off (Theorem 1);
* ``tokens_per_call``: minus the tokens per target call at ``gamma``,
  :math:`-\sum_i T / \sum_i C_i`, where :math:`C_i` is the *exact* conditional expectation of the
  target calls of the decoder given the target path ``i`` (:func:`expected_calls`, the round
  dynamic programme of :func:`spectheory.validation.predict.round_dp` in torch), a function of
  the per-token rejection probabilities :math:`r_n = (1 - q_n(x_n)/p_n(x_n))^+`. Paths are
  drawn from ``p``, which does not depend on the draft, so the gradient of the batch mean is an
  unbiased estimate of the gradient of :math:`E[C]` (the lab's exact tokens-per-call
  objective; on a chain the lab computes the same gradient exactly by the adjoint, here it is
  sampled).

Examples
--------
>>> r = torch.tensor([[0.0, 0.0, 0.0]])
>>> expected_calls(r, gamma=2, bonus=True)   # 2 accepted + bonus, one call
tensor([1.])
>>> round_expectations(r, torch.tensor([[0, 0, 0]]))[0]   # no drafts: one call a token
tensor([3.])
"""

from __future__ import annotations

import copy
import json
import os
from typing import Any

import torch
from torch import nn

from .real_drafts_base import first_layers

__all__ = [
    "WEIGHTS_DIR",
    "OBJECTIVES",
    "LowRankDelta",
    "distilled_model",
    "trainable_state",
    "load_distilled",
    "distilled_info",
    "expected_calls",
    "round_expectations",
    "distill_loss",
]

WEIGHTS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "real_weights")
OBJECTIVES = ("kl", "tv", "tokens_per_call")


class LowRankDelta(nn.Module):
    r"""A frozen linear plus a trained rank-``r`` update: :math:`y = W x + B (A x)`.

    ``A`` ``[r, in]`` starts random (scale :math:`1/\sqrt{in}`, drawn from ``generator``), ``B``
    ``[out, r]`` at zero, so the module starts equal to ``base``; :meth:`merged` is the plain
    linear with weight :math:`W + B A`.

    Examples
    --------
    >>> lin = nn.Linear(4, 3, bias=False)
    >>> d = LowRankDelta(lin, 2, torch.Generator().manual_seed(0))
    >>> x = torch.randn(5, 4)
    >>> torch.equal(d(x), lin(x))
    True
    """

    def __init__(self, base: nn.Linear, rank: int, generator: torch.Generator | None = None) -> None:
        super().__init__()
        self.base = base.requires_grad_(False)
        dtype = base.weight.dtype
        a = torch.randn(rank, base.in_features, generator=generator) / base.in_features**0.5
        self.A = nn.Parameter(a.to(dtype))
        self.B = nn.Parameter(torch.zeros(base.out_features, rank, dtype=dtype))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.base(x) + (x @ self.A.T) @ self.B.T

    def merged(self) -> nn.Linear:
        """The linear with weight :math:`W + B A` (the base's bias)."""
        out = copy.deepcopy(self.base)
        out.weight.data += (self.B @ self.A).detach().to(out.weight.dtype)
        return out


def _linears(layers: nn.Module) -> list[tuple[nn.Module, str, Any]]:
    """``(parent, name, child)`` of every ``nn.Linear`` or :class:`LowRankDelta` in ``layers``, in order."""
    out: list[tuple[nn.Module, str, Any]] = []
    for parent in layers.modules():
        if isinstance(parent, LowRankDelta):
            continue
        for name, child in parent.named_children():
            if isinstance(child, (nn.Linear, LowRankDelta)):
                out.append((parent, name, child))
    return out


def distilled_model(hf: Any, n_layers: int = 2, rank: int | None = None, seed: int = 0) -> Any:
    """A draft of the target ``hf`` (a ``transformers`` causal LM): its first ``n_layers`` layers
    and its final norm copied, embedding and head shared with ``hf`` (freeze ``hf`` before
    training). With ``rank`` every linear of the copied layers becomes a :class:`LowRankDelta`
    (factors drawn with ``seed``) and the trainable parameters are the factors and the copied
    norms' gains; without it, a plain copy (what :func:`load_distilled` fills).

    Examples
    --------
    >>> from transformers import LlamaConfig, LlamaForCausalLM
    >>> cfg = LlamaConfig(vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=3,
    ...                   num_attention_heads=2, num_key_value_heads=1, tie_word_embeddings=True)
    >>> hf = LlamaForCausalLM(cfg).requires_grad_(False)
    >>> d = distilled_model(hf, 1, rank=2)
    >>> len(d.model.layers), sorted({k.split(".")[-1] for k in trainable_state(d)})
    (1, ['A', 'B', 'weight'])
    """
    draft = first_layers(hf, n_layers, copy_layers=True)
    draft.model.norm = copy.deepcopy(hf.model.norm)
    if rank is not None:
        gen = torch.Generator().manual_seed(seed)
        draft.model.layers.requires_grad_(False)
        for parent, name, child in _linears(draft.model.layers):
            setattr(parent, name, LowRankDelta(child, rank, gen))
        for module in (draft.model.layers, draft.model.norm):
            for pname, param in module.named_parameters():
                if pname.endswith(("A", "B")) or "norm" in pname or module is draft.model.norm:
                    param.requires_grad_(True)
    return draft


def trainable_state(draft: Any) -> dict[str, torch.Tensor]:
    """The trained tensors in float16, what is stored: ``layers.<...>.A``/``.B`` and the norms'
    gains (``layers.<i>.<norm>.weight``, ``norm.weight``)."""
    named = [(f"layers.{k}", p) for k, p in draft.model.layers.named_parameters()]
    named += [(f"norm.{k}", p) for k, p in draft.model.norm.named_parameters()]
    return {k: p.detach().half().clone() for k, p in named if p.requires_grad}


def _index_path(target_name: str) -> str:
    return os.path.join(WEIGHTS_DIR, f"{target_name}-distilled.json")


def distilled_info(target_name: str = "smollm2-135m") -> dict:
    """The metadata of the distilled drafts of ``target_name`` (``{"default": objective, "runs":
    {objective: {...}}}``: architecture, training budget, curve, acceptance, weight file)."""
    path = _index_path(target_name)
    if not os.path.exists(path):
        raise ValueError(f"no distilled draft of {target_name} is shipped ({path} is missing)")
    with open(path) as fh:
        return json.load(fh)


def load_distilled(hf: Any, objective: str | None = None, target_name: str = "smollm2-135m") -> Any:
    """The shipped distilled draft of ``hf`` trained with ``objective`` (``None``: the default),
    its updates merged (a plain ``n_layers``-layer model).

    Raises
    ------
    ValueError
        Unknown objective, or its weights are not shipped (the message says how to train them).
    """
    info = distilled_info(target_name)
    objective = objective or info["default"]
    if objective not in OBJECTIVES:
        raise ValueError(f"objective: expected one of {OBJECTIVES}, got {objective!r}")
    run = info["runs"].get(objective)
    path = os.path.join(WEIGHTS_DIR, run["weights_file"]) if run else ""
    if not run or not os.path.exists(path):
        raise ValueError(
            f"the {objective} distilled draft of {target_name} is not shipped; train it with "
            f"python simulations/train_real_draft.py --objectives {objective}"
        )
    state = torch.load(path, map_location="cpu", weights_only=True)
    draft = distilled_model(hf, int(run["n_layers"]))
    dtype = next(hf.parameters()).dtype
    device = next(hf.parameters()).device
    with torch.no_grad():
        for key, value in state.items():
            if key.endswith((".A", ".B")):
                continue
            draft.get_parameter(f"model.{key}").copy_(value.to(dtype))
        for key in state:
            if key.endswith(".A"):
                lin = draft.get_submodule(f"model.{key[:-2]}")
                delta = state[key[:-1] + "B"].float() @ state[key].float()
                lin.weight += delta.to(lin.weight.device, dtype)
    draft.model.layers.to(device).requires_grad_(False)
    draft.model.norm.to(device).requires_grad_(False)
    return draft


def round_expectations(
    reject: torch.Tensor, caps: torch.Tensor | int, bonus: bool = True
) -> tuple[torch.Tensor, torch.Tensor]:
    r"""Exact expected target calls and draft tokens given per-position rejection probabilities
    and the draft length a round may use at each start, differentiable in ``reject``.

    Rounds start at position 0; a round at ``n`` checks ``k_n = min(caps[:, n], T - n)``
    positions, each rejected independently with probability ``reject[:, m]``, stops at the
    first rejection (the residual token fills that position: next round at ``m + 1``) or,
    after ``k_n`` acceptances, emits a bonus token at ``n + k_n`` when ``bonus`` (a round with
    ``k_n = 0`` is one plain target step). With ``V[n]`` the expected calls from a round start
    at ``n`` (``V[T] = V[T + 1] = 0``) and :math:`s_j = \prod_{i<j}(1 - r_{n+i})`:

    .. math:: V[n] = 1 + \sum_{j<k_n} s_j\, r_{n+j}\, V[n+j+1] + s_{k_n} V[n + k_n + b],

    ``b = 1`` if ``bonus`` else ``0``; the draft tokens ``D[n]`` follow the same recursion with
    ``k_n`` in place of the 1. A constant cap ``gamma`` is the fixed-length decoder:
    :func:`~spectheory.validation.predict.round_dp` (tested); per-start caps are a draft that
    knows how far it can propose (prompt lookup's ``proposal_cap``).

    Parameters
    ----------
    reject : Tensor ``[N, T]`` in [0, 1]
    caps : int >= 1, or integer Tensor ``[N, T]`` >= 0 (``bonus`` required where a cap is 0)
    bonus : bool

    Returns
    -------
    ``(calls, drafts)``, Tensors ``[N]``.
    """
    if reject.ndim != 2:
        raise ValueError(f"reject: expected [N, T], got {tuple(reject.shape)}")
    N, T = reject.shape
    if isinstance(caps, int):
        if caps < 1:
            raise ValueError(f"gamma: expected >= 1, got {caps}")
        caps = torch.full((N, T), caps, dtype=torch.long)
    caps = torch.as_tensor(caps, dtype=torch.long)
    if caps.shape != (N, T) or bool((caps < 0).any()) or (not bonus and bool((caps == 0).any())):
        raise ValueError("caps: expected [N, T] of ints >= 0 (>= 1 without the bonus)")
    k_all = torch.minimum(caps, T - torch.arange(T)[None, :])
    kmax = int(k_all.max()) if T else 0
    zero = reject.new_zeros(N)
    V: list[torch.Tensor] = [zero] * (T + 2)
    D: list[torch.Tensor] = [zero] * (T + 2)
    rows = torch.arange(N)
    for n in range(T - 1, -1, -1):
        k = k_all[:, n]
        calls, drafts = reject.new_ones(N), k.to(reject.dtype)
        alive = reject.new_ones(N)
        for j in range(min(kmax, T - n)):
            live = (j < k).to(reject.dtype)
            r = reject[:, n + j] * live
            calls = calls + alive * r * V[n + j + 1]
            drafts = drafts + alive * r * D[n + j + 1]
            alive = alive * (1 - r)
        end = torch.clamp(n + k + (1 if bonus else 0), max=T)
        Vs, Ds = torch.stack(V, 1), torch.stack(D, 1)
        calls = calls + alive * Vs[rows, end]
        drafts = drafts + alive * Ds[rows, end]
        V[n], D[n] = calls, drafts
    return V[0], D[0]


def expected_calls(reject: torch.Tensor, gamma: int, bonus: bool = True) -> torch.Tensor:
    """Exact expected target calls of the fixed-length decoder at ``gamma`` given per-position
    rejection probabilities ``reject`` ``[N, T]``, differentiable: the calls of
    :func:`round_expectations` with a constant cap; equal to
    ``round_dp(reject, gamma, bonus)["target_calls"]`` of :mod:`spectheory.validation.predict`."""
    if gamma < 1:
        raise ValueError(f"gamma: expected >= 1, got {gamma}")
    return round_expectations(reject, gamma, bonus)[0]


def distill_loss(
    objective: str,
    logp: torch.Tensor,
    logq: torch.Tensor,
    tokens: torch.Tensor,
    mask: torch.Tensor,
    gamma: int,
) -> torch.Tensor:
    """The training loss of one batch (module docstring).

    Parameters
    ----------
    objective : ``"kl"``, ``"tv"`` or ``"tokens_per_call"``
    logp, logq : Tensor ``[B, T, V]``, the target's and the draft's log-laws before each token
    tokens : LongTensor ``[B, T]``, the sampled tokens (read by ``tokens_per_call``)
    mask : BoolTensor ``[B, T]``, the positions that count (generated, not padding); for
        ``tokens_per_call`` the counted positions of a row must be a prefix of it
    gamma : int, the draft length of ``tokens_per_call``
    """
    w = mask.to(logq.dtype)
    if objective == "kl":
        per = (logp.exp() * (logp - logq)).sum(-1)
    elif objective == "tv":
        per = 0.5 * (logp.exp() - logq.exp()).abs().sum(-1)
    elif objective == "tokens_per_call":
        lp = logp.gather(-1, tokens[..., None])[..., 0]
        lq = logq.gather(-1, tokens[..., None])[..., 0]
        reject = (1 - torch.exp(lq - lp)).clamp(min=0) * w  # padding: never rejected
        calls = torch.stack(
            [expected_calls(reject[i : i + 1, : int(mask[i].sum())], gamma)[0] for i in range(len(reject))]
        )
        return -w.sum() / calls.sum()
    else:
        raise ValueError(f"objective: expected one of {OBJECTIVES}, got {objective!r}")
    return (per * w).sum() / w.sum()
