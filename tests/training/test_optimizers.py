"""Optimizers and schedules through Model Garden's factory: the learning rate at given
steps (golden values), the optimizer classes, bad input named."""
import pytest
import tensorflow as tf

from mlbench.training import optimizers


def lr_at(h, step):
    optimizer = optimizers.from_hyperparameters(h)
    optimizer.iterations.assign(step)
    return optimizers.current_learning_rate(optimizer)


@pytest.mark.parametrize("options,step,expected", [
    (dict(schedule="constant"), 77, 0.8),
    (dict(schedule="polynomial", decay_steps=100, end_learning_rate=0.0, power=1.0), 50, 0.4),
    (dict(schedule="polynomial", decay_steps=100, end_learning_rate=0.0, power=2.0), 50, 0.2),
    (dict(schedule="cosine", decay_steps=100), 50, 0.4),
    (dict(schedule="cosine", decay_steps=100), 100, 0.0),
    (dict(schedule="constant", warmup_steps=10), 5, 0.4),  # linear warm-up from 0
    (dict(schedule="constant", warmup_steps=10), 10, 0.8),
])
def test_learning_rate_at_a_step(options, step, expected):
    h = optimizers.hyperparameters("sgd", 0.8, **options)
    assert lr_at(h, step) == pytest.approx(expected, abs=1e-6)


def test_lars_warms_up_polynomially_as_mlperf():
    h = optimizers.hyperparameters("lars", 2.0, schedule="polynomial", decay_steps=100,
                                   end_learning_rate=1e-4, power=2.0, warmup_steps=10,
                                   weight_decay=5e-5)
    # the decay counts from step 0; warm-up scales the LR the decay has at its end (step 10)
    at_warmup_end = (2.0 - 1e-4) * (1 - 10 / 100) ** 2 + 1e-4
    assert lr_at(h, 10) == pytest.approx(at_warmup_end, rel=1e-5)
    assert lr_at(h, 5) == pytest.approx(0.5 * at_warmup_end, rel=1e-5)
    assert lr_at(h, 60) == pytest.approx((2.0 - 1e-4) * (1 - 60 / 100) ** 2 + 1e-4, rel=1e-5)


@pytest.mark.parametrize("name,cls,slots", [
    ("sgd", "SGD", ["momentum"]), ("lars", "LARS", ["momentum"]), ("lamb", "LAMB", ["m", "v"]),
    ("adamw", "AdamWeightDecay", ["m", "v"]), ("adam", "Adam", ["m", "v"])])
def test_each_name_builds_model_gardens_optimizer(name, cls, slots):
    """Its class, and the state a checkpoint saves: the step count and one slot per kind
    per variable."""
    optimizer = optimizers.from_hyperparameters(optimizers.hyperparameters(name, 0.01))
    assert type(optimizer).__name__ == cls
    weight = tf.Variable(tf.zeros((3,)), name="weight")
    optimizer.apply_gradients([(tf.ones((3,)), weight)])
    names = [v.name for v in optimizers.optimizer_variables(optimizer)]
    assert names == [f"{cls}/iter:0"] + [f"{cls}/weight/{slot}:0" for slot in slots]


@pytest.mark.parametrize("kwargs,needle", [
    (dict(name="adagrad"), "`optimizer` ('adagrad')"),
    (dict(schedule="step"), "`schedule` ('step')"),
    (dict(learning_rate=0), "`learning_rate` (0)"),
    (dict(schedule="cosine"), "`decay_steps` (None)"),
])
def test_bad_hyperparameters_are_named(kwargs, needle):
    with pytest.raises(ValueError) as error:
        optimizers.hyperparameters(**kwargs)
    assert needle in str(error.value)
