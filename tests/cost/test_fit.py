"""fit_cost: timing a model's cached forward on a grid and fitting a cost form."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from _torch_models import gpt  # noqa: E402

from spectheory.cost import ConstantForward, LinearForward  # noqa: E402
from spectheory.cost.fit_forward import CostFit, fit_cost, fit_form  # noqa: E402
from spectheory.cost.measure import check_device, time_forward  # noqa: E402


def test_fit_form_recovers_a_linear_model_exactly():
    rng = np.random.default_rng(0)
    b = rng.integers(1, 64, 30)
    m = rng.integers(1, 9, 30)
    L = rng.integers(0, 200, 30)
    truth = LinearForward(2e-3, 3e-5, 4e-7)
    fit = fit_form("linear", b, m, L, truth(b, m, L))
    assert isinstance(fit, LinearForward)
    for name in ("base", "per_token", "per_context"):
        assert getattr(fit, name) == pytest.approx(getattr(truth, name), rel=1e-8)


def test_fit_form_constant_minimises_the_relative_error():
    t = np.array([1.0, 2.0, 4.0])
    fit = fit_form("constant", [1, 2, 3], [1, 1, 1], [0, 0, 0], t)
    assert isinstance(fit, ConstantForward)
    grid = np.linspace(0.5, 4, 3501)
    loss = [np.sum((g / t - 1) ** 2) for g in grid]
    assert fit.seconds == pytest.approx(grid[int(np.argmin(loss))], abs=1e-3)


def test_fit_form_keeps_coefficients_non_negative():
    # times falling with the batch: an unconstrained fit would give a negative slope
    fit = fit_form("linear", [1, 2, 4, 8], [1, 1, 1, 1], [0, 0, 0, 0], [4.0, 3.0, 2.0, 1.0])
    assert min(fit.base, fit.per_token, fit.per_context) >= 0


@pytest.mark.parametrize(
    "kwargs, word",
    [
        ({"form": "cubic"}, "form"),
        ({"device": "tpu"}, "device"),
        ({"batches": ()}, "batches"),
        ({"tokens": (0,)}, "tokens"),
        ({"contexts": (70,)}, "context"),
    ],
)
def test_fit_cost_bad_input(kwargs, word):
    with pytest.raises(ValueError, match=word):
        fit_cost(gpt(0), **{"batches": (1,), "tokens": (1,), "contexts": (4,), "repeats": 1, **kwargs})


def test_fit_form_bad_measurements():
    with pytest.raises(ValueError, match="seconds"):
        fit_form("linear", [1], [1], [0], [0.0])
    with pytest.raises(ValueError, match="seconds"):
        fit_form("linear", [1, 2], [1, 1], [0, 0], [1.0])


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is available here")
def test_cuda_without_cuda_is_a_clear_error():
    with pytest.raises(ValueError, match="CUDA"):
        check_device("cuda")


def test_fit_cost_on_a_gpt_reports_grid_and_error():
    fit = fit_cost(gpt(0), batches=(1, 4), tokens=(1, 3), contexts=(0, 8), repeats=3, warmup=1, rng=0)
    assert isinstance(fit, CostFit) and fit.form == "linear" and fit.device == "cpu"
    assert len(fit.seconds) == 8 and fit.points()[0] == (1, 1, 0)
    assert np.all(fit.low <= fit.seconds) and np.all(fit.seconds <= fit.high)
    rel = fit.predicted / fit.seconds - 1
    assert fit.max_relative_error == pytest.approx(np.abs(rel).max())
    assert fit.median_relative_error == pytest.approx(np.median(np.abs(rel)))
    d = fit.to_dict()
    assert set(d["params"]) == {"base", "per_token", "per_context"} and len(d["points"]) == 8
    assert "CostFit(" in repr(fit)


def test_time_forward_rejects_a_context_past_the_model():
    with pytest.raises(ValueError, match="max_seq_len"):
        time_forward(gpt(0), 1, 8, 60)


def test_fit_cost_on_a_hugging_face_model(tmp_path):
    transformers = pytest.importorskip("transformers")
    from spectheory.decoder.hf import HFCausalLM

    config = transformers.GPT2Config(n_layer=1, n_embd=16, n_head=2, vocab_size=40, n_positions=64)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        transformers.GPT2LMHeadModel(config).save_pretrained(tmp_path / "m")
    model = HFCausalLM.from_pretrained(str(tmp_path / "m"))
    fit = fit_cost(model, batches=(1, 2), tokens=(1, 2), contexts=(5,), repeats=1, form="constant", rng=1)
    assert isinstance(fit.forward, ConstantForward) and fit.forward.seconds > 0
