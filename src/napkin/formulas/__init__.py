"""Pure formulas over floats (and numpy arrays where the planner sweeps them).

One module per domain. Each function is keyword-only after its first argument, has
units in its argument names, and a docstring of three parts: the equation, the
**Trap:** it guards against, and the **Source:**.
"""
