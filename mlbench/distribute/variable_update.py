"""tf_cnn_benchmarks' `variable_update` → a tf.distribute strategy (docs/distributed.md
has the table)."""
from mlbench.distribute import cluster, strategies

VARIABLE_UPDATES = ("parameter_server", "replicated", "distributed_replicated")
PARAMETER_DEVICES = ("cpu", "gpu")


def validate(variable_update, local_parameter_device):
    if variable_update not in VARIABLE_UPDATES:
        raise ValueError(f"`variable_update` ({variable_update!r}) must be one of "
                         f"{list(VARIABLE_UPDATES)}.")
    if local_parameter_device not in PARAMETER_DEVICES:
        raise ValueError(f"`local_parameter_device` ({local_parameter_device!r}) must be "
                         f"one of {list(PARAMETER_DEVICES)}.")


def strategy_for(variable_update, num_devices=None, local_parameter_device="cpu",
                 all_reduce="auto"):
    """The strategy tf_cnn_benchmarks' `variable_update` corresponds to.

    parameter_server on one host → CentralStorageStrategy (variables on
    `local_parameter_device`); with ps hosts in TF_CONFIG → ParameterServerStrategy;
    replicated → MirroredStrategy; distributed_replicated → MultiWorkerMirroredStrategy.
    """
    validate(variable_update, local_parameter_device)
    if variable_update == "distributed_replicated":
        return strategies.get_strategy("multi_worker_mirrored", all_reduce=all_reduce)
    if variable_update == "replicated":
        return strategies.get_strategy("mirrored", num_devices, all_reduce=all_reduce)
    if cluster.has_ps(cluster.parse_tf_config()):
        return strategies.get_strategy("parameter_server")
    if local_parameter_device == "cpu":
        device = "/cpu:0"
    else:
        device = strategies.devices(1)[0]  # the first accelerator (or CPU without one)
    return strategies.get_strategy("central_storage", num_devices, parameter_device=device)
