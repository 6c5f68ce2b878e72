"""Whether the run learnt: a validation metric that ends below its best by more than its
noise, or a training loss that ends above where it started, is said so, with the
learning rate that ran as the thing to change; such a run is never called ok."""
import math

from mlbench.diagnosis.findings import Finding

# lower is better for these; every other metric mlbench reports is an accuracy
LOWER_IS_BETTER = ("eval_loss", "loss")
NOISE_SIGMAS = 2  # an accuracy below its best by more than 2 binomial standard errors
LOSS_NOISE = 0.10  # a loss-only metric: more than 10 % above its best


def primary_metric(metrics):
    """The metric a run is judged by: its first accuracy-like one, else eval_loss."""
    names = [n for n in metrics if n not in LOWER_IS_BETTER]
    return names[0] if names else next(iter(metrics), None)


def _noise(name, best, eval_examples):
    """How far below its best a metric may end by chance (a binomial standard error of an
    accuracy on the eval set; a relative margin for a loss)."""
    if name in LOWER_IS_BETTER:
        return abs(best) * LOSS_NOISE
    if not eval_examples:
        return 0.02
    return NOISE_SIGMAS * math.sqrt(max(best * (1 - best), 1e-4) / eval_examples)


def _at_chance(name, evals, num_classes, eval_examples):
    """{'last', 'chance'} when the last eval's accuracy is within noise of guessing."""
    if name is None or name in LOWER_IS_BETTER or not num_classes or num_classes < 2:
        return None
    chance, last = 1.0 / num_classes, evals[-1][1][name]
    if last > chance + _noise(name, chance, eval_examples):
        return None
    return {"last": last, "chance": chance}


def _worse(name, value, best, noise):
    return value > best + noise if name in LOWER_IS_BETTER else value < best - noise


def finding(history, learning_rate, rate_source, eval_examples=None, num_classes=None):
    """The learning finding of a finished run (`history`: the loop's records;
    `num_classes`: an accuracy no better than 1 / num_classes is at chance)."""
    evals = [(r["step"], r["metrics"]) for r in history if r.get("metrics")]
    losses = [r["loss"] for r in history if r.get("loss") is not None
              and math.isfinite(r["loss"])]
    figures = {"learning_rate": learning_rate, "learning_rate_source": rate_source}
    advice = (f"Learning rate too high? It was {learning_rate:g} ({rate_source}): try "
              f"{learning_rate / 4:g} (`learning_rate=`).")
    name = primary_metric(evals[-1][1]) if evals else None
    at_chance = _at_chance(name, evals, num_classes, eval_examples)
    if at_chance is not None:
        figures.update(at_chance)
        return Finding("learning", "problem", "at chance",
                       f"the validation {name} ended at {at_chance['last']:.4g}, no better "
                       f"than chance ({at_chance['chance']:.4g}) by more than its noise.",
                       figures, advice)
    if name is not None and len(evals) > 1:
        values = [(step, metrics[name]) for step, metrics in evals if name in metrics]
        pick = min if name in LOWER_IS_BETTER else max
        best_step, best = pick(values, key=lambda sv: sv[1])
        last_step, last = values[-1]
        noise = _noise(name, best, eval_examples)
        figures.update(metric=name, best=best, best_step=best_step, last=last,
                       last_step=last_step, noise=noise)
        if _worse(name, last, best, noise):
            return Finding("learning", "problem", "got worse",
                           f"the validation {name} ended at {last:.4g} (step {last_step}), "
                           f"below its best {best:.4g} (step {best_step}) by more than its "
                           f"noise ({noise:.2g}).", figures, advice)
    if len(losses) > 1:
        figures.update(first_loss=losses[0], last_loss=losses[-1])
        if losses[-1] > losses[0]:
            return Finding("learning", "problem", "loss rose",
                           f"the training loss ended at {losses[-1]:.4g}, above its start "
                           f"{losses[0]:.4g}.", figures, advice)
    if len(losses) < 2 and len(evals) < 2:
        return Finding("learning", "ok", "too short to tell",
                       "fewer than two loss records and evals.", figures)
    said = (f"the validation {name} ended at {figures['last']:.4g}, within its noise of "
            f"its best {figures['best']:.4g}" if "best" in figures else
            f"the training loss fell from {figures['first_loss']:.4g} to "
            f"{figures['last_loss']:.4g}")
    return Finding("learning", "ok", "learning", f"{said} (learning rate {learning_rate:g}, "
                   f"{rate_source}).", figures)
