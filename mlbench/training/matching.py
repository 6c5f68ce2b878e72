"""A restore that restores everything it expects, or nothing: the checkpoint's variables
matched one for one, by key and shape, against what this run's objects would save.

TensorFlow's `restore(...).expect_partial()` says nothing when a checkpoint of another
model matches only the step counter, and `assert_existing_objects_matched()` runs after
values were already assigned (a user's model instance half overwritten) and names
objects, not keys. So the run's own objects are first written to TensorFlow's in-memory
filesystem (`ram://`), and both object graphs are walked as TensorFlow's restore walks
them: every variable's path and shape must be the same, compared before any value is
assigned.
"""
import collections
import uuid

import tensorflow as tf
from tensorflow.core.protobuf import trackable_object_graph_pb2

_GRAPH = "_CHECKPOINTABLE_OBJECT_GRAPH"
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


def _object_graph(reader):
    graph = trackable_object_graph_pb2.TrackableObjectGraph()
    graph.ParseFromString(reader.get_tensor(_GRAPH))
    return graph


def state(reader, items, partial=False):
    """{path: shape} of the variables under the checkpoint's `items` (its root's children
    by name, e.g. model, optimizer), read from its object graph as TensorFlow's restore
    matches them: a variable's path is its shortest one from the root through `items`
    (breadth first, as TensorFlow names what it writes: a Keras 3 model's weights are
    written once, under whichever object reached them first, yet restore by the graph;
    an optimizer the model also holds as `model.optimizer` keeps its own paths), an
    optimizer slot's the path of its variable and the slot's name. `partial`: the items'
    own `optimizer` child (a model's `model.optimizer`) is left out, as a restore of the
    model's weights alone leaves it."""
    graph = _object_graph(reader)
    shapes = reader.get_variable_to_shape_map()
    starts = [(r.node_id, r.local_name) for r in graph.nodes[0].children
              if r.local_name in items]
    blocked = {c.node_id for node, _ in starts for c in graph.nodes[node].children
               if partial and c.local_name == "optimizer"}
    paths = _walk(graph, starts, blocked)
    found = {}
    for node_id, path in paths.items():
        node = graph.nodes[node_id]
        found.update({path: tuple(shapes[a.checkpoint_key]) for a in node.attributes
                      if a.name == "VARIABLE_VALUE"})
        for slot in node.slot_variables:  # tf_keras' legacy optimizers keep slots here
            owner = paths.get(slot.original_variable_node_id)
            if owner is not None:
                found.update({f"{owner}/.slot/{path}/{slot.slot_name}": tuple(
                    shapes[a.checkpoint_key]) for a in
                    graph.nodes[slot.slot_variable_node_id].attributes
                    if a.name == "VARIABLE_VALUE"})
    return found


def _walk(graph, starts, blocked=()):
    """Breadth first from the `starts` ([(node, name)]), never into `blocked` nodes: the
    first (shortest) path to each node reached."""
    paths = {node: name for node, name in starts}
    seen = set(paths) | set(blocked)
    queue = collections.deque(starts)
    while queue:
        node_id, path = queue.popleft()
        for child in graph.nodes[node_id].children:
            if child.node_id not in seen:
                seen.add(child.node_id)
                paths[child.node_id] = f"{path}/{child.local_name}"
                queue.append((child.node_id, paths[child.node_id]))
    return paths


def expected_state(checkpoint, items, partial=False):
    """{path: shape} that `checkpoint` (a tf.train.Checkpoint of live objects) saves under
    `items`, read back from TensorFlow's in-memory filesystem."""
    folder = f"ram://mlbench_expected_{uuid.uuid4().hex}"
    try:
        path = checkpoint.write(f"{folder}/ckpt")
        return state(tf.compat.v1.train.NewCheckpointReader(path), items, partial)
    finally:
        tf.io.gfile.rmtree(folder)


def stored_state(path, items, partial=False):
    """{path: shape} of the variables under `items` in the checkpoint at `path`."""
    return state(tf.train.load_checkpoint(path), items, partial)


def differences(expected, stored):
    """(missing, unexpected, reshaped) between two {key: shape} maps, sorted."""
    missing = sorted(set(expected) - set(stored))
    unexpected = sorted(set(stored) - set(expected))
    reshaped = [(k, stored[k], expected[k]) for k in sorted(set(expected) & set(stored))
                if stored[k] != expected[k]]
    return missing, unexpected, reshaped


def check_state(expected, path, way_out, items, partial=False):
    """Raises CheckpointMismatch unless the checkpoint at `path` holds, under `items`,
    exactly the variables of `expected` ({path: shape}, from `expected_state`); returns
    how many."""
    missing, unexpected, reshaped = differences(expected,
                                                stored_state(path, items, partial))
    if missing or unexpected or reshaped:
        raise CheckpointMismatch(path, missing, unexpected, reshaped, way_out)
    return len(expected)


def restore_items(items, path, way_out):
    """Restores `items` ({name: trackable}, e.g. {"model": model}) alone from the
    checkpoint at `path`, deliberately partial (the rest, such as the optimizer, left
    unread), after every variable of theirs is matched by path and shape; how many."""
    names = tuple(items)
    count = check_state(expected_state(tf.train.Checkpoint(**items), names, partial=True),
                        path, way_out, names, partial=True)
    # a model's own `model.optimizer` is not its weights: its values are put back as they
    # were (TensorFlow's dependency on a Keras attribute outlives setting it to None)
    kept = [(v, v.numpy()) for item in items.values()
            for v in _optimizer_variables(getattr(item, "optimizer", None))]
    tf.train.Checkpoint(**items).read(path).assert_existing_objects_matched().expect_partial()
    for variable, value in kept:
        variable.assign(value)
    return count


def _optimizer_variables(optimizer):
    """An optimizer's variables (either generation; tf_keras' legacy ones as a method)."""
    if optimizer is None:
        return []
    variables = optimizer.variables
    return list(variables() if callable(variables) else variables)
