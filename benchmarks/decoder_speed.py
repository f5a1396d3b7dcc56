"""Benchmark: the real decoder's measured walltime speedup as a ratio to the prediction.

Prints, per draft model and gamma = 1..8 (CPU, batch 1), measured speedup over plain
autoregressive decoding divided by Leviathan's walltime_speedup(alpha, gamma, c) with the
measured cost ratio c and acceptance alpha (should be >= 0.8), and where the time goes.
Same measurement as simulations/decoder_speed.py; writes results/decoder_speed_benchmark.json.

Usage: python benchmarks/decoder_speed.py [--quick] [--out DIR]
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "simulations"))
from decoder_speed import parser, run  # noqa: E402

if __name__ == "__main__":
    run(parser(__doc__).parse_args(), name="decoder_speed_benchmark")
