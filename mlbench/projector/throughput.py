"""Scaling projector: images/sec on n devices (or hosts) from one measured device.

Model (docs/projection.md):

    step(n) = compute / η(n) + exposed(n)
    exposed(n) = max(0, comm(n) − overlap · backward),  backward = 2/3 · compute

`compute` is the measured 1-device step time minus its own exposed
communication (a parameter server on the CPU copies gradients even for one
GPU). `comm(n)` is the traffic of the `variable_update` pattern over the
platform record's bandwidths plus a latency per hop; `overlap` ∈ [0, 1] is how
much of it hides behind the backward pass: the band runs from 0 (no overlap,
the low figure) to 1 (full overlap, the high one); the point estimate uses
OVERLAP. η(n) is the one fitted factor per platform and device count, fitted on
InceptionV3 only (the most compute-bound model); there is no per-model factor.
"""
from typing import Dict

from mlbench import page
from mlbench.projector import platforms
from mlbench.results.projection import ProjectedCell, Projection

OVERLAP = 0.5  # the point estimate: half of the communication hides behind backward
BACKWARD_SHARE = 2 / 3  # backward ≈ 2 × forward (Kaplan et al. 2020)
PATTERNS = ("replicated", "ps_cpu", "ps_gpu", "distributed_replicated")


def pattern_for(variable_update, local_parameter_device="cpu"):
    """The communication pattern of a tf_cnn_benchmarks `variable_update`."""
    if variable_update in ("replicated", "distributed_replicated"):
        return variable_update
    if variable_update == "parameter_server":
        return "ps_cpu" if local_parameter_device == "cpu" else "ps_gpu"
    raise ValueError(f"`variable_update` ({variable_update!r}) must be one of "
                     "['parameter_server', 'replicated', 'distributed_replicated'].")


def pattern_for_strategy(strategy_name):
    """The pattern of a tf.distribute strategy name (as `BenchmarkResult.ran` records it)."""
    mapping = {"MirroredStrategy": "replicated", "OneDeviceStrategy": "replicated",
               "CentralStorageStrategy": "ps_cpu", "MultiWorkerMirroredStrategy":
               "distributed_replicated", "ParameterServerStrategy": "ps_cpu"}
    if strategy_name not in mapping:
        raise ValueError(f"strategy ({strategy_name!r}) has no projection pattern; known: "
                         f"{sorted(mapping)}.")
    return mapping[strategy_name]


def communication_s(pattern, n, gradient_bytes, record):
    """Seconds of gradient/parameter traffic per step on `n` devices (no overlap)."""
    bw = lambda field: platforms.value(record, field)  # noqa: E731
    latency, g = bw("latency_s"), float(gradient_bytes)
    if pattern == "replicated":
        return 2 * (n - 1) / n * g / bw("ring_bandwidth") + 2 * (n - 1) * latency if n > 1 else 0.0
    if pattern == "ps_gpu":  # variables spread over the GPUs, each sends and gets (n-1)/n
        return 2 * (n - 1) / n * g / bw("pcie_per_device") + 2 * latency if n > 1 else 0.0
    if pattern == "ps_cpu":  # every GPU pushes g and pulls g; the host sums n copies
        links = max(2 * g / bw("pcie_per_device"), 2 * n * g / bw("host_uplink"))
        return links + n * g / bw("cpu_reduce_bandwidth") + 2 * latency
    if pattern == "distributed_replicated":
        per_host = record["devices_per_host"]
        hosts, local = max(1, n // per_host), min(n, per_host)
        inside = communication_s("replicated", local, g, record)
        between = (2 * g * (hosts - 1) / hosts / bw("nic_bandwidth") + 2 * (hosts - 1) * latency
                   if hosts > 1 else 0.0)
        return inside + between
    raise ValueError(f"`pattern` ({pattern!r}) must be one of {list(PATTERNS)}.")


def exposed_s(comm, compute, overlap):
    return max(0.0, comm - overlap * BACKWARD_SHARE * compute)


def compute_s(step_s, n, pattern, gradient_bytes, record):
    """A measured `n`-device step without its exposed communication (point overlap k):
    step = c + max(0, comm − k·c), solved for c."""
    comm = communication_s(pattern, n, gradient_bytes, record)
    k = OVERLAP * BACKWARD_SHARE
    return step_s if comm <= k * step_s else (step_s - comm) / (1 - k)


def project_cell(images_per_sec, batch, n, pattern, gradient_bytes, record, eta=1.0,
                 base_devices=1, measured=None):
    """Projects `n` devices from a measurement on `base_devices` (images/sec at per-device
    `batch`)."""
    _check(images_per_sec, batch, n, base_devices, eta)
    base_step = base_devices * batch / images_per_sec
    compute = compute_s(base_step, base_devices, pattern, gradient_bytes, record)
    comm = communication_s(pattern, n, gradient_bytes, record)

    def rate(overlap):
        return n * batch / (compute / eta + exposed_s(comm, compute, overlap))
    exposed = exposed_s(comm, compute, OVERLAP)
    return ProjectedCell(devices=n, images_per_sec=rate(OVERLAP), low=rate(0.0), high=rate(1.0),
                linear=images_per_sec * n / base_devices, compute_s=compute,
                exposed_s=exposed, hidden_s=comm - exposed, derate_s=compute / eta - compute,
                measured=measured)


def _check(images_per_sec, batch, n, base_devices, eta):
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f"`devices` ({n!r}) must be an integer >= 1.")
    if images_per_sec is None or not images_per_sec > 0:
        raise ValueError(f"`images_per_sec` ({images_per_sec!r}): a measured single-device "
                         "throughput (> 0) is needed; give a BenchmarkResult, a results.json "
                         "or the figure.")
    if not isinstance(batch, int) or batch < 1:
        raise ValueError(f"`batch_size` ({batch!r}) must be an integer >= 1.")
    if not eta > 0:
        raise ValueError(f"η ({eta!r}) must be > 0.")
    if n < base_devices:
        raise ValueError(f"`devices` ({n}) must be at least the measured {base_devices}.")


