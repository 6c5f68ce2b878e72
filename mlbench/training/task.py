"""One replica's maths: inputs, per-example loss and eval counts per task.

Losses are per example (reduction NONE); the step averages them over the
*global* batch with `tf.nn.compute_average_loss`, so all-reduced gradients
are the global-batch mean and k micro-batches equal one batch of k·b.
"""
import tensorflow as tf

from mlbench.models import keras3


class ClassificationTask:
    """Images (or vectors) → logits; metric top-1 accuracy."""
    metric_names = ("top1", "eval_loss")
    count_names = ("top1_correct", "top1_count", "loss_sum")

    def __init__(self, num_classes, label_smoothing=0.0):
        self.num_classes = num_classes
        self.label_smoothing = label_smoothing

    def inputs(self, batch):
        return batch[0]

    def per_example_loss(self, batch, outputs):
        labels, logits = batch[1], tf.cast(outputs, tf.float32)
        if self.label_smoothing:
            onehot = tf.one_hot(labels, self.num_classes)
            return tf.nn.softmax_cross_entropy_with_logits(
                onehot * (1 - self.label_smoothing) + self.label_smoothing / self.num_classes,
                logits)
        return tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)

    def eval_counts(self, batch, outputs):
        """Sums that add across batches and replicas: correct, count, loss."""
        labels, logits = batch[1], tf.cast(outputs, tf.float32)
        correct = tf.cast(tf.equal(tf.argmax(logits, -1, output_type=tf.int32), labels),
                          tf.float32)
        return {"top1_correct": tf.reduce_sum(correct),
                "top1_count": tf.cast(tf.size(labels), tf.float32),
                "loss_sum": tf.reduce_sum(self.per_example_loss(batch, outputs))}

    def reset_metrics(self):
        """Counts are returned per batch, not held: nothing to reset."""

    @staticmethod
    def metrics(sums):
        return {"top1": float(sums["top1_correct"] / max(sums["top1_count"], 1.0)),
                "eval_loss": float(sums["loss_sum"] / max(sums["top1_count"], 1.0))}


class BertPretrainingTask:
    """Masked-LM + next-sentence loss; metric masked-LM accuracy (weighted).

    The per-example masked-LM loss is the weighted mean over that sequence's
    masked positions, so the loss stays exact under micro-batching (the
    reference divides by the batch's weight sum instead; the two agree when
    every sequence has the same number of masked tokens).
    """
    metric_names = ("masked_lm_accuracy", "eval_loss")
    count_names = ("mlm_correct", "mlm_count", "loss_sum", "examples")

    def inputs(self, batch):
        return {k: batch[k] for k in ("input_word_ids", "input_mask", "input_type_ids",
                                      "masked_lm_positions")}

    def per_example_loss(self, batch, outputs):
        mlm_logits = tf.cast(outputs["mlm_logits"], tf.float32)
        weights = tf.cast(batch["masked_lm_weights"], tf.float32)
        token_loss = tf.nn.sparse_softmax_cross_entropy_with_logits(batch["masked_lm_ids"],
                                                                    mlm_logits)
        mlm = tf.reduce_sum(token_loss * weights, -1) / tf.maximum(tf.reduce_sum(weights, -1), 1.0)
        nsp_labels = tf.reshape(batch["next_sentence_labels"], [-1])  # records store (B, 1)
        nsp = tf.nn.sparse_softmax_cross_entropy_with_logits(
            nsp_labels, tf.cast(outputs["next_sentence"], tf.float32))
        return mlm + nsp

    def eval_counts(self, batch, outputs):
        weights = tf.cast(batch["masked_lm_weights"], tf.float32)
        predicted = tf.argmax(outputs["mlm_logits"], -1, output_type=tf.int32)
        correct = tf.cast(tf.equal(predicted, batch["masked_lm_ids"]), tf.float32) * weights
        return {"mlm_correct": tf.reduce_sum(correct), "mlm_count": tf.reduce_sum(weights),
                "loss_sum": tf.reduce_sum(self.per_example_loss(batch, outputs)),
                "examples": tf.cast(tf.shape(weights)[0], tf.float32)}

    def reset_metrics(self):
        """Counts are returned per batch, not held: nothing to reset."""

    @staticmethod
    def metrics(sums):
        return {"masked_lm_accuracy": float(sums["mlm_correct"] / max(sums["mlm_count"], 1.0)),
                "eval_loss": float(sums["loss_sum"] / max(sums["examples"], 1.0))}


