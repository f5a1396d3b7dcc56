"""Named example cost models with published constants (:func:`named_cost`, :data:`COST_MODELS`).

Each entry states where its numbers come from and how sure they are. Two kinds:

* **published constants** from the speculative decoding papers: Leviathan et al. 2023's cost
  coefficient ``c`` for T5-XXL (11B) with T5-small (77M), T5-base (250M) or T5-large (800M)
  drafts (arXiv 2211.17192v2, Appendix A.3, Table 4: 0.02 / 0.04 / 0.11, one value per draft on
  both tasks and both temperatures, "estimated ... based on profiler traces", at batch size 1 on
  one TPU-v4; Appendix A.5's lenience runs use ``c = 0.015`` for T5-small instead), and Chen
  et al. 2023's per-token latencies for Chinchilla 70B and its 4B draft (arXiv 2302.01318v1,
  Sec. 6: 14.1 and 1.8 ms per token on 16 TPU v4; Table 1, batch size 1). These are constant
  forms, valid at the batch size they were measured at (batch 1) and used here at every batch
  size -- the assumption whose failure :mod:`spectheory.cost.batch` quantifies;
* **rooflines** from datasheet numbers (NVIDIA H100 SXM and H200 SXM: dense BF16 989.4 TFLOP/s
  for both -- 1979 with sparsity --, HBM bandwidth 3.35 and 4.8 TB/s) and model shapes
  (Llama-2-7B: 6.74e9 parameters, 32 layers, ``d_model`` 4096, no grouped-query attention;
  Llama-68M, ``JackFram/llama-68m``: 6.8e7 parameters, 2 layers, ``d_model`` 768). A roofline
  is an ideal (no launch or framework overhead, peak throughput reached): it says when a
  forward turns compute-bound, not its measured latency; fit a real device with
  ``spectheory.cost.fit_forward`` (``spectheory tune``).

The linear latency fit of Liu et al. 2026 (arXiv 2601.11580) is not included: no text checked
for this release states its fitted constants or their units (pass your own to
:class:`~spectheory.cost.LinearForward`).

>>> from spectheory.cost import named_cost
>>> round(named_cost("chinchilla-70b/4b").relative().c, 4)  # c = 1.8 ms / 14.1 ms
0.1277
>>> sorted(COST_MODELS)[:2]
['chinchilla-70b/4b', 'llama2-7b/68m-h100']
"""

from __future__ import annotations

from collections.abc import Callable

from .forward import ConstantForward, RooflineForward
from .round_cost import ConstantCost, CostModel

__all__ = ["COST_MODELS", "named_cost", "llama_roofline"]

#: Dense BF16 tensor-core peak of an H100 SXM / H200 SXM (the datasheets' 1979 TFLOP/s is with sparsity).
HOPPER_BF16_FLOPS = 989.4e12
H100_BANDWIDTH = 3.35e12
H200_BANDWIDTH = 4.8e12


def llama_roofline(
    params: float, n_layers: int, d_model: int, peak_flops: float, bandwidth: float, launch: float = 0.0
) -> RooflineForward:
    """A roofline of a Llama-shaped decoder in bf16: KV cache ``2 n_layers d_model`` values of 2
    bytes per token, attention ``4 n_layers d_model`` FLOPs per (scored, cached) pair.

    >>> f = llama_roofline(6.74e9, 32, 4096, HOPPER_BF16_FLOPS, H200_BANDWIDTH)
    >>> round(f(1, 1, 0) * 1e3, 3)  # ms: reading 13.5 GB of weights at 4.8 TB/s
    2.808
    """
    return RooflineForward(
        params,
        peak_flops=peak_flops,
        bandwidth=bandwidth,
        launch=launch,
        kv_bytes_per_token=2.0 * n_layers * d_model * 2.0,
        bytes_per_param=2.0,
        attention_flops_per_pair=4.0 * n_layers * d_model,
    )


def _llama_pair(bandwidth: float, device: str) -> CostModel:
    return CostModel(
        llama_roofline(6.74e9, 32, 4096, HOPPER_BF16_FLOPS, bandwidth),
        llama_roofline(6.8e7, 2, 768, HOPPER_BF16_FLOPS, bandwidth),
        name=f"llama2-7b/68m-{device}",
        source=(
            f"roofline: NVIDIA {device.upper()} SXM datasheet (dense BF16 {HOPPER_BF16_FLOPS / 1e12:.1f} "
            f"TFLOP/s, {bandwidth / 1e12:.2f} TB/s); Llama-2-7B (Touvron et al. 2023) and "
            "JackFram/llama-68m shapes; no launch overhead (an ideal)"
        ),
    )


def _leviathan(c: float, draft: str, params: str) -> Callable[[], CostModel]:
    def make() -> CostModel:
        return ConstantCost(
            c,
            name=f"t5-xxl/{draft}-leviathan",
            source=(
                f"Leviathan et al. 2023 (ICML, arXiv 2211.17192v2), Appendix A.3, Table 4: c = {c} "
                f"for T5-XXL (11B) drafted by {draft} ({params}), on WMT EnDe and CNN/DM at temperature "
                "0 and 1, estimated from profiler traces; walltimes at batch size 1 on a single "
                "TPU-v4 (Sec. 4.1)"
            ),
        )

    return make


def _chinchilla() -> CostModel:
    return CostModel(
        ConstantForward(14.1e-3),
        ConstantForward(1.8e-3),
        level_forwards=False,
        name="chinchilla-70b/4b",
        source=(
            "Chen et al. 2023 (arXiv 2302.01318v1), Sec. 6: the 4B draft (8 layers) samples at "
            "1.8 ms/token against 14.1 ms/token for Chinchilla 70B, both on 16 TPU v4; Table 1: "
            "autoregressive 14.1 ms/token at batch size 1"
        ),
    )


#: Name -> factory of a :class:`~spectheory.cost.CostModel` (see the module docstring for sources).
COST_MODELS: dict[str, Callable[[], CostModel]] = {
    "t5-xxl/t5-small-leviathan": _leviathan(0.02, "t5-small", "77M"),
    "t5-xxl/t5-base-leviathan": _leviathan(0.04, "t5-base", "250M"),
    "t5-xxl/t5-large-leviathan": _leviathan(0.11, "t5-large", "800M"),
    "chinchilla-70b/4b": _chinchilla,
    "llama2-7b/68m-h100": lambda: _llama_pair(H100_BANDWIDTH, "h100"),
    "llama2-7b/68m-h200": lambda: _llama_pair(H200_BANDWIDTH, "h200"),
}


def named_cost(name: str) -> CostModel:
    """The named example :class:`~spectheory.cost.CostModel` (``sorted(COST_MODELS)`` lists them).

    >>> print(named_cost("t5-xxl/t5-small-leviathan").describe().splitlines()[0])
    t5-xxl/t5-small-leviathan
    """
    try:
        return COST_MODELS[name]()
    except KeyError:
        raise ValueError(f"name: unknown cost model {name!r}; known: {sorted(COST_MODELS)}") from None
