"""A model_dir holds one run (`plan.same_run`, `plan.rundir`): a changed model or
configuration is refused naming each change, before anything is written; the budget
may change and is recorded; a malformed run.json is moved aside, a newer one refused."""
import hashlib
import json
import os

import numpy as np
import pytest
import tensorflow as tf

import mlbench
from harness import DIGITS, mlbench_here
from mlbench.plan import parts as parts_lib
from mlbench import plan as plan_lib
from mlbench.plan import rundir, same_run
from mlbench.plan.arguments import train_defaults


def run(model_dir, steps=10, **extra):
    return mlbench.train(**dict(DIGITS, train_steps=steps, model_dir=str(model_dir),
                                **{"checkpoint_every": 5, **extra}))


def files_of(folder):
    """{relative path: sha256} of every file under `folder`."""
    found = {}
    for root, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(root, name)
            with open(path, "rb") as f:
                found[os.path.relpath(path, folder)] = hashlib.sha256(f.read()).hexdigest()
    return found


@pytest.fixture(scope="module")
def used(tmp_path_factory):
    """A finished 10-step run's model_dir, and its files' hashes."""
    folder = tmp_path_factory.mktemp("same_run") / "run"
    run(folder)
    return folder, files_of(folder)


def test_another_model_is_refused_with_exit_2_and_the_model_dir_unchanged(used):
    folder, before = used
    out = mlbench_here("train", "--model=resnet_tiny", "--data=digits",
                       "--model_options=image_size=8", "--global_batch_size=32",
                       "--precision=float32", "--train_steps=20", f"--model_dir={folder}")
    assert out.returncode == 2, out.stderr
    assert "model 'simple_cnn' → 'resnet_tiny'" in out.stderr
    assert "init_checkpoint=" in out.stderr and "Nothing was written" in out.stderr
    assert files_of(folder) == before  # checkpoints, run.json, result.json byte for byte


@pytest.mark.parametrize("change,named", [
    (dict(global_batch_size=16), "global_batch_size 32 → 16"),
    (dict(learning_rate=0.5), "optimizer.learning_rate"),
    (dict(seed=3), "seed 0 → 3"),
    (dict(precision="mixed_bfloat16"), "precision 'float32' → 'mixed_bfloat16'")])
def test_another_batch_rate_seed_or_precision_is_refused_naming_old_and_new(used, change,
                                                                          named):
    folder, before = used
    with pytest.raises(same_run.RunChanged) as error:
        run(folder, 20, **change)
    assert named in str(error.value)
    if "learning_rate" in change:  # the old rate and the new one, both named
        assert "→ 0.5" in str(error.value)
    assert files_of(folder) == before


def test_fit_refuses_with_a_value_error_not_system_exit(tmp_path):
    import keras
    x = np.random.RandomState(0).rand(64, 4).astype("float32")
    y = (x.sum(axis=1) > 2).astype("int32")

    def model():
        m = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
        m.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(
            from_logits=True))
        return m
    mlbench.fit(model(), x, y, batch_size=16, verbose=0, model_dir=str(tmp_path / "r"))
    with pytest.raises(ValueError, match="global_batch_size 16 → 32"):
        mlbench.fit(model(), x, y, batch_size=32, epochs=2, verbose=0,
                    model_dir=str(tmp_path / "r"))


def test_a_longer_budget_resumes_at_the_last_step_and_records_the_budgets(tmp_path):
    run(tmp_path / "run", 10)
    longer = run(tmp_path / "run", 20, eval_every=10)  # a cadence may change too
    assert longer.resumed_from_step == 10 and longer.steps == 20
    assert longer.budgets == [10, 20]
    stored = json.loads((tmp_path / "run" / "result.json").read_text())
    assert stored["budgets"] == [10, 20] and stored["planned_steps"] == 20


def test_a_truncated_run_json_is_moved_aside_and_the_run_resumes(tmp_path, caplog):
    run(tmp_path / "run", 10)
    text = (tmp_path / "run" / "run.json").read_text()
    (tmp_path / "run" / "run.json").write_text(text[:len(text) // 2])
    with caplog.at_level("WARNING", logger="mlbench"):
        resumed = run(tmp_path / "run", 15)
    aside = [n for n in os.listdir(tmp_path / "run") if n.startswith("run.json.bad-")]
    assert len(aside) == 1 and (tmp_path / "run" / aside[0]).read_text() == text[:len(text)
                                                                               // 2]
    assert "is not a well-formed run record" in caplog.text and aside[0] in caplog.text
    assert resumed.resumed_from_step == 10 and resumed.steps == 15
    assert rundir.read(str(tmp_path / "run")).identity.global_batch_size == 32


def test_a_run_json_of_a_newer_mlbench_is_refused_by_name(tmp_path):
    run(tmp_path / "run", 5)
    path = tmp_path / "run" / "run.json"
    value = json.loads(path.read_text())
    path.write_text(json.dumps(dict(value, schema=rundir.SCHEMA + 1)))
    with pytest.raises(ValueError, match=r"written by a newer mlbench \(run.json schema 3"):
        run(tmp_path / "run", 10)
    with pytest.raises(ValueError, match="newer mlbench"):
        mlbench.load(str(tmp_path / "run"))


def test_init_checkpoint_into_a_new_model_dir_starts_at_step_0_with_its_weights(tmp_path):
    first = run(tmp_path / "run", 10)
    path = str(tmp_path / "run" / "checkpoints" / "ckpt-10")
    arguments = dict(DIGITS, train_steps=5, model_dir=str(tmp_path / "tuned"),
                     init_checkpoint=path)
    built = parts_lib.build(plan_lib.resolve(plan_lib.train_arguments(arguments,
                                                                      train_defaults())))
    assert built.resumed_from is None and int(built.optimizer.iterations.numpy()) == 0
    for mine, theirs in zip(built.model.variables, first.model.variables):
        np.testing.assert_array_equal(mine.numpy(), theirs.numpy())
    tuned = mlbench.train(**arguments)
    assert tuned.resumed_from_step is None and tuned.steps == 5


def test_changes_name_each_key_of_a_mapping_and_skip_unnamed_values():
    old = same_run.RunIdentity("simple_cnn", {"image_size": 8}, 10, None, {}, 32, 1,
                               "float32", {"name": "sgd", "learning_rate": 0.1}, None, None,
                               0.0, "OneDeviceStrategy", 1, 0)
    new = same_run.RunIdentity("simple_cnn", {"image_size": 16}, 10, "digits", {}, 32, 1,
                               "float32", {"name": "sgd", "learning_rate": 0.2}, None, None,
                               0.0, "OneDeviceStrategy", 1, 0)
    assert same_run.changes(old, new) == [("model_options.image_size", 8, 16),
                                          ("optimizer.learning_rate", 0.1, 0.2)]
    assert same_run.changes(old, old) == []
