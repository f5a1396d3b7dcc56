r"""The toy pair as the teaching demo reads it (:class:`ToyView`).

:func:`~spectheory.teaching.demo.run_demo` asks a *view* for the words, one round, the exact
per-state theory and the figures; :class:`ToyView` answers for the toy word pair of
:mod:`spectheory.teaching.toy`, :class:`~spectheory.teaching.real.RealView` for a real LLM.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .render import law_table, quote, save_bonus_figure, save_step_figure
from .toy import ToyModels, expected_accepted, play_round, rejection_probability

__all__ = ["ToyView"]


class ToyView:
    """The toy pair as :func:`~spectheory.teaching.demo.run_demo` reads it: words, the round, the exact per-state theory
    and the figures (a :class:`~spectheory.teaching.real.RealView` answers the same calls for a
    real LLM). It keeps the context word between rounds."""

    unit = "word"
    theory_basis = "each round's starting word"

    def __init__(self, models: ToyModels, gamma: int) -> None:
        self.models, self.words, self.state = models, models.words, models.start
        self.exp_acc = expected_accepted(models, gamma)
        self.p_rej = rejection_probability(models, gamma)

    def start_words(self) -> list[str]:
        return [self.words[self.models.start]]

    def intro(self) -> list[str]:
        return [
            f"Vocabulary ({len(self.words)} words): " + " ".join(self.words),
            "target p = the big model's next-word law; draft q = the small model's guess.",
        ]

    def name(self, x: int) -> str:
        return str(self.words[x])

    def join(self, words: Sequence[str]) -> str:
        return " ".join(words)

    def context(self) -> str:
        return f"Context word {quote(self.words[self.state])}"

    def play(self, gamma: int, rng: np.random.Generator) -> Any:
        record = play_round(self.models, self.state, gamma, rng)
        self.state = record.emitted[-1]
        return record

    def theory(self, record: Any) -> tuple[float, float]:
        return float(self.exp_acc[record.state]), float(self.p_rej[record.state])

    def theory_given(self, record: Any) -> str:
        return f"from {quote(self.words[record.state])}"

    def table(self, columns: dict, mark: int | None, char: str) -> list[str]:
        return law_table(self.words, columns, mark=mark, char=char)

    def step_figure(self, path: Path, step: Any, headline: str) -> Path:
        return save_step_figure(path, self.words, step, headline)

    def bonus_figure(self, path: Path, law: np.ndarray, bonus: int, headline: str) -> Path:
        return save_bonus_figure(path, self.words, law, bonus, headline)
