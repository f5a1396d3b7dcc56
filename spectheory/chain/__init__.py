"""The central object, :class:`DecodingChain` (two next-token kernels over a finite state space),
and its constructors: from matrices, random (Dirichlet), i.i.d., n-gram counts, prefix trees
(:mod:`.core`, :mod:`.constructors`), exact-value views (:mod:`.views`), stochastic
transitions (:mod:`.transitions`), the byte n-gram as a Markov chain, numpy only (:mod:`.ngram`), and the
named example chains of the figures and tests (:mod:`.examples`)."""

from .constructors import ngram_counts
from .core import DecodingChain
from .ngram import NGramChain, load_shipped_ngram

__all__ = ["DecodingChain", "ngram_counts", "NGramChain", "load_shipped_ngram"]
