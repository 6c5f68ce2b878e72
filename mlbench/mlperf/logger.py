"""`:::MLLOG` lines through `mlperf_logging.mllog`, driven by the loop's hooks.

Order (MLPerf training rules): cache_clear, init_start, submission_* and
hyperparameters, [compile + warm-up], init_stop, run_start, block_start …
eval_start/eval_stop/eval_accuracy … block_stop, run_stop(status).
Only the chief worker writes; other workers get a logger that does nothing.
"""
import logging

from mlperf_logging.mllog import mllog
from mlperf_logging.mllog import constants as c

from mlbench.mlperf import benchmarks
from mlbench.training.callbacks import Callback



def _file_logger(path):
    """A private logging.Logger writing to `path` (runs in one process never share handlers)."""
    logger = logging.getLogger(f"mlbench.mlperf.{path}")
    logger.propagate = False
    logger.setLevel(logging.INFO)
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
    handler = logging.FileHandler(path, mode="w")
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger.addHandler(handler)
    return logger


class MLPerfLogger(Callback):
    """Callbacks that write an MLPerf log for `benchmark` ('resnet' or 'bert')."""

    def __init__(self, path, benchmark, division="open", org="mlbench", platform="unknown",
                 status="research", is_chief=True):
        self.record = benchmarks.get(benchmark)
        self.metric = self.record.metric
        self.path, self.benchmark, self.division = path, benchmark, division
        self.org, self.platform, self.status_of_system = org, platform, status
        self.is_chief = is_chief
        self.mllogger = (mllog.MLLogger(logger=_file_logger(path), default_stack_offset=3)
                         if is_chief else None)
        self.samples_per_step, self.train_samples, self.in_block = 1, 1, False
        self.status = None

    def _log(self, kind, key, value=None, metadata=None):
        if self.mllogger:
            getattr(self.mllogger, kind)(key=key, value=value, metadata=metadata)

    def init_start(self):
        self._log("event", c.CACHE_CLEAR, True)
        self._log("start", c.INIT_START)

    def on_configured(self, info):
        self.samples_per_step = info.global_batch_size
        self.train_samples = info.num_train_examples or 1
        for key, value in self._submission_keys() + hyperparameter_keys(self.benchmark, info):
            self._log("event", key, value)

    def _submission_keys(self):
        return [(c.SUBMISSION_BENCHMARK, self.benchmark), (c.SUBMISSION_DIVISION, self.division),
                (c.SUBMISSION_ORG, self.org), (c.SUBMISSION_PLATFORM, self.platform),
                (c.SUBMISSION_STATUS, self.status_of_system)]

    def _position(self, step):
        """MLPerf's progress metadata: epochs where the benchmark counts epochs (ResNet),
        samples where it counts samples (BERT, as its reference)."""
        samples = step * self.samples_per_step
        in_epochs = self.record.epoch_examples is not None
        epoch = samples / self.train_samples if in_epochs else samples
        return {"epoch_num": epoch, "samples_count": samples}

    def on_run_start(self):
        self._log("end", c.INIT_STOP)
        self._log("start", c.RUN_START)

    def on_block_start(self, step, num_steps):
        if not self.in_block:
            self.in_block = True
            position = self._position(step)
            self._log("start", c.BLOCK_START, metadata={
                "first_epoch_num": position["epoch_num"], "samples_count": position["samples_count"],
                "epoch_count": max(num_steps * self.samples_per_step / self.train_samples, 1e-9)})

    def _close_block(self, step):
        if self.in_block:
            self.in_block = False
            position = self._position(step)
            self._log("end", c.BLOCK_STOP, metadata={
                "first_epoch_num": position["epoch_num"], "samples_count": position["samples_count"]})

    def on_eval_start(self, step):
        self._close_block(step)
        self._log("start", c.EVAL_START, metadata=self._position(step))

    def on_eval_stop(self, step, metrics):
        position = self._position(step)
        self._log("end", c.EVAL_STOP, metadata=position)
        self._log("event", c.EVAL_ACCURACY, metrics[self.metric], metadata=position)

    def on_run_stop(self, reached_target):
        self.status = c.SUCCESS if reached_target else c.ABORTED
        self._log("end", c.RUN_STOP, metadata={"status": self.status})


def hyperparameter_keys(benchmark, info):
    """(key, value) pairs for the run's hyperparameters, optimizer keys per MLPerf's names."""
    keys = [(c.GLOBAL_BATCH_SIZE, info.global_batch_size),
            (c.GRADIENT_ACCUMULATION_STEPS, info.gradient_accumulation_steps),
            (c.TRAIN_SAMPLES, info.num_train_examples),
            (c.EVAL_SAMPLES, info.num_eval_examples), (c.SEED, info.seed)]
    opt = info.optimizer
    if opt.name == "lars":
        return keys + _lars_keys(opt, info)
    if opt.name == "lamb":
        return keys + _lamb_keys(opt, info)
    return keys + [(c.OPT_NAME, opt.name), (c.OPT_BASE_LR, opt.learning_rate)]


def _lars_keys(opt, info):
    steps_per_epoch = info.global_batch_size and (info.num_train_examples or 1) / \
        info.global_batch_size
    return [(c.OPT_NAME, c.LARS), (c.LARS_OPT_BASE_LEARNING_RATE, opt.learning_rate),
            (c.LARS_OPT_END_LR, opt.end_learning_rate),
            (c.LARS_OPT_LR_DECAY_POLY_POWER, opt.power),
            (c.LARS_OPT_LR_DECAY_STEPS, opt.decay_steps),
            # Model Garden's LARS has no epsilon term in its trust ratio: it is 0.
            (c.LARS_EPSILON, 0.0),
            (c.LARS_OPT_LEARNING_RATE_WARMUP_EPOCHS,
             opt.warmup_steps / steps_per_epoch if steps_per_epoch else 0.0),
            (c.LARS_OPT_MOMENTUM, opt.momentum),
            (c.LARS_OPT_WEIGHT_DECAY, opt.weight_decay)]


def _lamb_keys(opt, info):
    return [(c.OPT_NAME, c.LAMB), (c.OPT_BASE_LR, opt.learning_rate),
            (c.OPT_LAMB_EPSILON, opt.epsilon),
            (c.OPT_LR_TRAINING_STEPS, info.train_steps),
            (c.OPT_LR_WARMUP_STEPS, opt.warmup_steps),
            (c.NUM_WARMUP_STEPS, opt.warmup_steps), (c.START_WARMUP_STEP, 0),
            (c.OPT_LAMB_BETA_1, opt.beta_1), (c.OPT_LAMB_BETA_2, opt.beta_2),
            (c.OPT_LAMB_WEIGHT_DECAY, opt.weight_decay)]
