"""Manifests for clusters as they run today: a JobSet (`jobset.x-k8s.io/v1alpha2`, the
Kubernetes SIG's API for multi-pod jobs) and a Kubeflow Trainer v2 `TrainJob` with the
`ClusterTrainingRuntime` it references (a plain runtime: Trainer v2 has no TensorFlow
one), both for the same command `mlbench launch` runs locally.

Each pod builds its own TF_CONFIG (`--cluster=jobset`, `pod_identity`) from what JobSet
gives it, passed in through the downward API; tasks find each other by JobSet's stable
hostnames behind its headless Service. A failure restarts the whole JobSet
(`failurePolicy.maxRestarts`): the restarted run resumes from the chief's checkpoint in
the shared model_dir volume (`--volume_claim`), as a rerun of the same command does.
Every emitted document is checked against the vendored CRD schemas before it is printed
(`schemas.validate`).
"""
import json
import re

from mlbench.distribute import schemas
from mlbench.distribute.pod_identity import ANNOTATIONS, DEFAULT_PORT
from mlbench.distribute.tfjob import JOB_LABEL

JOBSET_API = "jobset.x-k8s.io/v1alpha2"
TRAINER_API = "trainer.kubeflow.org/v1alpha1"
MOUNT = "/mlbench"  # where --volume_claim is mounted: give --model_dir under it
ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"  # Trainer v2 finds its node so


def check(name, num_workers, num_ps, cpus, memory, gpus):
    """Bad manifest options, refused before anything is printed."""
    if not re.fullmatch(r"[a-z]([-a-z0-9]{0,38}[a-z0-9])?", name or ""):
        raise ValueError(f"`--manifest_name` ({name!r}) must be a DNS label of at most 40 "
                         "characters: lower-case letters, digits and '-', starting with a "
                         "letter (it prefixes every pod's hostname).")
    if num_workers < 1:
        raise ValueError(f"`--num_workers` ({num_workers}) must be >= 1.")
    if num_ps < 0:
        raise ValueError(f"`--num_ps` ({num_ps}) must be >= 0.")
    if gpus is not None and gpus < 0:
        raise ValueError(f"`--gpus` ({gpus}) must be >= 0.")
    for flag, value in (("--cpus", cpus), ("--memory", memory)):
        if value is not None and not re.fullmatch(r"\d+(\.\d+)?(m|[KMGT]i?)?", str(value)):
            raise ValueError(f"`{flag}` ({value!r}) must be a Kubernetes quantity such as "
                             "4, 500m or 16Gi.")


def tasks_of(num_workers, num_ps, worker_job="worker"):
    """{TensorFlow job: (replicated job, pods)}: workers alone (MultiWorkerMirrored; worker
    0 acts as chief), or with ps a chief, the workers and the parameter servers."""
    if not num_ps:
        return {"worker": (worker_job, num_workers)}
    return {"chief": ("chief", 1), "worker": ("worker", num_workers), "ps": ("ps", num_ps)}


def _environment(tasks, name):
    downward = [{"name": var, "valueFrom": {"fieldRef": {
        "fieldPath": f"metadata.annotations['{annotation}']"}}}
        for var, annotation in ANNOTATIONS.items()]
    return downward + [
        {"name": "MLBENCH_JOBSET_TASKS", "value": json.dumps(
            {job: list(spec) for job, spec in tasks.items()}, sort_keys=True)},
        {"name": "MLBENCH_JOBSET_SUBDOMAIN", "value": name},
        {"name": "MLBENCH_JOBSET_PORT", "value": str(DEFAULT_PORT)}]


def _resources(cpus, memory, gpus):
    amounts = {k: str(v) for k, v in (("cpu", cpus), ("memory", memory),
                                      ("nvidia.com/gpu", gpus)) if v}
    return {"requests": dict(amounts), "limits": dict(amounts)} if amounts else {}


def _container(container_name, image, command, env, resources, volume_claim):
    container = {"name": container_name, "image": image,
                 **({"command": list(command)} if command else {}),
                 **({"env": env} if env else {}),
                 "ports": [{"containerPort": DEFAULT_PORT, "name": "tf"}]}
    if resources:
        container["resources"] = resources
    if volume_claim:
        container["volumeMounts"] = [{"name": "model-dir", "mountPath": MOUNT}]
    return container


def _pod_spec(container, volume_claim):
    spec = {"restartPolicy": "Never", "containers": [container]}
    if volume_claim:
        spec["volumes"] = [{"name": "model-dir",
                            "persistentVolumeClaim": {"claimName": volume_claim}}]
    return spec


