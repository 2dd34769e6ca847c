"""smcplan.llm.host_memory: heap memory that freed blocks left behind goes back after a trim."""

from __future__ import annotations

import ctypes
import os
import platform

import pytest

from smcplan.llm.host_memory import release_free_memory

MB = 1 << 20


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(
    platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc only"
)
def test_a_trim_returns_the_heap_that_freed_blocks_left_behind():
    libc = ctypes.CDLL("libc.so.6")
    libc.malloc.argtypes, libc.malloc.restype = [ctypes.c_size_t], ctypes.c_void_p
    libc.free.argtypes, libc.free.restype = [ctypes.c_void_p], None
    # 100 kB blocks (below glibc's 128 kB mmap threshold: they come from the heap); freeing every
    # other one leaves holes between live blocks, which free() does not give back (it only
    # shrinks the heap's top): the situation of a sweep's freed tensors (module doc).
    base = _rss()
    blocks = []
    for _ in range(3000):
        block = libc.malloc(100_000)
        ctypes.memset(block, 1, 100_000)
        blocks.append(block)
    try:
        assert _rss() - base > 280 * MB
        for block in blocks[::2]:
            libc.free(block)
        assert _rss() - base > 280 * MB  # half of it freed, but all of it still resident
        assert release_free_memory() is True
        assert _rss() - base < 150 * MB + 32 * MB  # the trim gave the holes back
    finally:
        for block in blocks[1::2]:
            libc.free(block)