def fit_eta(images_per_sec: Dict[int, float], batch, pattern, gradient_bytes, record,
            base_devices=1):
    """η(n) that makes the point projection of one model (InceptionV3) exact."""
    base_step = base_devices * batch / images_per_sec[base_devices]
    compute = compute_s(base_step, base_devices, pattern, gradient_bytes, record)
    etas = {}
    for n, measured in images_per_sec.items():
        if n == base_devices:
            continue
        comm = communication_s(pattern, n, gradient_bytes, record)
        step = n * batch / measured
        etas[n] = compute / (step - exposed_s(comm, compute, OVERLAP))
    return etas


# --- the benchmarks page as the validation set ---------------------------------------

# Trainable parameters of mlbench's builds of the page's models (counted on the built
# models; tests check resnet50 against its build). Gradients are float32: 4 bytes each.
PARAMETERS = {"inception_v3": 23_817_352, "resnet50": 25_557_032, "resnet152": 60_192_808,
              "alexnet": 61_838_248, "vgg16": 138_357_544}


def page_etas(platform, read_suite):
    """η(n) of a platform, fitted on InceptionV3 of its calibration suite (and, for the
    distributed counts, of the distributed suite). `read_suite(name)` gives a page suite's
    (batch sizes, patterns, synthetic table, base devices): `mlbench.projector.page_suites.page_suite`."""
    record = platforms.get(platform)
    etas = {}
    for suite_name in page.calibration_suites(platform):
        sizes, patterns, reference, base = read_suite(suite_name)
        m = page.CALIBRATION_MODEL
        figures = {n: row[m] for n, row in reference.items() if n >= base}
        etas.update(fit_eta(figures, sizes[m], patterns[m], 4 * PARAMETERS[m], record, base))
    return etas


# --- projecting a measurement (a BenchmarkResult, a results.json, a figure) -----------

def table_of(projection):
    """A Projection as the page's table (devices × the model)."""
    return format_table({projection.model: projection.cells}, projection.platform)


def gradient_bytes_of(model):
    """Bytes of one set of gradients: trainable variables × their dtype's size (mlbench
    all-reduces float32 gradients; variables stay float32 under mixed precision)."""
    return int(sum(v.shape.num_elements() * v.dtype.size for v in model.trainable_variables))


def model_gradient_bytes(name):
    """4 × the recorded parameters of a page model, else counted on a build (in a graph)."""
    if name in PARAMETERS:
        return 4 * PARAMETERS[name]
    import tensorflow as tf
    from mlbench import models
    info = models.resolve(name)
    with tf.Graph().as_default():
        built = info.factory() if info.own else models.get(name)
        return gradient_bytes_of(built)


def platform_eta(platform, n, read_suite=None):
    """The fitted η of a page platform at `n`, else the record's, else 1 (assumed)."""
    if page.calibration_suites(platform) and read_suite is not None:
        return page_etas(platform, read_suite).get(n, 1.0)
    record = platforms.get(platform)
    return float((record.get("eta") or {}).get(str(n), (record.get("eta") or {}).get(n, 1.0)))


