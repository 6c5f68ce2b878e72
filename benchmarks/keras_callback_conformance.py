"""Keras' own callback tests as mlbench.fit's conformance suite.

Copies the installed keras wheel's `keras/src/callbacks/*_test.py` (the orbax and remote
monitor files left out: they need a checkpointing library and an HTTP server this suite
does not test) into a temporary folder, with a conftest that replaces `keras.Model.fit`
by `mlbench.fit` (the same arguments; mlbench runs everything on its own loop), runs them
with pytest and prints passed / failed per file, and the names of the failures.

    .venv/bin/python benchmarks/keras_callback_conformance.py
    .venv/bin/python benchmarks/keras_callback_conformance.py --keras_fit   # the baseline
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

import keras

LEFT_OUT = ("orbax_checkpoint_test.py", "remote_monitor_test.py")
CONFTEST = '''
import os
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import pytest
import keras


def pytest_configure(config):
    config.addinivalue_line("markers", "requires_trainable_backend: Keras' own marker")
    if os.environ.get("CONFORMANCE_KERAS_FIT") != "1":
        import mlbench

        def fit(self, *args, **kwargs):
            return mlbench.fit(self, *args, **kwargs)
        keras.Model.fit = fit
'''


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--keras_fit", action="store_true",
                        help="run the tests with Keras' own fit (the baseline: all pass)")
    parser.add_argument("--tracebacks", action="store_true",
                        help="print pytest's whole output (each failure's traceback)")
    parser.add_argument("--only", default="",
                        help="comma-separated test files to run (e.g. tensorboard_test.py); "
                             "default: all")
    args = parser.parse_args()
    source = os.path.join(os.path.dirname(keras.__file__), "src", "callbacks")
    folder = tempfile.mkdtemp(prefix="mlbench_keras_callbacks_")
    try:
        files = sorted(f for f in glob.glob(os.path.join(source, "*_test.py"))
                       if os.path.basename(f) not in LEFT_OUT and
                       (not args.only or os.path.basename(f) in args.only.split(",")))
        for path in files:
            shutil.copy(path, folder)
        with open(os.path.join(folder, "conftest.py"), "w") as f:
            f.write(CONFTEST)
        env = {**os.environ, "CONFORMANCE_KERAS_FIT": "1" if args.keras_fit else "0",
               "KERAS_BACKEND": "tensorflow", "CUDA_VISIBLE_DEVICES": ""}
        out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rA", "-p",
                              "no:cacheprovider", folder], cwd=folder, env=env,
                             capture_output=True, text=True)
        if args.tracebacks:
            print(out.stdout[-60000:])
        report(out.stdout, [os.path.basename(f) for f in files],
               "Keras' fit" if args.keras_fit else "mlbench.fit")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def report(output, names, through):
    """Prints passed / failed per test file from pytest's `-rA` summary lines."""
    outcomes = re.findall(r"^(PASSED|FAILED|ERROR) (\S+?)\.py::(\S+)", output, re.M)
    print(f"Keras {keras.__version__} callback tests through {through}\n")
    print("| file | passed | failed |\n|---|---:|---:|")
    total_pass = total = 0
    for name in names:
        mine = [(o, t) for o, f, t in outcomes if f.endswith(name[:-3])]
        passed = sum(o == "PASSED" for o, _ in mine)
        total_pass, total = total_pass + passed, total + len(mine)
        print(f"| {name} | {passed} | {len(mine) - passed} |")
    print(f"| **all** | **{total_pass}** | **{total - total_pass}** |\n")
    for outcome, file, test in outcomes:
        if outcome != "PASSED":
            print(f"{outcome} {os.path.basename(file)}.py::{test}")


if __name__ == "__main__":
    main()
