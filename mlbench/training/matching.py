"""A restore that restores everything it expects, or nothing: the checkpoint's variables
matched one for one, by key and shape, against what this run's objects would save.

TensorFlow's `restore(...).expect_partial()` says nothing when a checkpoint of another
model matches only the step counter, and `assert_existing_objects_matched()` runs after
values were already assigned (a user's model instance half overwritten) and names
objects, not keys. So the run's own objects are first written to TensorFlow's in-memory
filesystem (`ram://`): their keys and shapes are exactly what the checkpoint must hold,
compared before any value is assigned.
"""
import uuid

import tensorflow as tf

# Bookkeeping every tf.train.Checkpoint writes, not a variable of the run.
_NOT_STATE = ("_CHECKPOINTABLE_OBJECT_GRAPH", "save_counter/")
_SUFFIX = "/.ATTRIBUTES/VARIABLE_VALUE"
_SLOT = "/.OPTIMIZER_SLOT/"  # tf_keras legacy slots sit under the variable's key
SHOWN = 5  # the first few keys of each kind of difference, in the message


class CheckpointMismatch(ValueError):
    """A checkpoint that does not hold exactly the run's variables (exit 2): names the
    first keys that differ, the checkpoint and the way out."""

    def __init__(self, path, missing, unexpected, reshaped, way_out):
        parts = []
        if missing:
            parts.append(f"{len(missing)} variable(s) of this run are not in it "
                         f"({_first(missing)})")
        if unexpected:
            parts.append(f"{len(unexpected)} of its variable(s) belong to no object of "
                         f"this run ({_first(unexpected)})")
        if reshaped:
            parts.append(f"{len(reshaped)} have another shape ("
                         + ", ".join(f"{k}: checkpoint {list(a)} vs run {list(b)}"
                                     for k, a, b in reshaped[:SHOWN]) + ")")
        super().__init__(f"checkpoint {path} does not match the model and optimizer this "
                         f"run builds: {'; '.join(parts)}. {way_out}")
        self.path, self.missing, self.unexpected = path, missing, unexpected
        self.reshaped = reshaped


def _first(keys):
    shown = ", ".join(keys[:SHOWN])
    return shown + (", ..." if len(keys) > SHOWN else "")


def _state(shapes):
    """{key without TF's attribute suffix: shape} of the variables in a shape map."""
    return {key[:-len(_SUFFIX)] if key.endswith(_SUFFIX) else key: tuple(shape)
            for key, shape in shapes.items() if not key.startswith(_NOT_STATE)}


def expected_state(checkpoint):
    """{key: shape} that `checkpoint` (a tf.train.Checkpoint of live objects) saves."""
    folder = f"ram://mlbench_expected_{uuid.uuid4().hex}"
    try:
        path = checkpoint.write(f"{folder}/ckpt")
        reader = tf.compat.v1.train.NewCheckpointReader(path)
        return _state(reader.get_variable_to_shape_map())
    finally:
        tf.io.gfile.rmtree(folder)


def stored_state(path):
    """{key: shape} of the variables in the checkpoint at `path`."""
    return _state(tf.train.load_checkpoint(path).get_variable_to_shape_map())


def differences(expected, stored):
    """(missing, unexpected, reshaped) between two {key: shape} maps, sorted."""
    missing = sorted(set(expected) - set(stored))
    unexpected = sorted(set(stored) - set(expected))
    reshaped = [(k, stored[k], expected[k]) for k in sorted(set(expected) & set(stored))
                if stored[k] != expected[k]]
    return missing, unexpected, reshaped


def check_state(expected, path, way_out, prefixes=None):
    """Raises CheckpointMismatch unless the checkpoint at `path` holds exactly the
    variables of `expected` ({key: shape}, from `expected_state`). `prefixes`: a
    deliberately partial restore (a warm start of the model alone) compares only the
    checkpoint's keys under them, optimizer slots left out."""
    stored = stored_state(path)
    if prefixes is not None:
        stored = {k: v for k, v in stored.items()
                  if k.startswith(tuple(prefixes)) and _SLOT not in k}
    missing, unexpected, reshaped = differences(expected, stored)
    if missing or unexpected or reshaped:
        raise CheckpointMismatch(path, missing, unexpected, reshaped, way_out)
    return len(expected)


def restore_items(items, path, way_out):
    """Restores `items` ({name: trackable}, e.g. {"model": model}) alone from the
    checkpoint at `path`, deliberately partial (the optimizer's part left unread), after
    every variable of theirs is matched by key and shape; the number restored."""
    partial = tf.train.Checkpoint(**items)
    expected = expected_state(partial)
    check_state(expected, path, way_out, prefixes=[f"{name}/" for name in items])
    partial.read(path).assert_existing_objects_matched().expect_partial()
    return len(expected)
