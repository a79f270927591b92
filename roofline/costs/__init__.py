"""Cost registry: FLOPs, bytes and kernels of each aten op, as pure formulas of shapes and dtypes."""

from roofline.costs.registry import (  # noqa: F401
    Gemm,
    OpCost,
    Recurrence,
    cost_of,
    fallback_cost,
    formula_for,
    register,
    registered_ops,
)
