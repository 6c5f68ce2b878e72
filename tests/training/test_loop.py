"""The outer loop: resume equivalence, stop at target, checkpoints and summaries on disk."""
import os

import numpy as np
import pytest
import tensorflow as tf

import mlbench
from mlbench.training.loop import DivergenceError

DIGITS = dict(model="simple_cnn", data="digits", global_batch_size=32, precision="float32",
              learning_rate=0.05, model_options={"image_size": 8}, verbose=False)


def weights(result):
    return [v.numpy() for v in result.model.variables]


def test_resume_equals_straight_run(tmp_path):
    straight = mlbench.train(train_steps=12, steps_per_loop=4, model_dir=str(tmp_path / "a"),
                             **DIGITS)
    mlbench.train(train_steps=6, steps_per_loop=4, model_dir=str(tmp_path / "b"), **DIGITS)
    resumed = mlbench.train(train_steps=12, steps_per_loop=4, model_dir=str(tmp_path / "b"),
                            **DIGITS)
    assert resumed.steps == straight.steps == 12
    # it continued (its history appended to the stored one), it did not restart
    assert [h["step"] for h in resumed.history][:4] == [1, 5, 6, 7]
    for a, b in zip(weights(straight), weights(resumed)):  # includes BN moving statistics
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert os.path.exists(tmp_path / "b" / "checkpoints" / "checkpoint")
    assert any(f.startswith("events") for f in os.listdir(tmp_path / "b" / "train"))


def test_stops_at_first_eval_meeting_target():
    result = mlbench.train(train_steps=400, eval_every=5, steps_per_loop=5,
                           target={"top1": 0.6}, **DIGITS)
    evals = [h for h in result.history if "metrics" in h]
    assert result.reached_target
    assert evals[-1]["metrics"]["top1"] >= 0.6
    assert all(e["metrics"]["top1"] < 0.6 for e in evals[:-1])
    assert result.steps == evals[-1]["step"] < 400
    assert evals[-1]["wall_time_s"] <= result.time_to_quality_s <= result.run_seconds


def test_unreached_target_is_reported():
    result = mlbench.train(train_steps=4, eval_every=2, steps_per_loop=2,
                           target={"top1": 1.0}, **DIGITS)
    assert not result.reached_target and result.time_to_quality_s is None
    assert result.steps == 4


def test_warmup_leaves_the_run_unchanged():
    """Warm-up compiles on zeros before run start and restores every variable (slots too)."""
    plain = mlbench.train(train_steps=6, steps_per_loop=3, optimizer_options={"momentum": 0.9},
                          **DIGITS)
    warmed = mlbench.train(train_steps=6, steps_per_loop=3, optimizer_options={"momentum": 0.9},
                           warmup=True, **DIGITS)
    for a, b in zip(weights(plain), weights(warmed)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert warmed.history[0]["step"] == 3  # no separate 1-step compile block after warm-up


def test_eval_offset_places_evals():
    result = mlbench.train(train_epochs=5, eval_every_epochs=2, eval_offset_epochs=1,
                           **{**DIGITS, "global_batch_size": 719})
    evals = [h["step"] for h in result.history if "metrics" in h]
    assert evals == [2, 6, 10]  # 2 steps per epoch: offset 1 epoch, then every 2


def test_resume_is_said_and_is_never_a_time_to_quality(tmp_path, capsys):
    run_dir = str(tmp_path / "run")
    first = mlbench.train(train_steps=6, steps_per_loop=3, model_dir=run_dir, **DIGITS)
    assert first.resumed_from_step is None
    resumed = mlbench.train(train_steps=12, eval_every=3, steps_per_loop=3,
                            target={"top1": 0.0}, model_dir=run_dir,
                            **{**DIGITS, "verbose": True})
    out = capsys.readouterr().out
    assert f"resumed from step 6 ({os.path.join(run_dir, 'checkpoints', 'ckpt-6')})" in out
    assert resumed.resumed_from_step == 6 and resumed.reached_target
    assert resumed.time_to_quality_s is None
    assert "resumed from step 6" in resumed.time_to_quality_note


def test_resume_false_refuses_a_model_dir_with_checkpoints(tmp_path):
    mlbench.train(train_steps=2, model_dir=str(tmp_path / "run"), **DIGITS)
    with pytest.raises(ValueError, match=r"holds checkpoints .*ckpt-2.* `resume` is False"):
        mlbench.train(train_steps=4, model_dir=str(tmp_path / "run"), resume=False, **DIGITS)


def checkpoint_values(path):
    reader = tf.train.load_checkpoint(path)
    return [reader.get_tensor(name) for name, dtype in
            reader.get_variable_to_dtype_map().items() if dtype.is_floating]


@pytest.mark.parametrize("learning_rate,needle", [
    (1e30, "nan"),                       # the loss itself becomes NaN
    (1e6, "with non-finite weights"),    # the loss is still finite, the weights are not
])
def test_divergence_stops_the_run_and_keeps_only_finite_checkpoints(tmp_path, learning_rate,
                                                                    needle):
    run_dir = tmp_path / "run"
    with pytest.raises(DivergenceError, match="not finite") as err:
        mlbench.train(train_steps=200, steps_per_loop=2, checkpoint_every=1,
                      model_dir=str(run_dir), **{**DIGITS, "learning_rate": learning_rate})
    assert needle in str(err.value.loss)
    assert err.value.step < 200  # it stopped, it did not train to the end
    latest = tf.train.latest_checkpoint(str(run_dir / "checkpoints"))
    assert int(latest.rsplit("-", 1)[1]) < err.value.step  # the last good one stays
    assert all(np.isfinite(v).all() for v in checkpoint_values(latest))


def test_progress_bar_in_terminals_lines_elsewhere(capsys):
    from mlbench.training.progress import Progress
    lines = Progress(total_steps=10, global_batch_size=32, bar=False)
    lines.step(5, 0.5, 0.1, 320.0)
    lines.write("eval at step 5: top1 0.5")
    out = capsys.readouterr().out.splitlines()
    assert out == ["step 5/10  loss 0.5000  lr 0.1  examples/sec 320.0  ETA 0s",
                   "eval at step 5: top1 0.5"]
    bar = Progress(total_steps=10, global_batch_size=32, bar=True)
    bar.step(5, 0.5, 0.1, 320.0)
    assert bar.bar.n == 5 and bar.bar.total == 10
    bar.close()


def test_verbose_false_prints_nothing(capsys, vectors, monkeypatch):
    from conftest import host_op_model
    host_op_model(monkeypatch)  # an XLA refusal: its message stays quiet too
    mlbench.train(model="host_mlp", data=vectors, global_batch_size=32, train_steps=3,
                  jit_compile=True, eval_every=1, steps_per_loop=1, verbose=False)
    captured = capsys.readouterr()
    assert captured.out == "" and "XLA" not in captured.err
