"""Test-wide settings.

pytest runs with ``-n 2`` (two worker processes on a 2-core machine), so each worker keeps
BLAS single-threaded: oversubscribed BLAS threads make the exact recursions 20x slower.
"""

import os
import sys
from pathlib import Path

# tests/ mirrors the package (tests/verifiers/, tests/trees/, ...); the shared helpers live here
sys.path.insert(0, str(Path(__file__).resolve().parent))

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

# Hypothesis profiles: "default" for local runs, "ci" (CI=true) derandomized so a CI run is
# reproducible, "thorough" (HYPOTHESIS_PROFILE=thorough) for a long hunt. Tests that need fewer
# examples say so with their own @settings.
try:
    from hypothesis import HealthCheck, settings

    settings.register_profile("default", deadline=None)
    settings.register_profile(
        "ci", deadline=None, derandomize=True, print_blob=True, suppress_health_check=[HealthCheck.too_slow]
    )
    settings.register_profile("thorough", deadline=None, max_examples=1000)
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "default"))
except ImportError:  # pragma: no cover - hypothesis is a dev dependency
    pass
