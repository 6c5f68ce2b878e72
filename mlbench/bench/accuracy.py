"""MLPerf Inference's accuracy mode on MLCommons' LoadGen: LoadGen issues every sample of
the library once and logs each answer in `mlperf_log_accuracy.json`; the accuracy is read
back from that log (as MLCommons' accuracy scripts read it: one hex-encoded answer per
`qsl_idx`) and held to the float32 model's own accuracy on the same samples. MLPerf's
rule: at least 99 % of it (`RULE`).

The answer mlbench's system under test gives for a sample is its top-1 class, an int32.
"""
import dataclasses
import json
import os

import numpy as np

RULE = 0.99  # MLPerf Inference: the accuracy held to 99 % of the float32 model's
LOG = "mlperf_log_accuracy.json"


@dataclasses.dataclass(frozen=True)
class AccuracyResult:
    """An accuracy-mode run.

    Attributes:
      scenario: the LoadGen scenario the samples were issued in.
      accuracy: top-1 over the library, from LoadGen's accuracy log.
      reference: the float32 model's top-1 on the same samples (a straight forward pass).
      samples: samples in the library (each answered once, as the log shows).
      precision: what the model ran in.
      log_dir: LoadGen's logs and `accuracy.txt`.
    """
    scenario: str
    accuracy: float
    reference: float
    samples: int
    precision: str
    log_dir: str

    @property
    def ratio(self):
        return self.accuracy / self.reference if self.reference else float("nan")

    @property
    def passed(self):
        return self.ratio >= RULE

    def line(self):
        verdict = "PASS" if self.passed else "FAIL"
        return (f"{self.scenario} accuracy: top-1 {self.accuracy:.4%} over {self.samples} "
                f"samples ({self.precision}) = {self.ratio:.4%} of the float32 model's "
                f"{self.reference:.4%}: {verdict} (MLPerf: at least {RULE:.0%})")


def of_run(model_dir, scenarios=("Offline",), log_dir_of=None, precision="auto",
           batch_size=32, jit_compile=False):
    """Accuracy mode on a model_dir's eval set, one AccuracyResult per scenario: the model
    in `precision` ('auto': as trained) judged against the same checkpoint rebuilt in
    float32, both built once. `log_dir_of(scenario)` names each scenario's log folder."""
    from mlbench.bench import loadgen
    served = loadgen.model_forward(model_dir, precision=precision, jit_compile=jit_compile)
    if served.labels is None:
        raise ValueError(f"`model` ({model_dir!r}): accuracy needs a model_dir with an eval "
                         "set; this run has none.")
    reference = served if served.policy == "float32" else \
        loadgen.model_forward(model_dir, precision="float32")
    inputs = served.make_samples(len(served.labels)).numpy()
    log_dir_of = log_dir_of or (lambda scenario: loadgen.default_log_dir(
        model_dir, f"{scenario}_accuracy"))
    return [run(served.forward, inputs, served.labels, reference.forward, scenario,
                log_dir_of(scenario), served.policy, batch_size) for scenario in scenarios]


def run(forward, inputs, labels, reference_forward, scenario, log_dir, precision,
        batch_size=32):
    """LoadGen in accuracy mode over `inputs` (every sample once), judged against
    `reference_forward` (the float32 model) on the same samples."""
    import mlperf_loadgen as lg
    import tensorflow as tf
    from mlbench.bench import loadgen
    loadgen.check_scenario(scenario, server_target_qps=1.0)  # Server: any rate will do
    os.makedirs(log_dir, exist_ok=True)
    samples = tf.constant(inputs)
    settings = lg.TestSettings()
    settings.scenario = getattr(lg.TestScenario, scenario)
    settings.mode = lg.TestMode.AccuracyOnly
    sut = loadgen.SystemUnderTest(forward, samples, batch_size, lg, response=top1_answers)
    loadgen.start(lg, sut, len(inputs), settings, log_dir)
    predictions = read_predictions(os.path.join(log_dir, LOG), len(inputs))
    reference = float(np.mean(_top1(reference_forward, samples, batch_size) == labels))
    result = AccuracyResult(scenario, float(np.mean(predictions == labels)), reference,
                            len(inputs), precision, log_dir)
    with open(os.path.join(log_dir, "accuracy.txt"), "w") as f:
        f.write(f"accuracy={100 * result.accuracy:.3f}%, good="
                f"{int(np.sum(predictions == labels))}, total={len(inputs)}\n"
                f"float32 reference={100 * reference:.3f}%, ratio={100 * result.ratio:.3f}%"
                f" (at least {100 * RULE:g}%): {'PASS' if result.passed else 'FAIL'}\n")
    return result


def top1_answers(outputs):
    """Each sample's answer: its top-1 class as one int32 (the first output, if several)."""
    logits = outputs[0] if isinstance(outputs, (list, tuple)) else outputs
    return [np.asarray([c], np.int32) for c in np.argmax(logits, axis=-1)]


def read_predictions(path, sample_count):
    """The answer to each library sample, from LoadGen's accuracy log; refused unless
    every sample was answered exactly once."""
    with open(path) as f:
        entries = json.load(f)
    indices = [e["qsl_idx"] for e in entries]
    if sorted(indices) != list(range(sample_count)):
        raise RuntimeError(f"LoadGen's accuracy log ({path}) answers {len(entries)} samples "
                           f"({len(set(indices))} distinct) of a library of {sample_count}: "
                           "each must be answered once.")
    predictions = np.empty(sample_count, np.int64)
    for entry in entries:
        predictions[entry["qsl_idx"]] = np.frombuffer(bytes.fromhex(entry["data"]),
                                                      np.int32)[0]
    return predictions


def _top1(forward, samples, batch_size):
    import tensorflow as tf
    return np.concatenate([
        np.argmax(tf.nest.flatten(forward(samples[i:i + batch_size]))[0].numpy(), -1)
        for i in range(0, int(samples.shape[0]), batch_size)])
