"""Freed memory kept in the process (hardcse/allocator.py)."""

import platform
import subprocess
import sys

import pytest

from hardcse.cli import main

glibc = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's malloc only")

# an 8 MiB block from malloc: on the heap (just below the program break) or mapped apart; and whether freeing it
# gives the heap's top back to the kernel
BLOCK = """
import ctypes, sys
if sys.argv[1] == "keep":
    from hardcse.allocator import keep_freed_memory
    assert keep_freed_memory()
libc = ctypes.CDLL(None)
libc.malloc.restype, libc.sbrk.restype, libc.sbrk.argtypes = ctypes.c_void_p, ctypes.c_void_p, [ctypes.c_long]
block = libc.malloc(8 << 20)
top = libc.sbrk(0)
on_heap = block < top and top - block < 16 << 20
libc.free(ctypes.c_void_p(block))
print(on_heap, libc.sbrk(0) == top)
"""


def block(setting: str) -> str:
    out = subprocess.run([sys.executable, "-c", BLOCK, setting], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


@glibc
def test_a_large_block_comes_from_the_heap_and_stays_only_when_kept():
    assert block("default").startswith("False")  # mapped apart, unmapped at free: new pages the next time
    assert block("keep") == "True True"  # on the heap, and its pages stay in the process after free


def test_the_command_line_sets_it_and_a_library_call_of_main_does_not(monkeypatch, tmp_path):
    from hardcse import allocator

    calls = []
    monkeypatch.setattr(allocator, "keep_freed_memory", lambda: calls.append(1) or True)
    command = ["art", "run", "--config", str(tmp_path / "missing.yaml"), "--out", str(tmp_path / "run")]
    assert main(command) == 2 and calls == []  # called from Python: the caller's process is left as it is
    monkeypatch.setattr(sys, "argv", ["hardcse", *command])
    assert main() == 2 and calls == [1]  # the command line: set once, before the command's own error
