"""The loop's cadence with a fake step that takes microseconds: where blocks end, when
evals and checkpoints happen, when a target stops the run (no model, no TensorFlow step)."""
import pytest
import tensorflow as tf

from mlbench.training.cadence import Cadence
from mlbench.training.callbacks import Callback
from mlbench.training.loop import DivergenceError, Loop, LoopConfig, outputs_for
from mlbench.training.step import StepOutcome


class FakeStep:
    """What the Loop reads of a TrainStep: `run`, `global_step`, `global_batch_size`,
    `mode`, `evaluate`, `state_variables`, `train_metrics` (none here), `workers` (one
    process). Its loss is 1 / (1 + step); its 'top1' eval is step / 100."""

    mode = "train"
    train_metrics = False
    global_batch_size = 8
    workers = 1

    def __init__(self, nan_at=None):
        self.counter = tf.Variable(0, dtype=tf.int64)
        self.weight = tf.Variable(1.0)
        self.nan_at = nan_at

    @property
    def global_step(self):
        return int(self.counter.numpy())

    def run(self, inputs, num_steps):
        self.counter.assign_add(num_steps)
        loss = 1.0 / (1 + self.global_step)
        if self.nan_at is not None and self.global_step >= self.nan_at:
            loss = float("nan")
        return StepOutcome(loss, 0, 0.1, None)

    def evaluate(self, dataset):
        return {"top1": self.global_step / 100}

    def state_variables(self):
        return [self.counter, self.weight]


class Recorder(Callback):
    def __init__(self):
        self.blocks, self.evals = [], []

    def on_block_start(self, step, num_steps):
        self.blocks.append((step, num_steps))

    def on_eval_stop(self, step, metrics):
        self.evals.append(step)


def run(config, step=None, checkpoint=None, model_dir=None):
    step, recorder = step or FakeStep(), Recorder()
    outcome = Loop(config, step, None, lambda: None, outputs_for(model_dir, checkpoint),
                   recorder).run()
    return outcome, recorder


def test_blocks_end_at_evals_loop_boundaries_and_the_end():
    """Without warm-up the first block is one step (it carries the trace); then blocks end
    at whichever comes first: steps_per_loop, the next eval, the end."""
    outcome, seen = run(LoopConfig(Cadence(10, steps_per_loop=3, eval_every=4), log=None))
    assert seen.blocks == [(0, 1), (1, 3), (4, 3), (7, 1), (8, 2)]
    assert seen.evals == [4, 8, 10]  # every 4 steps, and at the end
    assert outcome.steps == 10 and [h["step"] for h in outcome.history] == [1, 4, 7, 8, 10]


def test_eval_offset_shifts_the_evals():
    _, seen = run(LoopConfig(Cadence(12, steps_per_loop=100, eval_every=5, eval_offset=2),
                             log=None))
    assert seen.evals == [2, 7, 12]
    assert seen.blocks == [(0, 1), (1, 1), (2, 5), (7, 5)]


def test_a_target_stops_the_run_at_the_first_eval_meeting_it():
    outcome, seen = run(LoopConfig(Cadence(100, steps_per_loop=10, eval_every=10,
                                           target={"top1": 0.3}), log=None))
    assert seen.evals == [10, 20, 30] and outcome.steps == 30
    assert outcome.reached_target and outcome.final_metrics == {"top1": 0.3}


def test_checkpoints_follow_checkpoint_every_and_the_end(tmp_path):
    step = FakeStep()
    checkpoint = tf.train.Checkpoint(counter=step.counter, weight=step.weight)
    run(LoopConfig(Cadence(7, steps_per_loop=100, checkpoint_every=3), log=None), step,
        checkpoint, model_dir=str(tmp_path))
    saved = tf.train.get_checkpoint_state(str(tmp_path / "checkpoints"))
    names = [p.rsplit("/", 1)[1] for p in saved.all_model_checkpoint_paths]
    assert names == ["ckpt-3", "ckpt-6", "ckpt-7"]  # every 3 steps, and the end


def test_a_non_finite_loss_stops_the_run_at_that_block():
    with pytest.raises(DivergenceError) as caught:
        run(LoopConfig(Cadence(20, steps_per_loop=5), log=None), FakeStep(nan_at=6))
    assert caught.value.step == 6  # blocks 0-1, 1-6: the second one's loss was NaN


def test_the_cadence_answers_the_loops_questions():
    """The plan's Cadence itself: next stop, eval and checkpoint steps (no loop at all)."""
    cadence = Cadence(100, steps_per_loop=30, eval_every=25, eval_offset=10, checkpoint_every=40)
    assert [cadence.eval_due(s) for s in (5, 10, 35, 36)] == [False, True, True, False]
    assert cadence.next_eval(0) == 10 and cadence.next_eval(35) == 60
    assert cadence.next_boundary(0, evaluates=True) == 10
    assert cadence.next_boundary(0, evaluates=False) == 30  # no eval set: loops and saves
    assert cadence.next_boundary(35, evaluates=False) == 40  # the checkpoint at 40
    assert [cadence.checkpoint_due(s) for s in (40, 50, 100)] == [True, False, True]
    assert Cadence(7, eval_every=3).checkpoint_due(6)  # no checkpoint_every: at evals
