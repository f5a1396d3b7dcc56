"""Verification rules, one module per family.

- :mod:`.rejection`   general rejection-based verifiers and optimality (Yin et al. 2024, Thms 1-2)
- :mod:`.batch`       batch speculative decoding with M draft sequences (Yin et al. 2024)
- :mod:`.multidraft`  k candidates at one position: recursive rejection, K-SEQ, optimal transport
- :mod:`.block`       block verification (Sun et al.)
- :mod:`.biased`      biased (lossy) acceptance and the rejection/quality Pareto front
"""
