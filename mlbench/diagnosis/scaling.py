"""Scaling: the per-device rate on N devices against the same model on one device.

"MirroredStrategy is slower than one GPU" threads get the same answers by hand: first
rule out the input pipeline, then expect about 90 % per device with a fast
interconnect. This finding does the arithmetic on rates measured in the same command.
"""
import tensorflow as tf

from mlbench.diagnosis.findings import Finding

GOOD = 0.9  # per-device efficiency a well-fed NVLink all-reduce reaches on the page


def finding(images_per_sec, replicas, one_device_images_per_sec, input_bound=False):
    """The scaling finding of a rate over `replicas` devices against one device's."""
    per_device = images_per_sec / replicas
    efficiency = per_device / one_device_images_per_sec
    figures = {"images_per_sec": images_per_sec, "replicas": replicas,
               "per_device_images_per_sec": per_device,
               "one_device_images_per_sec": one_device_images_per_sec,
               "speedup": images_per_sec / one_device_images_per_sec,
               "efficiency": efficiency}
    detail = (f"{replicas} devices gave {images_per_sec:.1f} images/sec, "
              f"{per_device:.1f} per device against {one_device_images_per_sec:.1f} on one "
              f"device: {efficiency:.0%} per-device efficiency, "
              f"{figures['speedup']:.2f}x speed-up.")
    if efficiency >= GOOD:
        return Finding("scaling", "ok", "scales", detail, figures)
    if input_bound:
        figures["attributed_to"] = "input"
        return Finding("scaling", "problem", "input-bound at scale",
                       detail + " The input finding shows the pipeline cannot feed the "
                       "devices, so the devices wait for data.", figures,
                       "Feed the pipeline first (see the input finding).")
    if not tf.config.list_physical_devices("GPU"):
        figures["attributed_to"] = "shared host cores"
        return Finding("scaling", "warning", "devices share the host's cores",
                       detail + " These are logical CPU devices: they split the same cores, "
                       "so a step on N of them costs about as much as on one; the loss "
                       "measures the all-reduce and the split, not an interconnect.",
                       figures, "Scale on real accelerators to measure the interconnect.")
    figures["attributed_to"] = "communication and synchronisation"
    return Finding("scaling", "warning" if efficiency >= 0.75 else "problem",
                   "communication-bound",
                   detail + " The input pipeline keeps up, so the loss is the gradient "
                   "all-reduce and the wait for the slowest replica.", figures,
                   "Use NCCL all-reduce (all_reduce='nccl'), a larger per-device batch, or "
                   "mixed precision to halve the bytes exchanged.")
