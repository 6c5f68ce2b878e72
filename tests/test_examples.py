"""Every example under examples/ runs (tiny settings), as a notebook user would copy it."""
import os
import subprocess
import sys

import pytest

from conftest import REPO

EXAMPLES = sorted(f for f in os.listdir(os.path.join(REPO, "examples")) if f.endswith(".py"))


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_runs(name, tmp_path):
    env = {**os.environ, "MLBENCH_EXAMPLE_TINY": "1", "TF_CPP_MIN_LOG_LEVEL": "3"}
    out = subprocess.run([sys.executable, os.path.join(REPO, "examples", name)], cwd=tmp_path,
                         env=env, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip()
