"""TF_CONFIG from a JobSet pod's own identity (`--cluster=jobset`), through TensorFlow's
`ClusterResolver` interface, as the SLURM resolver builds it from an `srun` step.

A pod of a JobSet knows who it is from what JobSet and Kubernetes give it: the manifests
`mlbench launch --emit=jobset|trainjob` writes pass JobSet's pod annotations in through
the downward API, and Kubernetes sets `JOB_COMPLETION_INDEX` in every pod of an Indexed
Job. Every task's address is JobSet's stable hostname
`<jobset>-<replicatedJob>-<jobIndex>-<podIndex>.<subdomain>` (its headless Service).

Environment read (each named in the error when missing or malformed):
  MLBENCH_JOBSET_NAME       the JobSet's name (annotation jobset.sigs.k8s.io/jobset-name)
  MLBENCH_REPLICATED_JOB    this pod's replicated job (jobset.sigs.k8s.io/replicatedjob-name)
  MLBENCH_JOB_INDEX         its Job's index in the replicated job (jobset.sigs.k8s.io/job-index)
  JOB_COMPLETION_INDEX      this pod's index in its Job (Kubernetes, Indexed Jobs)
  MLBENCH_JOBSET_TASKS      JSON {TensorFlow job: [replicated job, pods]}, written into
                            the manifest, e.g. {"worker": ["worker", 2]}
  MLBENCH_JOBSET_SUBDOMAIN  the headless Service (default: the JobSet's name)
  MLBENCH_JOBSET_PORT       the port every task listens on (default 2222)
  MLBENCH_JOBSET_ADDRESSES  optional JSON {hostname: "host:port"}: the same cluster run
                            outside Kubernetes (tests map each hostname to 127.0.0.1)
"""
import json

import tensorflow as tf

DEFAULT_PORT = 2222
# the downward API's source of each variable, as the emitted manifests set them
ANNOTATIONS = {"MLBENCH_JOBSET_NAME": "jobset.sigs.k8s.io/jobset-name",
               "MLBENCH_REPLICATED_JOB": "jobset.sigs.k8s.io/replicatedjob-name",
               "MLBENCH_JOB_INDEX": "jobset.sigs.k8s.io/job-index"}


def _needed(environ, name, what):
    value = environ.get(name)
    if value in (None, ""):
        raise ValueError(f"`cluster` ('jobset'): {name} is not set ({what}); run in a pod "
                         "of a manifest from `mlbench launch --emit=jobset` "
                         "(docs/distributed.md).")
    return value


def _index(environ, name, what):
    value = _needed(environ, name, what)
    if not value.isdigit():
        raise ValueError(f"`cluster` ('jobset'): {name} ({value!r}) must be an index >= 0 "
                         f"({what}).")
    return int(value)


class JobSetClusterResolver(tf.distribute.cluster_resolver.ClusterResolver):
    """The cluster of a JobSet pod, from its environment (see the module's docstring)."""

    def __init__(self, environ):
        self.jobset = _needed(environ, "MLBENCH_JOBSET_NAME", "the JobSet's name")
        replicated = _needed(environ, "MLBENCH_REPLICATED_JOB", "this pod's replicated job")
        job_index = _index(environ, "MLBENCH_JOB_INDEX", "its Job's index")
        pod_index = _index(environ, "JOB_COMPLETION_INDEX", "this pod's index in its Job")
        self.tasks = _tasks(_needed(environ, "MLBENCH_JOBSET_TASKS",
                                    "the TensorFlow jobs of the JobSet, as JSON"))
        self.subdomain = environ.get("MLBENCH_JOBSET_SUBDOMAIN") or self.jobset
        port = environ.get("MLBENCH_JOBSET_PORT") or str(DEFAULT_PORT)
        if not port.isdigit():
            raise ValueError(f"`cluster` ('jobset'): MLBENCH_JOBSET_PORT ({port!r}) must be "
                             "a port number.")
        self.port = int(port)
        self.addresses = json.loads(environ.get("MLBENCH_JOBSET_ADDRESSES") or "{}")
        mine = [job for job, (name, _) in self.tasks.items() if name == replicated]
        if not mine:
            raise ValueError(f"`cluster` ('jobset'): this pod's replicated job "
                             f"({replicated!r}) is not among MLBENCH_JOBSET_TASKS "
                             f"({sorted(n for n, _ in self.tasks.values())}).")
        count = self.tasks[mine[0]][1]
        if job_index != 0 or pod_index >= count:
            raise ValueError(f"`cluster` ('jobset'): pod {job_index}/{pod_index} of "
                             f"{replicated!r} is outside its {count} pod(s) in one Job "
                             "(MLBENCH_JOB_INDEX must be 0, JOB_COMPLETION_INDEX < "
                             f"{count}).")
        self.task_type, self.task_id = mine[0], pod_index

    def hostname(self, replicated, pod_index):
        """JobSet's stable hostname of a pod (its headless Service's DNS name)."""
        return f"{self.jobset}-{replicated}-0-{pod_index}.{self.subdomain}"

    def _address(self, replicated, pod_index):
        host = self.hostname(replicated, pod_index)
        return self.addresses.get(host, f"{host}:{self.port}")

    def cluster_spec(self):
        return tf.train.ClusterSpec({job: [self._address(name, i) for i in range(count)]
                                     for job, (name, count) in self.tasks.items()})

    def master(self, task_type=None, task_id=None, rpc_layer=None):
        return ""  # TF2's multi-worker strategies read the cluster spec, not a master


def _tasks(text):
    """{TensorFlow job: (replicated job, pods)} from MLBENCH_JOBSET_TASKS."""
    try:
        raw = json.loads(text)
        tasks = {job: (str(name), int(count)) for job, (name, count) in raw.items()}
    except (ValueError, TypeError, AttributeError):
        raise ValueError(f"`cluster` ('jobset'): MLBENCH_JOBSET_TASKS ({text!r}) must be "
                         'JSON like {"worker": ["worker", 2]}.') from None
    wrong = sorted(set(tasks) - {"chief", "worker", "ps"})
    if wrong or "worker" not in tasks or any(n < 1 for _, n in tasks.values()):
        raise ValueError(f"`cluster` ('jobset'): MLBENCH_JOBSET_TASKS ({text!r}) must "
                         "give 'worker' (and optionally 'chief', 'ps') at least 1 pod "
                         "each.")
    return tasks
