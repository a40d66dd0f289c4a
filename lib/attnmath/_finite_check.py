"""The finite check of the Triton kernels' tensors, run on the GPU without a wait.

The policy is :mod:`attnmath.core`'s: NaN or an infinity in an attention input raises
``ValueError`` naming the tensor. A tensor is finite exactly when its smallest and largest
elements are (NaN and infinities reach them), so one ``torch.aminmax`` pass per tensor, with no
copy, decides; the two extremes also say which tensor failed and how.

Reading the extremes on the host waits for the GPU: the host stops until every launch before
them has run, and then the GPU idles while the host prepares the next launch. On a device in
:data:`DEFERRED_DEVICE_TYPES` (CUDA) :func:`check` therefore does not read them. It launches the
reductions, starts an asynchronous copy of the ``(n, 2)`` extremes into page-locked host memory,
records a GPU event after the copy and returns; the check is *pending*. :func:`raise_pending`
reads the pending checks whose event has completed (``wait=False``: a query, no wait), or all of
them (``wait=True``: it waits for their events), and raises for the first that found NaN or an
infinity, naming the tensor and the call that received it. Elsewhere (CPU tensors, where the
values are already there when the reductions return) :func:`check` raises at once.

Nothing here imports Triton, so the parent test process can test the mechanism on CPU tensors
(with ``"cpu"`` added to :data:`DEFERRED_DEVICE_TYPES`).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import torch

#: Device types whose checks are pending until :func:`raise_pending` reads them.
DEFERRED_DEVICE_TYPES = frozenset({"cuda"})
#: Pending checks kept at most; beyond it :func:`check` waits for the oldest (the host is then
#: that many calls ahead of the GPU, so the wait leaves the GPU a full queue).
MAX_PENDING = 64


class _Pending(NamedTuple):
    names: tuple       # the tensors' names, in the order of the rows of ``host``
    host: torch.Tensor  # (n, 2) smallest and largest element, filled by an asynchronous copy
    event: Any          # a torch.cuda.Event recorded after the copy; None: ``host`` is filled
    call: str          # the function that received the tensors


_pending: list[_Pending] = []


def extremes(tensors) -> torch.Tensor:
    """``(n, 2)`` smallest and largest element of each of ``n`` non-empty tensors of one dtype
    and device, on that device: one reduction launch per tensor, no host read."""
    tensors = list(tensors)
    out = torch.empty((len(tensors), 2), dtype=tensors[0].dtype, device=tensors[0].device)
    for i, x in enumerate(tensors):
        torch.aminmax(x.detach(), out=(out[i, 0], out[i, 1]))  # out= refuses autograd inputs
    return out


def raise_if_not_finite(names, values, call: str | None = None) -> None:
    """``ValueError`` for the first of ``names`` whose ``(low, high)`` in ``values`` is NaN or
    infinite; ``call`` (a pending check's) says which earlier call received the tensor."""
    for name, (low, high) in zip(names, values):
        if low != low or high != high:  # NaN
            kind = "NaN"
        elif abs(low) == float("inf") or abs(high) == float("inf"):
            kind = "an infinity"
        else:
            continue
        where = "" if call is None else (
            f" (an input of an earlier call of {call}, checked on the GPU without a wait and "
            "reported at this call)")
        raise ValueError(f"{name} contains {kind}; attention inputs must be finite{where}")


def check(named: dict, call: str) -> None:
    """Check ``named`` (name -> tensor, one dtype and device): at once, or pending on a device
    of :data:`DEFERRED_DEVICE_TYPES`; ``call`` names the function that received them."""
    tensors = {name: x for name, x in named.items() if x.numel()}
    if not tensors:
        return
    device = next(iter(tensors.values())).device
    ext = extremes(tensors.values())
    if device.type not in DEFERRED_DEVICE_TYPES:
        raise_if_not_finite(tensors, ext.tolist())
        return
    if len(_pending) >= MAX_PENDING:
        _resolve([0], wait=True)
    host = torch.empty(ext.shape, dtype=ext.dtype, pin_memory=device.type == "cuda")
    host.copy_(ext, non_blocking=True)
    event = None
    if device.type == "cuda":
        event = torch.cuda.Event()
        event.record(torch.cuda.current_stream(device))
    _pending.append(_Pending(tuple(tensors), host, event, call))


def pending() -> int:
    """How many checks are pending."""
    return len(_pending)


def raise_pending(wait: bool = False) -> None:
    """Read the pending checks that are done (``wait=False``: the GPU has run them; no wait) or
    all (``wait=True``: wait for each) and forget them; ``ValueError`` for the first that found
    NaN or an infinity (the others read with it are forgotten too)."""
    done = [i for i, p in enumerate(_pending) if wait or p.event is None or p.event.query()]
    _resolve(done, wait)


def _resolve(indices: list, wait: bool) -> None:
    chosen = [_pending[i] for i in indices]
    keep = set(range(len(_pending))) - set(indices)
    _pending[:] = [p for i, p in enumerate(_pending) if i in keep]
    for p in chosen:
        if wait and p.event is not None:
            p.event.synchronize()
        raise_if_not_finite(p.names, p.host.tolist(), p.call)
