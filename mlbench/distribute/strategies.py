"""tf.distribute strategies by name.

Everything here is tf.distribute; mlbench adds only the naming, the
validation, 'auto' (TF_CONFIG → multi-worker, else the local devices) and
splitting a CPU-only machine into logical devices so multi-device code runs
on a laptop.
"""
import os

import tensorflow as tf

from mlbench.distribute import cluster

STRATEGIES = ("auto", "one_device", "mirrored", "central_storage",
              "multi_worker_mirrored", "parameter_server", "tpu")
ALL_REDUCE = ("auto", "nccl", "hierarchical_copy", "reduction_to_one_device")


def split_cpu(num_devices):
    """Splits the CPU into `num_devices` logical devices; False if TF already started.

    TensorFlow fixes its device list when it first initialises (the first op,
    or any listing of logical devices); only before that can it be split.
    """
    if num_devices <= 1 or tf.config.list_physical_devices("GPU"):
        return False
    cpu = tf.config.list_physical_devices("CPU")[0]
    try:
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(num_devices)])
    except RuntimeError:
        return False
    return True


def devices(num_devices):
    """The first `num_devices` accelerators, else logical CPUs (split when still possible)."""
    if num_devices is not None and (not isinstance(num_devices, int) or num_devices < 1):
        raise ValueError(f"`num_devices` ({num_devices!r}) must be an integer >= 1.")
    if num_devices and num_devices > 1:
        split_cpu(num_devices)
    gpus = tf.config.list_logical_devices("GPU")
    pool = gpus if gpus else tf.config.list_logical_devices("CPU")
    num_devices = num_devices or (len(gpus) if gpus else 1)
    if num_devices > len(pool):
        kind = "GPU" if gpus else "CPU"
        advice = "" if gpus else (
            " TensorFlow had already initialised its devices, so the CPU could not be split: "
            f"call mlbench.distribute.split_cpu({num_devices}) before any TensorFlow work "
            "(e.g. first in the notebook), or restart the process.")
        raise ValueError(f"`num_devices` ({num_devices}) must be between 1 and the "
                         f"{len(pool)} visible {kind} device(s).{advice}")
    return [d.name for d in pool[:num_devices]]


def _cross_device_ops(all_reduce):
    if all_reduce == "nccl":
        return tf.distribute.NcclAllReduce()
    if all_reduce == "hierarchical_copy":
        return tf.distribute.HierarchicalCopyAllReduce()
    if all_reduce == "reduction_to_one_device":
        return tf.distribute.ReductionToOneDevice()
    if not tf.config.list_logical_devices("GPU"):
        # On logical CPU devices TF would pick collective ops, whose instance
        # keys collide when a process builds several strategies in turn
        # (benchmark suites, tests): "Shape mismatch in the collective instance".
        return tf.distribute.ReductionToOneDevice()
    return None  # TF's own choice: NCCL on GPUs where available


def validate_strategy_name(strategy, all_reduce="auto"):
    if isinstance(strategy, tf.distribute.Strategy):
        return
    if strategy not in STRATEGIES:
        raise ValueError(f"`strategy` ({strategy!r}) must be one of {list(STRATEGIES)}.")
    if all_reduce not in ALL_REDUCE:
        raise ValueError(f"`all_reduce` ({all_reduce!r}) must be one of {list(ALL_REDUCE)}.")


def auto_name(environ=None):
    """What 'auto' means here: TF_CONFIG with ps tasks → parameter_server; with several
    workers → multi_worker_mirrored; otherwise the local devices."""
    config = cluster.parse_tf_config(environ)
    if cluster.has_ps(config):
        return "parameter_server"
    if config and cluster.num_workers(config) > 1:
        return "multi_worker_mirrored"
    return "local"


