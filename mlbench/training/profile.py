"""Profiles of training blocks (`trace_dir`) and where their time goes.

`Profile` traces one block with the TensorFlow profiler (TensorBoard's profile
tab reads it); `summarize` breaks the trace down per category of op.

TensorBoard's profile plugin reads these traces, but it is not in the pinned stack
and it is a UI. The XSpace protobuf the profiler writes ships with TensorFlow
(`tensorflow.tsl.profiler.protobuf.xplane_pb2`), so mlbench reads it directly: every
TensorFlow op event ("scope/name:OpType") on the host plane is put in one category,
and the time no op was running (host gaps) is measured against the traced step's
wall-clock time.

On a CPU several ops can run at once (inter-op threads), so op times add up to more
than the wall time. Categories are therefore shares of the summed op time; the idle
share is a share of the wall time.
"""
import collections
import dataclasses
import glob
import os
from typing import Dict, List, Tuple

import tensorflow as tf

# Ops that only call other ops: their time is their children's, counted there.
_CONTAINERS = frozenset({"While", "StatelessWhile", "If", "StatelessIf", "Case",
                         "PartitionedCall", "StatefulPartitionedCall"})
_INPUT_OPS = ("IteratorGetNext", "MultiDeviceIteratorGetNextFromShard", "OptionalGetValue")
CATEGORIES = ("matmul/conv", "normalisation", "softmax", "elementwise", "casts",
              "optimizer update", "input")


@dataclasses.dataclass(frozen=True)
class Breakdown:
    """One traced block of steps.

    Attributes:
      wall_ms: wall-clock time of the traced block (the compiled loop's call).
      op_ms: summed time of every op (across threads; can exceed wall_ms).
      categories: category -> ms of op time (CATEGORIES order).
      idle_ms: wall time during which no op ran (host gaps, launch overhead).
      backward_share: share of op time spent in the gradient computation.
      top_ops: the most expensive op types, (type, ms), longest first.
    """
    wall_ms: float
    op_ms: float
    categories: Dict[str, float]
    idle_ms: float
    backward_share: float
    top_ops: List[Tuple[str, float]]

    def shares(self):
        """Category -> share of op time (sums to 1)."""
        return {name: ms / self.op_ms for name, ms in self.categories.items()}

    def table(self):
        """A few printable lines: each category's share, then idle time and top ops."""
        lines = [f"traced block: {self.wall_ms:.0f} ms wall, {self.op_ms:.0f} ms of op time "
                 f"({self.backward_share:.0%} of it in the backward pass)"]
        lines += [f"  {name:<17} {share:6.1%}" for name, share in self.shares().items()]
        lines.append(f"  idle (no op running) {self.idle_ms / self.wall_ms:6.1%} of wall time")
        lines.append("  top ops: " + ", ".join(f"{op} {ms:.0f} ms" for op, ms in self.top_ops))
        return "\n".join(lines)


def category(op_name, op_type):
    """The category of one op, from its type and its name scope."""
    scope = op_name.lower()
    if op_type.startswith(_INPUT_OPS):
        return "input"
    if "/update" in scope or op_type.startswith(("ResourceApply", "ApplyAdam")):
        return "optimizer update"
    if any(k in op_type for k in ("Conv2D", "MatMul", "Einsum", "Conv3D")):
        return "matmul/conv"
    if "BatchNorm" in op_type or "layer_norm" in scope or "layernorm" in scope:
        return "normalisation"
    if "Softmax" in op_type:
        return "softmax"
    if op_type in ("Cast", "_MklCast"):
        return "casts"
    return "elementwise"


def latest_trace(trace_dir):
    """The newest `*.xplane.pb` under `trace_dir` (TensorBoard's plugins/profile layout)."""
    found = glob.glob(os.path.join(trace_dir, "plugins", "profile", "*", "*.xplane.pb"))
    if not found:
        raise FileNotFoundError(f"`trace_dir` ({trace_dir!r}) holds no profile "
                                "(plugins/profile/*/*.xplane.pb); trace a run into it first.")
    return max(found, key=os.path.getmtime)


def summarize(trace_dir, top=5):
    """The Breakdown of the newest profile in `trace_dir`."""
    from tensorflow.tsl.profiler.protobuf import xplane_pb2  # ships with TensorFlow
    space = xplane_pb2.XSpace()
    with open(latest_trace(trace_dir), "rb") as f:
        space.ParseFromString(f.read())
    host = next(p for p in space.planes if p.name == "/host:CPU")
    ops, wall = _op_events(host), _traced_wall(host)
    by_category = collections.Counter({name: 0.0 for name in CATEGORIES})
    by_type, backward = collections.Counter(), 0.0
    for name, op_type, _, duration in ops:
        by_category[category(name, op_type)] += duration
        by_type[op_type] += duration
        backward += duration if "gradient_tape/" in name else 0.0
    op_ms = sum(by_category.values())
    if not op_ms:
        raise ValueError(f"The profile in {trace_dir!r} holds no TensorFlow op events.")
    return Breakdown(wall_ms=wall[1] - wall[0], op_ms=op_ms,
                     categories={k: by_category[k] for k in CATEGORIES},
                     idle_ms=_idle(ops, wall), backward_share=backward / op_ms,
                     top_ops=by_type.most_common(top))


def _op_events(plane):
    """(name, type, start_ms, duration_ms) of every TensorFlow op on the plane."""
    events = []
    for line in plane.lines:
        start_ms = line.timestamp_ns / 1e6
        for event in line.events:
            name, _, op_type = plane.event_metadata[event.metadata_id].name.rpartition(":")
            if _is_op(name, op_type):
                events.append((name, op_type, start_ms + event.offset_ps / 1e9,
                               event.duration_ps / 1e9))
    return events


def _is_op(name, op_type):
    """TensorFlow ops are named "scope/name:OpType"; runtime events ("Executor::Run",
    "EagerLocalExecute: fn") are not ops."""
    return bool(name and op_type) and op_type.isidentifier() and not name.endswith(":") \
        and op_type not in _CONTAINERS


def _traced_wall(plane):
    """(start, end) in ms of the longest host event: the traced call of the compiled loop."""
    longest = max(((line.timestamp_ns / 1e6 + e.offset_ps / 1e9, e.duration_ps / 1e9)
                   for line in plane.lines for e in line.events), key=lambda t: t[1])
    return longest[0], longest[0] + longest[1]


def _idle(ops, wall):
    """Wall time inside `wall` covered by no op (the union of op intervals, subtracted)."""
    busy, reach = 0.0, wall[0]
    for _, _, start, duration in sorted(ops, key=lambda op: op[2]):
        start, end = max(start, reach), min(start + duration, wall[1])
        if end > start:
            busy += end - start
            reach = end
    return max(0.0, (wall[1] - wall[0]) - busy)


class Profile:
    """A TensorBoard profile of one block; its breakdown is logged when it ends."""

    def __init__(self, logdir, log):
        self.logdir, self.log = logdir, log

    def __enter__(self):
        tf.profiler.experimental.start(self.logdir)

    def __exit__(self, exc_type, *exc):
        tf.profiler.experimental.stop()
        if self.log and exc_type is None:
            self.log(f"profile in {self.logdir}:\n{summarize(self.logdir).table()}")
