"""A model of your own with several outputs: one KerasTask per output, as Keras' compile
gives each output its own loss, weight and metrics.

compile()'s (or mlbench's) `loss`, `loss_weights`, `metrics` and `weighted_metrics` are
spread over the outputs the way Keras spreads them: one loss (or a flat list of metrics)
for every output; a list by position; a dict by output name. The loss is the weighted
sum of the outputs' losses; metrics and per-output losses are reported under Keras' names
(`<output>_<metric>`, `<output>_loss`). Labels (and outputs) come as a tuple or list by
position or a dict by output name, as `fit` takes them.
"""
import tensorflow as tf

from mlbench.training.task import KerasTask, metric_names


def is_multi(info):
    """Whether a model (its ModelInfo) has several outputs."""
    return len(getattr(info, "output_names", None) or ()) > 1


def spread_objective(info, loss, loss_weights, metrics, weighted):
    """(losses, weights, metrics, weighted metrics), one entry per output; a missing loss
    is refused, as an output without one would silently not train."""
    names = info.output_names
    losses = spread(loss, names, "loss")
    missing = [n for n, value in zip(names, losses) if value is None]
    if missing:
        raise ValueError(f"`model` ({info.name!r}) has outputs {list(names)} and no loss for "
                         f"{missing}: compile it with a loss per output (a list, or a dict "
                         "by output name), or give `loss=`.")
    return (losses, spread(loss_weights, names, "loss_weights", 1.0),
            spread(metrics, names, "metrics"), spread(weighted, names, "weighted_metrics"))


def produced_for(info, objective):
    losses, _, metrics, weighted = spread_objective(
        info, objective.loss, objective.loss_weights, objective.metrics,
        objective.weighted_metrics)
    return produced(info.output_names, losses, metrics, weighted)


def task_for(info, objective, probabilities, shapes, output_spec):
    """The MultiOutputTask of a model of your own (build it under the strategy's scope);
    `probabilities` and `shapes` ((label spec, output spec)) per output; `output_spec`:
    the model's outputs as it returns them (a list or a dict)."""
    losses, weights, metrics, weighted = spread_objective(
        info, objective.loss, objective.loss_weights, objective.metrics,
        objective.weighted_metrics)
    return MultiOutputTask(info.output_names, losses, weights, metrics, weighted,
                           probabilities, shapes, output_spec)


def spread(value, names, what, default=None):
    """`value` per output name: broadcast, by position, or by name (Keras' rule)."""
    if isinstance(value, dict):
        unknown = sorted(set(value) - set(names))
        if unknown:
            raise ValueError(f"`{what}` names {unknown}, which are no outputs of the model; "
                             f"its outputs are {list(names)}.")
        return [value.get(n, default) for n in names]
    nested = isinstance(value, (list, tuple)) and (
        what in ("loss", "loss_weights") or
        any(isinstance(v, (list, tuple, dict)) or v is None for v in value))
    if nested:
        if len(value) != len(names):
            raise ValueError(f"`{what}` ({value!r}) has {len(value)} entries for a model "
                             f"with {len(names)} outputs {list(names)}.")
        return list(value)
    return [value if value is not None else default] * len(names)


def produced(names, losses, metrics, weighted):
    """The metric names a multi-output run reports (known before anything is built)."""
    found = []
    for name, loss, m, w in zip(names, losses, metrics, weighted):
        found += [f"{name}_{n}" for n in metric_names(loss, listed(m), listed(w))[:-1]]
    return tuple(found) + tuple(f"{n}_loss" for n in names) + ("eval_loss",)


def listed(value):
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _pick(structure, index, name):
    return structure[name] if isinstance(structure, dict) else structure[index]


class MultiOutputTask:
    """One KerasTask per output; build it under the strategy's scope (its metrics)."""

    def __init__(self, names, losses, weights, metrics, weighted, probabilities, shapes,
                 output_spec=None):
        self.output_spec = output_spec  # the step's empty eval outputs follow its structure
        self.names, self.weights = list(names), [1.0 if w is None else float(w)
                                                 for w in weights]
        self.tasks = [KerasTask(0, loss, listed(m), p, 0.0, listed(w), s)
                      for loss, m, w, p, s in zip(losses, metrics, weighted, probabilities,
                                                  shapes)]
        self.metric_names = produced(names, losses, metrics, weighted)
        import tf_keras
        # each output's training loss over the epoch, as fit logs `<output>_loss`
        self.loss_trackers = [tf_keras.metrics.Mean(name=f"{n}_loss") for n in names]
        self.count_names = ("loss_sum", "count") + tuple(f"{n}_loss_sum" for n in names)

    def inputs(self, batch):
        return batch[0]

    def _parts(self, batch, outputs):
        for i, (name, task) in enumerate(zip(self.names, self.tasks)):
            yield task, (batch[0], _pick(batch[1], i, name), *batch[2:]), \
                _pick(outputs, i, name)

    def per_example_loss(self, batch, outputs):
        """Σ weight × the output's per-example loss, as Keras sums the outputs' losses."""
        return tf.add_n([w * task.per_example_loss(part, out) for w, (task, part, out)
                         in zip(self.weights, self._parts(batch, outputs))])

    def eval_counts(self, batch, outputs):
        counts, total = {}, []
        for name, w, (task, part, out) in zip(self.names, self.weights,
                                              self._parts(batch, outputs)):
            sums = task.eval_counts(part, out)
            counts[f"{name}_loss_sum"] = sums["loss_sum"]
            total.append(w * sums["loss_sum"])
            counts["count"] = sums["count"]
        counts["loss_sum"] = tf.add_n(total)
        return counts

    def reset_metrics(self):
        for task in self.tasks:
            task.reset_metrics()

    def metrics(self, sums):
        count = max(sums["count"], 1.0)
        values = {}
        for name, task in zip(self.names, self.tasks):
            values.update({f"{name}_{k}": v for k, v in task.metrics(
                {"loss_sum": sums[f"{name}_loss_sum"], "count": count}).items()
                if k != "eval_loss"})
        values.update({f"{n}_loss": sums[f"{n}_loss_sum"] / count for n in self.names})
        values["eval_loss"] = sums["loss_sum"] / count
        return values

    def update_train_metrics(self, batch, outputs):
        for tracker, (task, part, out) in zip(self.loss_trackers,
                                              self._parts(batch, outputs)):
            task.update_train_metrics(part, out)
            tracker.update_state(task.per_example_loss(part, out))

    def train_metrics(self):
        values = {f"{name}_{k}": v for name, task in zip(self.names, self.tasks)
                  for k, v in task.train_metrics().items()}
        values.update({t.name: float(t.result()) for t in self.loss_trackers})
        return values

    def reset_train_metrics(self):
        for task, tracker in zip(self.tasks, self.loss_trackers):
            task.reset_train_metrics()
            tracker.reset_state()
