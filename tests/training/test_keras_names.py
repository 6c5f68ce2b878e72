"""Keras' names as Keras' compile resolves them: for each loss spelling (string, tf_keras
object, Keras 3 object; from_logits either way) and label layout, the loss and metrics
mlbench computes on a fixed batch of predictions equal what Keras itself computes for a
model compiled with them (`model.evaluate` on a model that outputs its input)."""
import keras
import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from mlbench.training import task as task_lib

RNG = np.random.RandomState(3)
N, C = 64, 5
LOGITS = RNG.normal(size=(N, C)).astype(np.float32) * 2
PROBS = tf.nn.softmax(LOGITS).numpy()
INT = RNG.randint(0, C, size=N).astype(np.int32)
ONE_HOT = np.eye(C, dtype=np.float32)[INT]
B_LOGIT = RNG.normal(size=(N, 1)).astype(np.float32) * 2
B_PROB = tf.sigmoid(B_LOGIT).numpy()
B_LABEL = (RNG.rand(N) > 0.5).astype(np.float32)
MULTI = (RNG.rand(N, C) > 0.5).astype(np.float32)
TARGET = RNG.normal(size=(N,)).astype(np.float32)

METRICS = ["accuracy", "acc", "auc", "precision", "recall", "mae", "mse"]
# names Keras 3's registry resolves and tf_keras' compile does not (it fails in its first
# evaluate: "'str' object is not callable"): checked against Keras 3 only
KERAS_3_ONLY = ("auc", "precision", "recall")

# (case, loss per generation (a function of the Keras module, or a name), outputs, labels,
#  the outputs are probabilities, metrics)
CASES = [
    ("sparse string", "sparse_categorical_crossentropy", PROBS, INT, True,
     ["accuracy", "acc", "sparse_top_k_categorical_accuracy"]),
    ("sparse object logits",
     lambda k: k.losses.SparseCategoricalCrossentropy(from_logits=True), LOGITS, INT, False,
     ["accuracy", "sparse_categorical_accuracy"]),
    ("sparse object probabilities",
     lambda k: k.losses.SparseCategoricalCrossentropy(), PROBS, INT, True, ["accuracy"]),
    ("sparse (N, 1) labels", "sparse_categorical_crossentropy", PROBS, INT[:, None], True,
     ["accuracy"]),
    ("one-hot string", "categorical_crossentropy", PROBS, ONE_HOT, True,
     ["accuracy", "top_k_categorical_accuracy"]),
    ("one-hot object logits", lambda k: k.losses.CategoricalCrossentropy(from_logits=True),
     LOGITS, ONE_HOT, False, ["accuracy", "categorical_accuracy"]),
    ("one-hot smoothed", lambda k: k.losses.CategoricalCrossentropy(label_smoothing=0.1),
     PROBS, ONE_HOT, True, ["acc"]),
    ("binary string", "binary_crossentropy", B_PROB, B_LABEL, True, METRICS),
    ("binary (N, 1) labels", "binary_crossentropy", B_PROB, B_LABEL[:, None], True,
     ["accuracy", "binary_accuracy"]),
    ("binary object logits", lambda k: k.losses.BinaryCrossentropy(from_logits=True),
     B_LOGIT, B_LABEL, False, ["accuracy"]),
    ("multi-label", "binary_crossentropy", tf.sigmoid(LOGITS).numpy(), MULTI, True,
     ["accuracy", "binary_accuracy", "auc"]),
    ("regression mse", "mse", B_LOGIT, TARGET, False,
     ["mae", "mape", "mean_squared_logarithmic_error", "cosine_similarity"]),
    ("regression huber", lambda k: k.losses.Huber(delta=0.5), B_LOGIT, TARGET, False,
     ["mae", "mse"]),
]


