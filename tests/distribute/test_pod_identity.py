"""`--cluster=jobset`: TF_CONFIG from a JobSet pod's own identity, and a missing or
malformed identity refused by name."""
import json

import pytest

from mlbench.distribute.cluster import tf_config_from_jobset
from mlbench.distribute.pod_identity import JobSetClusterResolver


def pod_env(**changes):
    env = {"MLBENCH_JOBSET_NAME": "job", "MLBENCH_REPLICATED_JOB": "worker",
           "MLBENCH_JOB_INDEX": "0", "JOB_COMPLETION_INDEX": "1",
           "MLBENCH_JOBSET_TASKS": '{"worker": ["worker", 2]}'}
    env.update(changes)
    return {k: v for k, v in env.items() if v is not None}


def test_tf_config_comes_from_the_pods_identity_and_jobsets_hostnames():
    config = json.loads(tf_config_from_jobset(pod_env()))
    assert config == {"cluster": {"worker": ["job-worker-0-0.job:2222",
                                             "job-worker-0-1.job:2222"]},
                      "task": {"type": "worker", "index": 1}}
    ps = JobSetClusterResolver(pod_env(
        MLBENCH_REPLICATED_JOB="ps", JOB_COMPLETION_INDEX="0", MLBENCH_JOBSET_PORT="3000",
        MLBENCH_JOBSET_TASKS='{"chief": ["chief", 1], "worker": ["worker", 2], '
                             '"ps": ["ps", 1]}'))
    assert (ps.task_type, ps.task_id) == ("ps", 0)
    assert ps.cluster_spec().as_dict()["chief"] == ["job-chief-0-0.job:3000"]


@pytest.mark.parametrize("changes,needle", [
    (dict(MLBENCH_JOBSET_NAME=None), "MLBENCH_JOBSET_NAME is not set"),
    (dict(JOB_COMPLETION_INDEX="x"), "JOB_COMPLETION_INDEX ('x') must be an index"),
    (dict(JOB_COMPLETION_INDEX="2"), "outside its 2 pod(s)"),
    (dict(MLBENCH_REPLICATED_JOB="launcher"), "'launcher') is not among"),
    (dict(MLBENCH_JOBSET_TASKS="[1]"), "must be JSON like"),
    (dict(MLBENCH_JOBSET_TASKS='{"ps": ["ps", 1]}'), "must give 'worker'"),
])


def test_a_missing_or_malformed_identity_is_refused_by_name(changes, needle):
    with pytest.raises(ValueError, match=needle.replace("(", r"\(").replace(")", r"\)")):
        tf_config_from_jobset(pod_env(**changes))