def uses_keras_task(model_info, loss, metrics):
    """Your own models, and any model given a `loss` or `metrics`, use KerasTask."""
    return model_info.kind != "bert" and (model_info.own or loss is not None
                                          or metrics is not None)


def produced_metrics(model_info, loss=None, metrics=None, weighted_metrics=None):
    """The metric names a run of this model reports (checked against `target`)."""
    if model_info.kind == "bert":
        return BertPretrainingTask.metric_names
    if uses_keras_task(model_info, loss, metrics):
        return metric_names(loss, metrics, weighted_metrics)
    return ClassificationTask.metric_names


def for_model(model_info, num_classes, label_smoothing=0.0, loss=None, metrics=None,
              probabilities=False, weighted_metrics=None, shapes=None):
    """The task of a model; build it under the strategy's scope (KerasTask's metrics).
    `shapes`: (label spec, output spec) with a batch dimension, which Keras' own rule
    reads to resolve 'accuracy' (`keras_metric`)."""
    if model_info.kind == "bert":
        return BertPretrainingTask()
    if uses_keras_task(model_info, loss, metrics):
        return KerasTask(num_classes, loss, metrics, probabilities, label_smoothing,
                         weighted_metrics, shapes)
    return ClassificationTask(num_classes, label_smoothing)


# --- your own model: a loss and metrics (names, or objects of either Keras generation) ---

SPARSE_CE = "sparse_categorical_crossentropy"
_FROM_LOGITS_LOSSES = (SPARSE_CE, "categorical_crossentropy", "binary_crossentropy")
# mlbench's own spellings of the zoo's metric; Keras' names ('acc', 'accuracy') are kept
# as written, as Keras keeps them in its logs
_METRIC_ALIASES = {"top_1": "top1", "top-1": "top1", "top_5": "top5",
                   "top-5": "top5", "top_5_accuracy": "top5"}


def classifies(loss):
    """Whether `loss` means integer class labels (the default: sparse cross-entropy)."""
    return loss is None or loss == SPARSE_CE


def metric_names(loss, metrics, weighted_metrics=None):
    """The metrics a KerasTask reports (known before anything is built), eval_loss last;
    a weighted metric named like an unweighted one is 'weighted_<name>', as in Keras."""
    specs = default_metrics(loss) if metrics is None else list(metrics)
    names = [_metric_name(m) for m in specs]
    for spec in weighted_metrics or ():
        name = _metric_name(spec)
        names.append(f"weighted_{name}" if name in names else name)
    return tuple(names) + ("eval_loss",)


def default_metrics(loss):
    return ["accuracy"] if classifies(loss) else []


def _metric_name(spec):
    if isinstance(spec, str):
        return _METRIC_ALIASES.get(spec.lower(), spec)
    name = getattr(spec, "name", None) or getattr(spec, "__name__", None)
    if not isinstance(name, str):
        raise ValueError(f"`metrics` entry ({spec!r}) must be a tf_keras metric name, a "
                         "tf_keras.metrics.Metric, or a function (labels, outputs) -> values.")
    return name


def check_metrics(loss, metrics):
    """Every loss and metric named exists in tf_keras (refused up front otherwise)."""
    import tf_keras as keras
    if metrics is not None and (isinstance(metrics, (str, dict)) or
                                not isinstance(metrics, (list, tuple))):
        raise ValueError(f"`metrics` ({metrics!r}) must be a list such as ['accuracy'].")
    for spec in metrics or ():
        name = _metric_name(spec)
        if isinstance(spec, str) and name.lower() not in _NOT_IN_REGISTRY:
            try:
                found = keras.metrics.get(name)  # unknown names come back as strings
            except ValueError:
                found = None
            if not callable(found):
                raise ValueError(f"`metrics` entry ({spec!r}) is not a tf_keras metric "
                                 "name (e.g. 'accuracy', 'top5', 'auc', "
                                 "'mean_absolute_error').")
    if isinstance(loss, str):
        try:
            keras.losses.get(loss)
        except ValueError:
            raise ValueError(f"`loss` ({loss!r}) is not a tf_keras loss name (e.g. "
                             f"'{SPARSE_CE}', 'mse', 'binary_crossentropy').") from None
    elif loss is not None and not callable(loss):
        raise ValueError(f"`loss` ({loss!r}) must be a tf_keras loss name, a "
                         "tf_keras.losses.Loss, or a function (labels, outputs) -> "
                         "per-example losses.")


