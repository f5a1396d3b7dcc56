r"""The teaching demo on a real LLM: speculative rounds on English text, token by token.

:class:`RealView` answers the calls :func:`~spectheory.teaching.demo.run_demo` makes of the toy
pair (:class:`~spectheory.teaching.toy_view.ToyView`) for two causal language models of the decoder
contract sharing a tokenizer (``smollm2-135m``: ``spectheory demo --target smollm2-135m``). One
round from a context: the draft proposes :math:`y_1..y_\gamma`, each from its law
:math:`q_i = q(\cdot \mid \text{context}, y_{<i})`; one target call over the context and the
proposals gives :math:`p_1..p_{\gamma+1}`; position ``i`` is accepted iff a uniform
:math:`u_i < p_i(y_i)/q_i(y_i)`; at the first rejection a token is drawn from the residual
:math:`\mathrm{norm}(\max(p_i - q_i, 0))`; after ``gamma`` acceptances a bonus token from
:math:`p_{\gamma+1}` (the rule of :func:`~spectheory.teaching.toy.accepts`). The laws are
:func:`~spectheory.decoder.logits.logits_to_probs` of the models' logits at the demo's
temperature; the tables show the few most likely tokens of each law, decoded, with the mass of
the rest.

Theory, given the proposals (the exact conditional expectations, Rao-Blackwellised over the
uniforms): with :math:`a_i = \min(1, p_i(y_i)/q_i(y_i))`, the round accepts at least ``j``
proposals with probability :math:`\prod_{i \le j} a_i`, so
:math:`E[N \mid y] = \sum_{j=1}^{\gamma} \prod_{i \le j} a_i` and
:math:`P(\text{rejection} \mid y) = 1 - \prod_{i \le \gamma} a_i`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..laws.distributions import residual
from .render import law_table, save_bonus_figure, save_step_figure
from .toy import RoundRecord, StepRecord, acceptance_ratio, accepts

__all__ = ["RealView", "top_tokens", "round_theory"]

#: Tokens shown per law in the tables.
TOP = 5
#: The default prompt of ``spectheory demo --target NAME``.
REAL_PROMPT = "The cat sat on the"


def top_tokens(laws: Sequence[np.ndarray], k: int = TOP, mark: int | None = None) -> list[int]:
    """The ids of the ``k`` most likely tokens of each law (union, in order of first appearance),
    with ``mark`` added.

    Examples
    --------
    >>> top_tokens([np.array([0.1, 0.6, 0.3]), np.array([0.5, 0.2, 0.3])], k=1, mark=2)
    [1, 0, 2]
    """
    ids: list[int] = []
    for law in laws:
        law = np.asarray(law)
        for x in np.argsort(-law, kind="stable")[:k].tolist():
            if law[x] > 0 and x not in ids:  # a zero of the residual is not shown
                ids.append(int(x))
    if mark is not None and int(mark) not in ids:
        ids.append(int(mark))
    return ids


def round_theory(accept: Sequence[float]) -> tuple[float, float]:
    r"""``(E[accepted | proposals], P(rejection | proposals))`` of a round whose proposals have
    acceptance probabilities ``accept`` :math:`= (a_1..a_\gamma)` (module docstring).

    Examples
    --------
    >>> round_theory([1.0, 0.5])  # E[N] = 1 + 0.5, P(rejection) = 1 - 0.5
    (1.5, 0.5)
    """
    surv = np.cumprod(np.asarray(accept, dtype=np.float64))
    return float(surv.sum()), float(1.0 - surv[-1])


class RealView:
    """Two real models and a prompt, as :func:`~spectheory.teaching.demo.run_demo` reads a pair.

    Parameters
    ----------
    target, draft : models of the decoder contract with the same vocabulary (``draft`` may be
        ``target`` itself: then give it another ``draft_temperature``, or every proposal passes)
    tokenizer : the models' tokenizer (``decode``); default ``target.tokenizer``
    prompt : list of token ids the text starts from
    temperature : the target's sampling temperature (> 0)
    draft_temperature : the draft's (default ``temperature``)

    Examples
    --------
    >>> import torch
    >>> from spectheory.decoder.model import GPT, GPTConfig
    >>> t = GPT(GPTConfig(vocab_size=256, n_layer=1, n_head=2, n_embd=16, block_size=64)).eval()
    >>> class Bytes:
    ...     def decode(self, ids):
    ...         return bytes(ids).decode("latin-1")
    >>> view = RealView(t, t, list(b"Hi"), tokenizer=Bytes(), draft_temperature=2.0)
    >>> record = view.play(2, np.random.default_rng(0))
    >>> len(record.emitted) == record.n_accepted + 1
    True
    """

    unit = "token"
    theory_basis = "each round's proposals (the product of min(1, p/q) along them)"

    def __init__(
        self,
        target: Any,
        draft: Any,
        prompt: Sequence[int],
        tokenizer: Any = None,
        temperature: float = 1.0,
        draft_temperature: float | None = None,
    ) -> None:
        if temperature <= 0 or (draft_temperature is not None and draft_temperature <= 0):
            raise ValueError("temperature: the demo samples; use a temperature > 0")
        if target.vocab_size != draft.vocab_size:
            raise ValueError(f"draft: vocabulary {draft.vocab_size} is not the target's {target.vocab_size}")
        self.target, self.draft = target, draft
        tok = tokenizer if tokenizer is not None else getattr(target, "tokenizer", None)
        if tok is None:
            raise ValueError("tokenizer: the target has none; pass one")
        self.tokenizer: Any = tok
        self.prompt = [int(t) for t in prompt]
        if not self.prompt:
            raise ValueError("prompt: empty prompt")
        self.ids = list(self.prompt)
        self.temperature = float(temperature)
        self.draft_temperature = float(temperature if draft_temperature is None else draft_temperature)
        self._theory = (0.0, 0.0)

    # --- what run_demo reads
    def start_words(self) -> list[str]:
        return [self.tokenizer.decode(self.prompt)]

    def intro(self) -> list[str]:
        same = self.draft is self.target
        draft = (
            f"the target itself at temperature {self.draft_temperature:g} (a stand-in that disagrees with p)"
            if same
            else "the small model's guess"
        )
        return [
            f"Vocabulary: {self.target.vocab_size:,} tokens (the {TOP} most likely of each law are shown).",
            f"target p = the LLM's next-token law at temperature {self.temperature:g}; draft q = {draft}.",
        ]

    def name(self, x: int) -> str:
        text = self.tokenizer.decode([int(x)])
        return text.replace("\n", "\\n").replace("\t", "\\t")

    def join(self, words: Sequence[str]) -> str:
        return "".join(words).replace("\\n", " ")

    def context(self) -> str:
        return f"Context ends with {self.name(self.ids[-1])!r}"

    def _laws(self, model: Any, ids: list[int], n: int, temperature: float) -> np.ndarray:
        """The model's laws at the last ``n`` positions of ``ids``, float64 ``[n, V]``."""
        import torch

        from ..decoder.logits import logits_to_probs
        from ..validation.lossless import model_device

        x = torch.tensor([ids], dtype=torch.long, device=model_device(model))
        with torch.no_grad():
            logits = model(x)[0, -n:]
        return logits_to_probs(logits.double(), temperature).cpu().numpy()

    def play(self, gamma: int, rng: np.random.Generator) -> RoundRecord:
        """One round from the current text (module docstring); the text moves on by its output."""
        start = list(self.ids)
        proposals: list[int] = []
        draft_laws = []
        for _ in range(gamma):  # the draft runs ahead on its own tokens
            q = self._laws(self.draft, start + proposals, 1, self.draft_temperature)[0]
            proposals.append(int(rng.choice(len(q), p=q)))
            draft_laws.append(q)
        target_laws = self._laws(self.target, start + proposals, gamma + 1, self.temperature)
        record = RoundRecord(state=start[-1], proposals=proposals)
        accept = [
            min(1.0, acceptance_ratio(p[x], q[x])) for p, q, x in zip(target_laws, draft_laws, proposals)
        ]
        self._theory = round_theory(accept)
        prev = start[-1]
        for p, q, x in zip(target_laws, draft_laws, proposals):
            u = float(rng.random())
            step = StepRecord(prev, x, p, q, u, acceptance_ratio(p[x], q[x]), accepts(p[x], q[x], u))
            record.steps.append(step)
            if not step.accepted:
                step.residual = residual(p, q)
                step.emitted = int(rng.choice(len(p), p=step.residual))
                record.emitted.append(step.emitted)
                break
            record.emitted.append(x)
            prev = x
        else:
            record.bonus_law = target_laws[gamma]
            record.bonus = int(rng.choice(len(record.bonus_law), p=record.bonus_law))
            record.emitted.append(record.bonus)
        self.ids += record.emitted
        return record

    def theory(self, record: RoundRecord) -> tuple[float, float]:
        """The theory of the round :meth:`play` returned last (``record``)."""
        return self._theory

    def theory_given(self, record: RoundRecord) -> str:
        return "given its proposals"

    def _restricted(self, columns: dict, mark: int | None) -> tuple[list[str], dict, int | None, list[int]]:
        ids = top_tokens(list(columns.values()), TOP, mark)
        names = [f'"{self.name(x)}"' for x in ids]
        return (
            names,
            {k: np.asarray(v)[ids] for k, v in columns.items()},
            (ids.index(mark) if mark is not None else None),
            ids,
        )

    def table(self, columns: dict, mark: int | None, char: str) -> list[str]:
        names, cols, at, ids = self._restricted(columns, mark)
        rows = law_table(names, cols, mark=at, char=char)
        rest = "   ".join(f"{k}: {1.0 - float(np.asarray(v)[ids].sum()):.3f}" for k, v in columns.items())
        return rows + [f"    (all other tokens: {rest})"]

    def step_figure(self, path: Path, step: StepRecord, headline: str) -> Path:
        res = step.residual if step.residual is not None else residual(step.target, step.draft)
        names, _, _, ids = self._restricted({"p": step.target, "q": step.draft, "r": res}, step.proposal)
        if step.emitted is not None and step.emitted not in ids:
            ids.append(step.emitted)
            names.append(f'"{self.name(step.emitted)}"')
        short = StepRecord(
            0,
            ids.index(step.proposal),
            step.target[ids],
            step.draft[ids],
            step.u,
            step.ratio,
            step.accepted,
            res[ids],
            None if step.emitted is None else ids.index(step.emitted),
        )
        return save_step_figure(path, names, short, headline)

    def bonus_figure(self, path: Path, law: np.ndarray, bonus: int, headline: str) -> Path:
        ids = top_tokens([law], 2 * TOP, bonus)
        return save_bonus_figure(path, [self.name(x) for x in ids], law[ids], ids.index(bonus), headline)
