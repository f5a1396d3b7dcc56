"""Predicted vs measured throughput on CUDA up to batch 4096 (issue 21, item 3, GPU part).

The run of benchmarks/cost_validation.py (fit the cost model first, then predict, then measure,
in one process) on a CUDA device with batch sizes 1, 4, 16, 64, 256, 1024 and 4096. Without CUDA
the full run refuses (exit status 2, nothing written), so a CPU machine can never write a
results/cost_validation_gpu.json that looks like a GPU measurement; ``--quick`` without CUDA is
the smoke run of ``spectheory reproduce --quick`` (CPU, batches 1 and 4, marked quick and cpu in
the file). The file records the device, the date and the command line
(spectheory.app.decoder_scripts.write_result).

Usage: python benchmarks/cost_validation_gpu.py [--quick] [--out DIR] [--device cuda] [--repeats R]
       [--batches 1,64,4096]
Full run on one H200: a few minutes.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import torch

_spec = importlib.util.spec_from_file_location(
    "cost_validation", Path(__file__).with_name("cost_validation.py")
)
cost_validation = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cost_validation)

GPU_BATCHES = [1, 4, 16, 64, 256, 1024, 4096]


def main(argv=None):
    ap = cost_validation.parser(__doc__)
    ap.set_defaults(device="cuda" if torch.cuda.is_available() else None, repeats=3)
    args = ap.parse_args(argv)
    if args.quick and args.device is None:  # the CPU smoke run of reproduce --quick
        args.device = "cpu"
        args.batches = args.batches or [1, 4]
    elif args.device is None or not str(args.device).startswith("cuda") or not torch.cuda.is_available():
        sys.stderr.write(
            f"cost_validation_gpu: needs a CUDA device (got --device {args.device}, "
            f"torch.cuda.is_available() = {torch.cuda.is_available()}); nothing written. "
            "On CPU run benchmarks/cost_validation.py\n"
        )
        return 2
    if args.batches is None:
        args.batches = [1, 256] if args.quick else GPU_BATCHES
    if args.device == "cpu":
        torch.set_num_threads(args.threads)
    cost_validation.run(args, name="cost_validation_gpu")
    return 0


if __name__ == "__main__":
    sys.exit(main())
