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

# Every family module registers its formulas when imported: importing the package (which any import
# of a module inside it does first) fills the registry. A family that fails to import fails here.
from roofline.costs import families  # noqa: E402, F401
