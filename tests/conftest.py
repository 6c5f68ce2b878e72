"""Test set-up: quiet TF and two logical CPU devices, configured before TF initialises."""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
# the measured-peak cache (mlbench.bench.peak) goes to a throw-away directory, not ~/.cache
os.environ.setdefault("XDG_CACHE_HOME", __import__("tempfile").mkdtemp(prefix="mlbench_cache_"))

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import tensorflow as tf  # noqa: E402

_cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(
    _cpu, [tf.config.LogicalDeviceConfiguration(), tf.config.LogicalDeviceConfiguration()])

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def vector_source(n=256, dim=16, classes=4, seed=0):
    """A small real-valued classification problem for exact-equivalence tests."""
    from mlbench.data.bundled import array_source
    rng = np.random.RandomState(seed)
    x = rng.normal(size=(n, dim)).astype(np.float32)
    y = (x[:, :classes].argmax(1)).astype(np.int32)
    return array_source("vectors", x, y, eval_fraction=0.25, num_classes=classes, kind="vector")


@pytest.fixture
def vectors():
    return vector_source()


@pytest.fixture(scope="session")
def digit_records(tmp_path_factory):
    """scikit-learn's real digits as ImageNet-format records, 32×32 (train 1,438 / eval 359)."""
    from mlbench.data import writers
    out = str(tmp_path_factory.mktemp("digits32"))
    writers.write_bundled_imagenet(out, "digits", image_size=32)
    return out


def host_op_model(monkeypatch, image=False):
    """Registers a model with a host-side op (tf.numpy_function) that XLA cannot compile:
    'host_mlp' (16-vector inputs) or, with `image`, 'host_cnn' (32×32×3 images)."""
    import tf_keras as keras
    from mlbench.models import registry

    def host_op(t):
        return tf.reshape(tf.numpy_function(np.tanh, [t], t.dtype), tf.shape(t))

    def build(num_classes=4, input_dim=16, image_size=32):
        shape = (image_size, image_size, 3) if image else (input_dim,)
        inputs = keras.Input(shape)
        x = keras.layers.Lambda(host_op)(inputs)
        x = keras.layers.Flatten()(x) if image else x
        return keras.Model(inputs, keras.layers.Dense(num_classes, dtype="float32")(x))
    name, shape = ("host_cnn", (32, 32, 3)) if image else ("host_mlp", (16,))
    monkeypatch.setitem(registry._REGISTRY, name, registry.ModelInfo(
        name, build, shape, "image" if image else "vector", "test"))
    return name


def own_cnn(num_outputs=10, softmax=False):
    """A small tf_keras CNN of a user's own for the bundled 8×8 digits."""
    import tf_keras as keras
    inputs = keras.Input((8, 8, 1))
    x = keras.layers.Conv2D(16, 3, activation="relu")(inputs)
    x = keras.layers.Flatten()(x)
    outputs = keras.layers.Dense(num_outputs, activation="softmax" if softmax else None)(x)
    return keras.Model(inputs, outputs, name="own_cnn")


def digit_arrays():
    """The bundled digits split as a user would hold them: ((x, y) train, (x, y) eval)."""
    from mlbench.data.bundled import digits_arrays, split
    return split(*digits_arrays(), eval_fraction=0.2)


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(config, items):
    """`make test`'s two workers (`--dist loadgroup`) take one test file at a time, so a
    file's module fixtures are built once; a file that marks its own group (the
    multi-process tests) shares that group's worker and turn."""
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(os.path.relpath(str(item.path), REPO)))
