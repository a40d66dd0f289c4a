"""Fixtures shared by the library's test modules.

``triton_kernels``: :mod:`attnmath.flash_triton` in one child process per test process
(:class:`attnmath.testing.TritonProcess`), shared by ``test_flash_triton.py`` and
``test_conformance.py``: natively when CUDA is available, otherwise under Triton's interpreter
(``TRITON_INTERPRET=1`` in the child's environment only). Starting it imports torch and Triton
and the first call of each kernel sets it up, so one process serves every module instead of
one per module. The kernels keep no state between calls; every call passes its inputs, tiles
and config. Under pytest-xdist both modules are one scheduling group ("triton-kernels",
``tests/conftest.py``), so one worker starts one such process per run.
"""

from __future__ import annotations

import pytest

# Served by the child besides the module's public functions (attnmath.testing.TritonProcess).
TRITON_HELPERS = r"""
def fwd_bwd(q, k, v, dout, causal=False, scale=None, block_q=None, block_k=None, config=None):
    # out and the gradients through the autograd function; lse from the functional forward.
    # config: a dict of KernelConfig fields.
    config = None if config is None else ft.KernelConfig(**config)
    q, k, v = (x.detach().clone().requires_grad_(True) for x in (q, k, v))
    out = ft.flash_attention(q, k, v, causal, scale, block_q=block_q, block_k=block_k,
                             config=config)
    out.backward(dout)
    _, cache = ft.flash_attention_triton(q.detach(), k.detach(), v.detach(), causal=causal,
                                         scale=scale, block_q=block_q, block_k=block_k,
                                         config=config)
    return out.detach(), cache.lse, q.grad, k.grad, v.grad


def checked_finite(**named):
    # The finite check alone: None, or the error it raises.
    ft._check_finite(named)


def saved_shapes(q, k, v, causal=False):
    # Shapes of what the autograd function keeps for the backward.
    out = ft.flash_attention(q.detach().clone().requires_grad_(True), k, v, causal)
    return [tuple(t.shape) for t in out.grad_fn.saved_tensors]


def forward_history(q, k, v):
    # The functional forward on inputs that require grad: outputs and their autograd history.
    out, cache = ft.flash_attention_triton(q.detach().clone().requires_grad_(True), k, v)
    return out, cache.lse, out.grad_fn is None and cache.lse.grad_fn is None


def kernel_config(*args, config=None, **kwargs):
    config = None if config is None else ft.KernelConfig(**config)
    return ft.kernel_config(*args, config=config, **kwargs)._asdict()


def kernel_config_raw(*args, **kwargs):
    # kernel_config with its arguments as given (a config that is not a KernelConfig).
    return ft.kernel_config(*args, **kwargs)._asdict()
"""


@pytest.fixture(scope="session")
def triton_kernels():
    torch = pytest.importorskip("torch")
    pytest.importorskip("triton")
    from attnmath.testing import TritonProcess

    proc = TritonProcess(interpret=not torch.cuda.is_available(), helpers=TRITON_HELPERS)
    try:
        yield proc
    finally:
        proc.close()
