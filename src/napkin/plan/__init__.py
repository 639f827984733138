"""Planners: vectorised sweeps over configurations, ranked under constraints.

``napkin.plan.serve`` searches GPU type, GPUs per replica, tensor-parallel degree and
batch for a serving workload under TTFT and TPOT objectives, on numpy arrays (no Python
loop per configuration).
"""
