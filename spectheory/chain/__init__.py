"""The central object, :class:`DecodingChain` (two next-token kernels over a finite state space),
and its constructors: from matrices, random (Dirichlet), i.i.d., n-gram counts, prefix trees
(:mod:`.core`), and the named example chains of the figures and tests (:mod:`.examples`)."""
from .core import DecodingChain, ngram_counts

__all__ = ["DecodingChain", "ngram_counts"]
