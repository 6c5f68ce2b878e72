"""Platform records for the scaling projector: bandwidths with their sources.

Every field is `(value, source)`; a source starting "inferred:" marks a figure
derived rather than published. Bandwidths are bytes/second in one direction
(links are full duplex). `eta` is the per-device-count efficiency left after
communication — clock and PCIe-arbitration effects no bandwidth explains —
fitted on InceptionV3 only (`projection.fit_eta`); None means 1.0 assumed.

A user's own record is the same dict as JSON (`load(path)`).
"""
import json
import os

GB = 1e9
DEFAULT = "dgx_a100"  # where `--project` puts a measured device unless told otherwise
PCIE3_X16 = (12.0 * GB, "PCIe 3.0 x16: 15.75 GB/s raw; ~12 GB/s measured host<->device "
                        "(NVIDIA bandwidthTest, pinned memory)")
PCIE4_X16 = (24.0 * GB, "PCIe 4.0 x16: 31.5 GB/s raw; inferred: ~24 GB/s achieved, the gen3 ratio")
PCIE5_X16 = (48.0 * GB, "PCIe 5.0 x16: 63 GB/s raw; inferred: ~48 GB/s achieved, the gen3 ratio")
CPU_REDUCE = (20.0 * GB, "inferred: gradient sums on the host read 2 and write 1 operand; "
                         "~60 GB/s two-socket DDR4 stream bandwidth / 3")


def _record(name, device, devices_per_host, ring, pcie_per_device, host_uplink, nic,
            latency, eta=None, notes="", price=None):
    """A platform record; `price` is (dollars per device-hour, source and date) or None."""
    return {"name": name, "device": device, "devices_per_host": devices_per_host,
            "ring_bandwidth": ring, "pcie_per_device": pcie_per_device,
            "host_uplink": host_uplink, "nic_bandwidth": nic, "latency_s": latency,
            "cpu_reduce_bandwidth": CPU_REDUCE, "eta": eta, "notes": notes,
            "price_per_device_hour": price}



def _k80_host(name, nic, notes):
    """8 GK210 GPUs on 4 K80 boards (the page's GCE and EC2 hosts differ only in network):
    no NVLink, two GPUs per board share one PCIe x16 link through its PLX switch."""
    return _record(
        name, "Tesla K80 (GK210)", 8,
        ring=(PCIE3_X16[0] / 2, "no NVLink: peer copies cross the board's PCIe switch"),
        pcie_per_device=(PCIE3_X16[0] / 2, "K80: two GK210 GPUs share one x16 link through "
                                           "the on-board PLX switch (K80 datasheet); "
                                           + PCIE3_X16[1]),
        host_uplink=(4 * PCIE3_X16[0], "4 boards x one x16 link"), nic=nic,
        latency=(50e-6, "inferred: ~50 us per PCIe transfer set-up"), notes=notes)


