"""Manifests checked against the real schemas: the OpenAPI v3 schemas of the JobSet,
Kubeflow Trainer v2 and (Trainer v1) TFJob CRDs, vendored from their pinned releases (`crds/README.md`).

The API server validates a custom resource against its CRD's schema and, with strict
field validation (kubectl's default since 1.27), refuses fields the schema does not
know. `validate` does both with `jsonschema`: an object schema that lists `properties`
is closed here unless it says `x-kubernetes-preserve-unknown-fields`, so a misspelt field
fails as the server would fail it. Formats and CEL rules (`x-kubernetes-validations`)
are not checked: the server's own webhooks and CEL are not reproduced.
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
    """Where the vendored schema of `kind` comes from (project, release, commit, path)."""
    return next(_crd(f)["source"] for (_, k), f in FILES.items() if k == kind)


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
    """Every way `document` breaks its kind's schema, as 'path: message' lines."""
    import jsonschema
    schema = schema_for(document["apiVersion"], document["kind"])
    validator = jsonschema.Draft7Validator(schema)
    return sorted(f"{'.'.join(str(p) for p in error.absolute_path) or '(root)'}: "
                  f"{error.message}" for error in validator.iter_errors(document))


def validate(document):
    """Raises SchemaViolation naming each violation of `document`'s CRD schema."""
    found = violations(document)
    if found:
        raise SchemaViolation(f"{document['kind']} {document['metadata'].get('name')!r} "
                              f"breaks its schema ({source_of(document['kind'])}): "
                              + "; ".join(found[:10]))
