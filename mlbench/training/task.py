"""One replica's maths: inputs, per-example loss and eval counts per task.

Losses are per example (reduction NONE); the step averages them over the
*global* batch with `tf.nn.compute_average_loss`, so all-reduced gradients
are the global-batch mean and k micro-batches equal one batch of k·b.
"""
import tensorflow as tf

from mlbench import keras3


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


def produced_metrics(model_info, loss=None, metrics=None):
    """The metric names a run of this model reports (checked against `target`)."""
    if model_info.kind == "bert":
        return BertPretrainingTask.metric_names
    if uses_keras_task(model_info, loss, metrics):
        return metric_names(loss, metrics)
    return ClassificationTask.metric_names


def for_model(model_info, num_classes, label_smoothing=0.0, loss=None, metrics=None,
              probabilities=False):
    """The task of a model; build it under the strategy's scope (KerasTask's metrics)."""
    if model_info.kind == "bert":
        return BertPretrainingTask()
    if uses_keras_task(model_info, loss, metrics):
        return KerasTask(num_classes, loss, metrics, probabilities, label_smoothing)
    return ClassificationTask(num_classes, label_smoothing)


# --- your own model: a loss and metrics (names, or objects of either Keras generation) ---

SPARSE_CE = "sparse_categorical_crossentropy"
_FROM_LOGITS_LOSSES = (SPARSE_CE, "categorical_crossentropy", "binary_crossentropy")
_METRIC_ALIASES = {"acc": "accuracy", "top_1": "top1", "top-1": "top1", "top_5": "top5",
                   "top-5": "top5", "top_5_accuracy": "top5"}


def classifies(loss):
    """Whether `loss` means integer class labels (the default: sparse cross-entropy)."""
    return loss is None or loss == SPARSE_CE


def metric_names(loss, metrics):
    """The metrics a KerasTask reports (known before anything is built), eval_loss last."""
    specs = default_metrics(loss) if metrics is None else list(metrics)
    return tuple(_metric_name(m) for m in specs) + ("eval_loss",)


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
        if isinstance(spec, str) and name not in ("accuracy", "top1", "top5", "auc"):
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
                 label_smoothing=0.0):
        super().__init__(num_classes, label_smoothing)
        self.probabilities = probabilities
        self.loss_fn = None if loss is None else _per_example_loss(loss, probabilities)
        self.sparse = classifies(loss)
        specs = default_metrics(loss) if metrics is None else list(metrics)
        self.metric_objects = [_metric(s, self.sparse, loss, probabilities) for s in specs]
        self.metric_names = metric_names(loss, metrics)

    def per_example_loss(self, batch, outputs):
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
        for metric in self.metric_objects:
            metric.update_state(batch[1], outputs)
        return {"loss_sum": tf.reduce_sum(self.per_example_loss(batch, outputs)),
                "count": tf.cast(tf.shape(batch[1])[0], tf.float32)}

    def reset_metrics(self):
        for metric in self.metric_objects:
            metric.reset_state()

    def metrics(self, sums):
        values = {name: float(m.result())
                  for name, m in zip(self.metric_names, self.metric_objects)}
        values["eval_loss"] = float(sums["loss_sum"] / max(sums["count"], 1.0))
        return values


def _per_example_loss(loss, probabilities):
    import tf_keras as keras
    if isinstance(loss, keras.losses.Loss):  # a fresh copy that does not reduce
        return type(loss).from_config({**loss.get_config(), "reduction": "none"})
    if keras3.is_loss(loss):  # Keras 3 says "no reduction" with None
        return type(loss).from_config({**loss.get_config(), "reduction": None})
    if isinstance(loss, str):
        function = keras.losses.get(loss)
        if loss in _FROM_LOGITS_LOSSES:
            return lambda y, p: function(y, p, from_logits=not probabilities)
        return function
    return loss


def _metric(spec, sparse, loss, probabilities):
    """A fresh tf_keras Metric for `spec` (made under the caller's strategy scope)."""
    import tf_keras as keras
    name = _metric_name(spec)
    if not isinstance(spec, str):
        if isinstance(spec, keras.metrics.Metric) or keras3.is_metric(spec):
            return type(spec).from_config(spec.get_config())  # variables this scope owns
        return keras.metrics.MeanMetricWrapper(spec, name=name)
    if name in ("accuracy", "top1"):
        if sparse:
            return keras.metrics.SparseCategoricalAccuracy(name=name)
        if loss == "binary_crossentropy":
            return keras.metrics.BinaryAccuracy(name=name, threshold=0.5 if probabilities
                                                else 0.0)
        return keras.metrics.Accuracy(name=name)
    if name == "top5":
        return keras.metrics.SparseTopKCategoricalAccuracy(k=5, name=name)
    if name == "auc":
        return keras.metrics.AUC(name=name, from_logits=not probabilities)
    found = keras.metrics.get(name)
    if isinstance(found, keras.metrics.Metric):
        return type(found).from_config({**found.get_config(), "name": name})
    return keras.metrics.MeanMetricWrapper(found, name=name)
