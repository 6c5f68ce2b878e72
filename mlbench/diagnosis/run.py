"""The diagnosis of a train run, a listener of its events (`RunDiagnosis`): what it
measures before the run, the divergence it names when the run fails, and the findings
it makes of the run's outcome."""

from mlbench.plan import parts as parts_lib
from mlbench.diagnosis import compile as compile_lib
from mlbench.diagnosis import learning, numerics, pipeline
from mlbench.distribute import strategies
from mlbench.training.loop import DivergenceError
from mlbench.training.callbacks import Callback
from mlbench.training.checkpoints import latest_checkpoint


class RunDiagnosis(Callback):
    """Observes a train run: when it is configured, the input pipeline is timed alone
    and (a fresh run) the weights a divergence replay starts from are kept on the host;
    when the run fails by diverging, the error gets its first non-finite tensor named;
    `findings(outcome)` reads the finished run."""
    raises_as_the_run = True  # a corrupt shard met while timing is the run's own error

    def __init__(self, plan, parts):
        self.plan, self.parts = plan, parts
        self.timed_pipeline, self.start_state = None, None

    def on_configured(self, info):
        self.timed_pipeline = time_host_pipeline(self.plan)
        # a resumed run replays a divergence from its checkpoint: no host copy needed
        if not self.parts.resumed_from:
            self.start_state = numerics.snapshot(self.parts.step.state_variables())

    def on_run_error(self, error):
        if isinstance(error, DivergenceError):
            _name_divergence(error, self.plan, self.parts, self.start_state)

    def findings(self, outcome):
        return findings(self.plan, self.parts.step, outcome, self.timed_pipeline)


def time_host_pipeline(plan):
    """The train pipeline timed alone (bounded: `pipeline.MAX_BATCHES` batches or
    `MAX_SECONDS`), or None for data made on the devices or scheduled by a coordinator."""
    if strategies.is_parameter_server(plan.distribution.strategy):
        return None
    dataset = parts_lib.host_pipeline(plan)
    if dataset is None:
        return None
    return pipeline.time_pipeline(dataset, plan.distribution.per_replica_batch)


def local_replicas(plan):
    """Replicas this host's input pipeline feeds (all of them, but under multi-worker)."""
    return len(strategies.worker_devices(plan.distribution.strategy))


def findings(plan, step, outcome, timed_pipeline):
    """The findings of a finished train run (as dicts, for result.json)."""
    found = []
    replicas = local_replicas(plan)
    if timed_pipeline is not None:
        ran = outcome.examples_per_second
        # the host pipeline feeds this host's replicas: compare at that share of the rate
        share = ran * replicas / plan.distribution.replicas if ran else None
        # one input pipeline per host feeds all its replicas in turn
        found.append(pipeline.finding(timed_pipeline["examples_per_second"], share,
                                      replicas=replicas))
    elif plan.source.on_device:
        found.append(pipeline.on_device(outcome.examples_per_second))
    found.append(compile_lib.finding(step.traces, step.jit_compile, step.xla_fallback,
                                     outcome.compile_s))
    found.append(numerics.finding(outcome.history, outcome.steps, plan.numerics.precision))
    if step.mode == "train":
        objective = plan.objective
        found.append(learning.finding(outcome.history,
                                      float(objective.optimizer_hparams.learning_rate),
                                      objective.sources.get("learning_rate", "?"),
                                      plan.source.num_eval_examples,
                                      plan.model.num_classes))
    return found


def _name_divergence(error, plan, parts, start_state):
    """The steps since the last finite state (the newest checkpoint, else the run's start)
    replayed on the same batches with numeric checks on: the error names the first
    non-finite tensor."""
    if start_state is not None:
        numerics.restore(start_state)
    checkpoint = latest_checkpoint(plan.directory.model_dir)
    if checkpoint:
        parts.checkpoint.restore(checkpoint).expect_partial()
    begin = parts.step.global_step
    count = error.step - begin
    if parts.step.mode != "train" or not 0 < count <= numerics.MAX_REPLAY_STEPS:
        return
    inputs = parts_lib.train_inputs(plan, begin)
    first = numerics.replay(parts.step, inputs, count, parts.model)
    finding = numerics.divergence_finding(first, begin, error.step)
    error.finding = finding
    error.args = (f"{error.args[0]} {finding.detail[0].upper()}{finding.detail[1:]}",)
