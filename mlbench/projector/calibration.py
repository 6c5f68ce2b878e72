"""Two-point calibration: a user's own 1- and 2-device measurements fix what a datasheet
cannot tell, then 4, 8 ... are projected from them.

A datasheet gives a link's peak; what a software stack reaches is often a fraction of it
(the seed page's 2017 DGX-1 reached a fraction of NVLink's rate, so the one-point
projector over-projects AlexNet and VGG16 at 8 GPUs by 33-40 %). One more measurement,
on 2 devices, says how much was lost, but one figure cannot say where. Two readings of
it are fitted, and both are reported:

- 'derate' (the default): the 2-device rate over the datasheet's 2-device projection is
  a per-device efficiency that holds at larger counts (clocks, PCIe arbitration, the
  framework's own overhead: losses that do not grow with n);
- 'bandwidth': every bandwidth of the record is scaled by one factor `s` so that the
  2-device projection equals the measurement (η = 1: the whole loss is charged to the
  links, and it grows as the pattern's traffic grows with n). `effective_bandwidth` is
  the pattern's main link at that scale.

On the page (docs/projection.md) the 2-GPU loss did not grow with n, so 'derate'
validates better; 'bandwidth' is the reading for links that are the bottleneck.
"""
import dataclasses
import math

from mlbench.projector import platforms
from mlbench.projector.validation import project_page, summary
from mlbench.projector.throughput import PARAMETERS, model_gradient_bytes, project_cell

SCALED = ("ring_bandwidth", "pcie_per_device", "host_uplink", "nic_bandwidth",
          "cpu_reduce_bandwidth")
LINK_OF = {"replicated": "ring_bandwidth", "ps_cpu": "pcie_per_device",
           "ps_gpu": "pcie_per_device", "distributed_replicated": "nic_bandwidth"}
MODES = ("derate", "bandwidth")
SCALE_RANGE = (1e-4, 1e4)  # the fit's search range, as factors of the record's bandwidths


def scaled(record, s):
    """`record` with every bandwidth × s (latency kept), sources saying so."""
    out = dict(record)
    for field in SCALED:
        value, source = record[field]
        out[field] = (value * s, f"calibrated: {s:.3g} x ({source})")
    return out


@dataclasses.dataclass
class Calibration:
    """The fitted factor and what it means.

    Attributes:
      scale: the factor on every bandwidth of the record (1 = the datasheet's figures).
      link / effective_bandwidth: the pattern's main link and its fitted bytes/s.
      bound: 'fitted', or 'links not limiting at 2 devices' (the 2-device rate is at least
        what any bandwidth gives: the smallest such scale is kept, a lower bound).
      derate: the 2-device rate ÷ the datasheet record's 2-device projection (η = 1).
    """
    model: str
    platform: str
    pattern: str
    batch_size: int
    images_per_sec_1: float
    images_per_sec_2: float
    gradient_bytes: int
    scale: float
    link: str
    effective_bandwidth: float
    bound: str
    derate: float
    record: dict
    datasheet: dict

    def project(self, devices, mode="derate"):
        """Calibrated cells for `devices`: 'derate' (the datasheet's projection × the
        2-device efficiency) or 'bandwidth' (η = 1 over the scaled record)."""
        if mode not in MODES:
            raise ValueError(f"`mode` ({mode!r}) must be one of {MODES}.")
        if mode == "bandwidth":
            return [project_cell(self.images_per_sec_1, self.batch_size, n, self.pattern,
                                 self.gradient_bytes, self.record) for n in devices]
        return [project_cell(self.images_per_sec_1, self.batch_size, n, self.pattern,
                             self.gradient_bytes, self.datasheet, eta=self.derate)
                for n in devices]

    def to_dict(self):
        d = dataclasses.asdict(self)
        d.pop("record"), d.pop("datasheet")
        return dict(d, label="calibrated projection (not measured): bandwidth fitted on "
                             "this model's 1- and 2-device measurements")


