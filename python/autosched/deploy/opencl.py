"""OpenCL devices: what this machine has, and the hardware parameters of one of them.

    ans.opencl.available()                       # an OpenCL runtime and at least one device
    for d in ans.opencl.devices(): print(d["index"], d["name"], d["platform"])
    hw = ans.opencl.hardware_params("opencl -device=0", max_threads_per_block=128)
    mod = ans.build(dag, state, target="opencl -device=0")      # see docs/opencl.md
"""
from .. import _core
from .._core import Target


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


# Instruction kinds counted in PTX: spills (ld.local / st.local), shared and global memory traffic, and
# fused multiply-adds; each name counts the instructions whose opcode starts with it (ld.shared.v4.f32
# counts as ld.shared and as vector).
PTX_COUNTED = ("ld.local", "st.local", "ld.shared", "st.shared", "ld.global", "st.global", "fma")


def ptx_instruction_counts(ptx):
    """Counts of the PTX_COUNTED instruction kinds in PTX text (str or bytes, e.g. Module.device_binary() of
    a module built by NVIDIA's OpenCL), plus "vector": the counted loads and stores of .v2/.v4 vectors.
    Raises ValueError for text that is not PTX (no '.version' / '.entry' directives)."""
    if isinstance(ptx, (bytes, bytearray)):
        ptx = bytes(ptx).decode("utf-8", errors="replace")
    if not isinstance(ptx, str):
        raise TypeError(f"ptx_instruction_counts: ptx must be str or bytes, got {type(ptx).__name__}")
    if ".version" not in ptx or ".entry" not in ptx:
        raise ValueError("ptx_instruction_counts: the text is not PTX (no .version / .entry directive); "
                         "only NVIDIA's OpenCL gives PTX as the device binary")
    counts = dict.fromkeys(PTX_COUNTED, 0)
    counts["vector"] = 0
    for line in ptx.splitlines():
        words = line.split("//", 1)[0].split()
        if words and words[0].startswith("@"):  # a predicate guard: @%p1 ld.global.f32 ...
            words = words[1:]
        if not words:
            continue
        opcode = words[0]
        for kind in PTX_COUNTED:
            if opcode == kind or opcode.startswith(kind + "."):
                counts[kind] += 1
                if kind != "fma" and (".v2." in opcode or ".v4." in opcode):
                    counts["vector"] += 1
    return counts
