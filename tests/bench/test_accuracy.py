"""MLPerf Inference's accuracy mode on LoadGen: the top-1 read back from LoadGen's own
accuracy log, held to the float32 model's on the same samples (MLPerf's 99 % rule)."""
import json
import os

import numpy as np
import pytest
import tensorflow as tf

import mlbench
from harness import mlbench_here
from mlbench.bench import accuracy, loadgen


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A simple CNN trained in float32 on the bundled digits (its eval set: 359 images)."""
    model_dir = str(tmp_path_factory.mktemp("digits") / "run")
    mlbench.train(model="simple_cnn", data="digits", train_steps=60, global_batch_size=32,
                  precision="float32", model_dir=model_dir, verbose=False)
    return model_dir


def test_float32_answers_equal_the_runs_own_evaluate_and_bf16_keeps_99_percent(run,
                                                                                tmp_path):
    evaluated = mlbench.evaluate(run, verbose=False).metrics["top1"]
    served = loadgen.model_forward(run, precision="float32")
    assert served.samples == "the run's eval set (359 samples)"
    inputs = served.make_samples(len(served.labels)).numpy()
    same = accuracy.run(served.forward, inputs, served.labels, served.forward, "Offline",
                        str(tmp_path / "f32"), served.policy)
    # LoadGen's log read back gives the run's own eval top-1, on every one of its samples
    assert same.samples == 359 and same.accuracy == pytest.approx(evaluated, abs=1e-12)
    assert same.reference == same.accuracy and same.passed
    bf16 = loadgen.model_forward(run, precision="mixed_bfloat16")
    assert bf16.policy == "mixed_bfloat16"
    half = accuracy.run(bf16.forward, inputs, bf16.labels, served.forward, "SingleStream",
                        str(tmp_path / "bf16"), bf16.policy, batch_size=8)
    assert half.reference == pytest.approx(evaluated, abs=1e-12)
    assert half.ratio >= accuracy.RULE and half.passed
    written = open(tmp_path / "bf16" / "accuracy.txt").read()
    assert f"total=359" in written and written.rstrip().endswith("PASS")


def test_an_accuracy_log_missing_a_sample_is_refused(run, tmp_path):
    served = loadgen.model_forward(run, precision="float32")
    inputs = served.make_samples(len(served.labels)).numpy()
    accuracy.run(served.forward, inputs, served.labels, served.forward, "Offline",
                 str(tmp_path), served.policy)
    log = tmp_path / accuracy.LOG
    entries = json.loads(log.read_text())
    assert len(entries) == 359
    log.write_text(json.dumps(entries[1:]))
    with pytest.raises(RuntimeError, match="answers 358 samples"):
        accuracy.read_predictions(str(log), 359)


def test_the_cli_judges_a_run_in_another_precision_and_exits_3_below_the_rule(run,
                                                                                tmp_path):
    done = mlbench_here("infer", run, "--accuracy", "--precision=mixed_bfloat16",
                        f"--loadgen_dir={tmp_path}")
    assert done.returncode == 0, done.stderr
    assert "Offline accuracy: top-1" in done.stdout and ": PASS" in done.stdout
    assert os.path.exists(tmp_path / "Offline_accuracy" / "accuracy.txt")
    # the judgement is live: a model whose answers are all class 0 fails it
    served = loadgen.model_forward(run, precision="float32")
    inputs = served.make_samples(len(served.labels)).numpy()
    zeros = accuracy.run(lambda x: tf.one_hot(tf.zeros(tf.shape(x)[0], tf.int32), 10),
                         inputs, served.labels, served.forward, "Offline",
                         str(tmp_path / "zeros"), "float32")
    assert zeros.accuracy == pytest.approx(np.mean(served.labels == 0))
    assert not zeros.passed
