r"""The kit in an engine's own test suite: ``parametrize_with_checks`` over samplers, three lines a file.

::

    from spectheory.testing.pytest_plugin import parametrize_with_checks

    @parametrize_with_checks([my_sampler])
    def test_spec(sampler, check): check(sampler)

Each entry is a sampler the kit can call (``docs/testing_kit.md``), its kind read from what it
is (:func:`kit_kind`; ``kind=`` says it outright):

=================  ==========================================================================  =============================================
kind               the sampler                                                                 the kit entry
=================  ==========================================================================  =============================================
``verifier``       ``verify(target_probs, draft_probs, draft_tokens, rng)``, an object with    :func:`~spectheory.testing.check_verifier`
                   ``verify_batch`` (``adapters.from_batched_probs``: vLLM-style), a rule
``sampler``        ``sampler(target_model, draft_model, prefix, k, rng)`` (a parameter named   :func:`~spectheory.testing.check_sampler`
                   ``*model*``; ``hf_models.from_hf_sampler``: HF-style)
``tree_verifier``  ``verify(tree, tokens, target_laws, draft_laws, rng)``                      :func:`~spectheory.testing.check_tree_verifier`
``ragged``         ``sampler(target_logits, draft_logits, draft_tokens, lengths,               :func:`~spectheory.testing.check_ragged_batch`
                   temperatures, rng)``
=================  ==========================================================================  =============================================

The test id is ``"<name>-<kind>"``; ``check(sampler)`` runs the kit entry with the samples and
seed of ``--spectheory-samples``/``--spectheory-seed`` (else those given here, else 2,000 and 0:
:mod:`spectheory._pytest_plugin`) and any other keyword given here (``top_k=2``,
``efficiency=False``, ...), and fails with an ``AssertionError`` whose message is the kit's
verdict: the run, the failed checks with their statistic and threshold, and the smallest failing
instance with the call that reproduces it. An entry may be ``pytest.param(sampler,
marks=...)``. This is the sampler counterpart of :func:`spectheory.testing.parametrize_with_checks`
(rules and round kinds, checked against every engine).

Examples
--------
>>> from spectheory.testing import reference_verify
>>> from spectheory.testing.pytest_plugin import parametrize_with_checks
>>> mark = parametrize_with_checks([reference_verify])
>>> [p.id for p in mark.args[1]]
['reference_verify-verifier']
>>> _, check = mark.args[1][0].values
>>> check(reference_verify).passed                              # 2,000 samples per instance, seed 0
True
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from typing import Any

from .._pytest_plugin import KitOptions, current_options

__all__ = ["parametrize_with_checks", "KitCheck", "kit_kind", "KINDS"]

#: kind -> the kit entry (a function of :mod:`spectheory.testing`) that checks it.
KINDS = {
    "verifier": "check_verifier",
    "sampler": "check_sampler",
    "tree_verifier": "check_tree_verifier",
    "ragged": "check_ragged_batch",
}


def kit_kind(obj: Any) -> str:
    """The kind of sampler ``obj`` is (see the module docstring), from what it declares.

    ``obj.kit_kind`` if set; a rule (a :class:`~spectheory.verifiers.Verifier` or a registered
    name) or an object with ``verify_batch``: ``"verifier"`` (``"tree_verifier"`` for a tree
    rule); else from the parameter names of the callable: one naming a ``model``: ``"sampler"``;
    ``lengths`` or ``temperatures``: ``"ragged"``; ``tree``: ``"tree_verifier"``; else
    ``"verifier"``.
    """
    declared = getattr(obj, "kit_kind", None)
    if declared is not None:
        if declared not in KINDS:
            raise ValueError(f"kit_kind: expected one of {sorted(KINDS)}, got {declared!r}")
        return str(declared)
    from ..verifiers import Verifier, get_verifier

    if isinstance(obj, (str, Verifier)):
        return "verifier" if get_verifier(obj).accepts_paths else "tree_verifier"
    if hasattr(obj, "verify_batch"):
        return "verifier"
    if not callable(obj):
        raise ValueError(
            f"sampler: expected a callable sampler, a rule or an object with verify_batch, got {obj!r}"
        )
    try:
        names = [n.lower() for n in inspect.signature(obj).parameters]
    except (TypeError, ValueError):
        return "verifier"
    if any("model" in n for n in names):
        return "sampler"
    if any(n in ("lengths", "temperatures") for n in names):
        return "ragged"
    if any("tree" in n for n in names):
        return "tree_verifier"
    return "verifier"


def _name(obj: Any) -> str:
    if isinstance(obj, str):
        return obj
    return str(getattr(obj, "name", None) or getattr(obj, "__name__", None) or type(obj).__name__)


class KitCheck:
    """``check(sampler)``: one kit entry with the plugin's options; raises ``AssertionError`` with
    the kit's verdict when a check fails, returns the report otherwise."""

    def __init__(
        self, kind: str, samples: int | None = None, seed: int | None = None, **kit_kwargs: Any
    ) -> None:
        if kind not in KINDS:
            raise ValueError(f"kind: expected one of {sorted(KINDS)}, got {kind!r}")
        self.kind, self.samples, self.seed, self.kit_kwargs = kind, samples, seed, kit_kwargs
        self.__name__ = f"check_{kind}"

    def options(self) -> KitOptions:
        """The samples and seed this check runs with (:func:`spectheory._pytest_plugin.current_options`)."""
        return current_options(self.samples, self.seed)

    def run(self, sampler: Any) -> Any:
        """The kit entry's report on ``sampler`` (nothing raised for a failed check)."""
        from .. import testing

        opts = self.options()
        entry = getattr(testing, KINDS[self.kind])
        return entry(sampler, n_samples=opts.samples, rng=opts.seed, **self.kit_kwargs)

    def __call__(self, sampler: Any) -> Any:
        __tracebackhide__ = True
        report = self.run(sampler)
        if not report.passed:
            raise AssertionError(failure_message(sampler, report, self.kind, self.options()))
        return report

    def __repr__(self) -> str:
        extra = "".join(f", {k}={v!r}" for k, v in self.kit_kwargs.items())
        return f"KitCheck({self.kind!r}{extra})"


