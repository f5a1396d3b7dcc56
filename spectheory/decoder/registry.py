"""The small models shipped with spectheory: list, describe and load them.

Shipped models (weights and JSON metadata in ``spectheory/decoder/weights/``, trained by
``simulations/train_models.py`` on the Python standard library, see
``spectheory.decoder.corpus``):

=========== ==============================================================
name        model
=========== ==============================================================
target      byte-level GPT, 4 layers, n_embd 224 (~2.5M parameters)
draft-small byte-level GPT, 2 layers, n_embd 96 (< 1/8 of the target)
draft-tiny  byte-level GPT, 1 layer, n_embd 32
draft-ngram order-2 byte n-gram from counts (next byte given the last byte)
=========== ==============================================================

Distilled drafts registered beside them (weights in ``spectheory/objectives/weights/``, trained
by ``simulations/train_distilled.py``; issue 26), loadable by name but not in
:func:`list_models`, so that scripts iterating over the shipped drafts do not change:

============== ===========================================================
name           model
============== ===========================================================
draft-small-tv draft-small's architecture, fine-tuned from it by TV on target samples
============== ===========================================================

Each metadata file records the architecture, parameter count, training command, steps,
held-out loss (nats/byte), corpus hash, date, torch version and, for drafts, the
average acceptance against the target on held-out text.

Examples
--------
>>> names = list_models()
>>> names[0]
'target'
>>> model = load_model("draft-ngram")
>>> model.vocab_size
256
>>> sorted(model_info("target"))[:3]
['architecture', 'config', 'corpus']
"""

from __future__ import annotations

import json
import os

import torch

from .model import GPT, GPTConfig
from .ngram_model import NGramModel

__all__ = [
    "MODEL_NAMES",
    "DISTILLED_NAMES",
    "registered_models",
    "WEIGHTS_DIR",
    "TIMING_SHAPES",
    "list_models",
    "model_info",
    "load_model",
    "load_model_from",
    "timing_model",
]

WEIGHTS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "weights")
MODEL_NAMES = ("target", "draft-small", "draft-tiny", "draft-ngram")
#: Distilled drafts loadable by :func:`load_model` (not in :func:`list_models`).
DISTILLED_NAMES = ("draft-small-tv",)
DISTILLED_DIR = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "objectives", "weights"
)
#: Standard shapes of :func:`timing_model`: name -> (n_layer, n_head, n_embd).
TIMING_SHAPES = {"gpt-12x768": (12, 12, 768), "gpt-24x1024": (24, 16, 1024)}


def _available(folder):
    return [n for n in MODEL_NAMES if os.path.exists(os.path.join(folder, f"{n}.json"))]


def list_models() -> list[str]:
    """Names of the shipped models, target first, then drafts from best to worst."""
    return _available(WEIGHTS_DIR)


def registered_models() -> list[str]:
    """:func:`list_models` followed by the registered distilled drafts (:data:`DISTILLED_NAMES`)."""
    return list_models() + [
        n for n in DISTILLED_NAMES if os.path.exists(os.path.join(DISTILLED_DIR, f"{n}.json"))
    ]


def _folder(name):
    return DISTILLED_DIR if name in DISTILLED_NAMES else WEIGHTS_DIR


def _check_name(name, folder):
    names = _available(folder)
    if name not in names and not (folder == DISTILLED_DIR and name in DISTILLED_NAMES):
        raise ValueError(f"unknown model name {name!r}; valid names: {', '.join(names)}")


def _read_info(folder, name):
    _check_name(name, folder)
    with open(os.path.join(folder, f"{name}.json")) as fh:
        return json.load(fh)


def model_info(name: str) -> dict:
    """The metadata dict of a shipped model (see the module docstring for its fields)."""
    return _read_info(_folder(name), name)


