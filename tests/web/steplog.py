"""A synthetic step log for the ledger tab: three days of a 64-GPU run with a crash on day two."""

from __future__ import annotations

T0 = 1714521600  # 2024-05-01T00:00:00Z
STEP_S = 27.0
TOKENS_PER_STEP = 12_000_000  # $0.10/M advanced tokens at $2.50/h with no loss
GPUS = 64


def step_log_csv(steps: int = 9600, *, crash_at: int = 4000, lost_steps: int = 200, down_s: float = 3 * 3600) -> bytes:
    """CSV with the seed's columns; at ``crash_at`` the run stops for ``down_s`` and resumes
    ``lost_steps`` back from its last checkpoint (a rollback the ledger must count)."""
    lines = ["step,t_wall,gpus_allocated,tokens"]
    t = float(T0)
    step = 0
    for i in range(steps):
        step += 1
        t += STEP_S
        if i == crash_at:
            t += down_s
            step -= lost_steps
        lines.append(f"{step},{t:.1f},{GPUS},{TOKENS_PER_STEP}")
    return ("\n".join(lines) + "\n").encode()
