"""Running what was built: loading exported artifacts (runtime.py), a built module called with torch tensors
(torch_module.py), and the OpenCL devices of this machine (opencl.py)."""
