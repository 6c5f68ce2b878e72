"""`mlbench.fit(model, ...)`: `model.fit`'s signature and return value on mlbench's loop.

Replacing `model.fit(` with `mlbench.fit(model, ` in a Keras program is enough: the
arguments mean what they mean to Keras, the model trains with what its compile() set,
and a Keras `History` comes back (also at `model.history`). Everything else of
mlbench's (precision, XLA, distribution, accumulation, checkpoints and resume in
`model_dir`, the diagnosis, result.json) is reached through `**mlbench_options`, the
keywords of `mlbench.train`. Its TrainResult is at `history.result`.

Each argument maps onto `mlbench.train`'s: `x`/`y`/`sample_weight` → `data`;
`validation_data`/`validation_split` → `eval_data`; `epochs` → `train_epochs`;
`validation_freq` → `eval_every_epochs`; `batch_size` → `global_batch_size` (a
dataset's own batch size when `x` is a dataset: under several replicas that batch is
the global one, split across them, as `fit` splits it); `shuffle` and `class_weight` →
`data_options`. What mlbench cannot honour is refused by name before anything runs.
"""
import numpy as np
import tensorflow as tf

from mlbench.models import keras3
from mlbench.reprs import short

KERAS_DEFAULT_BATCH_SIZE = 32


def fit(model, x=None, y=None, batch_size=None, epochs=1, verbose="auto", callbacks=None,
        validation_split=0.0, validation_data=None, shuffle=True, class_weight=None,
        sample_weight=None, initial_epoch=0, steps_per_epoch=None, validation_steps=None,
        validation_freq=1, **mlbench_options):
    """Trains `model` as `model.fit(x, y, ...)` would, on mlbench's loop; returns the
    Keras `History` (`history.history`: `loss`, `val_loss`, `val_<metric>` per epoch).

    Args:
      model: a Keras model (Keras 3 or tf_keras), compiled or not (then give `loss`,
        `metrics` and `optimizer` in `mlbench_options`), or a function returning one.
      x, y, batch_size, epochs, verbose, callbacks, validation_split, validation_data,
      shuffle, class_weight, sample_weight, steps_per_epoch, validation_steps,
      validation_freq: as `Model.fit`'s. `x` may be arrays (one, or a list/tuple/dict for
        several inputs) with `y`, or a batched tf.data.Dataset of (x, y[, sample_weight]).
      initial_epoch: 0 only; mlbench resumes a run from the checkpoints in `model_dir`.
      **mlbench_options: any keyword of `mlbench.train` (model_dir, precision,
        jit_compile, strategy, num_devices, gradient_accumulation_steps, target, ...).

    Returns:
      The `History` callback of the model's Keras generation; `history.result` is the
      run's `mlbench.TrainResult`.
    """
    _refuse_unsupported(initial_epoch, validation_freq, shuffle, mlbench_options)
    _build_compiled_metrics(model, _unpandas(x), _unpandas(y), sample_weight)
    x, y, steps_per_epoch = _as_fit_takes(x, y, sample_weight, batch_size, steps_per_epoch)
    validation_data = _validation_as_fit_takes(validation_data)
    data, eval_data, batch = _data(x, y, sample_weight, batch_size, validation_split,
                                   validation_data, validation_steps)
    history = _history_for(model)
    options = {**_compiled_execution(model), **mlbench_options}  # explicit options win
    data_options = dict(options.pop("data_options", None) or {}, batched=True,
                        shuffle=bool(shuffle))
    if class_weight is not None:
        data_options["class_weight"] = class_weight
    cadence = {"eval_every_epochs": validation_freq} if eval_data is not None else {}
    from mlbench.trainer.api import train
    result = train(model=model, data=data, eval_data=eval_data, global_batch_size=batch,
                   callbacks=list(callbacks or ()) + [history], verbose=verbose != 0,
                   data_options=data_options, train_epochs=epochs,
                   steps_per_epoch=steps_per_epoch or _keras_steps_per_epoch(data, batch),
                   **cadence, **options)
    history.result = result
    result.model.history = history
    _finalize_variable_values(result.model)
    return history


