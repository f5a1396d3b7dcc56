"""benchmarks/decoder_profile.py times the decoder's pieces by patching them in the modules that
call them; a piece that moves (the path round moved to ``path_step``) must move its patch too,
else the benchmark fails at once (as the quick main job did) or, worse, times nothing. Each timed
part must see time in a short decode."""

import importlib.util
import pathlib

import pytest

torch = pytest.importorskip("torch")

from _torch_models import gpt  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _profile_module():
    spec = importlib.util.spec_from_file_location(
        "decoder_profile", ROOT / "benchmarks" / "decoder_profile.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_timed_part_sees_time():
    prof = _profile_module()
    target, draft = gpt(0, n_layer=2), gpt(1)
    prompts = torch.randint(0, 256, (1, 8), generator=torch.Generator().manual_seed(0))
    total, seconds = prof.profile_once(target, draft, prompts, 12, 3, seed=0)
    assert total > 0
    for part in ("laws", "draft draws", "rule", "commit", "uniforms", "target forwards", "draft forwards"):
        assert seconds[part] > 0, part
    # the parts are disjoint pieces of the call's wall time
    assert sum(v for k, v in seconds.items() if k != "rest") <= total * 1.000001
