"""The host's side of the model of time: what dispatching one op costs, and moving host costs to
another host speed.

Each dispatch cost in a profile is measured on one representative op repeated alone
(``roofline.hostmix``); real code interleaves different kinds of op, which costs the host more per
op (its code and branch predictors no longer stay hot). The profile's interleaving factor is the
ratio for calibration's whole mix of ``INTERLEAVE_MIX_KINDS`` kinds; a sequence of fewer kinds gets
a factor interpolated between 1 and that. Kinds, not aten ops: many elementwise ops share one
TensorIterator path, and a chain of them costs about what one of them repeated costs.

A host that runs slower or faster than at calibration (a shared machine's host speed drifts by tens
of percent within seconds) is modelled by multiplying every host cost by one scale
(``scaled_overheads``); device-side costs stay.
"""

from __future__ import annotations

from roofline.hostmix import mix_alone_sum_s
from roofline.schema.profile import DeviceProfile, Overheads, Stat

# Different dispatch kinds (``roofline.model.timeline.dispatch_kind``) in the representative mix, as
# captured (tests/test_predict.py checks it against the mix).
INTERLEAVE_MIX_KINDS = 12

# Host time of real models' eager code over what the calibrated op mix predicts for its ops, at the
# same host speed: the Python of module code between ops (argument handling, config lookups, output
# classes, dropout and no-op ``.to``/``.contiguous`` calls that reach the dispatcher and launch
# nothing). It is a property of the code people run, not of the machine, so it is not measured per
# machine: small programs written with torch.nn do not show it; the zoo of real models does
# (docs/design.md, "The host's real-program factor", names the replay that measures it).
PROGRAM_FACTOR_GPU = 1.20

# Host time of one Python function call of the model's own code (not torch's, not the standard
# library's: roofline.graph.pycalls counts them at capture), as a share of the calibrated dispatch of one
# add. Library code runs a function's worth of Python (keyword plumbing, output dataclasses, attention
# interfaces) per call; like the program factor it is a property of the code people run, measured on the
# zoo of real models (docs/design.md, "The host's Python", names the replay that measures it).
PYTHON_CALL_SHARE = 0.26

# The Python entry of a native torch call (parsing its arguments, wrapping its result), as a share of
# the calibrated dispatch of one view (a call whose C++ side does almost nothing). A native call that
# runs several aten ops (``torch.matmul`` on 4-d tensors: expand, view, bmm, _unsafe_view; ``F.linear``
# on a 3-d input; a fused native op's kernels) pays the entry once: each op after its first pays its
# kind's dispatch less the entry.
CALL_ENTRY_SHARE = 0.4

# Host-side fields of Overheads: what a slower host makes slower. kernel_min_s and graph_kernel_s
# are device time and the interleaving factor is a ratio, so they stay.
HOST_FIELDS = ("dispatch_s", "module_call_s", "synchronize_s", "graph_launch_s", "compiled_call_s", "compiled_kernel_s", "compiled_input_s", "op_small_s")


def interleave_for(factor: float, distinct_kinds: int | None) -> float:
    """The interleaving factor for a sequence of ops of ``distinct_kinds`` different dispatch kinds
    (None: the calibrated ``factor``): 1 for one kind, ``factor`` for the mix's
    ``INTERLEAVE_MIX_KINDS``, linear in the number of kinds between."""
    if distinct_kinds is None:
        return factor
    share = min(max(distinct_kinds - 1, 0) / (INTERLEAVE_MIX_KINDS - 1), 1.0)
    return 1.0 + (factor - 1.0) * share


def dispatch_s(overheads: Overheads, kind: str, distinct_kinds: int | None = None) -> float:
    """Host time to dispatch one op of a representative kind ('add', 'view', 'addmm', ...; the plain
    dispatch cost for a kind not calibrated) in a sequence that interleaves ``distinct_kinds`` kinds."""
    stat = overheads.dispatch_by_op_s.get(kind) or overheads.dispatch_s
    return stat.median_s * interleave_for(overheads.interleave_factor, distinct_kinds)


def program_factor(overheads: Overheads, kind: str) -> float:
    """The real-program factor of a profile part: its own where it sets one (a replay weighing other
    values), else the one fitted to its machine's recorded runs (``program_fit``), else
    ``PROGRAM_FACTOR_GPU`` on a GPU and 1 on the CPU."""
    if overheads.program_factor is not None:
        return overheads.program_factor
    if overheads.program_fit is not None:
        return overheads.program_fit.factor
    return PROGRAM_FACTOR_GPU if kind == "cuda" else 1.0


