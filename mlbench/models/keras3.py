"""Keras 3 (`import keras`; `tf.keras` since TF 2.16) beside tf_keras, mlbench's own Keras.

A user's model, loss, metric, optimizer or callback may be of either generation. mlbench
never imports Keras 3 itself: a Keras 3 object exists only once its user imported Keras 3,
so `loaded()` reads `sys.modules`, and a tf_keras user pays nothing for Keras 3.
"""
import sys

TF_KERAS = "tf_keras"
KERAS_3 = "keras3"


def loaded():
    """The Keras 3 module if this process imported it (directly or as `tf.keras`), else None."""
    module = sys.modules.get("keras")
    version = getattr(module, "__version__", "") or ""
    return module if version.split(".")[0].isdigit() and int(version.split(".")[0]) >= 3 \
        else None


def _is_a(value, path):
    keras = loaded()
    if keras is None:
        return False
    cls = keras
    for part in path.split("."):
        cls = getattr(cls, part)
    return isinstance(value, cls)


def is_model(value):
    return _is_a(value, "Model")


def is_loss(value):
    return _is_a(value, "losses.Loss")


def is_metric(value):
    return _is_a(value, "metrics.Metric")


def is_callback(value):
    return _is_a(value, "callbacks.Callback")


def is_optimizer(value):
    return _is_a(value, "optimizers.Optimizer")


def generation(model):
    """'keras3' for a Keras 3 model, else 'tf_keras'."""
    return KERAS_3 if is_model(model) else TF_KERAS


def check_backend(what):
    """Refuses Keras 3 on a backend other than TensorFlow, before anything is built.

    mlbench's step is TensorFlow (tf.distribute, tf.function, tf.train.Checkpoint), so a
    JAX, PyTorch or NumPy Keras 3 model cannot run in it.
    """
    backend = loaded().backend.backend()
    if backend != "tensorflow":
        raise ValueError(f"{what} is a Keras 3 model on the {backend!r} backend; mlbench "
                         "trains with TensorFlow: set the environment variable "
                         "KERAS_BACKEND=tensorflow before Keras is first imported (or "
                         "\"backend\": \"tensorflow\" in ~/.keras/keras.json).")


def set_global_policy(policy_name):
    """Sets Keras 3's global dtype policy (if Keras 3 is loaded); returns the previous one."""
    keras = loaded()
    if keras is None:
        return None
    previous = keras.mixed_precision.global_policy().name
    keras.mixed_precision.set_global_policy(policy_name)
    return previous


def set_random_seed(seed):
    """Keras 3's own seeding too (it resets Keras 3's global SeedGenerator, which draws its
    unseeded initializers), if Keras 3 is loaded: the same seed, the same weights."""
    keras = loaded()
    if keras is not None:
        keras.utils.set_random_seed(seed)
