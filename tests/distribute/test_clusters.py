"""Clusters through TensorFlow's own resolvers: SLURM (two local processes under the SLURM
variables an `srun` step sets) and Kubernetes (a Kubeflow TFJob manifest)."""
import json
import os
import random
import socket
import subprocess

import pytest
import yaml

from harness import mlbench_process, mlbench_started

# Multi-process tests run one at a time on one `make test` worker (pytest-xdist's
# loadgroup): two at once, each with its TensorFlow processes, starved a 2-core machine
# until a chief failed to create a thread (in two of six runs).
pytestmark = pytest.mark.xdist_group("multi_process")

ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
TRAIN = ["train", "--cluster=slurm", "--model=simple_cnn", "--data=digits",
         "--global_batch_size=32", "--train_steps=4", "--precision=float32",
         "--model_options=image_size=8", "--noverbose"]


def two_free_ports():
    while True:
        base = random.randint(20000, 60000)
        try:
            for port in (base, base + 1):
                with socket.socket() as s:
                    s.bind(("0.0.0.0", port))
            return base
        except OSError:
            continue


def test_slurm_step_of_two_tasks_trains_one_multi_worker_job(tmp_path):
    slurm = {"SLURM_STEP_NODELIST": "localhost", "SLURM_STEP_TASKS_PER_NODE": "2",
             "SLURM_STEP_NUM_TASKS": "2", "MLBENCH_SLURM_PORT_BASE": str(two_free_ports())}
    procs = [mlbench_started(*TRAIN, f"--model_dir={tmp_path / 'run'}",
                             env={**ENV, **slurm, "SLURM_PROCID": str(rank)},
                             stderr=subprocess.STDOUT)
             for rank in (0, 1)]
    outputs = [p.communicate(timeout=600)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs[0][-2000:] + outputs[1][-2000:]
    saved = json.loads((tmp_path / "run" / "result.json").read_text())
    assert saved["ran"]["strategy"] == "MultiWorkerMirroredStrategy"
    assert saved["ran"]["replicas"] == 2 and saved["steps"] == 4


def test_slurm_outside_srun_is_refused():
    out = mlbench_process(*TRAIN, env={k: v for k, v in ENV.items()
                                       if not k.startswith("SLURM")}, timeout=300)
    assert out.returncode == 2 and "no SLURM_PROCID" in out.stderr


def test_tfjob_manifest_has_chief_workers_and_ps_running_the_same_command():
    out = mlbench_process("launch", "--emit=tfjob", "--num_workers=3", "--num_ps=2",
                          "--image=registry/mlbench:0.2", "--", "train",
                          "--gin_file=cpu/mnist_cnn.gin", timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    job, policy = yaml.safe_load_all(out.stdout)
    assert job["apiVersion"] == "kubeflow.org/v1" and job["kind"] == "TFJob"
    specs = job["spec"]["tfReplicaSpecs"]
    assert {k: v["replicas"] for k, v in specs.items()} == {"Chief": 1, "Worker": 3, "PS": 2}
    for spec in specs.values():
        container = spec["template"]["spec"]["containers"][0]
        assert container["name"] == "tensorflow" and container["image"] == "registry/mlbench:0.2"
        assert container["command"] == ["python", "-m", "mlbench", "train",
                                        "--gin_file=cpu/mnist_cnn.gin"]
    # no open door: the job's pods admit traffic only from pods with the job's own label,
    # which every replica's pods carry
    assert policy["kind"] == "NetworkPolicy" and policy["spec"]["policyTypes"] == ["Ingress"]
    own = policy["spec"]["podSelector"]["matchLabels"]
    assert policy["spec"]["ingress"] == [{"from": [{"podSelector": {"matchLabels": own}}]}]
    for spec in specs.values():
        assert spec["template"]["metadata"]["labels"] == own == {"mlbench.job": "mlbench"}
