"""Loss and metric curves of a train run, from its TensorBoard event files (read with
TensorBoard's own EventAccumulator: the loop writes TF2 scalar summaries, stored as
tensors), else from result.json's history."""
import os

PANELS = ("train", "validation")


def read(model_dir):
    """{"train/loss": [[step, value], ...], "validation/<metric>": ...}, or {} when the
    run wrote no events."""
    from tensorboard.backend.event_processing import event_accumulator
    from tensorboard.util import tensor_util
    series = {}
    for panel in PANELS:
        folder = os.path.join(model_dir, panel)
        if not os.path.isdir(folder):
            continue
        accumulator = event_accumulator.EventAccumulator(
            folder, size_guidance={event_accumulator.TENSORS: 0})
        accumulator.Reload()
        for tag in accumulator.Tags().get("tensors", []):
            values = [(e.step, tensor_util.make_ndarray(e.tensor_proto))
                      for e in accumulator.Tensors(tag)]
            if all(v.size == 1 and v.dtype.kind == "f" for _, v in values):  # scalars only
                series[f"{panel}/{tag}"] = [[step, float(v)] for step, v in values]
    return series


def from_history(history):
    """The same series from result.json's history (one record per block of steps)."""
    series = {}
    for record in history:
        if record.get("loss") is not None:
            series.setdefault("train/loss", []).append([record["step"], record["loss"]])
        for name, value in (record.get("metrics") or {}).items():
            series.setdefault(f"validation/{name}", []).append([record["step"], value])
    return series
