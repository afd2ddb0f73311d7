"""The Nsight Compute (ncu) metric names the course reads, each written once.

`REPORT_METRICS` maps each `LaunchReport` counter to the ncu metric it mirrors (the counters
are per warp instruction or per access, at the level of the CUDA C source; report.py says
where the emulator and ncu may differ). The other names are metrics the maintainers' bench
(tilinglib/devtools/bench.py, bench/*.py) asks ncu for and the course reads back from the
measured files (tilinglib/data/reference_<machine>.json): the keys there are these names,
exactly as ncu prints them (``<unit>__<counter>.<rollup>``, Nsight Compute's "Metrics
Reference").

Names only (str); nothing here talks to ncu.
"""

from __future__ import annotations

__all__ = ["REPORT_METRICS", "GLOBAL_ATOMIC_METRICS", "FFMA_THREAD_INSTRUCTIONS",
           "FADD_THREAD_INSTRUCTIONS", "FMUL_THREAD_INSTRUCTIONS", "GLOBAL_ATOM_REQUESTS",
           "GLOBAL_RED_REQUESTS", "GLOBAL_LOAD_BYTES", "SASS_GLOBAL_LOAD_BYTES",
           "SASS_SHARED_LOAD_BYTES", "SASS_GLOBAL_LOAD_INSTRUCTIONS",
           "SASS_SHARED_LOAD_INSTRUCTIONS", "L2_SECTORS_READ", "DRAM_BYTES_READ",
           "DRAM_BYTES_WRITE", "REGISTERS_PER_THREAD", "STATIC_SHARED_PER_BLOCK",
           "SHARED_CONFIG_SIZE", "OCCUPANCY_LIMIT_BLOCKS", "OCCUPANCY_LIMIT_REGISTERS",
           "OCCUPANCY_LIMIT_SHARED_MEM", "OCCUPANCY_LIMIT_WARPS", "WARPS_ACTIVE_PCT",
           "DURATION", "SM_CLOCK", "WARP_INSTRUCTIONS", "FFMA_THREAD_INSTRUCTIONS_SM",
           "ISSUE_ACTIVE_PCT", "FMA_PIPE_ACTIVE_PCT"]

#: LaunchReport field -> the ncu metric it counts (one metric per field).
REPORT_METRICS = {
    "global_load_requests": "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "global_load_sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "global_store_requests": "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "global_store_sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "shared_load_instructions": "smsp__inst_executed_op_shared_ld.sum",
    "shared_load_wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "shared_store_instructions": "smsp__inst_executed_op_shared_st.sum",
    "shared_store_wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "shared_load_bank_conflicts": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "shared_store_bank_conflicts": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "shared_atomic_instructions": "smsp__inst_executed_op_shared_atom.sum",
}

# Thread-level instruction counts (one per active lane): flops = 2 x FFMA for an FMA-only kernel.
FFMA_THREAD_INSTRUCTIONS = "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"
FADD_THREAD_INSTRUCTIONS = "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum"
FMUL_THREAD_INSTRUCTIONS = "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum"

# Global atomics: LaunchReport.global_atomic_requests is the two added (ATOM and RED).
GLOBAL_ATOM_REQUESTS = "l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum"
GLOBAL_RED_REQUESTS = "l1tex__t_requests_pipe_lsu_mem_global_op_red.sum"
GLOBAL_ATOMIC_METRICS = (GLOBAL_ATOM_REQUESTS, GLOBAL_RED_REQUESTS)

# Bytes and instructions as the SASS executes them (after nvcc merged or widened loads).
GLOBAL_LOAD_BYTES = "l1tex__t_bytes_pipe_lsu_mem_global_op_ld.sum"   # whole 32-byte sectors
SASS_GLOBAL_LOAD_BYTES = "smsp__sass_data_bytes_mem_global_op_ld.sum"
SASS_SHARED_LOAD_BYTES = "smsp__sass_data_bytes_mem_shared_op_ld.sum"
SASS_GLOBAL_LOAD_INSTRUCTIONS = "smsp__sass_inst_executed_op_global_ld.sum"
SASS_SHARED_LOAD_INSTRUCTIONS = "smsp__sass_inst_executed_op_shared_ld.sum"

# Below L1: L2 sectors read for L1, DRAM bytes.
L2_SECTORS_READ = "lts__t_sectors_srcunit_tex_op_read.sum"
DRAM_BYTES_READ = "dram__bytes_read.sum"
DRAM_BYTES_WRITE = "dram__bytes_write.sum"

# The launch: resources and occupancy as the driver chose them.
REGISTERS_PER_THREAD = "launch__registers_per_thread"
STATIC_SHARED_PER_BLOCK = "launch__shared_mem_per_block_static"
SHARED_CONFIG_SIZE = "launch__shared_mem_config_size"          # bytes of the carveout
OCCUPANCY_LIMIT_BLOCKS = "launch__occupancy_limit_blocks"
OCCUPANCY_LIMIT_REGISTERS = "launch__occupancy_limit_registers"
OCCUPANCY_LIMIT_SHARED_MEM = "launch__occupancy_limit_shared_mem"
OCCUPANCY_LIMIT_WARPS = "launch__occupancy_limit_warps"
WARPS_ACTIVE_PCT = "sm__warps_active.avg.pct_of_peak_sustained_active"
DURATION = "gpu__time_duration.sum"

# Where the issue slots go (bench/tuned_variants.py --ncu; tilinglib/data/tuned_ncu_h200.json,
# read by tile_choice.load_issue_profiles; the stall reasons come from the WarpStateStats section).
SM_CLOCK = "sm__cycles_elapsed.avg.per_second"                 # the SMs' clock, cycles / s
WARP_INSTRUCTIONS = "smsp__inst_executed.sum"                  # warp instructions executed
FFMA_THREAD_INSTRUCTIONS_SM = "sm__sass_thread_inst_executed_op_ffma_pred_on.sum"
ISSUE_ACTIVE_PCT = "smsp__issue_active.avg.pct_of_peak_sustained_active"
FMA_PIPE_ACTIVE_PCT = "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active"