RECORDS = {
    "dgx1_p100": _record(
        "NVIDIA DGX-1 (8x Tesla P100 SXM2, NVLink 1.0)", "Tesla P100", 8,
        ring=(20.0 * GB, "NVLink 1.0: 20 GB/s per link per direction (P100 whitepaper, 160 GB/s "
                         "bidirectional over 4 links); NCCL's ring uses one link per hop"),
        pcie_per_device=(PCIE3_X16[0] / 2, "DGX-1: two GPUs per PCIe switch, one x16 uplink "
                                           "each (DGX-1 system architecture whitepaper); "
                                           + PCIE3_X16[1]),
        host_uplink=(4 * PCIE3_X16[0], "4 PCIe switches x one x16 uplink to the 2 CPUs"),
        nic=(12.5 * GB, "4x 100 Gb/s InfiniBand EDR (DGX-1 datasheet), one port per flow"),
        latency=(30e-6, "inferred: ~30 us per ring hop (NCCL small-message latency on NVLink)"),
        notes="the benchmarks page's DGX-1 tables"),
    "gce_k80": _k80_host(
        "Google Compute Engine n1-standard-32-k80x8 (4x Tesla K80 boards)",
        nic=(2.0 * GB, "GCE 2017: 2 Gb/s per vCPU up to 16 Gb/s egress cap (GCE network docs)"),
        notes="the benchmarks page's GCE K80 table"),
    "ec2_p2_8xlarge": _k80_host(
        "Amazon EC2 p2.8xlarge (4x Tesla K80 boards)",
        nic=(1.25 * GB, "p2.8xlarge: 10 Gb/s networking (EC2 instance types page)"),
        notes="the benchmarks page's EC2 K80 and EC2 distributed tables"),
    "dgx1_v100": _record(
        "NVIDIA DGX-1 (8x Tesla V100 SXM2, NVLink 2.0)", "Tesla V100", 8,
        ring=(25.0 * GB, "NVLink 2.0: 25 GB/s per link per direction, 6 links (V100 whitepaper)"),
        pcie_per_device=(PCIE3_X16[0] / 2, "two GPUs per PCIe switch; " + PCIE3_X16[1]),
        host_uplink=(4 * PCIE3_X16[0], "4 PCIe switches x one x16 uplink"),
        nic=(12.5 * GB, "4x 100 Gb/s InfiniBand EDR (DGX-1 datasheet)"),
        latency=(20e-6, "inferred: ~20 us per ring hop"), notes="no page table: eta assumed 1"),
    "dgx_a100": _record(
        "NVIDIA DGX A100 (8x A100 SXM4, NVSwitch)", "A100", 8,
        ring=(150.0 * GB, "NVLink 3.0 through NVSwitch: 600 GB/s bidirectional per GPU (A100 "
                          "datasheet) = 300 GB/s per direction; inferred: NCCL bus bandwidth "
                          "~half of it"),
        pcie_per_device=PCIE4_X16, host_uplink=(8 * PCIE4_X16[0], "8 x16 gen4 links"),
        nic=(25.0 * GB, "8x 200 Gb/s HDR InfiniBand (DGX A100 datasheet), one per GPU"),
        latency=(15e-6, "inferred"), notes="no page table: eta assumed 1",
        price=(32.77 / 8, "inferred: AWS p4d.24xlarge (8x A100 40GB) on-demand, $32.77 per "
                          "hour in us-east-1 as listed in 2023, / 8 GPUs; check today's "
                          "price")),
    "dgx_h100": _record(
        "NVIDIA DGX H100 (8x H100 SXM5, NVSwitch)", "H100", 8,
        ring=(225.0 * GB, "NVLink 4.0: 900 GB/s bidirectional per GPU (H100 datasheet) = 450 "
                          "GB/s per direction; inferred: NCCL bus bandwidth ~half of it"),
        pcie_per_device=PCIE5_X16, host_uplink=(8 * PCIE5_X16[0], "8 x16 gen5 links"),
        nic=(50.0 * GB, "8x 400 Gb/s ConnectX-7 (DGX H100 datasheet), one per GPU"),
        latency=(10e-6, "inferred"), notes="no page table: eta assumed 1",
        price=(98.32 / 8, "inferred: AWS p5.48xlarge (8x H100) on-demand, $98.32 per hour "
                          "in us-east-1 as listed in 2023, / 8 GPUs; check today's price")),
}

FIELDS = ("ring_bandwidth", "pcie_per_device", "host_uplink", "nic_bandwidth", "latency_s",
          "cpu_reduce_bandwidth")


def get(platform):
    """A record by name, a path to a JSON record, or a record dict (checked)."""
    if isinstance(platform, dict):
        return check(platform)
    if isinstance(platform, str) and platform in RECORDS:
        return RECORDS[platform]
    if isinstance(platform, str) and os.path.exists(platform):
        return load(platform)
    raise ValueError(f"`platform` ({platform!r}) is not a known platform record; known: "
                     f"{sorted(RECORDS)}, or a JSON file with the fields {list(FIELDS)}.")


def load(path):
    with open(path) as f:
        record = json.load(f)
    return check({k: tuple(v) if isinstance(v, list) else v for k, v in record.items()})


def check(record):
    missing = [f for f in FIELDS + ("devices_per_host",) if f not in record]
    if missing:
        raise ValueError(f"platform record {record.get('name', '?')!r} lacks {missing}; each "
                         "bandwidth field is [value in bytes/s, source].")
    for field in FIELDS:
        value = record[field]
        if not (isinstance(value, tuple) and len(value) == 2 and value[0] > 0):
            raise ValueError(f"platform record field `{field}` ({value!r}) must be "
                             "[positive value, source].")
    return record


def value(record, field):
    return record[field][0]
