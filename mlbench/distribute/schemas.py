"""Manifests checked against the real schemas: the OpenAPI v3 schemas of the JobSet,
Kubeflow Trainer v2 and (Trainer v1) TFJob CRDs, vendored from their pinned releases (`crds/README.md`).

The API server validates a custom resource against its CRD's schema and, with strict
field validation (kubectl's default since 1.27), refuses fields the schema does not
know. `validate` does both with `jsonschema`: an object schema that lists `properties`
is closed here unless it says `x-kubernetes-preserve-unknown-fields`, so a misspelt field
fails as the server would fail it. Formats and CEL rules (`x-kubernetes-validations`)
are not checked: the server's own webhooks and CEL are not reproduced.

Kubernetes' own kinds (the NetworkPolicy beside each job) and every pod template inside a
custom resource are checked as well against Kubernetes' published schemas, at the release
`KUBERNETES` (PyPI `kubernetes-validate`, strict): a CRD copies the pod schema of the
Kubernetes its generator was built against, the cluster checks the pod against its own.
"""
import functools
import gzip
import json
import os

FOLDER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "crds")
FILES = {("jobset.x-k8s.io", "JobSet"): "jobset.x-k8s.io_jobsets.json.gz",
         ("trainer.kubeflow.org", "TrainJob"): "trainer.kubeflow.org_trainjobs.json.gz",
         ("trainer.kubeflow.org", "ClusterTrainingRuntime"):
             "trainer.kubeflow.org_clustertrainingruntimes.json.gz",
         ("kubeflow.org", "TFJob"): "kubeflow.org_tfjobs.json.gz"}
KUBERNETES = "1.33.0"  # the cluster release Kubernetes' own kinds and pod templates meet


class SchemaViolation(ValueError):
    """A manifest the cluster would refuse: each violation with its path."""


@functools.lru_cache(maxsize=None)
def _crd(file):
    with gzip.open(os.path.join(FOLDER, file), "rt") as f:
        return json.load(f)


def schema_for(api_version, kind):
    """The vendored schema of `kind` at `api_version` (e.g. 'jobset.x-k8s.io/v1alpha2')."""
    group, _, version = api_version.rpartition("/")
    file = FILES.get((group, kind))
    if file is None:
        raise KeyError(f"no vendored schema for {kind} ({api_version}); have "
                       f"{sorted(k for _, k in FILES)}")
    versions = _crd(file)["versions"]
    if version not in versions:
        raise KeyError(f"{kind}: version {version!r} is not in the vendored CRD "
                       f"({sorted(versions)})")
    return _closed(versions[version])


def source_of(kind):
    """Where the schema of `kind` comes from (project, release, commit, path)."""
    return next((_crd(f)["source"] for (_, k), f in FILES.items() if k == kind),
                f"Kubernetes {KUBERNETES}, kubernetes-validate")


def _closed(schema):
    """The schema with every object that lists its properties closed to others (strict
    field validation), except where Kubernetes keeps unknown fields."""
    if isinstance(schema, list):
        return [_closed(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    closed = {k: _closed(v) for k, v in schema.items()}
    if ("properties" in schema and "additionalProperties" not in schema and
            not schema.get("x-kubernetes-preserve-unknown-fields")):
        closed["additionalProperties"] = False
    return closed


def violations(document):
    """Every way `document` breaks its kind's schema, as 'path: message' lines; for a
    custom resource, also the first way each of its pod templates breaks Kubernetes'."""
    group = document["apiVersion"].rpartition("/")[0]
    if (group, document["kind"]) not in FILES:
        return _kubernetes_violations(document)
    import jsonschema
    schema = schema_for(document["apiVersion"], document["kind"])
    validator = jsonschema.Draft7Validator(schema)
    found = [f"{_path(error.absolute_path)}: {error.message}"
             for error in validator.iter_errors(document)]
    for path, template in _pod_templates(document):
        # checked as the `template` of a PodTemplate, the kind Kubernetes publishes
        found += [f"{path}{line[len('template'):]} (Kubernetes {KUBERNETES} "
                  "PodTemplateSpec)" for line in _kubernetes_violations(
                      {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "t"},
                       "template": template})]
    return sorted(found)


def _kubernetes_violations(document):
    """The first way `document`, a kind of Kubernetes' own, breaks its schema (its
    validator stops at one), as a 'path: message' line; none when it holds."""
    import kubernetes_validate
    try:
        kubernetes_validate.validate(document, KUBERNETES, strict=True)
    except kubernetes_validate.ValidationError as error:
        return [f"{_path(error.absolute_path)}: {error.message}"]
    return []


def _pod_templates(node, path=""):
    """(path, template) of every pod template (an object whose spec lists containers)."""
    if isinstance(node, list):
        for i, item in enumerate(node):
            yield from _pod_templates(item, f"{path}.{i}")
    elif isinstance(node, dict):
        if isinstance(node.get("spec"), dict) and "containers" in node["spec"]:
            yield path.lstrip("."), node
            return
        for key, value in node.items():
            yield from _pod_templates(value, f"{path}.{key}")


def _path(parts):
    return ".".join(str(p) for p in parts) or "(root)"


def validate(document):
    """`document` when it holds to its schema; else raises SchemaViolation naming each
    violation."""
    found = violations(document)
    if found:
        raise SchemaViolation(f"{document['kind']} {document['metadata'].get('name')!r} "
                              f"breaks its schema ({source_of(document['kind'])}): "
                              + "; ".join(found[:10]))
    return document