def fit(images_per_sec_1, images_per_sec_2, batch_size, pattern, gradient_bytes, platform,
        model=""):
    """Calibration whose 2-device projection equals `images_per_sec_2`.

    The projected 2-device rate rises with the bandwidth scale (less exposed
    communication), so the scale is found by bisection on its logarithm.
    """
    record = platforms.get(platform)
    if not images_per_sec_2 > 0:
        raise ValueError(f"the 2-device rate ({images_per_sec_2!r}) must be > 0.")

    def projected(log_s):
        return project_cell(images_per_sec_1, batch_size, 2, pattern, gradient_bytes,
                            scaled(record, math.exp(log_s))).images_per_sec
    low, high = (math.log(s) for s in SCALE_RANGE)
    bound = "fitted"
    top = projected(high)
    if top <= images_per_sec_2 * (1 + 1e-9):
        bound = "links not limiting at 2 devices"
        target = top * (1 - 1e-6)  # the smallest scale that already gives the top rate
    else:
        target = images_per_sec_2
    if projected(low) >= target:
        log_s = low
    else:
        for _ in range(200):
            mid = (low + high) / 2
            low, high = (mid, high) if projected(mid) < target else (low, mid)
        log_s = high
    s = math.exp(log_s)
    link = LINK_OF[pattern]
    name = platform if isinstance(platform, str) else record.get("name", "custom")
    derate = images_per_sec_2 / project_cell(images_per_sec_1, batch_size, 2, pattern,
                                             gradient_bytes, record).images_per_sec
    return Calibration(model, name, pattern, batch_size, images_per_sec_1, images_per_sec_2,
                       int(gradient_bytes), s, link, platforms.value(record, link) * s, bound,
                       derate, scaled(record, s), record)


def from_results(one, two, platform):
    """A Calibration from two benchmark results (objects or result.json paths) of one
    model and per-device batch, on 1 and 2 devices."""
    from mlbench.projector.throughput import _measurement
    a, b = _measurement(one), _measurement(two)
    if (a["num_devices"], b["num_devices"]) != (1, 2):
        raise ValueError(f"`calibrate` needs a 1-device and a 2-device result; got "
                         f"{a['num_devices']} and {b['num_devices']} devices.")
    if (a["model"], a["batch_size"]) != (b["model"], b["batch_size"]):
        raise ValueError(f"`calibrate`: the two results differ ({a['model']} batch "
                         f"{a['batch_size']} vs {b['model']} batch {b['batch_size']}); "
                         "measure one model at one per-device batch on 1 and 2 devices.")
    return fit(a["images_per_sec"], b["images_per_sec"], a["batch_size"], b["pattern"],
               model_gradient_bytes(a["model"]), platform, a["model"])


# --- validation on the benchmarks page --------------------------------------------------

CALIBRATED_SUITES = {"dgx1_p100": "dgx1_p100", "gce_k80": "gce_k80",
                     "ec2_k80": "ec2_p2_8xlarge"}


def validate_page(read_suite):
    """Each page platform fitted per model on its 1- and 2-GPU rows, its 4- and 8-GPU
    cells projected, beside the one-point projector's and linear scaling's on the same
    cells. `read_suite` reads a page suite (`mlbench.projector.page_suites.page_suite`)."""
    calibrated, one_point = {mode: {} for mode in MODES}, {}
    for suite, platform in CALIBRATED_SUITES.items():
        sizes, patterns, reference, _ = read_suite(suite)
        baseline = project_page(suite, read_suite)
        for model, pattern in patterns.items():
            if model not in reference.get(2, {}):
                continue
            calibration = fit(reference[1][model], reference[2][model], sizes[model], pattern,
                              4 * PARAMETERS[model], platform, model)
            wanted = [n for n in (4, 8) if model in reference.get(n, {})]
            for mode in MODES:
                calibrated[mode][f"{suite}/{model}"] = [
                    dataclasses.replace(cell, measured=reference[cell.devices][model])
                    for cell in calibration.project(wanted, mode)]
            one_point[f"{suite}/{model}"] = [c for c in baseline[model] if c.devices in wanted]
    return {**{mode: summary(calibrated[mode], exclude=()) for mode in MODES},
            "one_point": summary(one_point, exclude=()),
            "cells": {mode: {k: [dict(vars(c), error=c.error) for c in row]
                             for k, row in calibrated[mode].items()} for mode in MODES}}


def format_validation(figures):
    def part(name, f):
        w = f["worst"]
        return (f"{name} MAPE {f['projection']['mape']:.2f} % (worst {w['model']} at "
                f"{w['devices']} GPUs, {w['error_pct']:+.1f} %)")
    d = figures["derate"]
    return (f"two-point calibration on the page ({d['cells']} cells: 4 and 8 GPUs of "
            f"{', '.join(CALIBRATED_SUITES)}, each fitted on its own 1- and 2-GPU rows): "
            + "; ".join([part("calibrated 'derate'", d),
                         part("calibrated 'bandwidth'", figures["bandwidth"]),
                         part("one-point projector", figures["one_point"])])
            + f"; linear scaling MAPE {d['linear']['mape']:.2f} %")


