"""One replica's maths: inputs, per-example loss and eval counts per task.

Losses are per example (reduction NONE); the step averages them over the
*global* batch with `tf.nn.compute_average_loss`, so all-reduced gradients
are the global-batch mean and k micro-batches equal one batch of k·b.
"""
import tensorflow as tf


class ClassificationTask:
    """Images (or vectors) → logits; metric top-1 accuracy."""
    metric_names = ("top1",)
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
    metric_names = ("masked_lm_accuracy",)
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

    @staticmethod
    def metrics(sums):
        return {"masked_lm_accuracy": float(sums["mlm_correct"] / max(sums["mlm_count"], 1.0)),
                "eval_loss": float(sums["loss_sum"] / max(sums["examples"], 1.0))}


def for_model(kind, num_classes, label_smoothing=0.0):
    if kind == "bert":
        return BertPretrainingTask()
    return ClassificationTask(num_classes, label_smoothing)
