"""A benchmark result's projection, stored in the result beside the figures it follows
from: images/sec on more devices and, where MLCommons' reference points cover the
global batch, minutes to the MLPerf target (`benchmark --project`, suites)."""
import dataclasses

from mlbench.projector import throughput, time_to_train


def attach(result, up_to, platform, read_suite=None):
    """(`result` with its `projection`, the Projection): `result`'s device scaled to
    `up_to` devices over `platform`'s interconnect, labelled as a projection."""
    counts = throughput.device_counts(up_to, result.num_devices)
    projected = throughput.project_throughput(result, devices=counts, platform=platform,
                                              read_suite=read_suite)
    # minutes to the MLPerf target are stored beside the images/sec they follow from, so
    # that a report reads them from the file instead of running the projector again
    estimates, reasons = time_to_train.estimates_or_reasons(projected)
    stored = dataclasses.replace(
        projected, label=f"projection (not measured): this run's device x n over "
        f"{projected.platform}'s interconnect", time_to_train=estimates,
        not_estimated=reasons)
    return dataclasses.replace(result, projection=stored), projected
