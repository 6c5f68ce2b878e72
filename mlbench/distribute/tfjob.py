"""A Kubeflow TFJob manifest for the same command `mlbench launch` runs locally.

Kubernetes gets no home-made scheduler: Kubeflow's training operator turns a
TFJob's replica specs (Chief / Worker / PS) into pods and writes each pod's
TF_CONFIG, which mlbench reads exactly as it reads the one `mlbench launch` sets.
The pods carry a label of the job's own, and a NetworkPolicy beside the TFJob admits
traffic to them only from each other. Both are checked against their schemas.
"""
import yaml

from mlbench.distribute import schemas

JOB_LABEL = "mlbench.job"  # on every pod of the job; the NetworkPolicy selects by it


def replica(count, image, command, restart_policy, name="mlbench"):
    return {"replicas": count, "restartPolicy": restart_policy, "template": {
        "metadata": {"labels": {JOB_LABEL: name}},
        # the training operator finds the TensorFlow container by this name
        "spec": {"containers": [{"name": "tensorflow", "image": image,
                                 "command": list(command)}]}}}


def manifest(command, num_workers, num_ps=0, image="mlbench:latest", name="mlbench"):
    """The TFJob (a dict): without ps, `num_workers` workers (MultiWorkerMirrored, worker 0
    acts as chief); with ps, a chief, `num_workers` workers and `num_ps` parameter servers.
    Workers restart on failure (the coordinator reschedules around them meanwhile)."""
    if num_workers < 1:
        raise ValueError(f"`num_workers` ({num_workers}) must be >= 1.")
    if num_ps < 0:
        raise ValueError(f"`num_ps` ({num_ps}) must be >= 0.")
    specs = {"Worker": replica(num_workers, image, command, "OnFailure", name)}
    if num_ps:
        specs = {"Chief": replica(1, image, command, "Never", name),
                 "Worker": replica(num_workers, image, command, "OnFailure", name),
                 "PS": replica(num_ps, image, command, "Never", name)}
    return schemas.validate(
        {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": name},
         "spec": {"runPolicy": {"cleanPodPolicy": "Running"}, "tfReplicaSpecs": specs}})


def network_policy(name="mlbench"):
    """A NetworkPolicy admitting traffic to the job's pods only from the job's own pods:
    TensorFlow's servers run whatever graph reaches their port (docs/security.md). It
    takes effect where the cluster's network plugin enforces NetworkPolicies."""
    own = {"matchLabels": {JOB_LABEL: name}}
    return schemas.validate(
        {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
         "metadata": {"name": f"{name}-own-pods-only"},
         "spec": {"podSelector": own, "policyTypes": ["Ingress"],
                  "ingress": [{"from": [{"podSelector": own}]}]}})


def to_yaml(*documents):
    return yaml.safe_dump_all(documents, sort_keys=False)
