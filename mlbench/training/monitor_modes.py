"""The direction ('max' or 'min') of a metric a Keras monitor callback watches with
`mode='auto'`: mlbench's own metric names, else the model's compile() metrics resolved as
Keras 3 resolves them."""


HIGHER_IS_BETTER = ("accuracy", "top1", "top5", "auc", "masked_lm_accuracy", "precision",
                    "recall")


def metric_direction(name):
    """'max' or 'min' for a metric mlbench reports (or a Keras log name), else None."""
    name = name.removeprefix("val_")
    if name in HIGHER_IS_BETTER or name.endswith("accuracy"):
        return "max"
    if name in ("loss", "eval_loss") or name.endswith(("_loss", "_error", "crossentropy")):
        return "min"
    return None


def resolve_auto_mode(callback):
    """Keras 3's monitor callbacks (EarlyStopping, ModelCheckpoint) resolve `mode='auto'`
    from the model's *compiled* metrics, and mlbench's model is not compiled: the direction
    of a metric mlbench reports is set here instead (tf_keras' own rule needs no help)."""
    from mlbench.models import keras3
    keras = keras3.loaded()
    monitor = getattr(callback, "monitor", None)
    if keras is None or not isinstance(monitor, str) or getattr(callback, "mode", None) != "auto":
        return
    if not keras3.is_callback(callback):
        return
    direction = metric_direction(monitor) or _compiled_direction(callback.model, monitor)
    if direction:
        callback.mode = direction


def _compiled_direction(model, monitor):
    """'max' or 'min' for a metric the model's compile() named, as Keras 3 finds it: each
    identifier resolved by Keras' own `compile_utils.get_metric` (its metric built only
    on the first batch of Keras' fit, so resolved here) and its `_direction` read."""
    compiled = getattr(model, "_compile_metrics", None)
    if compiled is None:
        return None
    import tensorflow as tf
    from keras.src.trainers import compile_utils
    name = monitor.removeprefix("val_")
    identifiers = tf.nest.flatten([getattr(compiled, "_user_metrics", None),
                                   getattr(compiled, "_user_weighted_metrics", None)])
    for identifier in (i for i in identifiers if i is not None):
        if isinstance(identifier, str) and identifier.lower() in ("accuracy", "acc"):
            found, direction = identifier, "up"  # every accuracy Keras picks goes up
        else:
            try:
                metric = compile_utils.get_metric(identifier, None, None)
            except (ValueError, TypeError):
                continue
            found, direction = metric.name, getattr(metric, "_direction", None)
        if found == name and direction in ("up", "down"):
            return "max" if direction == "up" else "min"
    return None