class KerasTask(ClassificationTask):
    """Your own model's maths: `loss` per example (default: sparse cross-entropy on
    integer labels, label smoothing as the zoo's) and tf_keras metrics.

    Metrics are tf_keras Metric objects made under the strategy's scope (build
    this task there): their variables sum across replicas on read, exactly as
    in Keras' own `evaluate`. `eval_loss` is a sum like every other count.
    """
    count_names = ("loss_sum", "count")

    def __init__(self, num_classes, loss=None, metrics=None, probabilities=False,
                 label_smoothing=0.0, weighted_metrics=None, shapes=None):
        super().__init__(num_classes, label_smoothing)
        self.probabilities = probabilities
        self.loss_fn = None if loss is None else _per_example_loss(loss, probabilities)
        self.sparse = classifies(loss)
        specs = default_metrics(loss) if metrics is None else list(metrics)
        weighted = list(weighted_metrics or ())
        self.metric_names = metric_names(loss, metrics, weighted_metrics)
        self.metric_objects = [_metric(s, self.sparse, loss, probabilities, shapes, name)
                               for s, name in zip(specs + weighted, self.metric_names)]
        self.weighted = [False] * len(specs) + [True] * len(weighted)
        # the same metrics on the training batches, as Keras' fit logs them (`accuracy`
        # beside `val_accuracy`): their own variables, reset at each epoch's end
        self.train_metric_objects = [_metric(s, self.sparse, loss, probabilities, shapes,
                                             name)
                                     for s, name in zip(specs + weighted, self.metric_names)]

    def per_example_loss(self, batch, outputs):
        """The loss of each example, times its sample weight when the data has one (a
        third element, as `fit` takes it): averaged over the global batch by the step,
        as Keras' 'sum_over_batch_size' divides the weighted sum by the batch size."""
        values = self._unweighted_loss(batch, outputs)
        return values * tf.cast(batch[2], tf.float32) if len(batch) > 2 else values

    def _unweighted_loss(self, batch, outputs):
        labels, outputs = batch[1], tf.cast(outputs, tf.float32)
        if self.loss_fn is None and not self.probabilities:
            return super().per_example_loss(batch, outputs)  # the zoo's (smoothed) loss
        if self.loss_fn is None:
            import tf_keras as keras
            onehot = tf.one_hot(labels, self.num_classes)
            return keras.losses.categorical_crossentropy(
                onehot, outputs, label_smoothing=self.label_smoothing)
        if not self.sparse and labels.shape.rank == outputs.shape.rank - 1:
            labels = tf.expand_dims(labels, -1)  # (B,) targets for (B, 1) outputs
        values = tf.cast(self.loss_fn(labels, outputs), tf.float32)
        extra_axes = list(range(1, values.shape.rank or 1))
        return tf.reduce_mean(values, axis=extra_axes) if extra_axes else values

    def eval_counts(self, batch, outputs):
        outputs = tf.cast(outputs, tf.float32)
        _update(self.metric_objects, self.weighted, batch, outputs)
        return {"loss_sum": tf.reduce_sum(self.per_example_loss(batch, outputs)),
                "count": tf.cast(tf.shape(batch[1])[0], tf.float32)}

    def reset_metrics(self):
        for metric in self.metric_objects:
            metric.reset_state()

    def update_train_metrics(self, batch, outputs):
        """The training metrics on one (micro-)batch, inside the step (no host read)."""
        _update(self.train_metric_objects, self.weighted, batch, tf.cast(outputs, tf.float32))

    def train_metrics(self):
        """{name: value} of the training metrics since the last reset (a host read)."""
        return {name: float(m.result())
                for name, m in zip(self.metric_names, self.train_metric_objects)}

    def reset_train_metrics(self):
        for metric in self.train_metric_objects:
            metric.reset_state()

    def metrics(self, sums):
        values = {name: float(m.result())
                  for name, m in zip(self.metric_names, self.metric_objects)}
        values["eval_loss"] = float(sums["loss_sum"] / max(sums["count"], 1.0))
        return values


