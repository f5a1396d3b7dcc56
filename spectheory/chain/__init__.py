"""The central object, :class:`DecodingChain` (two next-token kernels over a finite state space),
and its constructors: from matrices, random (Dirichlet), i.i.d., n-gram counts, prefix trees
(:mod:`.decoding_chain`, :mod:`.constructors`), exact-value views (:mod:`.views`), closed classes of the
state process, which every stationary law or long-run rate needs unique (:mod:`.classes`), stochastic
transitions (:mod:`.transitions`), the byte n-gram as a Markov chain, numpy only (:mod:`.ngram`), the
named example chains of the figures and tests (:mod:`.examples`), and chains with sparse (top-k or
mass-truncated) kernels for real vocabularies, with the certified bound of their truncation
(:mod:`.sparse_chain`, :mod:`.sparse_rows`, :mod:`.sparse_bound`)."""

from .classes import closed_classes, require_one_closed_class
from .constructors import ngram_counts
from .decoding_chain import DecodingChain
from .ngram import NGramChain, load_shipped_ngram
from .sparse_chain import SparseDecodingChain

__all__ = [
    "DecodingChain",
    "SparseDecodingChain",
    "ngram_counts",
    "NGramChain",
    "load_shipped_ngram",
    "closed_classes",
    "require_one_closed_class",
]
