"""Test-wide settings.

pytest runs with ``-n 2`` (two worker processes on a 2-core machine), so each worker keeps
BLAS single-threaded: oversubscribed BLAS threads make the exact recursions 20x slower.
"""
import os

try:
    from threadpoolctl import threadpool_limits
except ImportError:  # pragma: no cover - threadpoolctl is a dev dependency
    threadpool_limits = None

if threadpool_limits is not None and os.environ.get("SPECTHEORY_TEST_THREADS", "1") == "1":
    threadpool_limits(1)

try:
    import torch

    torch.set_num_threads(1)
except ImportError:  # torch is an optional extra
    pass
