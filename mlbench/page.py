"""The TensorFlow benchmarks page (2017, tf_cnn_benchmarks on NVIDIA GPUs): its models and
its suites, one record each, and its published figures read from the page suites' gin files.

A neutral module of facts: benchmark mode takes its per-model defaults, the projector
its validation set and η fits, reports the published figures. It imports no producer.

The gin files are read with gin's own parser rather than by binding them: binding needs
the `benchmark_suite` configurable, which lives with the suite runner (TensorFlow and
every model), and reading figures must not need either. The page suites hold literals
and includes only.
"""
import dataclasses
import os
from typing import Dict, Tuple

from gin import config_parser

from mlbench import config as gin_config


@dataclasses.dataclass(frozen=True)
class PageModel:
    """A model as the page ran it on the DGX-1: per-device batch, SGD, and its
    variable_update with the parameters' device."""
    name: str
    display: str
    batch_size: int
    variable_update: str
    local_parameter_device: str


MODELS = {m.name: m for m in (
    PageModel("inception_v3", "InceptionV3", 64, "parameter_server", "cpu"),
    PageModel("resnet50", "ResNet-50", 64, "parameter_server", "cpu"),
    PageModel("resnet152", "ResNet-152", 64, "parameter_server", "cpu"),
    PageModel("alexnet", "AlexNet", 512, "replicated", "gpu"),
    PageModel("vgg16", "VGG16", 64, "replicated", "gpu"),
)}
DEFAULT_BATCH_SIZE = 64
DEFAULT_VARIABLE_UPDATE = ("replicated", "gpu")
# η of each platform is fitted on this model's rows; it is held out of the error summary.
CALIBRATION_MODEL = "inception_v3"


@dataclasses.dataclass(frozen=True)
class PageSuite:
    """One table of the page: its gin file (gin/benchmarks/<name>.gin), the platform
    record it ran on, whether the projector fits that platform's η on it, whether it is
    one of the single-host validation gate's tables, and the label of its 1-GPU row."""
    name: str
    platform: str
    calibrates: bool = False
    single_host_gate: bool = False
    label: str = ""
    base_devices: int = 1


SUITES = {s.name: s for s in (
    PageSuite("dgx1_p100", "dgx1_p100", calibrates=True, single_host_gate=True,
              label="DGX-1 P100"),
    PageSuite("dgx1_p100_bs32", "dgx1_p100", single_host_gate=True),
    PageSuite("gce_k80", "gce_k80", calibrates=True, single_host_gate=True, label="GCE K80"),
    PageSuite("gce_k80_bs32", "gce_k80"),
    PageSuite("ec2_k80", "ec2_p2_8xlarge", calibrates=True, single_host_gate=True,
              label="EC2 K80"),
    PageSuite("ec2_k80_bs32", "ec2_p2_8xlarge"),
    PageSuite("ec2_distributed", "ec2_p2_8xlarge", base_devices=8),
    PageSuite("ec2_distributed_bs32", "ec2_p2_8xlarge", base_devices=8),
)}


def display(model):
    """The page's name of a model ('ResNet-50'); other models keep their own name."""
    return MODELS[model].display if model in MODELS else model


def batch_size(model):
    return MODELS[model].batch_size if model in MODELS else DEFAULT_BATCH_SIZE


def variable_update(model):
    """(variable_update, local_parameter_device) of `model` on the DGX-1 page."""
    m = MODELS.get(model)
    return (m.variable_update, m.local_parameter_device) if m else DEFAULT_VARIABLE_UPDATE


def calibration_suites(platform):
    """The suites a platform's η is fitted on: its own batch-64 table, and for EC2 the
    distributed table too (its 16/32/64 counts)."""
    own = [s.name for s in SUITES.values() if s.platform == platform and s.calibrates]
    return own + (["ec2_distributed"] if platform == "ec2_p2_8xlarge" else [])


def anchor_suites():
    """The suites whose 1-GPU rows are the page's anchors in reports: (name, label)."""
    return [(s.name, s.label) for s in SUITES.values() if s.label]


@dataclasses.dataclass(frozen=True)
class Published:
    """A page suite's figures: per-model batch size and (variable_update, device), and the
    synthetic images/sec {devices: {model: figure}}, measured from `base_devices` up."""
    batch_sizes: Dict[str, int]
    variable_updates: Dict[str, Tuple[str, str]]
    synthetic: Dict[int, Dict[str, float]]
    base_devices: int


def published(name):
    """The published figures of a page suite (or of a suite file under gin/benchmarks/
    that holds a `reference` table)."""
    bindings = suite_bindings(name)
    reference = bindings["reference"]["synthetic"]
    updates = bindings.get("variable_updates") or {}
    models = reference[min(reference)]
    base = SUITES[name].base_devices if name in SUITES else 1
    return Published(bindings["batch_sizes"],
                     {m: tuple(updates.get(m) or variable_update(m)) for m in models},
                     reference, base)


def suite_bindings(name):
    """{parameter: value} of `benchmark_suite` in gin/benchmarks/<name>.gin (includes
    first, later bindings win, as gin does)."""
    path = os.path.join(gin_config.shipped_gin_root(), "benchmarks", f"{name}.gin")
    if not os.path.exists(path):
        raise ValueError(f"`suite` ({name!r}) is not a file under gin/benchmarks/.")
    return _bindings(path)


class _LiteralsOnly(config_parser.ParserDelegate):
    def configurable_reference(self, scoped_configurable_name, evaluate):
        raise ValueError(f"page suites hold literals only, not @{scoped_configurable_name}.")

    def macro(self, macro_name):
        raise ValueError(f"page suites hold literals only, not %{macro_name}.")


def _bindings(path):
    values = {}
    with open(path) as f:
        for statement in config_parser.ConfigParser(f, _LiteralsOnly()):
            if isinstance(statement, config_parser.IncludeStatement):
                included = statement.filename.split("gin/", 1)[-1]
                values.update(_bindings(os.path.join(gin_config.shipped_gin_root(), included)))
            elif (isinstance(statement, config_parser.BindingStatement)
                  and statement.selector == "benchmark_suite"):
                values[statement.arg_name] = statement.value
    return values
