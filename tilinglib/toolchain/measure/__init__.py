"""What a launch reports: shared-memory hazards (`races`), the messages that point at a
source line (`diagnostics`), per-warp access records (`trace`), the counters a launch
returns (`report.LaunchReport`) and the Nsight Compute metric each mirrors (`metrics`).
"""
