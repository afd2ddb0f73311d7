"""What a launch reports: shared-memory hazards (`races`), the messages that point at a
source line (`diagnostics`), per-warp access records (`trace`) and the counters a launch
returns (`report.LaunchReport`).
"""