def keras_figures(generation, loss, outputs, labels, metrics):
    """What Keras reports: a model that outputs its input, compiled with `loss` and
    `metrics`, evaluated on the whole batch at once."""
    k = keras if generation == "keras3" else tf_keras
    identity = (k.layers.Identity() if generation == "keras3"
                else k.layers.Lambda(lambda t: t))
    model = k.Sequential([k.Input(outputs.shape[1:]), identity])
    model.compile(loss=loss, metrics=list(metrics))
    return model.evaluate(outputs, labels, batch_size=N, verbose=0, return_dict=True)


def mlbench_figures(loss, outputs, labels, probabilities, metrics):
    label_spec = tf.TensorSpec((None,) + labels.shape[1:], tf.as_dtype(labels.dtype))
    output_spec = tf.TensorSpec((None,) + outputs.shape[1:], tf.float32)
    with tf.distribute.get_strategy().scope():
        task = task_lib.KerasTask(C, loss, list(metrics), probabilities,
                                  shapes=(label_spec, output_spec))
    counts = task.eval_counts((None, tf.constant(labels)), tf.constant(outputs))
    return task.metrics({k: float(v) for k, v in counts.items()})


@pytest.mark.parametrize("generation", ["keras3", "tf_keras"])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_loss_and_metrics_equal_keras_compile(case, generation):
    _, loss, outputs, labels, probabilities, metrics = case
    k = keras if generation == "keras3" else tf_keras
    loss = loss(k) if callable(loss) else loss
    if generation == "tf_keras":
        metrics = [m for m in metrics if m not in KERAS_3_ONLY]
    expected = keras_figures(generation, loss, outputs, labels, metrics)
    ours = mlbench_figures(loss, outputs, labels, probabilities, metrics)
    for name in metrics:
        assert ours[name] == pytest.approx(expected[name], rel=1e-5, abs=1e-6), name
    assert ours["eval_loss"] == pytest.approx(expected["loss"], rel=1e-5, abs=1e-6)


def test_accuracy_is_categorical_for_one_hot_labels_not_exact_equality():
    """The keras.io MNIST convnet's case: 'accuracy' with one-hot labels. Exact-equality
    `Accuracy` would report about 0 here; Keras (and mlbench) compare argmaxes."""
    figures = mlbench_figures("categorical_crossentropy", PROBS, ONE_HOT, True, ["accuracy"])
    assert figures["accuracy"] == pytest.approx(np.mean(PROBS.argmax(1) == INT))
    assert figures["accuracy"] > 0.1


def test_sample_weights_scale_the_loss_as_keras_does():
    """Keras' 'sum_over_batch_size': the weighted sum over the batch size (not over the sum
    of the weights); weighted_metrics see the weights, metrics do not."""
    weights = RNG.rand(N).astype(np.float32) * 2
    model = keras.Sequential([keras.Input((C,)), keras.layers.Identity()])
    model.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"], weighted_metrics=["accuracy"])
    expected = model.evaluate(LOGITS, INT, sample_weight=weights, batch_size=N, verbose=0,
                              return_dict=True)
    with tf.distribute.get_strategy().scope():
        task = task_lib.KerasTask(C, keras.losses.SparseCategoricalCrossentropy(
            from_logits=True), ["accuracy"], weighted_metrics=["accuracy"],
            shapes=(tf.TensorSpec((None,), tf.int32), tf.TensorSpec((None, C))))
    counts = task.eval_counts((None, tf.constant(INT), tf.constant(weights)),
                              tf.constant(LOGITS))
    ours = task.metrics({k: float(v) for k, v in counts.items()})
    assert ours["eval_loss"] == pytest.approx(expected["loss"], rel=1e-5)
    assert ours["accuracy"] == pytest.approx(expected["compile_metrics"]["accuracy"]
                                             if "compile_metrics" in expected
                                             else expected["accuracy"], rel=1e-6)
    assert ours["weighted_accuracy"] == pytest.approx(expected["weighted_accuracy"], rel=1e-6)
    assert ours["weighted_accuracy"] != pytest.approx(ours["accuracy"], rel=1e-3)
