"""Type aliases shared by the package's annotations (private: import them from here).

``RNGLike`` is what every ``rng`` argument accepts: a :class:`numpy.random.Generator` (used as
is), a :class:`numpy.random.SeedSequence` (a spawned, independent stream) or an ``int`` seed,
or ``None`` (fresh entropy), i.e. whatever :func:`numpy.random.default_rng` turns into a
generator. Arrays are annotated with
:data:`numpy.typing.ArrayLike` where anything array-like is converted (``np.asarray``) and
:data:`FloatArray` / :data:`IntArray` / :data:`BoolArray` where an ``ndarray`` is returned.

Examples
--------
>>> import numpy as np
>>> from spectheory._typing import RNGLike
>>> def draw(rng: RNGLike = None) -> float:
...     return float(np.random.default_rng(rng).random())
>>> draw(0) == draw(np.random.default_rng(0))
True
"""

from __future__ import annotations

from typing import Any, TypeAlias

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["RNGLike", "ArrayLike", "NDArray", "FloatArray", "IntArray", "BoolArray", "AnyArray"]

#: An ``rng`` argument: a generator, a seed sequence, an integer seed, or ``None`` for fresh entropy.
RNGLike: TypeAlias = np.random.Generator | np.random.SeedSequence | int | None
#: A float64 ``ndarray`` of any shape.
FloatArray: TypeAlias = NDArray[np.float64]
#: An integer ``ndarray`` of any shape (token ids, counts, states).
IntArray: TypeAlias = NDArray[np.int64]
#: A boolean ``ndarray`` of any shape (masks).
BoolArray: TypeAlias = NDArray[np.bool_]
#: An ``ndarray`` whose dtype depends on the input.
AnyArray: TypeAlias = NDArray[Any]
