"""The vendored CRD schemas catch what the API server would refuse: an unknown field
(strict field validation), a wrong type."""
import copy

import pytest

from mlbench.distribute import jobset, schemas, tfjob


COMMAND = ["python", "-m", "mlbench", "train", "--model=mlp", "--data=digits"]


def test_the_schemas_catch_what_the_api_server_would_refuse():
    document = jobset.jobset(COMMAND, 2)
    misspelt = copy.deepcopy(document)
    pod = misspelt["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    pod["containers"][0]["comand"] = pod["containers"][0].pop("command")
    assert any("'comand' was unexpected" in v for v in schemas.violations(misspelt))
    wrong_type = copy.deepcopy(document)
    wrong_type["spec"]["replicatedJobs"][0]["replicas"] = "one"
    assert any("replicatedJobs.0.replicas" in v for v in schemas.violations(wrong_type))
    with pytest.raises(schemas.SchemaViolation, match="jobset v0.12.0"):
        schemas.validate(wrong_type)


@pytest.mark.parametrize("workers,ps", [(1, 0), (3, 0), (2, 1), (3, 2)])
def test_every_tfjob_validates_against_trainer_v1s_schema(workers, ps):
    document = tfjob.manifest(COMMAND, workers, ps, image="registry/mlbench:0.2")
    assert schemas.violations(document) == []
    broken = copy.deepcopy(document)
    broken["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] = "three"
    assert any("Worker.replicas" in v for v in schemas.violations(broken))


def test_pod_templates_and_the_network_policy_meet_kubernetes_own_schemas():
    """Kubernetes' own schemas (kubernetes-validate, at schemas.KUBERNETES) check what a
    CRD embeds as a pod template and the NetworkPolicy beside every job."""
    paths = [path for path, _ in schemas._pod_templates(jobset.jobset(COMMAND, 2, 1))]
    assert paths == [f"spec.replicatedJobs.{i}.template.spec.template" for i in range(3)]
    document = tfjob.manifest(COMMAND, 2)
    document["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0][
        "imagePullPolicy"] = 3
    found = [v for v in schemas.violations(document) if "PodTemplateSpec" in v]
    assert found and found[0].startswith(
        "spec.tfReplicaSpecs.Worker.template.spec.containers.0.imagePullPolicy: 3 is not")
    policy = tfjob.network_policy("job")
    assert schemas.violations(policy) == []
    assert policy["spec"]["podSelector"] == {"matchLabels": {tfjob.JOB_LABEL: "job"}}
    broken = copy.deepcopy(policy)
    broken["spec"]["ingress"][0]["from"] = "everyone"
    assert schemas.violations(broken) == ["spec.ingress.0.from: 'everyone' is not of type "
                                          "'array', 'null'"]
    with pytest.raises(schemas.SchemaViolation, match="Kubernetes 1.33.0"):
        schemas.validate(broken)