def _update(metrics, weighted, batch, outputs):
    """Each metric on the batch; the weighted ones with its sample weights, if any."""
    labels, weights = _rank_matched(batch[1], outputs), batch[2] if len(batch) > 2 else None
    for metric, with_weights in zip(metrics, weighted):
        if with_weights and weights is not None:
            metric.update_state(labels, outputs, sample_weight=weights)
        else:
            metric.update_state(labels, outputs)


def _rank_matched(labels, outputs):
    """(B,) labels beside (B, n) outputs become (B, 1), as Keras' compiled metrics
    receive them (`compile_utils.match_dtype_and_rank`)."""
    if labels.shape.rank == 1 and outputs.shape.rank == 2:
        return tf.expand_dims(labels, -1)
    return labels


def _per_example_loss(loss, probabilities):
    import tf_keras as keras
    if isinstance(loss, keras.losses.Loss) or keras3.is_loss(loss):
        # `call` is a Loss's per-example value before its reduction, in both generations;
        # a copy from `get_config` would not do: Keras 3's Huber drops its `delta` there
        return loss.call
    if isinstance(loss, str):
        function = keras.losses.get(loss)
        if loss in _FROM_LOGITS_LOSSES:
            return lambda y, p: function(y, p, from_logits=not probabilities)
        return function
    return loss


def _metric(spec, sparse, loss, probabilities, shapes=None, name=None):
    """A fresh Metric for `spec` (made under the caller's strategy scope), named `name`.

    Names resolve as Keras' compile resolves them: 'accuracy' / 'acc' / 'crossentropy'
    by Keras' own rule on the label and output shapes (binary when the output has one
    unit, sparse when the labels have one dimension fewer or a last dimension of 1,
    else categorical), every other name through Keras' registry. mlbench's 'top1' and
    'top5' are the zoo's (sparse) top-k accuracies.
    """
    import tf_keras as keras
    name = name or _metric_name(spec)
    if not isinstance(spec, str):
        if isinstance(spec, keras.metrics.Metric) or keras3.is_metric(spec):
            return type(spec).from_config({**spec.get_config(), "name": name})
        return keras.metrics.MeanMetricWrapper(spec, name=name)
    if spec.lower() in _SHAPE_RESOLVED:
        if shapes is None and not sparse:
            raise ValueError(f"`metrics` entry {spec!r}: Keras resolves it from the label "
                             "and output shapes, which are not known here.")
        # without shapes: the zoo's data, integer class labels beside logits
        return _renamed(keras_metric(spec, *(shapes or _CLASS_LABELS)), name)
    if name in ("top1", "top5"):
        k = 1 if name == "top1" else 5
        return (keras.metrics.SparseTopKCategoricalAccuracy(k=k, name=name) if sparse or
                shapes is None or _sparse_labels(*shapes) else
                keras.metrics.TopKCategoricalAccuracy(k=k, name=name))
    if spec.lower() in _BY_NAME:
        return getattr(keras.metrics, _BY_NAME[spec.lower()])(name=name)
    found = keras.metrics.get(spec)
    if isinstance(found, keras.metrics.Metric):
        return type(found).from_config({**found.get_config(), "name": name})
    return keras.metrics.MeanMetricWrapper(found, name=name)


_SHAPE_RESOLVED = ("accuracy", "acc", "crossentropy", "ce")
_CLASS_LABELS = (tf.TensorSpec((None,), tf.int32), tf.TensorSpec((None, None), tf.float32))
# Metric names Keras 3's registry resolves but tf_keras' `metrics.get` does not (it
# returns the string): the same classes, by name.
_BY_NAME = {"auc": "AUC", "precision": "Precision", "recall": "Recall"}
_NOT_IN_REGISTRY = tuple(_BY_NAME) + _SHAPE_RESOLVED + ("top1", "top5")


def keras_metric(spec, label_spec, output_spec):
    """The Metric Keras' compile makes for `spec` given these label and output specs
    (with their batch dimension): tf_keras' own `MetricsContainer` resolver, whose rule
    Keras 3's `get_metric` repeats line for line."""
    from tf_keras.src.engine import compile_utils
    return compile_utils.MetricsContainer()._get_metric_object(spec, label_spec, output_spec)


def _renamed(metric, name):
    metric._name = name
    return metric


def _sparse_labels(label_spec, output_spec):
    return label_spec.shape.rank < output_spec.shape.rank or (
        label_spec.shape[-1] == 1 and output_spec.shape[-1] != 1)