def project_throughput(result=None, *, model=None, images_per_sec=None, batch_size=None,
            base_devices=1, devices=(2, 4, 8), platform=platforms.DEFAULT, variable_update=None,
            local_parameter_device="cpu", gradient_bytes=None, read_suite=None):
    """Projects images/sec on `devices` from one measurement.

    Args:
      result: a BenchmarkResult, a path to its result.json, or None (give the figures).
      model / images_per_sec / batch_size / base_devices: the measurement by hand (e.g. the
        page's 1-GPU column), or overrides of `result`'s.
      devices: device counts to project (several hosts: multiples of the record's
        devices_per_host with variable_update='distributed_replicated').
      platform: a record name (`mlbench.projector.platforms.RECORDS`), a JSON path or a dict.
      variable_update / local_parameter_device: the pattern (default: the result's
        strategy, else 'replicated').
      gradient_bytes: bytes all-reduced per step (default: counted on the model).
      read_suite: reads page suites, for the η fitted on the page's platforms
        (`mlbench.projector.page_suites.page_suite`); without it η is 1.

    Returns:
      Projection (clearly a projection: `to_dict()['label']`).
    """
    measured = _measurement(result)
    model = model or measured.get("model")
    images_per_sec = images_per_sec or measured.get("images_per_sec")
    batch_size = batch_size or measured.get("batch_size")
    base_devices = measured.get("num_devices", base_devices)
    if not model:
        raise ValueError("`model` is needed (a name, or a result that names it).")
    record = platforms.get(platform)
    pattern = (pattern_for(variable_update, local_parameter_device) if variable_update
               else measured.get("pattern", "replicated"))
    g = gradient_bytes or model_gradient_bytes(model)
    name = record["name"] if isinstance(platform, dict) else platform
    cells = [project_cell(images_per_sec, batch_size, n, pattern, g, record,
                          platform_eta(name, n, read_suite), base_devices) for n in devices]
    return Projection(model, name, pattern, batch_size, base_devices, images_per_sec, g, cells)


def device_counts(up_to, base_devices=1):
    """`--project=8` on a 1-device result: the page's rows 2, 4, 8 (doublings of the base,
    and `up_to` itself)."""
    if not isinstance(up_to, int) or isinstance(up_to, bool) or up_to <= base_devices:
        raise ValueError(f"`project` ({up_to!r}) must be an integer device count above the "
                         f"measured {base_devices}.")
    counts, n = [], 2 * base_devices
    while n < up_to:
        counts.append(n)
        n *= 2
    return counts + [up_to]


def _measurement(result):
    """{model, images_per_sec, batch_size, num_devices, pattern} of a result, its dict or
    its JSON file."""
    if result is None:
        return {}
    if isinstance(result, dict):  # figures given by hand, in a result file's layout
        strategy = (result.get("ran") or {}).get("strategy")
        return {"model": result["model"], "images_per_sec": result["images_per_sec"]["mean"],
                "batch_size": result["batch_size"], "num_devices": result["num_devices"],
                "pattern": pattern_for_strategy(strategy) if strategy else "replicated"}
    if isinstance(result, str):
        from mlbench.results import files as result_files
        result = result_files.read(result, "benchmark", argument="result")[2]
    strategy = result.ran.get("strategy")
    return {"model": result.model, "images_per_sec": result.images_per_sec.mean,
            "batch_size": result.batch_size, "num_devices": result.num_devices,
            "pattern": pattern_for_strategy(strategy) if strategy else "replicated"}


def format_table(cells_by_model, title, with_measured=False):
    """Rows = devices, columns = models, as the page: 'point [low–high]' (and measured)."""
    models = list(cells_by_model)
    devices = sorted({c.devices for row in cells_by_model.values() for c in row})
    lines = [f"projected images/sec on {title} (point [no overlap – full overlap]; linear "
             "scaling in parentheses)", "devices\t" + "\t".join(models)]
    for n in devices:
        cells = [next((c for c in cells_by_model[m] if c.devices == n), None) for m in models]
        lines.append(f"{n}\t" + "\t".join(_cell_text(c, with_measured) for c in cells))
    return "\n".join(lines)


def _cell_text(cell, with_measured):
    if cell is None:
        return "-"
    text = f"{cell.images_per_sec:.0f} [{cell.low:.0f}–{cell.high:.0f}] ({cell.linear:.0f})"
    if with_measured and cell.measured is not None:
        text += f" page {cell.measured:g} {100 * cell.error:+.1f}%"
    return text
