"""Compile: how often the step was traced, why it was traced again, what XLA refused.

A retrace after the first call means the step compiled again mid-run (seconds each,
minutes with XLA on a large model: tensorflow#53774); its cause is what changed in the
step's inputs, recorded by `TrainStep` at every trace.
"""
from mlbench.diagnosis.findings import Finding

FIXED_SHAPES = ("Give the step inputs of one shape: batch with drop_remainder=True, pad "
                "variable-length features to a fixed length (or a few buckets), and pass "
                "numbers that change as tensors, not Python values.")


def finding(traces, jit_compile, xla_fallback=None, compile_s=None):
    """The compile finding of a step's `traces` (TrainStep.traces)."""
    retraces = traces[1:]
    figures = {"traces": len(traces), "retraces": len(retraces),
               "first_call_s": traces[0]["seconds"] if traces else None,
               "trace_s": traces[0].get("trace_s") if traces else None,
               "compile_s": compile_s, "jit_compile": jit_compile,
               "xla_fallback": xla_fallback,
               "retraced_at": [{k: t[k] for k in ("step", "inputs", "cause", "seconds")}
                               for t in retraces]}
    how = "with XLA" if jit_compile else "without XLA"
    first = (f"the first call took {figures['first_call_s']:.2f} s: tracing "
             f"{figures['trace_s']:.2f} s, then compiling {how} and running its steps "
             f"{figures['first_call_s'] - figures['trace_s']:.2f} s" if traces
             else "the step was never traced here")
    if retraces:
        t = retraces[0]
        return Finding("compile", "warning", "retraced after warm-up",
                       f"the step was traced {len(traces)} times; {first}. Retraced at step "
                       f"{t['step']} ({t['seconds']:.2f} s for that call): {t['cause']}.",
                       figures, FIXED_SHAPES)
    if xla_fallback:
        return Finding("compile", "warning", "XLA refused the step",
                       f"XLA could not compile the step ({xla_fallback}); it ran "
                       f"uncompiled. {first[0].upper()}{first[1:]}.", figures,
                       "Run with jit_compile=False to skip the failed attempt, or find the "
                       "op XLA lacks in the message above.")
    return Finding("compile", "ok", "traced once",
                   f"the step was traced {len(traces)} time{'s' if len(traces) != 1 else ''}"
                   f"; {first}.", figures)
