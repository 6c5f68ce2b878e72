"""The warm-up: compiled on zeros before the run clock, then every variable put back —
including variables a model creates on its first call (Model Garden's BERT head)."""
import numpy as np
import pytest
import tf_keras as keras

import mlbench
from mlbench.plan import parts as parts_lib
from mlbench import plan as plan_lib
from mlbench.plan.arguments import train_defaults
from mlbench.training.warmup import make_warmup
from conftest import vector_source


class LazyHeadModel(keras.Model):
    """Built except its head, which it makes on its first call, as Model Garden's BERT
    pretrainer makes its masked-LM head. With `train_only_weight`, a training call also
    makes a weight that an inference call never does."""

    def __init__(self, num_classes, train_only_weight=False):
        super().__init__()
        self.hidden = keras.layers.Dense(8, activation="relu")
        self.hidden.build((None, 16))
        self.head = keras.layers.Dense(num_classes)
        self.train_only_weight = train_only_weight
        self.extra = None

    def call(self, x, training=False):
        out = self.head(self.hidden(x))
        if training and self.train_only_weight:
            if self.extra is None:
                self.extra = self.add_weight("extra", (), initializer="ones")
            out = out * self.extra
        return out


RUN = dict(data=vector_source(), global_batch_size=32, train_steps=4, steps_per_loop=2,
           precision="float32", eval_every=2, optimizer_options={"momentum": 0.9}, seed=3,
           verbose=False)


def test_a_model_that_builds_its_head_on_first_call_trains_the_same_warmed_up():
    """The warm-up used to zero such a head (it did not exist when the state was saved)."""
    plain = mlbench.train(model=lambda: LazyHeadModel(4), **RUN)
    warmed = mlbench.train(model=lambda: LazyHeadModel(4), warmup=True,
                           **RUN)
    assert np.abs(warmed.model.head.kernel.numpy()).max() > 0.05  # not zeroed
    for a, b in zip(plain.model.variables, warmed.model.variables):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
    assert plain.final_metrics == pytest.approx(warmed.final_metrics, rel=1e-5)


def built(model):
    plan = plan_lib.resolve(plan_lib.train_arguments(dict(RUN, model=model), train_defaults()))
    return plan, parts_lib.build(plan)


def test_after_the_warm_up_the_step_is_back_at_zero_with_zero_slots():
    plan, parts = built("mlp")
    before = [v.numpy().copy() for v in parts.model.variables]
    make_warmup(plan.distribution.strategy, parts.step, parts.train_inputs, parts.make_eval,
                plan.distribution.per_replica_batch)()
    assert parts.step.global_step == 0 and parts.step.steps_run == 0
    for v, value in zip(parts.model.variables, before):
        np.testing.assert_array_equal(v.numpy(), value)
    slots = [v for v in parts.step.state_variables()[len(before):] if "iteration" not in v.name]
    assert slots and all(not np.any(v.numpy()) for v in slots)  # momentum made by the warm-up


def test_a_weight_only_a_training_call_creates_is_refused_not_zeroed():
    plan, parts = built(lambda: LazyHeadModel(4, train_only_weight=True))
    warmup = make_warmup(plan.distribution.strategy, parts.step, parts.train_inputs,
                         parts.make_eval, plan.distribution.per_replica_batch)
    with pytest.raises(RuntimeError, match=r"model variable \S*extra:0 was created by "
                                           r"the warm-up's training step.*without warmup"):
        warmup()