def _finalize_variable_values(model):
    """What fit does once training ends: an optimizer with `use_ema=True` (and no
    `ema_overwrite_frequency`) writes the moving average into the model's weights, so the
    model fit returns is the averaged one (either generation; a no-op otherwise)."""
    optimizer = getattr(model, "optimizer", None)
    if hasattr(optimizer, "finalize_variable_values"):
        optimizer.finalize_variable_values(model.trainable_variables)


def _build_compiled_metrics(model, x, y, sample_weight):
    """Keras 3's fit builds the model's compiled loss and metrics on its first step, so
    callbacks find them in `model.metrics` (a monitor's `mode='auto'` reads their
    direction there). mlbench's step does not run Keras' train_step: they are built here,
    symbolically from one batch's shapes, as Keras' own `_symbolic_build` does."""
    compiled = getattr(model, "_compile_metrics", None)
    if not keras3.is_model(model) or compiled is None or compiled.built:
        return
    kind = _batches_kind(x)
    if kind == "generator":
        return  # a peek would take a batch from the run: built on first use by Keras
    if isinstance(x, tf.data.Dataset):
        batch = next(iter(x.take(1)))
    elif kind is not None:
        batch = x[0]  # a PyDataset or Sequence: indexed, nothing consumed
    else:
        first = lambda a: None if a is None else tf.nest.map_structure(  # noqa: E731
            lambda v: np.asarray(v)[:1], a)
        batch = (first(x), first(y), first(sample_weight))
    model._symbolic_build(data_batch=batch)


def _compiled_execution(model):
    """What the model's compile() said about execution, as mlbench's options:
    `jit_compile=True` (XLA), `steps_per_execution=N` (N steps per compiled call: mlbench's
    `steps_per_loop`). Compile's defaults say nothing (mlbench's 'auto' and 100 stay).
    Keras 3 keeps them as `jit_compile` / `steps_per_execution`, tf_keras privately."""
    if not getattr(model, "compiled", getattr(model, "_is_compiled", False)):
        return {}
    options = {}
    jit = getattr(model, "jit_compile", None) if keras3.is_model(model) else \
        getattr(model, "_jit_compile", None)
    if jit is True:
        options["jit_compile"] = True
    steps = getattr(model, "steps_per_execution", None) if keras3.is_model(model) else \
        getattr(model, "_steps_per_execution", None)
    steps = int(steps.numpy()) if hasattr(steps, "numpy") else steps
    if isinstance(steps, int) and steps > 1:
        options["steps_per_loop"] = steps
    return options


def _as_fit_takes(x, y, sample_weight, batch_size, steps_per_epoch):
    """(x, y, steps_per_epoch) with the inputs `fit` takes beyond arrays and datasets made
    into those: pandas DataFrames and Series become arrays; a `keras.utils.PyDataset`, a
    Python generator or a tf_keras `Sequence` becomes a dataset of its batches through
    Keras' own data adapters (their workers, queue and peeking are Keras'), read lazily:
    no pass over the data before step 1."""
    x, y = _unpandas(x), _unpandas(y)
    kind = _batches_kind(x)
    if kind is None:
        return x, y, steps_per_epoch
    for name, value in (("y", y), ("sample_weight", sample_weight),
                        ("batch_size", batch_size)):
        if value is not None:
            raise ValueError(f"`{name}` ({short(value)}) is not taken with a {kind} `x`, as "
                             "in Keras: it yields its own batches (x, y[, sample_weight]).")
    from keras.src.trainers.data_adapters import get_data_adapter
    if kind == "PyDataset" and x.use_multiprocessing:
        raise ValueError(f"`x` (a PyDataset with use_multiprocessing=True): mlbench reads a "
                         "PyDataset with threads (`workers`), not processes; give "
                         "use_multiprocessing=False, or a tf.data.Dataset.")
    if kind == "PyDataset" and x.workers > 1:
        return _read_by_threads(x), None, steps_per_epoch or len(x)
    if kind == "tf_keras Sequence":
        x, kind, steps_per_epoch = _passes(x), "generator", steps_per_epoch or len(x)
    if kind == "generator" and steps_per_epoch is None:
        raise ValueError("`steps_per_epoch` is needed with a generator `x`: mlbench reads "
                         "it as a stream (an epoch is that many batches), as Keras does "
                         "for a generator that does not end.")
    adapter = get_data_adapter(x, steps_per_epoch=steps_per_epoch)
    steps = steps_per_epoch or adapter.num_batches
    if not steps:
        raise ValueError(f"`x` (a {kind}) has no known length: give `steps_per_epoch`.")
    return adapter.get_tf_dataset(), None, steps