def failure_message(sampler: Any, report: Any, kind: str, opts: KitOptions) -> str:
    """The kit's verdict as a test failure: what ran, each failed check (statistic, threshold, the
    smallest failing instance and the call that reproduces it), and how to rerun."""
    failed = list(getattr(report, "failed", []))
    head = (
        f"spectheory kit: {_name(sampler)} ({kind}, {KINDS[kind]}) fails {', '.join(failed) or 'the kit'} "
        f"at {opts.samples} samples per instance, seed {opts.seed}"
    )
    checks = getattr(report, "checks", None)
    if checks is not None:  # a Report: its first lines, then the failed checks in full
        text = str(report).splitlines()
        broke = [ln for ln in text if ln.startswith("  hostile ") and "BROKE it" in ln]  # hostile inputs
        body = text[1:3] + broke + [str(c) for c in checks if not c.passed]
    else:
        body = [str(report)]
    rerun = (
        f"reproduce: {KINDS[kind]}(sampler, n_samples={opts.samples}, rng={opts.seed}); "
        f"rerun with --spectheory-seed / --spectheory-samples to vary them"
    )
    return "\n".join([head, *body, rerun])


def _entries(samplers: Iterable[Any]) -> Iterable[tuple[Any, str | None, tuple[Any, ...]]]:
    for item in samplers:
        if hasattr(item, "values") and hasattr(item, "marks") and hasattr(item, "id"):  # pytest.param
            if len(item.values) != 1:
                raise ValueError(f"samplers: a pytest.param holds one sampler, got {len(item.values)} values")
            yield item.values[0], item.id, tuple(item.marks)
        else:
            yield item, None, ()


def parametrize_with_checks(
    samplers: Iterable[Any],
    *,
    kind: str | None = None,
    samples: int | None = None,
    seed: int | None = None,
    **kit_kwargs: Any,
) -> Any:
    """A pytest decorator parametrizing a test over ``(sampler, check)``, one per sampler.

    Parameters
    ----------
    samplers : iterable
        Samplers of the kinds of :data:`KINDS` (module docstring); an entry may be a
        ``pytest.param(sampler, marks=..., id=...)``.
    kind : str, optional
        One kind for every entry (default: :func:`kit_kind` of each).
    samples, seed : int, optional
        The test's samples per instance and seed (``--spectheory-samples`` and
        ``--spectheory-seed`` override them; default 2,000 and 0).
    **kit_kwargs
        Passed to the kit entry (e.g. ``top_k=2``, ``temperature=0.5``, ``efficiency=False``).

    Returns
    -------
    decorator
        ``pytest.mark.parametrize("sampler, check", [...])`` with ids ``"<name>-<kind>"``; the
        test body is ``check(sampler)``.
    """
    import pytest

    if samples is not None or seed is not None:
        current_options(samples, seed)  # a bad value fails at collection, with its name
    params = []
    for obj, pid, marks in _entries(samplers):
        k = kind or kit_kind(obj)
        check = KitCheck(k, samples, seed, **kit_kwargs)
        params.append(pytest.param(obj, check, id=pid or f"{_name(obj)}-{k}", marks=marks))
    if not params:
        raise ValueError("samplers: give at least one sampler")
    return pytest.mark.parametrize("sampler, check", params)