def python_call_s(overheads: Overheads) -> float:
    """Host time of one Python function call of the model's own code at this profile's host speed:
    ``PYTHON_CALL_SHARE`` (or the profile's ``python_call_share``) of one add's calibrated dispatch
    (alone, as calibration timed it)."""
    stat = overheads.dispatch_by_op_s.get("add") or overheads.dispatch_s
    share = overheads.python_call_share if overheads.python_call_share is not None else PYTHON_CALL_SHARE
    return share * stat.median_s


def call_entry_s(overheads: Overheads, distinct_kinds: int | None = None) -> float:
    """Host time of the Python entry of one native torch call (``CALL_ENTRY_SHARE`` of a view's dispatch)."""
    return CALL_ENTRY_SHARE * dispatch_s(overheads, "view", distinct_kinds)


def eager_chain_kernel_s(overheads: Overheads) -> float:
    """Eager host cost per kernel of a GEMM + ReLU chain, as prediction prices it: the mean of the
    addmm and relu dispatch in a sequence of 2 kinds. torch.compile's host costs are calibrated as
    ratios to the chain's measured eager cost and stored times this, so that compiled and eager
    code are priced on one scale and move together with the host's speed."""
    return (dispatch_s(overheads, "addmm", 2) + dispatch_s(overheads, "relu", 2)) / 2


def calibrated_index_s(overheads: Overheads) -> float:
    """The host-speed index (one pass of the representative mix) as the profile recorded it: the
    interleaving factor (calibration's ratio of the mix to its ops alone) x the ops' dispatch costs."""
    return overheads.interleave_factor * mix_alone_sum_s({name: stat.median_s for name, stat in overheads.dispatch_by_op_s.items()})


def scaled_stat(stat: Stat | None, by: float) -> Stat | None:
    """A host cost measured at one host speed, moved to another ``by`` times slower."""
    return None if stat is None else stat.model_copy(update=dict(median_s=stat.median_s * by, iqr_s=stat.iqr_s * by))


def scaled_overheads(overheads: Overheads, scale: float) -> Overheads:
    """A copy of ``overheads`` with every host cost multiplied by ``scale``."""
    update = {k: scaled_stat(getattr(overheads, k), scale) for k in HOST_FIELDS}
    update["dispatch_by_op_s"] = {name: scaled_stat(stat, scale) for name, stat in overheads.dispatch_by_op_s.items()}
    return overheads.model_copy(update=update)


def moved_host_costs(overheads: Overheads, factor: float) -> Overheads:
    """Every host cost of a profile part times ``factor``, the training step's too: the part as if
    calibrated on a host ``factor`` times slower. (A prediction at another host speed scales the
    eager costs alone, ``scaled_overheads``: the training costs follow the dispatch's ratio to the
    part's, ``roofline.advice.training``.)"""
    out = scaled_overheads(overheads, factor)
    training = overheads.training
    if training is not None:
        training = training.model_copy(update=dict(
            grad_record_s=scaled_stat(training.grad_record_s, factor),
            autograd_node_s=scaled_stat(training.autograd_node_s, factor),
            optimizers={k: v.model_copy(update=dict(call_s=v.call_s * factor, per_parameter_s=v.per_parameter_s * factor)) for k, v in training.optimizers.items()},
        ))
    return out.model_copy(update=dict(training=training))


def with_host_scale(profile: DeviceProfile, kind: str, scale: float) -> DeviceProfile:
    """A shallow copy of ``profile`` whose ``kind`` part ('cuda' or 'cpu') has every host cost times
    ``scale`` (``moved_host_costs``)."""
    key = "host" if kind == "cpu" else "gpu"
    part = profile.part(kind)
    measurements = part.measurements.model_copy(update=dict(overheads=moved_host_costs(part.measurements.overheads, scale)))
    return profile.model_copy(update={key: part.model_copy(update=dict(measurements=measurements))})


def with_host_scales(profile: DeviceProfile, scales: dict[str, float]) -> DeviceProfile:
    """``with_host_scale`` for each part named in ``scales`` ('cuda', 'cpu'); the others as they are."""
    for kind, scale in scales.items():
        profile = with_host_scale(profile, kind, scale)
    return profile
