"""The distilled drafts (issue 26, item 3): the training losses are the stated divergences, and
the cached weights load as the recorded architecture with laws on the byte vocabulary."""

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
ROOT = Path(__file__).resolve().parents[2]
WEIGHTS = ROOT / "spectheory" / "objectives" / "weights"


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, ROOT / path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_training_losses_are_forward_kl_and_tv():
    train = _load("simulations/train_distilled.py", "_td")
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(5), size=(2, 3))
    q = rng.dirichlet(np.ones(5), size=(2, 3))
    logp, logq = torch.tensor(np.log(p)), torch.tensor(np.log(q))
    kl = (p * np.log(p / q)).sum(-1).mean()
    tv = 0.5 * np.abs(p - q).sum(-1).mean()
    assert abs(train.loss_fn("fkl", logp, logq).item() - kl) < 1e-12
    assert abs(train.loss_fn("tv", logp, logq).item() - tv) < 1e-12


@pytest.mark.parametrize("name", ["draft-tiny-fkl", "draft-tiny-tv"])
def test_cached_weights_load(name):
    dd = _load("simulations/distilled_drafts.py", "_dd")
    model, meta = dd.load_draft(str(WEIGHTS), name, "cpu")
    assert meta["training"]["objective"] == name.rsplit("-", 1)[1]
    assert json.loads((WEIGHTS / f"{name}.json").read_text())["config"]["vocab_size"] == 256
    with torch.no_grad():
        law = torch.softmax(model(torch.tensor([[1, 2, 3]])), -1)
    assert law.shape == (1, 3, 256) and torch.allclose(law.sum(-1), torch.ones(1, 3, dtype=law.dtype))
