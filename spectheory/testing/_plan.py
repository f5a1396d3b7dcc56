"""The plan of a kit run (the families' plan or the given instances, and their seed sequence;
the hostile families' instances, :func:`hostile_instances`) and what its report keeps of it
(:func:`run_config`, :func:`fold`, :func:`hostile_verdicts`)."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import cycle
from typing import Any

import numpy as np

from .._guards import as_rng
from .._typing import RNGLike
from ._catalog import CHECKS
from ._verdicts import declare_lossy
from .hostile import HOSTILE_SET, hostile_families
from .instances import ALL_FAMILIES, FAMILIES, Instance, make_instance
from .report import Finding, Report, summarise


def _name(verify: object) -> str:
    return getattr(verify, "__name__", None) or getattr(verify, "name", None) or type(verify).__name__


def seed_sequence(rng: RNGLike) -> np.random.SeedSequence:
    """The seed sequence a kit run spawns its streams from, for any ``rng`` argument.

    ``None``, an integer seed or a sequence of them: ``SeedSequence(rng)`` (so ``rng=s`` draws
    what the kit drew with the former ``seed=s``); a ``SeedSequence`` as it is; a ``Generator``
    or ``BitGenerator``: a sequence seeded by four draws from it (its stream advances, as
    everywhere an ``rng`` is a Generator).

    >>> seed_sequence(7).entropy
    7
    >>> seed_sequence(np.random.default_rng(0)).entropy == seed_sequence(np.random.default_rng(0)).entropy
    True
    """
    if isinstance(rng, np.random.SeedSequence):
        return rng
    if isinstance(rng, (np.random.Generator, np.random.BitGenerator)):
        return np.random.SeedSequence([int(x) for x in as_rng(rng).integers(2**63, size=4)])
    as_rng(rng)  # a clear error for anything numpy cannot seed from
    return np.random.SeedSequence(rng)


def _instances(vocab_sizes, gammas, families, instances, rng):
    """The instances of a run (the families' plan, or the given ones, checked) and the seed
    sequence their randomness comes from (:func:`seed_sequence` of ``rng``); shared by
    :func:`check_verifier` and :func:`spectheory.testing.check_sampler`."""
    fams = list(FAMILIES) if families is None else list(families)
    for f in fams:
        if f not in ALL_FAMILIES:
            raise ValueError(f"families: unknown {f!r}; choose from {sorted(ALL_FAMILIES)}")
    if instances is None:
        return _plan(vocab_sizes, gammas, fams, rng)
    insts = list(instances)
    if not insts or not all(isinstance(i, Instance) for i in insts):
        raise ValueError("instances: expected a non-empty sequence of Instance")
    return insts, seed_sequence(rng)


def _plan(vocab_sizes, gammas, families, rng):
    fams = list(families)
    n_inst = max(len(fams), len(vocab_sizes), len(gammas))
    ss = seed_sequence(rng)
    rngs = ss.spawn(n_inst + 1)
    plan = []
    vit, git = cycle(vocab_sizes), cycle(gammas)
    fit = cycle(fams)
    for i in range(n_inst):
        fam = next(fit)
        V, g = next(vit), next(git)
        if ALL_FAMILIES[fam][2]:
            g = max(gammas)
        plan.append(make_instance(fam, V, g, rngs[i]))
    return plan, rngs[-1]


def run_config(
    vocab_sizes: Sequence[int],
    gammas: Sequence[int],
    n_samples: int,
    rng: RNGLike,
    families: Sequence[str] | None,
    insts: Sequence[Instance],
) -> dict[str, Any]:
    """The report's config entries of every kit run: the grid, the samples, the seed, the instances."""
    return {
        "vocab_sizes": list(vocab_sizes),
        "gammas": list(gammas),
        "n_samples": n_samples,
        "rng": rng if np.isscalar(rng) else str(rng),
        "families": list(FAMILIES) if families is None else list(families),
        "n_instances": len(insts),
        "instances": [i.name for i in insts],
    }


def fold(
    subject: object,
    names: Sequence[str],
    found: dict[str, list[Finding]],
    a_i: float,
    M: int,
    alpha: float,
    lossy: Any,
    config: dict[str, Any],
) -> Report:
    """The run's :class:`Report` on ``subject``: each check of ``names`` folded over its findings
    (:func:`~spectheory.testing.report.summarise`); a rule declared ``lossy`` has its law checks
    declared, not failed (:func:`~spectheory.testing._verdicts.declare_lossy`)."""
    checks = [summarise(name, CHECKS[name][0], CHECKS[name][1], found[name], a_i, M, alpha) for name in names]
    if lossy:
        checks = declare_lossy(checks, found)
    return Report(_name(subject), checks, config, M, alpha)


def hostile_instances(
    hostile: Any, vocab_sizes: Sequence[int], gammas: Sequence[int], base: np.random.SeedSequence
) -> list[Any]:
    """The instances a run adds for ``hostile`` (:func:`hostile_families`): one per family and
    vocabulary size, from a stream of their own, so the run's other instances and their seeds
    stay as they are without them."""
    fams = hostile_families(hostile)
    if not fams:
        return []
    own = np.random.SeedSequence(base.entropy, spawn_key=(*base.spawn_key, 0x4057))
    return _plan(vocab_sizes, gammas, fams, own)[0]


def hostile_verdicts(checks: Sequence[Any], insts: Sequence[Any]) -> list[dict[str, Any]]:
    """Per hostile instance: its family, what it requires, whether the sampler met it, the checks it broke.

    ``checks``: the run's :class:`~spectheory.testing.report.CheckResult` list; ``insts``: its instances.
    The first broken instance also carries ``example``, the first failing finding's reproducing call.
    """
    out: list[dict[str, Any]] = []
    for inst in insts:
        if inst.family not in HOSTILE_SET:
            continue
        bad = [
            (c.name, f)
            for c in checks
            for f in c.findings
            if not f.passed and f.instance.split(" pos ")[0] == inst.name
        ]
        row = {
            "instance": inst.name,
            "family": inst.family,
            "requires": ALL_FAMILIES[inst.family][1],
            "passed": not bad,
            "failed": list(dict.fromkeys(name for name, _ in bad)),
        }
        if bad and not any("example" in r for r in out):
            row["example"] = f"{bad[0][0]}: {bad[0][1].summary}\n{bad[0][1].example}"
        out.append(row)
    return out
