"""`precision="auto"` and `jit_compile="auto"` pinned per platform (mocked devices and CPU
flags: the answers for machines this one is not)."""
import pytest

from mlbench.models import precision


@pytest.fixture
def platform(monkeypatch):
    def set_platform(kind, flags=(), capabilities=()):
        monkeypatch.setattr(precision, "accelerator_kind", lambda: kind)
        monkeypatch.setattr(precision, "cpu_flags", lambda: frozenset(flags))
        monkeypatch.setattr(precision, "_gpu_compute_capabilities", lambda: list(capabilities))
    return set_platform


@pytest.mark.parametrize("kind,flags,capabilities,expected", [
    ("cpu", ("avx512f", "amx_bf16", "amx_tile"), (), "mixed_bfloat16"),  # Xeon with AMX
    ("cpu", ("avx512f", "avx512_bf16"), (), "mixed_bfloat16"),  # EPYC Zen 4
    ("cpu", ("avx2", "fma"), (), "float32"),  # neither: bf16 would be emulated
    ("gpu", (), ((7, 0),), "mixed_float16"),  # V100: no bf16 tensor cores
    ("gpu", (), ((8, 0), (9, 0)), "mixed_bfloat16"),  # A100 + H100
    ("gpu", (), ((8, 0), (7, 5)), "mixed_float16"),  # mixed box: the weakest decides
    ("tpu", (), (), "mixed_bfloat16"),
])
def test_auto_precision(platform, kind, flags, capabilities, expected):
    platform(kind, flags, capabilities)
    assert precision.resolve_precision("auto") == expected


@pytest.mark.parametrize("kind,expected", [("cpu", False), ("gpu", True), ("tpu", True)])
def test_auto_jit_compile(platform, kind, expected):
    platform(kind)
    assert precision.resolve_jit_compile("auto") is expected


def test_explicit_choices_win_and_bad_ones_are_named(platform):
    platform("gpu", capabilities=((9, 0),))
    assert precision.resolve_precision("float32") == "float32"
    assert precision.resolve_jit_compile(False) is False
    with pytest.raises(ValueError, match=r"`precision` \('fp16'\)"):
        precision.resolve_precision("fp16")
