r"""Drafts of a real pretrained target with the same tokenizer, loadable by name (issue 38, item 2).

A draft name is ``"<target>:<draft>"`` (``"smollm2-135m:exit2"``); :func:`parse_draft_name`
is the one parser, :func:`draft_names` lists the standard names, and
:func:`~spectheory.decoder.load_model` loads any of them. Every draft is an
:class:`~spectheory.decoder.HFCausalLM` wrapping a ``transformers`` model of the target's class,
with the target's tokenizer (``.tokenizer``) and vocabulary, so the decoder, the along-path
estimators and the timing tools take it as they take the target.

Compression drafts are made from the target when loaded (seconds; nothing is stored):

=================  ==========================================================================
draft              made from the target by
=================  ==========================================================================
``exitL``          early exit: its first ``L`` decoder layers, then its final norm and head
                   (the modules are *shared* with the target, no copy; ``L`` = all layers is
                   the target itself, exactly)
``int8``           ``torch.ao.quantization.quantize_dynamic`` of every ``nn.Linear`` (head
                   included): int8 weights per output channel, activations quantised per call;
                   runs on the CPU's int8 kernels (CPU and float32 only)
``intB[gG]``       ``B``-bit (2..7) group-wise round-to-nearest weight quantisation of the
                   decoder layers' linears, groups of ``G`` inputs (default 64), asymmetric
                   (min/max), dequantised back to float (*fake* quantisation: the law of a
                   ``B``-bit model; its speed is the float model's, there is no CPU int4
                   kernel here), embedding and head kept in float. SmolLM2 here *is* a 4-bit
                   model (the dequantised Q4_1 GGUF: blocks of 32, a scale and a minimum), so
                   ``int4g32`` reproduces its weights (its acceptance is 1 up to rounding):
                   ``int4`` (groups of 64) is the coarser 4-bit grid
``lowrank[-R]``    every decoder-layer linear ``W`` replaced by its best rank-``R``
                   approximation (truncated SVD, two linears ``U_R S_R`` and ``V_R^T``;
                   ``R`` = 128 by default: about 37% of the layers' multiply-adds)
``distilled[-O]``  a small draft trained on the target's samples
                   (:mod:`spectheory.decoder.real_drafts_distilled`; ``O`` the objective)
=================  ==========================================================================

Group-wise round-to-nearest: a group ``w_1..w_G`` of one row gets the scale
:math:`s = (\max w - \min w) / (2^B - 1)` and zero :math:`z = \min w`, and each weight becomes
:math:`z + s\,\mathrm{round}((w - z)/s)`; the error is at most :math:`s/2` per weight.

Examples
--------
>>> parse_draft_name("smollm2-135m:exit2")
DraftName(target='smollm2-135m', kind='exit', param=2, group=None)
>>> parse_draft_name("smollm2-135m:int4").group
64
>>> "smollm2-135m:int8" in draft_names()
True
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from .real_drafts_base import first_layers, shell

__all__ = [
    "DraftName",
    "DRAFT_KINDS",
    "parse_draft_name",
    "is_draft_name",
    "draft_names",
    "make_draft",
    "load_draft",
    "fake_quantize",
    "low_rank_linear",
]

#: Draft kind -> the family it belongs to (the figure's colour).
DRAFT_KINDS = {
    "exit": "compression",
    "int8": "compression",
    "int": "compression",
    "lowrank": "compression",
    "distilled": "distillation",
}
_PATTERNS = (
    ("exit", re.compile(r"exit-?(\d+)")),
    ("int8", re.compile(r"int8")),
    ("int", re.compile(r"int([2-7])(?:g(\d+))?")),
    ("lowrank", re.compile(r"lowrank(?:-?(\d+))?")),
    ("distilled", re.compile(r"distilled(?:-(kl|tv|tokens_per_call))?")),
)
DEFAULT_GROUP = 64
DEFAULT_RANK = 128


@dataclass(frozen=True)
class DraftName:
    """A parsed draft name.

    Attributes
    ----------
    target : the pretrained target's name (a key of :data:`~spectheory.decoder.pretrained.PRETRAINED`)
    kind : ``"exit"``, ``"int8"``, ``"int"``, ``"lowrank"`` or ``"distilled"``
    param : layers kept (exit), bits (int), rank (lowrank); ``None`` otherwise
    group : group size of ``int`` (``None`` otherwise); for ``distilled`` the objective name
        (``None``: the shipped default)
    """

    target: str
    kind: str
    param: int | None = None
    group: int | str | None = None

    @property
    def family(self) -> str:
        """``"compression"`` or ``"distillation"``."""
        return DRAFT_KINDS[self.kind]

    def __str__(self) -> str:
        body = {
            "exit": f"exit{self.param}",
            "int8": "int8",
            "int": f"int{self.param}" + ("" if self.group == DEFAULT_GROUP else f"g{self.group}"),
            "lowrank": f"lowrank-{self.param}",
            "distilled": "distilled" + (f"-{self.group}" if self.group else ""),
        }[self.kind]
        return f"{self.target}:{body}"


def parse_draft_name(name: str) -> DraftName:
    """Parse ``"<target>:<draft>"`` (grammar in the module docstring).

    Raises
    ------
    ValueError
        Not a string with one ``:``, an unknown target, an unknown draft, or a parameter out of
        range (``exit0``, ``int4g0``, ``lowrank-0``); the message lists the valid forms.
    """
    from .pretrained import PRETRAINED

    if not isinstance(name, str) or name.count(":") != 1:
        raise ValueError(f"draft name: expected '<target>:<draft>', got {name!r}")
    target, body = name.split(":")
    if target not in PRETRAINED:
        raise ValueError(f"draft name {name!r}: unknown target {target!r}; valid: {', '.join(PRETRAINED)}")
    for kind, pattern in _PATTERNS:
        m = pattern.fullmatch(body)
        if m is None:
            continue
        groups = m.groups()
        if kind == "distilled":
            return DraftName(target, kind, None, groups[0])
        if kind == "int8":
            return DraftName(target, kind, 8)
        param = int(groups[0]) if groups[0] else DEFAULT_RANK
        group = (int(groups[1]) if groups[1] else DEFAULT_GROUP) if kind == "int" else None
        if param < 1 or (group is not None and group < 1):
            raise ValueError(f"draft name {name!r}: parameters must be positive")
        return DraftName(target, kind, param, group)
    raise ValueError(
        f"draft name {name!r}: unknown draft {body!r}; valid: exitL, int8, intB[gG] (B in 2..7), "
        "lowrank-R, distilled[-kl|-tv|-tokens_per_call]"
    )


def is_draft_name(name: Any) -> bool:
    """Whether ``name`` has the form ``"<pretrained target>:<anything>"`` (it may still be refused
    by :func:`parse_draft_name`)."""
    from .pretrained import PRETRAINED

    return isinstance(name, str) and name.count(":") == 1 and name.split(":")[0] in PRETRAINED


def draft_names(target: str = "smollm2-135m") -> list[str]:
    """The standard drafts of ``target``, the ones the comparison of
    ``simulations/real_drafts.py`` runs (any other parameter is loadable too)."""
    bodies = ["distilled", "exit2", "int8", "int4", "lowrank"]
    return [f"{target}:{b}" for b in bodies]


# ---------------------------------------------------------------------- compression builders
def fake_quantize(weight: torch.Tensor, bits: int, group: int = DEFAULT_GROUP) -> torch.Tensor:
    r"""Group-wise asymmetric round-to-nearest ``bits``-bit quantisation of a matrix, dequantised.

    Parameters
    ----------
    weight : Tensor ``[out, in]`` (``in`` a multiple of ``group``)
    bits : int in 2..8
    group : int >= 1, consecutive inputs of one row sharing a scale and a zero

    Returns
    -------
    Tensor ``[out, in]`` of ``weight``'s dtype, each group on its own grid of ``2**bits``
    levels (module docstring); ``|w - fake_quantize(w)| <= scale / 2``.

    Examples
    --------
    >>> w = torch.tensor([[0.0, 0.1, 0.25, 1.0]])
    >>> fake_quantize(w, 2, 4)
    tensor([[0.0000, 0.0000, 0.3333, 1.0000]])
    """
    if weight.ndim != 2:
        raise ValueError(f"weight: expected a matrix, got shape {tuple(weight.shape)}")
    if not 2 <= bits <= 8:
        raise ValueError(f"bits: expected 2..8, got {bits}")
    out_f, in_f = weight.shape
    if group < 1 or in_f % group:
        raise ValueError(f"group: must divide the input size {in_f}, got {group}")
    w = weight.detach().float().reshape(out_f, in_f // group, group)
    lo, hi = w.amin(-1, keepdim=True), w.amax(-1, keepdim=True)
    scale = ((hi - lo) / (2**bits - 1)).clamp(min=torch.finfo(torch.float32).tiny)
    q = torch.round((w - lo) / scale).clamp(0, 2**bits - 1)
    return (lo + q * scale).reshape(out_f, in_f).to(weight.dtype)


def low_rank_linear(linear: nn.Linear, rank: int) -> nn.Module:
    """The best rank-``rank`` approximation of a bias-free linear (Eckart-Young, in Frobenius and
    spectral norm): ``nn.Sequential(Linear(in, R), Linear(R, out))`` holding ``V_R^T`` and
    ``U_R S_R``; the linear itself (a copy) when ``rank >= min(in, out)``."""
    W = linear.weight.detach().float()
    if rank >= min(W.shape):
        return copy.deepcopy(linear)
    U, S, Vh = torch.linalg.svd(W, full_matrices=False)  # float32: seconds for a whole model
    down = nn.Linear(W.shape[1], rank, bias=False)
    up = nn.Linear(rank, W.shape[0], bias=linear.bias is not None)
    down.weight.data = Vh[:rank].to(linear.weight.dtype)
    up.weight.data = (U[:, :rank] * S[:rank]).to(linear.weight.dtype)
    if linear.bias is not None:
        up.bias.data = linear.bias.detach().clone()
    return nn.Sequential(down, up)


def _map_layer_linears(hf: Any, fn: Any) -> Any:
    """A copy of ``hf`` whose decoder layers' linears are ``fn(linear)`` (embedding, norm and
    head shared with ``hf``)."""
    inner = shell(hf.model)
    layers = []
    for layer in hf.model.layers:
        new = copy.deepcopy(layer)
        for parent in new.modules():
            for child_name, child in list(parent.named_children()):
                if isinstance(child, nn.Linear):
                    setattr(parent, child_name, fn(child))
        layers.append(new)
    inner.layers = nn.ModuleList(layers)
    outer = shell(hf)
    outer.model = inner
    return outer


def _int8(hf: Any) -> Any:
    """Dynamic int8 linears (``torch.ao.quantization.quantize_dynamic``, which torch deprecates):
    a torch without it gets an ImportError that names the replacement drafts."""
    try:
        from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic
    except ImportError as exc:
        raise ImportError(
            f"the int8 draft needs torch.ao.quantization.quantize_dynamic, which torch {torch.__version__} "
            "does not have; the int4 and low-rank drafts (':int4', ':lowrank') need no quantized kernels"
        ) from exc

    return quantize_dynamic(hf, {nn.Linear: per_channel_dynamic_qconfig}, dtype=torch.qint8, inplace=False)


def _fake_int(hf: Any, bits: int, group: int) -> Any:
    def fq(lin: nn.Linear) -> nn.Linear:
        lin.weight.data = fake_quantize(lin.weight.data, bits, group)
        return lin

    return _map_layer_linears(hf, fq)


def make_draft(target: Any, name: str | DraftName) -> Any:
    """The draft ``name`` made from a loaded ``target`` (an :class:`~spectheory.decoder.HFCausalLM`
    of a pretrained model); the target is never changed.

    Compression drafts share the target's unchanged modules (embedding, head; early exit: its
    layers too), so moving either in place moves both. ``distilled`` drafts read their trained
    layers from the package (:func:`~spectheory.decoder.real_drafts_distilled.load_distilled`).

    Examples
    --------
    >>> from spectheory.decoder.pretrained import is_available
    >>> if is_available("smollm2-135m"):  # doctest: +SKIP
    ...     from spectheory.decoder import load_model
    ...     target = load_model("smollm2-135m")
    ...     draft = make_draft(target, "smollm2-135m:exit2")
    ...     draft.tokenizer is target.tokenizer
    True
    """
    from .hf import HFCausalLM

    spec = name if isinstance(name, DraftName) else parse_draft_name(name)
    if not isinstance(target, HFCausalLM):
        raise ValueError(f"target: expected an HFCausalLM, got {type(target).__name__}")
    if target.pretrained_name is not None and target.pretrained_name != spec.target:
        raise ValueError(f"draft {spec} is made from {spec.target}, not from {target.pretrained_name}")
    hf = target.model
    dtype = next(hf.parameters()).dtype
    if spec.kind == "exit":
        assert spec.param is not None
        model = first_layers(hf, spec.param)
    elif spec.kind == "int8":
        if next(hf.parameters()).device.type != "cpu" or dtype != torch.float32:
            raise ValueError("int8: dynamic quantisation runs on the CPU in float32 only")
        model = _int8(hf)
    elif spec.kind == "int":
        assert spec.param is not None and isinstance(spec.group, int)
        model = _fake_int(hf, spec.param, spec.group)
    elif spec.kind == "lowrank":
        assert spec.param is not None
        rank = spec.param
        model = _map_layer_linears(hf, lambda lin: low_rank_linear(lin, rank))
    else:
        from .real_drafts_distilled import load_distilled

        model = load_distilled(hf, spec.group if isinstance(spec.group, str) else None)
    draft = HFCausalLM(model.eval(), vocab_size=target.vocab_size, max_seq_len=target.max_seq_len)
    draft.tokenizer = target.tokenizer
    draft.pretrained_name = str(spec)
    # dynamic int8 quantises each call's activations with one scale: its law depends on the call
    draft.batch_dependent_law = spec.kind == "int8"
    return draft


def load_draft(name: str, device: Any = "cpu", dtype: Any = None, target: Any = None) -> Any:
    """Load the target of ``name`` (or take ``target``, already loaded) and make the draft.

    ``device``/``dtype`` place the target before the draft is made (``int8``: CPU float32 only).
    """
    spec = parse_draft_name(name)
    if target is None:
        from .pretrained import load_pretrained

        target = load_pretrained(spec.target, device=device, dtype=dtype)
    return make_draft(target, spec)