def _replicated_job(replicated, pods, pod_spec, name, labels=None):
    return {"name": replicated, "replicas": 1, "template": {
        **({"metadata": {"labels": labels}} if labels else {}),
        "spec": {"parallelism": pods, "completions": pods, "completionMode": "Indexed",
                 # a failed pod fails its Job at once: JobSet's failure policy restarts
                 # the whole set (one TF cluster cannot lose a task and go on)
                 "backoffLimit": 0,
                 "template": {"metadata": {"labels": {JOB_LABEL: name}},
                              "spec": pod_spec}}}}


def with_cluster_flag(command):
    """The command with `--cluster=jobset` (train / benchmark / mlperf read it)."""
    return [*command, "--cluster=jobset"] if not any(
        str(part).startswith("--cluster") for part in command) else list(command)


def jobset(command, num_workers, num_ps=0, image="mlbench:latest", name="mlbench",
           cpus=None, memory=None, gpus=None, volume_claim=None, max_restarts=3):
    """The JobSet (a dict), checked against JobSet's CRD schema."""
    check(name, num_workers, num_ps, cpus, memory, gpus)
    tasks = tasks_of(num_workers, num_ps)
    env = _environment(tasks, name)
    pod = _pod_spec(_container("mlbench", image, with_cluster_flag(command), env,
                               _resources(cpus, memory, gpus), volume_claim), volume_claim)
    # parameter servers serve until the chief ends: the chief's success ends the set
    finishing = ["chief"] if num_ps else ["worker"]
    document = {"apiVersion": JOBSET_API, "kind": "JobSet", "metadata": {"name": name},
                "spec": {"network": {"enableDNSHostnames": True, "subdomain": name,
                                     "publishNotReadyAddresses": True},
                         "failurePolicy": {"maxRestarts": max_restarts},
                         "successPolicy": {"operator": "All",
                                           "targetReplicatedJobs": finishing},
                         "replicatedJobs": [_replicated_job(job_name, pods, pod, name)
                                            for job_name, pods in tasks.values()]}}
    schemas.validate(document)
    return document


def trainjob(command, num_workers, num_ps=0, image="mlbench:latest", name="mlbench",
             cpus=None, memory=None, gpus=None, volume_claim=None,
             runtime="mlbench-tensorflow"):
    """[ClusterTrainingRuntime, TrainJob] (dicts) for Kubeflow Trainer v2, each checked
    against its CRD schema. Trainer v2 runs one replicated job of `numNodes` pods ('node'):
    workers only (MultiWorkerMirrored); parameter servers need --emit=jobset."""
    if num_ps:
        raise ValueError(f"`--num_ps` ({num_ps}): a Trainer v2 TrainJob runs one group of "
                         "identical nodes; parameter-server training needs --emit=jobset "
                         "(chief, workers and ps as replicated jobs).")
    check(name, num_workers, num_ps, cpus, memory, gpus)
    tasks = tasks_of(num_workers, 0, worker_job="node")
    pod = _pod_spec(_container("node", image, [], [], {}, volume_claim), volume_claim)
    node = _replicated_job("node", 1, pod, name, labels={ANCESTOR: "trainer"})
    runtime_document = {
        "apiVersion": TRAINER_API, "kind": "ClusterTrainingRuntime",
        "metadata": {"name": runtime, "labels": {"trainer.kubeflow.org/framework":
                                                 "tensorflow"}},
        "spec": {"mlPolicy": {"numNodes": 1},
                 "template": {"spec": {
                     "network": {"enableDNSHostnames": True,
                                 "publishNotReadyAddresses": True},
                     "replicatedJobs": [node]}}}}
    # the TrainJob's `trainer` gives the node its command, environment and resources
    trainer = {"image": image, "command": with_cluster_flag(command),
               "numNodes": num_workers, "env": _environment(tasks, name)}
    resources = _resources(cpus, memory, gpus)
    if resources:
        trainer["resourcesPerNode"] = resources
    job = {"apiVersion": TRAINER_API, "kind": "TrainJob", "metadata": {"name": name},
           "spec": {"runtimeRef": {"name": runtime, "kind": "ClusterTrainingRuntime",
                                   "apiGroup": "trainer.kubeflow.org"},
                    "trainer": trainer}}
    for document in (runtime_document, job):
        schemas.validate(document)
    return [runtime_document, job]