def _read_by_threads(py_dataset):
    """One pass of a PyDataset's batches read `workers` at a time, in order, with
    `max_queue_size` batches ready: tf.data maps each index to `py_dataset[i]` in parallel
    threads, as Keras' thread pool would. Keras' own enqueuer is not used: it serves one
    reader at a time, and a run reads its pipeline from two (the run's iterator and the
    diagnosis' timing copy), which hung."""
    from keras.src.trainers.data_adapters import get_data_adapter
    spec = get_data_adapter(py_dataset).get_tf_dataset().element_spec  # from 2 batches
    flat_spec = tf.nest.flatten(spec)

    def load(index):
        batch = py_dataset[int(index)]
        batch = batch if isinstance(batch, tuple) else (batch,)
        return [np.asarray(t, s.dtype.as_numpy_dtype)
                for t, s in zip(tf.nest.flatten(batch), flat_spec)]

    def fetch(index):
        flat = tf.py_function(load, [index], [s.dtype for s in flat_spec])
        for tensor, s in zip(flat, flat_spec):
            tensor.set_shape(s.shape)
        return tf.nest.pack_sequence_as(spec, flat)
    return tf.data.Dataset.range(len(py_dataset)).map(
        fetch, num_parallel_calls=py_dataset.workers, deterministic=True).prefetch(
        max(py_dataset.max_queue_size, 1))


def _unpandas(value):
    """A pandas DataFrame or Series as its array (Keras takes them so)."""
    if type(value).__name__ in ("DataFrame", "Series") and hasattr(value, "to_numpy"):
        return value.to_numpy()
    return value


def _batches_kind(x):
    """What kind of batch source `x` is ('PyDataset', 'generator', 'tf_keras Sequence'),
    or None for arrays and datasets."""
    import inspect
    keras = keras3.loaded()
    if keras is not None and isinstance(x, keras.utils.PyDataset):
        return "PyDataset"
    if inspect.isgenerator(x):
        return "generator"
    import tf_keras
    if isinstance(x, tf_keras.utils.Sequence):
        return "tf_keras Sequence"
    return None


def _passes(sequence):
    """A tf_keras `Sequence` as a generator of one pass of its batches after another
    (Keras 3's adapters take Keras 3's PyDataset, not tf_keras' Sequence)."""
    while True:
        for index in range(len(sequence)):
            yield sequence[index]
        sequence.on_epoch_end()


def _validation_as_fit_takes(validation_data):
    """A PyDataset given as validation data: a dataset of one pass of its batches
    (generators are refused: an eval set must be read whole at every eval)."""
    kind = _batches_kind(validation_data)
    if kind is None:
        return validation_data
    if kind != "PyDataset":
        raise ValueError(f"`validation_data` (a {kind}) cannot be read again at every "
                         "eval: give arrays, a tf.data.Dataset or a keras.utils.PyDataset.")
    from keras.src.trainers.data_adapters import get_data_adapter
    return get_data_adapter(validation_data).get_tf_dataset().take(len(validation_data))


