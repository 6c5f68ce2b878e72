"""Strategies from a name or a classic tf_cnn_benchmarks `variable_update`.

Everything here is tf.distribute; mlbench adds only the naming, the
validation and the mapping of tf_cnn_benchmarks' vocabulary (DESIGN.md).
"""
import json
import os
import socket

import tensorflow as tf

STRATEGIES = ("auto", "one_device", "mirrored", "central_storage",
              "multi_worker_mirrored", "parameter_server", "tpu")
ALL_REDUCE = ("auto", "nccl", "hierarchical_copy", "reduction_to_one_device")
VARIABLE_UPDATES = ("parameter_server", "replicated", "distributed_replicated")


def _devices(num_devices):
    """The first `num_devices` accelerators, else logical CPUs."""
    gpus = tf.config.list_logical_devices("GPU")
    pool = gpus if gpus else tf.config.list_logical_devices("CPU")
    if num_devices is None:
        num_devices = len(gpus) if gpus else 1
    if num_devices < 1 or num_devices > len(pool):
        kind = "GPU" if gpus else "CPU"
        raise ValueError(
            f"`num_devices` ({num_devices}) must be between 1 and the {len(pool)} "
            f"visible {kind} device(s).")
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


def get_strategy(strategy="auto", num_devices=None, all_reduce="auto",
                 parameter_device="/cpu:0"):
    """Builds a tf.distribute strategy.

    Args:
      strategy: a name from STRATEGIES, or a ready Strategy (returned as is).
        'auto' is Mirrored over the visible GPUs, else the default (one CPU).
      num_devices: devices to use (GPUs, else logical CPUs); None = all GPUs or 1 CPU.
      all_reduce: cross-device reduction for 'mirrored'.
      parameter_device: where 'central_storage' keeps variables.
    """
    validate_strategy_name(strategy, all_reduce)
    if isinstance(strategy, tf.distribute.Strategy):
        return strategy
    if strategy == "auto":
        devices = _devices(num_devices)
        if len(devices) == 1:
            return tf.distribute.OneDeviceStrategy(devices[0])
        return tf.distribute.MirroredStrategy(devices, _cross_device_ops(all_reduce))
    if strategy == "one_device":
        return tf.distribute.OneDeviceStrategy(_devices(1)[0])
    if strategy == "mirrored":
        return tf.distribute.MirroredStrategy(_devices(num_devices), _cross_device_ops(all_reduce))
    if strategy == "central_storage":
        return tf.distribute.experimental.CentralStorageStrategy(
            _devices(num_devices), parameter_device=parameter_device)
    if strategy == "multi_worker_mirrored":
        return _multi_worker_mirrored(all_reduce)
    if strategy == "parameter_server":
        return _parameter_server()
    return _tpu()


def _multi_worker_mirrored(all_reduce):
    parse_tf_config()  # validate before TF's own parser gives a cryptic error
    implementation = (tf.distribute.experimental.CommunicationImplementation.NCCL
                      if all_reduce == "nccl" else
                      tf.distribute.experimental.CommunicationImplementation.AUTO)
    # A bounded collective timeout: a dead or unreachable worker makes the others fail
    # with DeadlineExceeded instead of hanging (MLBENCH_COLLECTIVE_TIMEOUT_S, default 300 s).
    timeout = float(os.environ.get("MLBENCH_COLLECTIVE_TIMEOUT_S", "300"))
    options = tf.distribute.experimental.CommunicationOptions(
        implementation=implementation, timeout_seconds=timeout)
    return tf.distribute.MultiWorkerMirroredStrategy(communication_options=options)


def _parameter_server():
    config = parse_tf_config()
    if not config or not config["cluster"].get("ps"):
        raise ValueError("`strategy` 'parameter_server' needs ps hosts in TF_CONFIG "
                         "(cluster.ps); none were given.")
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    return tf.distribute.experimental.ParameterServerStrategy(resolver)


def _tpu():
    try:
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver()
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
    except (ValueError, tf.errors.NotFoundError, tf.errors.InvalidArgumentError) as e:
        raise RuntimeError(f"`strategy` 'tpu': no TPU was found ({e}).") from e
    return tf.distribute.TPUStrategy(resolver)