def get_strategy(strategy="auto", num_devices=None, all_reduce="auto",
                 parameter_device="/cpu:0"):
    """Builds a tf.distribute strategy.

    Args:
      strategy: a name from STRATEGIES, or a ready Strategy (returned as is).
        'auto' honours TF_CONFIG (see `auto_name`), else Mirrored over the
        visible GPUs (or `num_devices` devices), else one device.
      num_devices: devices to use (GPUs, else logical CPUs); None = all GPUs or 1 CPU.
      all_reduce: cross-device reduction for 'mirrored'.
      parameter_device: where 'central_storage' keeps variables.
    """
    validate_strategy_name(strategy, all_reduce)
    if isinstance(strategy, tf.distribute.Strategy):
        return strategy
    if strategy == "auto":
        strategy = auto_name()
        if strategy == "local":
            local = devices(num_devices)
            if len(local) == 1:
                return tf.distribute.OneDeviceStrategy(local[0])
            return tf.distribute.MirroredStrategy(local, _cross_device_ops(all_reduce))
    if strategy == "one_device":
        return tf.distribute.OneDeviceStrategy(devices(1)[0])
    if strategy == "mirrored":
        return tf.distribute.MirroredStrategy(devices(num_devices), _cross_device_ops(all_reduce))
    if strategy == "central_storage":
        return tf.distribute.experimental.CentralStorageStrategy(
            devices(num_devices), parameter_device=parameter_device)
    if strategy == "multi_worker_mirrored":
        return _multi_worker_mirrored(all_reduce)
    if strategy == "parameter_server":
        return _parameter_server()
    return _tpu()


def collective_timeout_s():
    """MLBENCH_COLLECTIVE_TIMEOUT_S (default 300 s): how long a collective waits for a peer."""
    return float(os.environ.get("MLBENCH_COLLECTIVE_TIMEOUT_S", "300"))


def _multi_worker_mirrored(all_reduce):
    cluster.parse_tf_config()  # validate before TF's own parser gives a cryptic error
    implementation = (tf.distribute.experimental.CommunicationImplementation.NCCL
                      if all_reduce == "nccl" else
                      tf.distribute.experimental.CommunicationImplementation.AUTO)
    # A bounded collective timeout: a dead or stopped worker makes the others fail
    # with DeadlineExceeded instead of hanging.
    options = tf.distribute.experimental.CommunicationOptions(
        implementation=implementation, timeout_seconds=collective_timeout_s())
    return tf.distribute.MultiWorkerMirroredStrategy(communication_options=options)


def _parameter_server():
    """ParameterServerStrategy over TF_CONFIG's cluster (this process: the chief)."""
    config = cluster.parse_tf_config()
    if not cluster.has_ps(config):
        raise ValueError("`strategy` 'parameter_server' needs ps hosts in TF_CONFIG "
                         "(cluster.ps); none were given.")
    cluster.check_parameter_server_cluster(config)
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    return tf.distribute.experimental.ParameterServerStrategy(resolver)


def is_parameter_server(strategy):
    return isinstance(strategy, tf.distribute.experimental.ParameterServerStrategy)


def _tpu():
    try:
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver()
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
    except (ValueError, tf.errors.NotFoundError, tf.errors.InvalidArgumentError) as e:
        raise RuntimeError(f"`strategy` 'tpu': no TPU was found ({e}).") from e
    return tf.distribute.TPUStrategy(resolver)


def worker_devices(strategy):
    """The devices replicas run on; the default strategy (a model instance of your own
    runs there) places nothing itself: [None]."""
    try:
        return list(strategy.extended.worker_devices)
    except RuntimeError:
        return [None]


def facts(strategy):
    """A short record of what ran: strategy class and replica count."""
    name = type(strategy).__name__
    # TF's class behind MultiWorkerMirroredStrategy is CollectiveAllReduceStrategy.
    name = {"CollectiveAllReduceStrategy": "MultiWorkerMirroredStrategy",
            "ParameterServerStrategyV2": "ParameterServerStrategy",
            "_DefaultDistributionStrategy": "DefaultStrategy"}.get(name, name)
    return {"strategy": name, "replicas": strategy.num_replicas_in_sync}
