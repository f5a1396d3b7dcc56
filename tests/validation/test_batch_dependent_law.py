"""A draft whose law depends on what shares its call (dynamic int8's per-call activation scale)
declares ``batch_dependent_law``: its along-path statistics are then scored as the decoder calls
it at batch 1 (one row, one token at a time) and its decoder runs are measured one sequence at a
time."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from _torch_models import gpt  # noqa: E402

from spectheory.decoder.logits import logits_to_probs  # noqa: E402
from spectheory.validation.path_stats import path_statistics, sample_paths  # noqa: E402
from spectheory.validation.predict import measure_decoder  # noqa: E402

V = 32


class CallSized(torch.nn.Module):
    """A GPT whose logits gain ``0.3 * (rows * tokens of the call)`` on token 0: its law at a
    position depends on the call, as a dynamically quantised model's does."""

    def __init__(self, seed: int, declared: bool) -> None:
        super().__init__()
        self.inner = gpt(seed, vocab=V)
        self.vocab_size, self.max_seq_len = V, 64
        self.batch_dependent_law = declared

    def new_cache(self, batch_size, max_len, device=None, dtype=None):
        return self.inner.new_cache(batch_size, max_len, device=device, dtype=dtype)

    def forward(self, ids, cache=None, start=None, **kw):
        logits = self.inner(ids, cache=cache, start=start, **kw) if cache is not None else self.inner(ids)
        bump = torch.zeros(V)
        bump[0] = 0.3 * ids.numel()
        return logits + bump


@pytest.fixture(scope="module")
def paths():
    prompts = np.array([[1, 2, 3], [4, 5, 6], [7, 8, 9]])
    return sample_paths(gpt(0, vocab=V), prompts, 6, seed=1)


def test_declared_law_is_scored_one_token_at_a_time(paths):
    target, L = gpt(0, vocab=V), 3
    ids = torch.as_tensor(paths)
    with torch.inference_mode():
        alone = torch.stack(  # the law the decoder sees at batch 1, one token a call: bump 0.3
            [
                torch.log_softmax(gpt(1, vocab=V)(ids[:, : n + 1])[:, n], -1)
                for n in range(L - 1, ids.shape[1] - 1)
            ],
            1,
        )
        alone[..., 0] += 0.3
        whole = gpt(1, vocab=V)(ids[:, :-1])[:, L - 1 :]
        whole[..., 0] += 0.3 * ids[:, :-1].numel()  # one call over every path
    for declared, expected in ((True, alone), (False, whole)):
        st = path_statistics(target, CallSized(1, declared), paths, L, keep_laws=True)
        want = logits_to_probs(expected, 1.0, None, None).float().numpy()
        np.testing.assert_allclose(st.draft_laws, want, atol=1e-5)
    # the two scorings differ: the declaration is what makes the prediction the decoder's law
    assert not np.allclose(
        path_statistics(target, CallSized(1, True), paths, L).tv,
        path_statistics(target, CallSized(1, False), paths, L).tv,
    )


def test_declared_draft_is_measured_one_sequence_at_a_time(paths):
    target, prompts = gpt(0, vocab=V), np.repeat(paths[:, :3], 4, axis=0)  # 12 sequences
    runs = {
        (declared, b): measure_decoder(
            target, CallSized(1, declared), prompts, 8, 2, True, seed=3, batch_size=b
        )
        for declared, b in ((True, 16), (False, 1), (False, 16))
    }
    for key in ("counts", "rejections", "target_calls"):
        np.testing.assert_array_equal(runs[True, 16][key], runs[False, 1][key])
    assert not np.array_equal(runs[False, 16]["counts"], runs[False, 1]["counts"])  # batching changes the law
