"""Model factories: exact parameter counts, mixed precision, config round trip, FLOPs, bad input."""
import numpy as np
import pytest
import tensorflow as tf
import tf_keras as keras

from mlbench import models
from mlbench.models import precision
from mlbench.models import alexnet

TINY_IMAGE = ["alexnet_tiny", "vgg_tiny", "inception_tiny", "resnet_tiny", "simple_cnn"]
SMALL_BERT = dict(vocab_size=64, max_sequence_length=16)


def trainable(model):
    return int(sum(np.prod(v.shape) for v in model.trainable_variables))


@pytest.mark.parametrize("name,count", [
    ("resnet50", 25_557_032), ("resnet50_v1", 25_557_032), ("resnet152", 60_192_808), ("vgg16", 138_357_544),
    ("inception_v3", 23_817_352), ("alexnet", 61_838_248)])
def test_cnn_parameter_counts(name, count):
    assert trainable(models.get(name, num_classes=1000)) == count


@pytest.mark.parametrize("name,count", [("bert_base", 109_482_240), ("bert_large", 335_141_888)])
def test_bert_encoder_parameter_counts(name, count):
    assert trainable(models.get(name).encoder_network) == count


def test_dropping_biases_before_batch_norm_keeps_the_function():
    """In training mode batch norm cancels a conv bias: the bias-free copy, given the
    other weights, computes the same outputs (and its convs have no bias at all)."""
    from mlbench.models.vision import without_biases_before_batch_norm
    biased = keras.applications.ResNet50(weights=None, input_shape=(64, 64, 3), classes=10,
                                         classifier_activation=None)
    for layer in biased.layers:  # non-zero biases, so dropping them would show if it mattered
        if getattr(layer, "use_bias", False) and isinstance(layer, keras.layers.Conv2D):
            layer.bias.assign(tf.random.normal(layer.bias.shape, stddev=0.1, seed=1))
    free = without_biases_before_batch_norm(biased)
    assert not any(isinstance(l, keras.layers.Conv2D) and l.use_bias for l in free.layers)
    for a, b in zip(biased.layers, free.layers):
        b.set_weights([w for w, v in zip(a.get_weights(), a.weights)
                       if not (isinstance(a, keras.layers.Conv2D) and "bias" in v.name)])
    images = tf.random.uniform((8, 64, 64, 3), seed=2)
    # Logits are O(1); float32 round-off through 50 layers is ~4e-4 here, while keeping
    # a bias that batch norm does not cancel (inference mode) moves them by ~3e-2.
    np.testing.assert_allclose(free(images, training=True), biased(images, training=True),
                               atol=2e-3)


def image_batch(name, n=4, seed=0):
    shape = models.input_shape(name)
    x = tf.random.stateless_uniform((n,) + shape, seed=[seed, 1])
    y = tf.constant(np.arange(n) % 10, tf.int32)
    return x, y


def bert_batch(n=4, seq=16, preds=3):
    r = np.random.RandomState(0)
    return {"input_word_ids": tf.constant(r.randint(1, 64, (n, seq)), tf.int32),
            "input_mask": tf.ones((n, seq), tf.int32),
            "input_type_ids": tf.zeros((n, seq), tf.int32),
            "masked_lm_positions": tf.constant(r.randint(0, seq, (n, preds)), tf.int32)}


