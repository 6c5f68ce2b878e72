"""The outer loop: resume equivalence, stop at target, checkpoints and summaries on disk."""
import os

import numpy as np

import mlbench

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
    assert resumed.history[0]["step"] == 7  # it continued, it did not restart
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
                           target={"top1": 1.01}, **DIGITS)
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
    assert warmed.compile_s > 0


def test_eval_offset_places_evals():
    result = mlbench.train(train_epochs=5, eval_every_epochs=2, eval_offset_epochs=1,
                           **{**DIGITS, "global_batch_size": 719})
    evals = [h["step"] for h in result.history if "metrics" in h]
    assert evals == [2, 6, 10]  # 2 steps per epoch: offset 1 epoch, then every 2
