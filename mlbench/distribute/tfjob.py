"""A Kubeflow TFJob manifest for the same command `mlbench launch` runs locally.

Kubernetes gets no home-made scheduler: Kubeflow's training operator turns a
TFJob's replica specs (Chief / Worker / PS) into pods and writes each pod's
TF_CONFIG, which mlbench reads exactly as it reads the one `mlbench launch` sets.
"""
import yaml


def replica(count, image, command, restart_policy):
    return {"replicas": count, "restartPolicy": restart_policy, "template": {"spec": {
        # the training operator finds the TensorFlow container by this name
        "containers": [{"name": "tensorflow", "image": image, "command": list(command)}]}}}


def manifest(command, num_workers, num_ps=0, image="mlbench:latest", name="mlbench"):
    """The TFJob (a dict): without ps, `num_workers` workers (MultiWorkerMirrored, worker 0
    acts as chief); with ps, a chief, `num_workers` workers and `num_ps` parameter servers.
    Workers restart on failure (the coordinator reschedules around them meanwhile)."""
    if num_workers < 1:
        raise ValueError(f"`num_workers` ({num_workers}) must be >= 1.")
    if num_ps < 0:
        raise ValueError(f"`num_ps` ({num_ps}) must be >= 0.")
    specs = {"Worker": replica(num_workers, image, command, "OnFailure")}
    if num_ps:
        specs = {"Chief": replica(1, image, command, "Never"),
                 "Worker": replica(num_workers, image, command, "OnFailure"),
                 "PS": replica(num_ps, image, command, "Never")}
    return {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": name},
            "spec": {"runPolicy": {"cleanPodPolicy": "Running"}, "tfReplicaSpecs": specs}}


def to_yaml(job):
    return yaml.safe_dump(job, sort_keys=False)
