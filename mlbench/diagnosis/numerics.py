"""Numerics: skipped steps and the loss scale of a run, and the first non-finite tensor of
a run that diverged.

"Loss becomes NaN, which layer?" (keras#16552, tensorflow#38357) is answered by
replaying the steps since the last finite state with TensorFlow's numeric checks on
(`tf.debugging.enable_check_numerics`): the first op whose output is NaN or Inf stops
the replay, and its graph node names the layer and whether it was the forward pass,
a gradient or a variable read.
"""
import math
import re

import tensorflow as tf

from mlbench.diagnosis.findings import Finding

MAX_REPLAY_STEPS = 2000  # a replay runs uncompiled with checks: bounded
SKIPPED_WARNING = 0.02  # more than 2 % of updates skipped is more than loss scaling's start


def finding(history, steps, precision):
    """The numerics finding of a run that finished: skipped updates and the loss scale."""
    skipped = sum(r.get("skipped_steps", 0) for r in history)
    scales = [r["loss_scale"] for r in history if r.get("loss_scale") is not None]
    figures = {"skipped_steps": skipped, "steps": steps, "precision": precision}
    bad = [r for r in history if r.get("loss") is not None and not math.isfinite(r["loss"])]
    if bad:  # only with Keras' TerminateOnNaN: without it the run raised instead
        figures.update(non_finite_loss=str(bad[0]["loss"]), at_step=bad[0]["step"])
        return Finding("numerics", "problem", "non-finite loss",
                       f"the loss was {bad[0]['loss']} in the block ending at step "
                       f"{bad[0]['step']}; TerminateOnNaN stopped the run there (the last "
                       "finite checkpoint stays).", figures,
                       "Lower the learning rate, or use float32 to tell a precision "
                       "problem from a divergence.")
    if not scales:
        return Finding("numerics", "ok", "finite throughout",
                       f"every block's loss was finite ({precision}, no loss scaling).",
                       figures)
    figures.update(loss_scale_first=scales[0], loss_scale_min=min(scales),
                   loss_scale_last=scales[-1], loss_scale_trajectory=scales)
    share = skipped / steps if steps else 0.0
    detail = (f"float16 loss scaling skipped {skipped} of {steps} updates ({share:.1%}); "
              f"the loss scale went from {scales[0]:g} to {scales[-1]:g} (lowest "
              f"{min(scales):g}).")
    if share > SKIPPED_WARNING or min(scales) < 1:
        return Finding("numerics", "warning", "many skipped updates", detail, figures,
                       "Gradients overflow float16 often: use mixed_bfloat16 where the "
                       "device has it, or lower the learning rate.")
    return Finding("numerics", "ok", "loss scaling settled", detail, figures)


def snapshot(variables):
    """The values of `variables` (host copies), to replay a divergence from."""
    return [(v, v.numpy()) for v in variables]


def restore(saved):
    for variable, value in saved:
        variable.assign(value)


def replay(step, inputs, num_steps, model):
    """Runs `num_steps` steps one at a time with numeric checks on, from the state the
    caller restored; the first non-finite tensor as a dict (node, op, layer, where,
    step_in_replay), or None when every step stayed finite."""
    jit_compile = step.jit_compile
    tf.debugging.enable_check_numerics()
    try:
        step.recompile(False)  # new traces, so the checks are instrumented into them
        for i in range(num_steps):
            try:
                step.run(inputs, 1)
            except tf.errors.InvalidArgumentError as e:
                if "CheckNumerics" not in str(e) and "Infinity or NaN" not in str(e):
                    raise
                return dict(located(str(e), layer_names(model)), step_in_replay=i + 1,
                            non_finite_variables=non_finite_variables(model))
        return None
    finally:
        tf.debugging.disable_check_numerics()
        step.recompile(jit_compile)


def located(message, layers):
    """What a check-numerics error names: its graph node, op, layer and where it was."""
    node = re.search(r"Detected at node '?([\w/.:-]+?)/CheckNumerics", message)
    op = re.search(r'graph op "(\w+)"', message)
    node = node.group(1) if node else None
    parts = node.split("/") if node else []
    layer = next((p for p in parts if p in layers), None)
    if any(p.startswith(("gradient_tape", "gradients")) for p in parts):
        where = "gradient"
    elif op and op.group(1) == "ReadVariableOp":
        where = "variable"
    else:
        where = "forward"
    return {"node": node, "op": op.group(1) if op else None, "layer": layer, "where": where}


def non_finite_variables(model, limit=5):
    """Names of the model's variables holding NaN or Inf (the first `limit`)."""
    bad = [v.name for v in model.variables if tf.as_dtype(v.dtype).is_floating and
           not bool(tf.reduce_all(tf.math.is_finite(v)))]
    return bad[:limit]


def layer_names(model):
    """Names of every layer in `model`, nested ones included (either Keras)."""
    names, stack = set(), list(getattr(model, "layers", []))
    while stack:
        layer = stack.pop()
        names.add(layer.name)
        stack.extend(getattr(layer, "layers", []) or [])
    return names


def divergence_finding(first, start_step, end_step):
    """The numerics finding of a diverged run, from `replay`'s answer."""
    figures = {"replayed_from_step": start_step, "diverged_by_step": end_step,
               "first_non_finite": first}
    if first is None:
        return Finding("numerics", "problem", "diverged",
                       f"the loss was not finite by step {end_step}; replaying steps "
                       f"{start_step + 1}-{end_step} with numeric checks found no NaN or "
                       "Inf (the replay runs uncompiled, and float results may differ).",
                       figures, "Lower the learning rate or use float32/bf16.")
    at = f"layer '{first['layer']}'" if first["layer"] else f"node {first['node']}"
    step = start_step + first["step_in_replay"]
    if first["where"] == "variable":  # an update has no output to check: the read caught it
        what = (f"the optimizer's update at step {step - 1} wrote NaN/Inf into weights "
                f"({', '.join(first['non_finite_variables'])}) from finite gradients: the "
                f"update itself overflowed; {at} read them first, at step {step}")
    else:
        what = (f"the first non-finite tensor was in the {first['where']} pass of {at} at "
                f"step {step}")
    return Finding("numerics", "problem", "diverged",
                   f"{what} (op {first['op']}, node {first['node']}; a replay from step "
                   f"{start_step} with numeric checks on).", figures,
                   "Lower the learning rate, clip gradients, or use float32/bf16.")
