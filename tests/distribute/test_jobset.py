"""`mlbench launch --emit=jobset|trainjob`: every manifest checked against the CRDs' own
schemas, the command line, and a JobSet run as the cluster would run it: two processes
given what JobSet and Kubernetes give its pods, equal to `mlbench launch`."""
import json
import re
import socket
import subprocess

import numpy as np
import pytest
import yaml

import mlbench
from harness import ENV, mlbench_command, mlbench_here, mlbench_process
from mlbench.distribute import jobset, schemas


COMMAND = ["python", "-m", "mlbench", "train", "--model=mlp", "--data=digits"]


IMAGE = "--image=registry/mlbench:0.2"
SIZES = [dict(), dict(cpus="4", memory="16Gi", gpus=1, volume_claim="runs")]


@pytest.mark.parametrize("sizes", SIZES)
@pytest.mark.parametrize("workers,ps", [(1, 0), (2, 0), (4, 0), (2, 1), (3, 2)])
def test_every_jobset_validates_against_jobsets_schema(workers, ps, sizes):
    document = jobset.jobset(COMMAND, workers, ps, **sizes)
    assert schemas.violations(document) == []
    jobs = {r["name"]: r["template"]["spec"]["completions"]
            for r in document["spec"]["replicatedJobs"]}
    assert jobs == ({"chief": 1, "worker": workers, "ps": ps} if ps else {"worker": workers})


@pytest.mark.parametrize("sizes", SIZES)
@pytest.mark.parametrize("workers", [1, 3])
def test_every_trainjob_and_its_runtime_validate_against_trainers_schemas(workers, sizes):
    runtime, job = jobset.trainjob(COMMAND, workers, **sizes)
    assert schemas.violations(runtime) == [] and schemas.violations(job) == []
    assert job["spec"]["trainer"]["numNodes"] == workers
    assert job["spec"]["runtimeRef"]["name"] == runtime["metadata"]["name"]


def test_the_cli_prints_checked_yaml_and_refuses_bad_options_before_printing():
    done = mlbench_here("launch", "--emit=jobset", "--num_workers=4", IMAGE, "--gpus=1",
                        "--volume_claim=runs", "--", "train", "--model=mlp")
    assert done.returncode == 0, done.stderr
    documents = list(yaml.safe_load_all(done.stdout))
    assert [d["kind"] for d in documents] == ["JobSet", "NetworkPolicy"]
    assert "--cluster=jobset" in documents[0]["spec"]["replicatedJobs"][0]["template"][
        "spec"]["template"]["spec"]["containers"][0]["command"]
    trainjob = mlbench_here("launch", "--emit=trainjob", IMAGE, "--", "train", "--model=mlp")
    assert [d["kind"] for d in yaml.safe_load_all(trainjob.stdout)] == [
        "ClusterTrainingRuntime", "TrainJob", "NetworkPolicy"]
    retired = mlbench_here("launch", "--emit=tfjob", IMAGE, "--", "train")
    assert retired.returncode == 0 and "retiring" in retired.stderr
    for args, needle in ((["--emit=jobset"], "`--image` is needed"),
                         (["--emit=jobset", IMAGE, "--num_workers=0"], "`--num_workers` (0)"),
                         (["--emit=jobset", IMAGE, "--manifest_name=Bad_Name"], "DNS label"),
                         (["--emit=jobset", IMAGE, "--memory=lots"], "`--memory` ('lots')"),
                         (["--emit=trainjob", IMAGE, "--num_ps=1"], "--emit=jobset")):
        bad = mlbench_here("launch", *args, "--", "train")
        assert bad.returncode == 2 and needle in bad.stderr and not bad.stdout


def pod_environments(document):
    """Each pod's environment as JobSet and Kubernetes would set it from `document` (a
    JobSet): the downward API's annotations resolved, JOB_COMPLETION_INDEX per pod, the
    literal values as written; [(hostname, env)] in replicated-job order."""
    name = document["metadata"]["name"]
    subdomain = document["spec"].get("network", {}).get("subdomain") or name
    pods = []
    for replicated in document["spec"]["replicatedJobs"]:
        job_spec = replicated["template"]["spec"]
        container = job_spec["template"]["spec"]["containers"][0]
        for job_index in range(replicated["replicas"]):
            annotations = {"jobset.sigs.k8s.io/jobset-name": name,
                           "jobset.sigs.k8s.io/replicatedjob-name": replicated["name"],
                           "jobset.sigs.k8s.io/job-index": str(job_index)}
            for pod_index in range(job_spec["completions"]):
                env = {"JOB_COMPLETION_INDEX": str(pod_index)}
                for entry in container.get("env", []):
                    if "value" in entry:
                        env[entry["name"]] = entry["value"]
                    else:
                        path = entry["valueFrom"]["fieldRef"]["fieldPath"]
                        key = re.fullmatch(r"metadata\.annotations\['(.+)'\]", path).group(1)
                        env[entry["name"]] = annotations[key]
                host = f"{name}-{replicated['name']}-{job_index}-{pod_index}.{subdomain}"
                pods.append((host, env, container["command"]))
    return pods


def _free_ports(n):
    sockets = [socket.socket() for _ in range(n)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


@pytest.mark.xdist_group("multi_process")
def test_a_rendered_jobset_runs_as_the_cluster_would_and_equals_mlbench_launch(tmp_path):
    """Each pod's environment derived from the manifest as JobSet and Kubernetes set it
    (annotations through the downward API, the completion index), hostnames mapped to
    127.0.0.1 ports: the two processes train what `mlbench launch` trains."""
    train = ["train", "--model=simple_cnn", "--data=digits", "--global_batch_size=32",
             "--train_steps=4", "--precision=float32", "--model_options=image_size=8",
             "--noverbose", "--seed=3"]
    launched = mlbench_process("launch", "--num_workers=2", "--", *train,
                               f"--model_dir={tmp_path / 'launch'}", timeout=900)
    assert launched.returncode == 0, launched.stdout[-3000:] + launched.stderr[-2000:]
    document = jobset.jobset(["python", "-m", "mlbench", *train,
                              f"--model_dir={tmp_path / 'jobset'}"], 2)
    pods = pod_environments(document)
    addresses = {host: f"127.0.0.1:{port}"
                 for (host, _, _), port in zip(pods, _free_ports(len(pods)))}
    running = []
    for host, env, command in pods:
        assert command[:3] == ["python", "-m", "mlbench"] and command[-1] == "--cluster=jobset"
        running.append(subprocess.Popen(
            mlbench_command(*command[3:]), env={**ENV, **env,
                                                "MLBENCH_JOBSET_ADDRESSES": json.dumps(addresses)},
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    outputs = [p.communicate(timeout=900)[0] for p in running]
    assert [p.returncode for p in running] == [0, 0], outputs[0][-3000:] + outputs[1][-3000:]
    ours = json.loads((tmp_path / "jobset" / "result.json").read_text())
    assert ours["ran"]["strategy"] == "MultiWorkerMirroredStrategy"
    assert ours["ran"]["replicas"] == 2 and ours["steps"] == 4
    for a, b in zip(mlbench.load(str(tmp_path / "launch")).model.get_weights(),
                    mlbench.load(str(tmp_path / "jobset")).model.get_weights()):
        np.testing.assert_array_equal(a, b)
