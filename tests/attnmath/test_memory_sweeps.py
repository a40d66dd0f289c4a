"""Memory claims checked over a sweep of sizes, not one doubling (issue 39: a claim test is widened
where widening costs seconds).

The claim tests of test_flash.py and test_chunked.py measure the peak memory at one or two sizes;
these measure it at five lengths each and fit its growth, with tracemalloc (NumPy reports its
allocations to it). Each sweep takes well under a second.
"""

from __future__ import annotations

import multiprocessing
import tracemalloc

import numpy as np
import pytest

from attnmath.attention import scaled_dot_product_attention
from attnmath.chunked import chunked_attention
from attnmath.flash import flash_attention_forward
from attnmath.masking import causal_mask
from attnmath.testing import random_qkv

LENGTHS = (128, 256, 512, 1024, 2048)


def _traced_peak(fn) -> int:
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before, _ = tracemalloc.get_traced_memory()
        fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak - before


def _peak(fn) -> int:
    """Peak traced allocation while ``fn`` runs, above what was allocated before, measured in a
    forked child: tracemalloc counts every thread's allocations, and the suite's worker may be
    running a shared build in a thread of its own (tests/support.py)."""
    if "fork" not in multiprocessing.get_all_start_methods():
        return _traced_peak(fn)
    ctx = multiprocessing.get_context("fork")
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=lambda: send.send(_traced_peak(fn)))  # forked: fn is not pickled
    child.start()
    send.close()  # the child's copy stays open: recv raises EOFError if the child dies first
    try:
        return receive.recv()
    finally:
        child.join()


def _quadratic_share(lengths, peaks) -> float:
    """The share of the largest peak that the quadratic term of a fit a + b n + c n^2 explains."""
    c = np.polyfit(np.asarray(lengths, float), np.asarray(peaks, float), 2)[0]
    return float(c * lengths[-1] ** 2 / peaks[-1])


@pytest.mark.claim(
    "001 Computational Complexity",
    "Memory: $O(n^2)$ for the attention matrix; flash attention is a solution",
    "verified on", chapter="08_flash",
    domain="$n = 128$ to 2048 in five doublings, $D = 8$, tiles of 32: plain attention's peak "
           "traced memory over $n^2$ is the same within 15 % from $n = 256$ on; in a fit "
           "$a + bn + cn^2$ of flash attention's, the quadratic term is under 5 % of the largest")
def test_plain_memory_grows_quadratically_and_flash_memory_linearly_over_a_sweep():
    plain, flash = [], []
    for n in LENGTHS:
        q, k, v = random_qkv(B=1, H=1, L=n, D=8, seed=n)
        plain.append(_peak(lambda: scaled_dot_product_attention(q, k, v)))
        flash.append(_peak(lambda: flash_attention_forward(q, k, v, block_q=32, block_k=32)))
    per_n2 = np.array(plain[1:]) / np.array(LENGTHS[1:]) ** 2
    assert per_n2.max() < 1.15 * per_n2.min(), per_n2
    assert _quadratic_share(LENGTHS, flash) < 0.05, flash
    assert flash[-1] < plain[-1] / 16


@pytest.mark.claim(
    "004 Efficient Attention Computation",
    "Processing the queries in chunks: still $O(n^2)$ ops but reduced peak memory",
    "verified on", chapter="08_flash",
    domain="$L = 128$ to 2048 in five doublings, $B = 1$, $H = 2$, $D = 8$, a causal mask, chunks "
           "of 8 queries: in a fit $a + bL + cL^2$ of the peak traced memory the quadratic term is "
           "under 5 % of the largest, and from $L = 256$ on the peak is below one $(B, H, L, S)$ "
           "boolean array")
@pytest.mark.claim(
    "000 Memory Optimization",
    "Chunked attention: process in blocks for long sequences",
    "verified on", chapter="08_flash",
    domain="$L = 128$ to 2048 in five doublings, $B = 1$, $H = 2$, $D = 8$, a causal mask, chunks "
           "of 8 queries: in a fit $a + bL + cL^2$ of the peak traced memory the quadratic term is "
           "under 5 % of the largest, and from $L = 256$ on the peak is below one $(B, H, L, S)$ "
           "boolean array")
def test_chunked_memory_grows_linearly_over_a_sweep():
    peaks = []
    for n in LENGTHS:
        q, k, v = random_qkv(B=1, H=2, L=n, D=8, seed=n)
        mask = causal_mask(n)
        peaks.append(_peak(lambda: chunked_attention(q, k, v, chunk_size=8, mask=mask)))
        assert n < 256 or peaks[-1] < 2 * n * n, (n, peaks[-1])
    assert _quadratic_share(LENGTHS, peaks) < 0.05, peaks
