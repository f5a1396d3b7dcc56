"""The library imports without torch (it is the optional `decoder` extra)."""

import subprocess
import sys

BLOCK_TORCH = (
    "import sys\n"
    "class _NoTorch:\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    "        if name == 'torch' or name.startswith('torch.'):\n"
    "            raise ImportError('torch blocked for this test')\n"
    "sys.meta_path.insert(0, _NoTorch())\n"
)


def test_library_imports_and_works_without_torch():
    code = BLOCK_TORCH + (
        "import numpy as np\n"
        "import spectheory as st, spectheory.verifiers, spectheory.testing, spectheory.app.cli, spectheory.decoder\n"
        "chain = st.DecodingChain.random(4, rng=0)\n"
        "assert st.simulate(chain, 8, 2, 100, rng=0).target_calls.shape == (100,)\n"
        "try:\n"
        "    spectheory.decoder.load_model\n"
        "except ImportError:\n"
        "    pass\n"
        "else:\n"
        "    raise AssertionError('the decoder should need torch')\n"
        "assert 'torch' not in sys.modules\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
