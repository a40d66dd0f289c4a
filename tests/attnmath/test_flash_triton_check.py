"""Tests for the Triton kernels' finite check without a wait (:mod:`attnmath._finite_check`).

The mechanism needs no Triton, so it is tested here, in the test process, on CPU tensors: with
``"cpu"`` added to ``DEFERRED_DEVICE_TYPES`` a CPU tensor takes the path of a CUDA one (the
reductions, an asynchronous copy to a host buffer, a pending check) with the event replaced by
"already done". A check that waits for a device must read a device value on the host
(``.item()``, ``.tolist()``, ``bool()``, ``.cpu()``, ``.numpy()``) or synchronise: those are
counted, and the pending path must do none of them until the check is read. The kernels' own
use of it (which tensors, which call) is tested through the kernels in ``test_flash_triton.py``.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from attnmath import _finite_check  # noqa: E402

BAD = [(float("nan"), "NaN"), (float("inf"), "an infinity"), (float("-inf"), "an infinity")]


def _qkv(dtype=torch.bfloat16):
    g = torch.Generator().manual_seed(0)
    return {name: torch.randn(1, 2, 8, 16, generator=g).to(dtype) for name in ("q", "k", "v")}


@pytest.fixture
def deferred(monkeypatch):
    """CPU tensors checked as CUDA ones are; every host read of tensor data counted."""
    monkeypatch.setattr(_finite_check, "DEFERRED_DEVICE_TYPES", frozenset({"cpu", "cuda"}))
    monkeypatch.setattr(_finite_check, "_pending", [])
    reads = []
    for method in ("item", "tolist", "__bool__", "cpu", "numpy"):
        original = getattr(torch.Tensor, method)

        def counted(self, *args, _original=original, _method=method, **kwargs):
            reads.append(_method)
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(torch.Tensor, method, counted)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: reads.append("synchronize"))
    return reads


def test_a_clean_pending_check_reads_nothing_on_the_host_until_it_is_reported(deferred):
    for _ in range(3):
        _finite_check.check(_qkv(), "flash_attention_triton")
    assert deferred == [] and _finite_check.pending() == 3
    _finite_check.raise_pending(wait=False)  # done (no event): read, clean, forgotten
    assert _finite_check.pending() == 0 and deferred.count("tolist") == 3


@pytest.mark.parametrize("name", ["q", "k", "v"])
def test_a_pending_check_reports_nan_and_infinities_naming_the_tensor_and_the_call(deferred, name):
    for value, kind in BAD:
        named = _qkv()
        named[name][0, 1, 5, 7] = value
        _finite_check.check(named, "flash_attention_triton")  # no error yet, and no host read
        assert deferred == []
        with pytest.raises(ValueError) as info:
            _finite_check.raise_pending(wait=True)
        assert str(info.value) == (
            f"{name} contains {kind}; attention inputs must be finite (an input of an earlier "
            "call of flash_attention_triton, checked on the GPU without a wait and reported at "
            "this call)")
        assert _finite_check.pending() == 0  # reported once
        deferred.clear()


def test_the_oldest_pending_check_is_read_once_too_many_are_pending(deferred, monkeypatch):
    monkeypatch.setattr(_finite_check, "MAX_PENDING", 2)
    bad = _qkv()
    bad["v"][0, 0, 0, 0] = float("inf")
    _finite_check.check(bad, "flash_attention_triton_backward")
    _finite_check.check(_qkv(), "flash_attention_triton")
    with pytest.raises(ValueError, match=r"^v contains an infinity.*earlier call of flash_attention_triton_backward"):
        _finite_check.check(_qkv(), "flash_attention_triton")
    assert _finite_check.pending() == 1  # the second; the third call raised before its own


def test_cpu_tensors_are_checked_at_once_in_every_dtype():
    assert _finite_check.DEFERRED_DEVICE_TYPES == frozenset({"cuda"})
    for dtype in (torch.float16, torch.bfloat16, torch.float32):
        big = {name: torch.full((2, 3), torch.finfo(dtype).max, dtype=dtype) for name in "qkv"}
        _finite_check.check(big, "flash_attention_triton")  # finite extremes pass
        for name in "qkv":
            for value, kind in BAD:
                named = _qkv(dtype)
                named[name][0, 0, 1, 2] = value
                with pytest.raises(ValueError, match=rf"^{name} contains {kind}; attention inputs must be finite$"):
                    _finite_check.check(named, "flash_attention_triton")
    assert _finite_check.pending() == 0
    _finite_check.check({"q": torch.empty(1, 0, 3)}, "flash_attention_triton")  # empty: nothing to check
    leaf = torch.full((2, 3), float("nan"), requires_grad=True)  # an autograd leaf is read, not refused
    with pytest.raises(ValueError, match="^q contains NaN"):
        _finite_check.check({"q": leaf}, "flash_attention_triton")
