"""After the run: load, evaluate and export a model_dir in a fresh process, keep-best
checkpoints, a sidecar evaluator beside a training process."""
import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

import mlbench
from mlbench.training import checkpoints
from conftest import REPO, digit_arrays, own_cnn
from harness import mlbench_process, mlbench_started

ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": REPO}
(X, Y), (XE, YE) = digit_arrays()

FRESH = '''
import json, sys
import numpy as np
import mlbench
out = {}
for name, model_dir in json.loads(sys.argv[1]).items():
    result = mlbench.load(model_dir)
    np.savez(model_dir + "/loaded.npz", *[np.array(v) for v in result.model.weights])
    out[name] = {"metrics": mlbench.evaluate(model_dir, verbose=False).metrics,
                 "restored_from": result.restored_from, "steps": result.steps}
print(json.dumps(out))
'''


MY_MODELS = '''
import keras
import tf_keras


def small_cnn():
    inputs = tf_keras.Input((8, 8, 1))
    x = tf_keras.layers.Flatten()(tf_keras.layers.Conv2D(8, 3, activation="relu")(inputs))
    return tf_keras.Model(inputs, tf_keras.layers.Dense(10)(x))


def keras3_cnn():
    return keras.Sequential([keras.Input((8, 8, 1)), keras.layers.Conv2D(8, 3, activation="relu"),
                             keras.layers.Flatten(), keras.layers.Dense(10)])
'''


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A zoo model and two own models (tf_keras and Keras 3, import paths
    `my_models:small_cnn` and `my_models:keras3_cnn`), trained in this process; the
    tf_keras one keeps its best checkpoint by the *largest* eval loss, which is not the
    last eval's."""
    root = tmp_path_factory.mktemp("runs")
    (root / "my_models.py").write_text(MY_MODELS)
    sys.path.insert(0, str(root))
    ENV["PYTHONPATH"] += os.pathsep + str(root)
    import my_models
    zoo = mlbench.train(model="simple_cnn", data="digits", global_batch_size=32, train_steps=12,
                        eval_every=6, learning_rate=0.05, model_options={"image_size": 8},
                        verbose=False, model_dir=str(root / "zoo"))
    own = mlbench.train(model=my_models.small_cnn, data="digits", global_batch_size=32,
                        train_steps=20, eval_every=5, learning_rate=0.05, keep_best={"eval_loss": "max"},
                        verbose=False, model_dir=str(root / "own"))
    keras3 = mlbench.train(model=my_models.keras3_cnn, data="digits", global_batch_size=32,
                           train_steps=10, eval_every=5, optimizer="adam", learning_rate=0.01,
                           verbose=False, model_dir=str(root / "keras3"))
    return {"zoo": zoo, "own": own, "keras3": keras3}


