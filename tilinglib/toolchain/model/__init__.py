"""The emulator's model of CUDA C data: C types and their conversions (`c_types`), per-lane
values and GPU-exact arithmetic (`values`), and the memory spaces with their address checks
and counters (`memory`). Imports nothing of the toolchain above it.
"""
