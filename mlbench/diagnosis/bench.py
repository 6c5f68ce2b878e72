"""The diagnosis of a benchmark: the pipeline alone, and with `diagnose` the step on
synthetic data of the same shape and on one device, measured in the same command."""
from mlbench.diagnosis import compile as compile_lib
from mlbench.diagnosis import pipeline, scaling
from mlbench.diagnosis.run import local_replicas, time_host_pipeline


def findings(plan, step, result, rerun, diagnose, published_rates=None):
    """The findings of a benchmark `result` (dicts); `rerun(**changes)` runs the same
    benchmark with some arguments changed (quietly, without its own diagnosis);
    `published_rates`: {platform: one device's published images/sec of this model}."""
    rate, replicas = result.images_per_sec.mean, plan.distribution.replicas
    found = []
    if plan.source.on_device:
        found.append(pipeline.on_device(rate))
    else:
        timed = time_host_pipeline(plan)
        step_rate = None
        if diagnose:
            synthetic = rerun(data="synthetic", data_dir=None,
                              num_classes=plan.model.num_classes)
            step_rate = synthetic.images_per_sec.mean
        if timed is not None:
            here = local_replicas(plan)
            found.append(pipeline.finding(timed["examples_per_second"],
                                          rate * here / replicas,
                                          step_rate and step_rate * here / replicas,
                                          replicas=here, published_rates=published_rates))
    found.append(compile_lib.finding(step.traces, step.jit_compile, step.xla_fallback,
                                     result.compile_s))
    if diagnose and replicas > 1:
        one = rerun(num_devices=1)
        input_bound = any(f.topic == "input" and f.verdict == "input-bound" for f in found)
        found.append(scaling.finding(rate, replicas, one.images_per_sec.mean,
                                     input_bound))
    return found