def _keras_steps_per_epoch(data, batch):
    """Keras' steps in one epoch: every batch of the training data, the last one partial
    (mlbench's are all full: the data repeats, so an epoch reads a few examples more)."""
    if isinstance(data, tf.data.Dataset):
        batches = int(data.cardinality())
        if batches < 0:
            raise ValueError("`x` (a tf.data.Dataset) has an infinite or unknown number of "
                             "batches: give `steps_per_epoch`, as Keras needs it then.")
        return batches
    return -(-len(tf.nest.flatten(data[1])[0]) // batch)


def _refuse_unsupported(initial_epoch, validation_freq, shuffle, options):
    if initial_epoch:
        raise ValueError(f"`initial_epoch` ({initial_epoch!r}): mlbench resumes a run from "
                         "the checkpoints in `model_dir` (give the same `model_dir` again) "
                         "rather than from an epoch number; leave it 0.")
    if not isinstance(validation_freq, int) or isinstance(validation_freq, bool) or \
            validation_freq < 1:
        raise ValueError(f"`validation_freq` ({validation_freq!r}) must be an integer >= 1 "
                         "(mlbench evaluates every N epochs; a list of epochs is not taken).")
    if shuffle == "batch":
        raise ValueError("`shuffle` ('batch') is for HDF5 data in Keras; mlbench shuffles "
                         "arrays example by example: give True or False.")
    taken = sorted(set(options) & {"data", "eval_data", "global_batch_size", "train_epochs",
                                   "train_steps", "eval_every", "eval_every_epochs",
                                   "callbacks", "model"})
    if taken:
        raise ValueError(f"{taken} are set by `fit`'s own arguments (x, y, batch_size, "
                         "epochs, steps_per_epoch, validation_*, callbacks); give those.")


def _data(x, y, sample_weight, batch_size, validation_split, validation_data,
          validation_steps):
    """(data, eval_data, global batch) for `mlbench.train` from `fit`'s arguments."""
    if isinstance(x, tf.data.Dataset):
        for name, value in (("y", y), ("sample_weight", sample_weight),
                            ("batch_size", batch_size)):
            if value is not None:
                raise ValueError(f"`{name}` ({short(value)}) is not taken with a dataset `x`, as "
                                 "in Keras: the dataset yields its own batches (x, y[, "
                                 "sample_weight]).")
        if validation_split:
            raise ValueError(f"`validation_split` ({validation_split!r}) needs arrays, as in "
                             "Keras; give `validation_data` with a dataset `x`.")
        from mlbench.data.own import first_batch_size
        data, batch = x, first_batch_size("x", x)
    else:
        if x is None or y is None:
            raise ValueError(f"`x` ({type(x).__name__}) and `y` ({type(y).__name__}) are "
                             "needed: arrays (x, y), or a tf.data.Dataset as `x`.")
        data = (x, y) if sample_weight is None else (x, y, sample_weight)
        batch = KERAS_DEFAULT_BATCH_SIZE if batch_size is None else batch_size
        if validation_split and validation_data is None:
            data, validation_data = _split_off(data, validation_split)
    return data, _validation(validation_data, validation_steps), batch


def _split_off(data, fraction):
    """The last `fraction` of the arrays as validation data, before any shuffle, as Keras
    takes it."""
    if not 0 < fraction < 1:
        raise ValueError(f"`validation_split` ({fraction!r}) must be between 0 and 1.")
    n = len(tf.nest.flatten(data[1])[0])
    at = int(n * (1.0 - fraction))
    if at in (0, n):
        raise ValueError(f"`validation_split` ({fraction!r}) of {n} examples leaves an "
                         "empty training or validation set.")
    head = tf.nest.map_structure(lambda a: np.asarray(a)[:at], tuple(data))
    tail = tf.nest.map_structure(lambda a: np.asarray(a)[at:], tuple(data))
    return head, tail


def _validation(validation_data, validation_steps):
    if validation_data is None:
        return None
    if isinstance(validation_data, tf.data.Dataset):
        return validation_data.take(validation_steps) if validation_steps else \
            validation_data
    if validation_steps:
        raise ValueError(f"`validation_steps` ({validation_steps!r}) counts batches of a "
                         "validation dataset; arrays are evaluated whole, as in Keras.")
    if not isinstance(validation_data, (tuple, list)) or len(validation_data) not in (2, 3):
        raise ValueError("`validation_data` must be (x_val, y_val), (x_val, y_val, "
                         "val_sample_weight) or a tf.data.Dataset, as in Keras.")
    return tuple(validation_data)


def _history_for(model):
    """A `History` callback of the model's Keras generation (a function's: called once
    lazily by mlbench, so tf_keras unless Keras 3 is loaded and the model is Keras 3)."""
    if keras3.is_model(model):
        return keras3.loaded().callbacks.History()
    import tf_keras
    if isinstance(model, tf_keras.Model) or keras3.loaded() is None:
        return tf_keras.callbacks.History()
    return keras3.loaded().callbacks.History()