def parse_tf_config(environ=None):
    """Parses and validates TF_CONFIG; returns None when it is unset.

    Raises:
      ValueError: malformed JSON, missing cluster/task, or a task index out of range.
    """
    raw = (environ if environ is not None else os.environ).get("TF_CONFIG")
    if not raw:
        return None
    try:
        config = json.loads(raw)
    except json.JSONDecodeError as e:
        raise ValueError(f"TF_CONFIG is not valid JSON ({e}): {raw!r}") from e
    cluster, task = config.get("cluster"), config.get("task")
    if not isinstance(cluster, dict) or not isinstance(task, dict):
        raise ValueError(f"TF_CONFIG must have 'cluster' and 'task' objects: {raw!r}")
    jobs = cluster.get(task.get("type"))
    if jobs is None:
        raise ValueError(f"TF_CONFIG task type {task.get('type')!r} is not a job in "
                         f"cluster {sorted(cluster)}.")
    index = task.get("index", 0)
    if not isinstance(index, int) or not 0 <= index < len(jobs):
        raise ValueError(f"TF_CONFIG task index ({index!r}) is out of range for "
                         f"{len(jobs)} {task['type']} host(s).")
    return config


def from_variable_update(variable_update, num_devices=None, local_parameter_device="cpu",
                         all_reduce="auto"):
    """Maps tf_cnn_benchmarks' `variable_update` to a strategy (DESIGN.md table)."""
    if variable_update not in VARIABLE_UPDATES:
        raise ValueError(f"`variable_update` ({variable_update!r}) must be one of "
                         f"{list(VARIABLE_UPDATES)}.")
    if local_parameter_device not in ("cpu", "gpu"):
        raise ValueError(f"`local_parameter_device` ({local_parameter_device!r}) must be "
                         "'cpu' or 'gpu'.")
    if variable_update == "distributed_replicated":
        return get_strategy("multi_worker_mirrored", all_reduce=all_reduce)
    if variable_update == "replicated":
        return get_strategy("mirrored", num_devices, all_reduce=all_reduce)
    if parse_tf_config() and parse_tf_config()["cluster"].get("ps"):
        return get_strategy("parameter_server")
    device = "/cpu:0" if local_parameter_device == "cpu" else _devices(1)[0]
    return get_strategy("central_storage", num_devices, parameter_device=device)


def describe(strategy):
    """A short record of what ran: strategy class and replica count."""
    name = type(strategy).__name__
    # TF's class behind MultiWorkerMirroredStrategy is CollectiveAllReduceStrategy.
    name = {"CollectiveAllReduceStrategy": "MultiWorkerMirroredStrategy"}.get(name, name)
    return {"strategy": name, "replicas": strategy.num_replicas_in_sync}


def is_chief(environ=None):
    """True for the process that writes checkpoints, logs and results (TF_CONFIG's chief,
    else worker 0, else a single process)."""
    config = parse_tf_config(environ)
    if not config:
        return True
    task = config["task"]
    if "chief" in config["cluster"]:
        return task["type"] == "chief"
    return task["type"] == "worker" and task.get("index", 0) == 0


def tf_config_from_hosts(worker_hosts, task_index, ps_hosts=(), job_name="worker"):
    """TF_CONFIG (JSON) for this process from host lists, validated like a given TF_CONFIG."""
    cluster = {"worker": list(worker_hosts)}
    if ps_hosts:
        cluster["ps"] = list(ps_hosts)
    raw = json.dumps({"cluster": cluster, "task": {"type": job_name, "index": task_index}})
    parse_tf_config({"TF_CONFIG": raw})
    _check_own_port(cluster[job_name][task_index])
    return raw


def _check_own_port(address):
    """This task's port must be free when it is on this machine."""
    host, _, port = address.rpartition(":")
    if host not in ("127.0.0.1", "localhost", socket.gethostname()):
        return
    with socket.socket() as s:
        try:
            s.bind((host, int(port)))
        except OSError as e:
            raise ValueError(f"port {port} of this task ({address}) is in use: {e}.") from e
