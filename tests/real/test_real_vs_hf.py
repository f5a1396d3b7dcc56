"""The package's speculative decoder makes HF assisted generation's forwards on the real LLM.

At ``T = 0`` both loops are deterministic, so their forwards can be compared call by call: on
``smollm2-135m`` with a second instance of itself as the draft (every draft is accepted), a
fixed draft length (HF's ``constant`` schedule, no confidence stop) and the confidence rule
(:class:`~spectheory.stopping.ConfidenceThreshold` ``(0.4, 20)`` against HF's default schedule),
the target's forwards have the same widths in the same order and the draft makes HF's
assistant's forwards, once the package takes HF's horizon (``last_token="target"``: with ``r``
tokens left a round drafts ``min(gamma, r - 1)`` and the bonus token fills the last slot). With
the default horizon (``k = min(gamma, r)``, the theory's truncation, whose exact laws the
decoder is checked against) the last target forward is one token wider and the draft makes
one forward more when the last round drafts up to the last token (at the fixed length here;
not with the confidence rule's stop in this prompt); both emit the same tokens in the same
number of target calls. This is what ``benchmarks/real_speed.py``'s wall-clock ratios rest on:
same forwards, so the speed difference is the loops' own work (there, a fraction of HF's).
Skipped without the ``real`` extra.
"""

from __future__ import annotations

import pytest

from spectheory.decoder import pretrained

pytestmark = pytest.mark.skipif(
    not pretrained.is_available("smollm2-135m"), reason=f"the real extra: {pretrained.INSTALL_HINT}"
)

N_NEW = 24
PROMPT = "Copy the list exactly.\nList: apples, pears, plums, cherries, grapes.\nCopy: apples,"


@pytest.fixture(scope="module")
def models():
    import transformers

    from spectheory.decoder import load_model

    transformers.logging.set_verbosity_error()
    return load_model("smollm2-135m"), load_model("smollm2-135m")


def _widths(target, draft, run):
    """``(target widths, draft widths, tokens)``: the tokens per row of every forward of the two HF
    modules while ``run()`` runs."""
    from spectheory.cost.timed import wrap_forward

    logs: dict[str, list[int]] = {"target": [], "draft": []}

    def logger(name):
        def wrap(forward):
            def logged(*args, **kwargs):
                ids = kwargs.get("input_ids", args[0] if args else None)
                logs[name].append(int(ids.shape[1]))
                return forward(*args, **kwargs)

            return logged

        return wrap

    undo_t = wrap_forward(target.model, logger("target"))
    undo_d = wrap_forward(draft.model, logger("draft"))
    try:
        tokens = run()
    finally:
        undo_t()
        undo_d()
    return logs["target"], logs["draft"], tokens


def _hf_assisted(target, draft, ids, schedule):
    import torch
    from transformers import GenerationConfig

    config = GenerationConfig(
        max_new_tokens=N_NEW,
        min_new_tokens=N_NEW,
        do_sample=False,
        pad_token_id=target.model.config.eos_token_id,
        eos_token_id=target.model.config.eos_token_id,
    )
    gc = draft.model.generation_config
    saved = {k: getattr(gc, k) for k in schedule}
    for k, v in schedule.items():
        setattr(gc, k, v)
    try:
        x = torch.tensor([ids])
        with torch.inference_mode():
            out = target.model.generate(
                x, attention_mask=torch.ones_like(x), generation_config=config, assistant_model=draft.model
            )
    finally:
        for k, v in saved.items():
            setattr(gc, k, v)
    return out[0, len(ids) :].tolist()


@pytest.mark.parametrize(
    "package_kw, hf_schedule",
    [
        (
            {"gamma": 4},
            {
                "num_assistant_tokens": 4,
                "num_assistant_tokens_schedule": "constant",
                "assistant_confidence_threshold": 0.0,
            },
        ),
        ("policy", {}),  # HF's default schedule (20 tokens, confidence 0.4) as the installed HF defines it
    ],
    ids=["fixed_gamma_4", "confidence_policy"],
)
def test_same_forwards_as_hf_assisted_generation(models, package_kw, hf_schedule):
    from spectheory.decoder import speculative_generate
    from spectheory.stopping import ConfidenceThreshold

    target, draft = models
    if package_kw == "policy":
        gc = draft.model.generation_config.__class__()
        defaults = getattr(gc, "_get_default_generation_params", None)  # transformers 5 resolves them late
        if defaults is not None:
            gc.update(**defaults(), defaults_only=True)
        if (gc.num_assistant_tokens, gc.assistant_confidence_threshold) != (20, 0.4):
            pytest.skip("this transformers' default assistant schedule is not (20 tokens, confidence 0.4)")
        package_kw = {"gamma": 20, "policy": ConfidenceThreshold(0.4, 20, "token")}
    ids = target.tokenizer(PROMPT)["input_ids"]

    def package(**kw):
        return lambda: (
            speculative_generate(target, draft, [ids], N_NEW, temperature=0.0, seed=0, **package_kw, **kw)
            .tokens[0]
            .tolist()
        )

    pkg_t, pkg_d, pkg_out = _widths(target, draft, package(last_token="target"))
    hf_t, hf_d, hf_out = _widths(target, draft, lambda: _hf_assisted(target, draft, ids, hf_schedule))
    assert pkg_out == hf_out
    assert len(pkg_t) == len(hf_t) >= 3  # the same number of target calls (the first scores the prompt)
    assert pkg_t == hf_t and pkg_d == hf_d  # the same widths, in the same order; the same drafts
    # the default horizon, k = min(gamma, r): the same tokens and calls, the last call at most
    # one token wider and at most one more draft forward (where the last round drafts to the end)
    own_t, own_d, own_out = _widths(target, draft, package())
    assert own_out == hf_out and own_t[:-1] == hf_t[:-1] and hf_t[-1] <= own_t[-1] <= hf_t[-1] + 1
    assert own_d[: len(hf_d)] == hf_d and len(own_d) - len(hf_d) == own_t[-1] - hf_t[-1]
