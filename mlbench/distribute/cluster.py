"""Cluster membership from TF_CONFIG: parse and validate it, build it, find the chief.

One TF_CONFIG builder (`tf_config`) serves `mlbench launch` and the
`--worker_hosts/--ps_hosts` flags alike.
"""
import json
import os
import socket


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


def num_workers(config):
    """Training processes in the cluster (chief + workers)."""
    return len(config["cluster"].get("chief", [])) + len(config["cluster"].get("worker", []))


def has_ps(config):
    return bool(config and config["cluster"].get("ps"))


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


def server_role(environ=None):
    """'ps' or 'worker' when this process serves a parameter-server cluster, else None.

    In parameter-server training only the chief runs the program (it is the
    coordinator); ps and worker tasks start a TF server and serve until stopped.
    """
    config = parse_tf_config(environ)
    if not has_ps(config):
        return None
    task = config["task"]["type"]
    return task if task in ("ps", "worker") else None


def check_parameter_server_cluster(config):
    """A parameter-server cluster needs a chief, at least one worker and one ps."""
    cluster = config["cluster"]
    if not cluster.get("chief"):
        raise ValueError(f"TF_CONFIG has ps tasks but no chief (cluster {sorted(cluster)}): "
                         "parameter-server training needs a chief to coordinate.")
    if not cluster.get("worker"):
        raise ValueError(f"TF_CONFIG has ps tasks but no worker (cluster {sorted(cluster)}): "
                         "parameter-server training needs at least one worker.")


def serve(environ=None):
    """Starts this ps/worker task's TF server and serves until the process is stopped."""
    import tensorflow as tf
    config = parse_tf_config(environ)
    check_parameter_server_cluster(config)
    task = config["task"]
    server = tf.distribute.Server(tf.train.ClusterSpec(config["cluster"]),
                                  job_name=task["type"], task_index=task.get("index", 0),
                                  protocol="grpc", start=True)
    print(f"{task['type']} {task.get('index', 0)}: serving", flush=True)
    server.join()


CLUSTERS = ("tf_config", "slurm", "jobset")


def configure(kind, environ=None):
    """Makes TF_CONFIG describe this process's cluster, from `kind`'s source.

    'tf_config': as given (Kubeflow's training operator writes it for TFJobs).
    'slurm': TensorFlow's own SlurmClusterResolver reads the SLURM_* variables of an
    `srun` step; the result is written to TF_CONFIG so every part of mlbench reads one
    format. MLBENCH_SLURM_PORT_BASE (default 8888) is the first port on each node;
    MLBENCH_SLURM_JOBS (JSON, e.g. {"chief": 1, "worker": 2, "ps": 1}) splits the tasks
    into jobs (default: all workers).
    'jobset': a pod of a JobSet (or a Kubeflow Trainer v2 TrainJob) from its own identity
    (`pod_identity`: JobSet's annotations, the Job's completion index, stable hostnames).
    """
    environ = os.environ if environ is None else environ
    if kind not in CLUSTERS:
        raise ValueError(f"`cluster` ({kind!r}) must be one of {list(CLUSTERS)}.")
    if kind == "slurm":
        environ["TF_CONFIG"] = tf_config_from_slurm(environ)
    if kind == "jobset":
        environ["TF_CONFIG"] = tf_config_from_jobset(environ)


def tf_config_from_slurm(environ):
    import tensorflow as tf
    if "SLURM_PROCID" not in environ:
        raise ValueError("`cluster` ('slurm'): no SLURM_PROCID in the environment; run "
                         "under `srun` (see docs/distributed.md).")
    jobs = json.loads(environ["MLBENCH_SLURM_JOBS"]) if environ.get("MLBENCH_SLURM_JOBS") else None
    tasks_per_node = max(int(n.split("(")[0]) for n in
                         environ.get("SLURM_STEP_TASKS_PER_NODE", "1").split(","))
    # Without GPUs, one "GPU slot" per task keeps the resolver's port allocation working;
    # auto_set_gpu=False leaves CUDA_VISIBLE_DEVICES alone.
    gpus = None if _has_gpus() else tasks_per_node
    resolver = tf.distribute.cluster_resolver.SlurmClusterResolver(
        jobs=jobs, port_base=int(environ.get("MLBENCH_SLURM_PORT_BASE", "8888")),
        gpus_per_node=gpus, gpus_per_task=1 if gpus else None, auto_set_gpu=bool(not gpus))
    spec = resolver.cluster_spec().as_dict()
    task_type, task_id = resolver.get_task_info()
    return tf_config(spec, task_type, task_id)


def tf_config_from_jobset(environ):
    """TF_CONFIG (JSON) of a JobSet pod, from its own identity (`pod_identity`)."""
    from mlbench.distribute.pod_identity import JobSetClusterResolver
    resolver = JobSetClusterResolver(environ)
    return tf_config(resolver.cluster_spec().as_dict(), resolver.task_type, resolver.task_id)


def _has_gpus():
    import glob
    return bool(glob.glob("/dev/nvidia[0-9]*"))


def tf_config(cluster, job, index):
    """TF_CONFIG (JSON) for task `job`/`index` of `cluster` ({job: [host:port, ...]})."""
    return json.dumps({"cluster": cluster, "task": {"type": job, "index": index}})


def tf_config_from_hosts(worker_hosts, task_index, ps_hosts=(), job_name="worker",
                         controller_host=None):
    """TF_CONFIG for this process from tf_cnn_benchmarks-style host lists, validated like a
    given TF_CONFIG. With ps hosts, `controller_host` is the chief (TF2's coordinator)."""
    cluster = {"worker": list(worker_hosts)}
    if ps_hosts:
        if not controller_host:
            raise ValueError("`--ps_hosts` needs `--controller_host` (host:port of the chief "
                             "that coordinates parameter-server training).")
        cluster.update(ps=list(ps_hosts), chief=[controller_host])
        task_index = 0 if job_name == "chief" else task_index
    raw = tf_config(cluster, job_name, task_index)
    parse_tf_config({"TF_CONFIG": raw})
    _check_own_port(cluster[job_name][task_index])
    return raw


def off_this_machine(tf_config_raw):
    """The addresses of a TF_CONFIG's cluster that are not loopback: where TensorFlow's
    servers will take connections from other hosts."""
    import ipaddress
    cluster = json.loads(tf_config_raw)["cluster"]
    found = []
    for address in (a for addresses in cluster.values() for a in addresses):
        host = address.rpartition(":")[0].strip("[]")
        try:
            loopback = ipaddress.ip_address(host).is_loopback
        except ValueError:  # a name
            loopback = host == "localhost"
        if not loopback:
            found.append(address)
    return found


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