def test_a_fresh_process_loads_the_weights_and_evaluates_as_the_run(runs):
    dirs = {name: result.model_dir for name, result in runs.items()}
    done = subprocess.run([sys.executable, "-c", FRESH, json.dumps(dirs)], env=ENV,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    fresh = json.loads(done.stdout.strip().splitlines()[-1])
    for name, result in runs.items():
        loaded = np.load(os.path.join(result.model_dir, "loaded.npz"))
        weights = [np.array(v) for v in result.model.weights]
        assert len(loaded.files) == len(weights)
        for i, w in enumerate(weights):
            np.testing.assert_array_equal(loaded[f"arr_{i}"], w)
        assert fresh[name]["metrics"] == result.final_metrics  # exact: same data, same maths
        assert fresh[name]["steps"] == result.steps
        step = result.steps
        saved = json.loads(open(os.path.join(result.model_dir, "evaluations",
                                             f"{step}.json")).read())
        assert saved["metrics"] == result.final_metrics and saved["step"] == step


def test_keep_best_keeps_the_best_evals_checkpoint_and_load_restores_it(runs):
    own = runs["own"]
    evals = [(h["step"], h["metrics"]["eval_loss"]) for h in own.history if "metrics" in h]
    best_step, best_value = max(evals, key=lambda e: e[1])
    assert best_step != evals[-1][0]  # the constructed case: the last eval is not the best
    assert checkpoints.best_checkpoint(own.model_dir).endswith(f"ckpt-{best_step}")
    kept = json.loads(open(os.path.join(own.model_dir, "checkpoints", "best",
                                        "best.json")).read())
    assert (kept["step"], kept["value"]) == (best_step, best_value)
    best = mlbench.evaluate(own.model_dir, checkpoint="best", verbose=False)
    assert best.step == best_step and best.metrics["eval_loss"] == best_value
    assert mlbench.load(own.model_dir, checkpoint="best").restored_from.endswith(
        f"ckpt-{best_step}")


def test_export_from_the_command_line_serves_the_runs_outputs(runs, tmp_path):
    zoo = runs["zoo"]
    export_dir = tmp_path / "served"
    done = mlbench_process("export", f"--model_dir={zoo.model_dir}",
                           f"--export_dir={export_dir}", timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    served = tf.saved_model.load(str(export_dir)).signatures["serving_default"]
    images = tf.constant(XE[:8], tf.float32)
    outputs = list(served(images).values())[0]
    expected = tf.cast(zoo.model(images, training=False), tf.float32)
    # exact in float32; under mixed_bfloat16 ("auto" on a CPU with bf16 units) the served
    # graph and the eager call may round differently: within 3 bf16 steps of the largest
    tolerance = 1e-6 if zoo.ran["precision"] == "float32" else \
        3 * 2.0 ** -8 * float(tf.reduce_max(tf.abs(expected)))
    assert float(tf.reduce_max(tf.abs(outputs - expected))) <= tolerance


def test_a_run_that_cannot_be_rebuilt_or_a_missing_run_is_refused_with_advice(tmp_path):
    mlbench.train(model=lambda: own_cnn(), data="digits", global_batch_size=32, train_steps=2,
                  verbose=False, model_dir=str(tmp_path / "lambda"))
    with pytest.raises(ValueError, match="cannot be rebuilt from its record.*give `model=`"):
        mlbench.load(str(tmp_path / "lambda"))
    assert mlbench.load(str(tmp_path / "lambda"), model=own_cnn).steps == 2
    with pytest.raises(ValueError, match="kept no best checkpoint; train it with keep_best"):
        mlbench.load(str(tmp_path / "lambda"), checkpoint="best", model=own_cnn)
    with pytest.raises(ValueError, match="holds no mlbench run"):
        mlbench.evaluate(str(tmp_path / "nothing"))
    (X2, Y2) = (X[:64], Y[:64])
    mlbench.train(model=own_cnn, data=(X2, Y2), global_batch_size=32, train_steps=1,
                  verbose=False, model_dir=str(tmp_path / "arrays"))
    with pytest.raises(ValueError, match=r"\['data'\].*give `data=`"):
        mlbench.evaluate(str(tmp_path / "arrays"))
    mine = mlbench.evaluate(str(tmp_path / "arrays"), data=(XE, YE), verbose=False)
    assert set(mine.metrics) == {"accuracy", "eval_loss"}


def test_the_sidecar_evaluates_each_checkpoint_once_and_stops_when_the_run_ends(tmp_path):
    model_dir = str(tmp_path / "run")
    watcher = mlbench_started("evaluate", f"--model_dir={model_dir}", "--watch",
                              "--timeout=500")
    time.sleep(1)  # the watcher waits for the run to start
    trainer = mlbench_process("train", "--model=simple_cnn", "--data=digits",
                              "--global_batch_size=32", "--train_steps=15",
                              "--checkpoint_every=5", "--model_options=image_size=8",
                              "--noverbose", f"--model_dir={model_dir}", timeout=600)
    assert trainer.returncode == 0, trainer.stderr[-3000:]
    out, err = watcher.communicate(timeout=500)
    assert watcher.returncode == 0, err[-3000:]
    steps = [int(line.split()[2]) for line in out.splitlines() if line.startswith("evaluated")]
    assert steps == [5, 10, 15]  # each checkpoint once, in order; then it stopped by itself
    assert sorted(os.listdir(os.path.join(model_dir, "evaluations"))) == \
        ["10.json", "15.json", "5.json"]
    final = json.loads(open(os.path.join(model_dir, "result.json")).read())["final_metrics"]
    last = json.loads(open(os.path.join(model_dir, "evaluations", "15.json")).read())
    assert last["metrics"] == final
    assert os.listdir(os.path.join(model_dir, "validation_sidecar"))
