"""Compile and warm up before the run clock starts, then restore the initial state.

MLPerf lets compilation and a warm-up on synthetic data happen between
init_start and run_start. The warm-up feeds zeros shaped exactly like the
real input (same element spec, so tf.function reuses the trace for the real
iterator), runs one train step and one eval step, and then puts every model
and optimizer variable back — slots created by the warm-up step back to zero —
so the run starts from the same state as without warm-up.
"""
import tensorflow as tf


def _zeros_like_spec(spec, batch):
    return tf.nest.map_structure(
        lambda s: tf.zeros([batch if d is None else d for d in s.shape], s.dtype), spec)


def _fake_iterator(strategy, element_spec, per_replica_batch):
    """A distributed iterator of zeros with the real one's per-replica element spec."""
    def dataset_fn(ctx):
        del ctx
        return tf.data.Dataset.from_tensors(
            _zeros_like_spec(element_spec, per_replica_batch)).repeat()
    return iter(strategy.distribute_datasets_from_function(dataset_fn))


def _build_lazy_variables(strategy, step, element_spec, per_replica_batch):
    """Calls the model once on zeros (no update) so that variables a model creates on its
    first call (Model Garden's BERT masked-LM head) exist, with their initial values,
    before the state is saved: the restore can then put every weight back."""
    batch = _zeros_like_spec(element_spec, per_replica_batch)
    with strategy.scope():
        step.model(step.task.inputs(batch), training=False)


def make_warmup(strategy, step, train_inputs, make_eval_dataset, per_replica_batch):
    """Returns a callable doing the warm-up described in the module docstring."""
    def warmup():
        if hasattr(train_inputs, "element_spec"):
            _build_lazy_variables(strategy, step, train_inputs.element_spec, per_replica_batch)
            inputs = _fake_iterator(strategy, train_inputs.element_spec, per_replica_batch)
        else:
            inputs = train_inputs  # synthetic data already on the devices
        # keyed by identity: Keras 3 variables have no `ref()`; the list keeps them alive
        saved = {id(v): v.numpy() for v in step.state_variables()}
        step.run(inputs, 1)  # the only way into compiled code (XLA fallback)
        if make_eval_dataset is not None:
            eval_spec = make_eval_dataset().element_spec
            step.warm_up_eval(next(_fake_iterator(strategy, eval_spec, per_replica_batch)))
        step.reset_counter()
        model_weights = {id(w) for w in step.model.variables}
        for v in step.state_variables():
            if id(v) in saved:
                v.assign(saved[id(v)])
            elif id(v) in model_weights:
                raise RuntimeError(f"model variable {v.name} was created by the warm-up's "
                                   "training step (an inference call does not create it), "
                                   "so its initial value cannot be put back: create it in "
                                   "the model's __init__ or build(), or run without warmup.")
            else:  # an optimizer slot the warm-up step created: back to zero
                v.assign(tf.zeros_like(v))
    return warmup
