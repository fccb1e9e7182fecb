"""OpenCL devices: what this machine has, and the hardware parameters of one of them.

    ans.opencl.available()                       # an OpenCL runtime and at least one device
    for d in ans.opencl.devices(): print(d["index"], d["name"], d["platform"])
    hw = ans.opencl.hardware_params("opencl -device=0", max_threads_per_block=128)
    mod = ans.build(dag, state, target="opencl -device=0")      # see docs/opencl.md
"""
from . import _core
from ._core import Target


def available():
    """True when this build has the OpenCL runtime and the machine has at least one OpenCL device."""
    return _core.has_opencl() and bool(_core.opencl_devices())


def devices():
    """The OpenCL devices, as dicts (index, name, vendor, platform, version, is_gpu, compute_units,
    max_work_group_size, max_work_item_sizes, local_memory_bytes, global_memory_bytes, clock_mhz,
    cache_line_bytes, preferred_float_vector_width, warp_size, extensions), in the order -device=INDEX counts
    them. Empty without OpenCL."""
    return list(_core.opencl_devices())


def hardware_params(target="opencl", **overrides):
    """HardwareParams queried from the device `target` selects (compute units, work-group size, local memory,
    vector width, cache line, warp size); keywords override fields (e.g. max_threads_per_block=128)."""
    if isinstance(target, str):
        target = Target(target)
    params = _core.opencl_hardware_params(target)
    for name, value in overrides.items():
        if not hasattr(params, name):
            raise TypeError(f"HardwareParams has no field '{name}'")
        setattr(params, name, value)
    return params