def loss_after_steps(model, loss_fn, steps=3, lr=0.05):
    optimizer = keras.optimizers.SGD(lr)
    losses = []
    for _ in range(steps + 1):
        keras.utils.set_random_seed(1)  # the same dropout masks every step: a fixed batch
        with tf.GradientTape() as tape:
            loss = loss_fn()
        losses.append(float(loss))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return losses


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
@pytest.mark.parametrize("name", TINY_IMAGE)
def test_small_image_models_mixed_precision(name, policy):
    keras.utils.set_random_seed(0)
    with precision.policy_scope(policy):
        model = models.get(name, num_classes=10)
    assert keras.mixed_precision.global_policy().name == "float32"  # restored
    x, y = image_batch(name)
    assert model(x).dtype == tf.float32
    assert all(v.dtype == tf.float32 for v in model.variables)
    assert any(layer.compute_dtype == policy.split("_")[1] for layer in model.submodules
               if isinstance(layer, keras.layers.Conv2D))
    ce = lambda: tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(  # noqa: E731
        y, model(x, training=True)))
    losses = loss_after_steps(model, ce, lr=0.01)
    assert losses[-1] < losses[0]


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
def test_bert_tiny_mixed_precision(policy):
    keras.utils.set_random_seed(0)
    with precision.policy_scope(policy):
        model = models.get("bert_tiny", **SMALL_BERT)
    batch = bert_batch()
    out = model(batch)
    assert out["mlm_logits"].shape == (4, 3, 64)
    assert out["mlm_logits"].dtype == tf.float32 and out["next_sentence"].dtype == tf.float32
    assert model.encoder_network.compute_dtype == policy.split("_")[1]
    assert all(v.dtype == tf.float32 for v in model.variables)
    labels = tf.constant(np.random.RandomState(1).randint(1, 64, (4, 3)), tf.int32)
    ce = lambda: tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(  # noqa: E731
        labels, tf.cast(model(batch)["mlm_logits"], tf.float32)))
    losses = loss_after_steps(model, ce, lr=0.1)
    assert losses[-1] < losses[0]


def test_alexnet_config_round_trip():
    model = alexnet.build(num_classes=7, image_size=67, width=0.125, dense_units=32)
    clone = alexnet.AlexNet.from_config(model.get_config())
    clone.build((None, 67, 67, 3))
    assert clone.get_config() == model.get_config()
    assert trainable(clone) == trainable(model)
    clone.set_weights(model.get_weights())
    x, _ = image_batch("alexnet_tiny")
    np.testing.assert_allclose(clone(x).numpy(), model(x).numpy(), rtol=1e-6)


@pytest.mark.parametrize("name", ["vgg_tiny", "inception_tiny", "simple_cnn"])
def test_functional_mlbench_models_config_round_trip(name):
    model = models.get(name, num_classes=10)
    clone = keras.Model.from_config(model.get_config())
    clone.set_weights(model.get_weights())
    x, _ = image_batch(name)
    np.testing.assert_allclose(clone(x, training=False).numpy(),
                               model(x, training=False).numpy(), rtol=1e-5, atol=1e-6)


def test_flops_table_matches_published_figures():
    published = {"resnet50": 8.2, "vgg16": 30.9, "inception_v3": 11.4, "resnet152": 23.0}
    for name, gflops in published.items():
        assert models.flops(name) == pytest.approx(gflops * 1e9, rel=0.02)
    assert 1.4e9 <= models.flops("alexnet") <= 1.7e9
    assert models.flops("bert_large") == pytest.approx(79e9, rel=0.02)


def test_alexnet_flops_counted_on_graph_match_table():
    counted = models.count_graph_flops(models.get("alexnet"), (227, 227, 3))
    assert counted == pytest.approx(models.flops("alexnet"), rel=0.01)


@pytest.mark.slow
def test_resnet50_flops_counted_on_graph_match_published():
    counted = models.count_graph_flops(models.get("resnet50"), (224, 224, 3))
    assert counted == pytest.approx(8.2e9, rel=0.03)


def test_unknown_name_lists_known_models():
    with pytest.raises(ValueError) as err:
        models.get("resnet5O")
    assert "'resnet5O'" in str(err.value) and "resnet50" in str(err.value)


@pytest.mark.parametrize("kwargs,needle", [
    (dict(name="resnet_tiny", num_classes=0), "`num_classes` (0)"),
    (dict(name="alexnet", image_size=40), "`image_size` (40)"),
    (dict(name="inception_v3", image_size=64), "`image_size` (64)"),
    (dict(name="bert_tiny", num_attention_heads=3), "`num_attention_heads` (3)"),
])
def test_bad_model_arguments(kwargs, needle):
    with pytest.raises(ValueError) as err:
        models.get(**kwargs)
    assert needle in str(err.value)


def test_input_specs():
    assert models.input_shape("resnet50") == (224, 224, 3)
    assert models.input_shape("inception_v3") == (299, 299, 3)
    assert models.input_shape("alexnet") == (227, 227, 3)
    assert models.input_shape("bert_large") == (128,)