def load_model_from(
    folder: str | os.PathLike,
    name: str,
    device: str | torch.device = "cpu",
    dtype: torch.dtype | None = None,
) -> torch.nn.Module:
    """Load model ``name`` from ``folder`` (holding ``<name>.json`` and its weights file)."""
    info = _read_info(folder, name)
    path = os.path.join(folder, info["weights_file"])
    model: GPT | NGramModel
    if info["kind"] == "gpt":
        model = GPT(GPTConfig(**info["config"]))
        state = torch.load(path, map_location="cpu", weights_only=True)
        model.load_state_dict({k: v.float() for k, v in state.items()})
    elif info["kind"] == "ngram":
        model = NGramModel.load(path)
    else:
        raise ValueError(f"model {name!r} has unknown kind {info['kind']!r}")
    model = model.to(device=device)
    if dtype is not None:
        model = model.to(dtype=dtype)
    return model.eval()


def load_model(
    name: str, device: str | torch.device = "cpu", dtype: torch.dtype | None = None
) -> torch.nn.Module:
    """Load a model by name in eval mode on ``device`` (weights cast to ``dtype``, float32 by
    default).

    ``name`` is a shipped small model (:func:`list_models`, stored in fp16), a distilled draft
    (:func:`registered_models`), a real pretrained model (``"smollm2-135m"``:
    :func:`spectheory.decoder.pretrained.load_pretrained`, the ``real`` extra) or ``hf:PATH``
    (a local Hugging Face folder, :meth:`HFCausalLM.from_pretrained`; never downloads),
    ``"prompt-lookup"`` (a retrieval draft of any vocabulary, options as in
    :func:`~spectheory.decoder.prompt_lookup.parse_prompt_lookup`), or a draft of a pretrained
    model, ``"smollm2-135m:exit2"`` (:mod:`~spectheory.decoder.real_drafts`: the names of
    :func:`~spectheory.decoder.real_drafts.draft_names`).
    """
    from .pretrained import PRETRAINED, load_pretrained
    from .real_drafts import is_draft_name, load_draft

    if name in PRETRAINED:
        return load_pretrained(name, device=device, dtype=dtype)
    if name.split(":")[0] == "prompt-lookup":  # a retrieval draft of any vocabulary
        from .prompt_lookup import parse_prompt_lookup

        return parse_prompt_lookup(name).to(device=device)
    if is_draft_name(name):
        return load_draft(name, device=device, dtype=dtype)
    if name.startswith("hf:"):
        from .hf import HFCausalLM

        return HFCausalLM.from_pretrained(name[3:], device=device, dtype=dtype).eval()
    return load_model_from(_folder(name), name, device=device, dtype=dtype)


def timing_model(
    shape: str = "gpt-12x768",
    device: str | torch.device = "cpu",
    dtype: torch.dtype | None = None,
    seed: int = 0,
) -> GPT:
    """A GPT of a standard shape with RANDOM weights, for cost curves only (issue 22, item 4).

    Its text is noise: it is never a target or a draft whose acceptance means anything. It is
    there to show how the time of a forward grows with the tokens it scores when the weights
    no longer fit in cache (the memory-bound regime of real targets), which the shipped
    2.5M-parameter target is too small to show. Every result that uses it says
    "timing only (random weights)".

    Parameters
    ----------
    shape : a key of :data:`TIMING_SHAPES` (``"gpt-12x768"``: 12 layers, 12 heads, width 768,
        ~85M parameters, GPT-2 small's shape with the byte vocabulary)
    device, dtype : placement (float32 by default)
    seed : int, the weights' seed (``torch.Generator``; no global seeding)

    Examples
    --------
    >>> m = timing_model("gpt-12x768")
    >>> m.config.n_layer, m.config.n_embd, m.num_params() > 80_000_000
    (12, 768, True)
    """
    if shape not in TIMING_SHAPES:
        raise ValueError(f"shape: unknown timing shape {shape!r}; valid: {', '.join(TIMING_SHAPES)}")
    n_layer, n_head, n_embd = TIMING_SHAPES[shape]
    gen = torch.Generator().manual_seed(int(seed))
    with torch.random.fork_rng(devices=[]):  # GPT's initialisers draw from the global stream:
        torch.manual_seed(int(torch.randint(0, 2**62, (1,), generator=gen)))  # isolate it
        model = GPT(GPTConfig(n_layer=n_layer, n_head=n_head, n_embd=n_embd, block_size=256))
    model = model.to(device=device)
    if dtype is not None:
        model = model.to(dtype=dtype)
    return model.eval()
