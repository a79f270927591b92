"""Read the GPU libraries' files into the page cache before calibration reaches them.

A convolution's or attention's first call in a process loads the part of cuDNN it runs, hundreds of
megabytes of kernels a library; on a machine that has not read those files since it started, the
call waits on the disk. Calibration times the convolutions after the matmul, bandwidth and overhead
stages, so asking the kernel to read the files ahead (``posix_fadvise(WILLNEED)``: the kernel
queues the reads, no thread of ours waits on them) lets the disk work while the GPU is being timed.
Nothing here changes what a kernel does once loaded. What it buys is small and uncertain: on the lent H100, with
the page cache dropped before each run, the depthwise and grouped families' stage took 5.5-5.9 s
with it and 6.7-11.0 s without, whole calibrations 63.1-66.7 s against 65.8-74.1 s (the slowest the
machine's first process; ``python benchmarks/prefetch_probe.py``, ``h100_prefetch_probe.txt``).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

# the libraries whose kernels calibration runs, loaded (or dlopen'ed later) from the same folders
GPU_LIBRARIES = re.compile(r"lib(cudnn|cublas|cublasLt|nvrtc|nvJitLink|cufft|curand|cusparse|torch_cuda|c10_cuda)[^/]*\.so[^/]*$")


def library_folders(maps: str) -> list[Path]:
    """The folders of the GPU libraries a process has mapped (``/proc/self/maps``' text), in order."""
    folders: dict[Path, None] = {}
    for line in maps.splitlines():
        path = line.rsplit(" ", 1)[-1]
        if path.startswith("/") and GPU_LIBRARIES.search(path):
            folders[Path(path).parent] = None
    return list(folders)


def library_files(folders: list[Path]) -> list[Path]:
    """Every GPU library file in those folders (cuDNN opens its engine libraries only when it needs them)."""
    return sorted({f for d in folders if d.is_dir() for f in d.iterdir() if f.is_file() and GPU_LIBRARIES.search(f.name)})


def prefetch_gpu_libraries(maps: str | None = None) -> int:
    """Ask the kernel to read the GPU libraries' files ahead; the bytes asked for (0 where the OS has
    no ``posix_fadvise`` or ``/proc/self/maps``). ``maps``: that file's text (this process's, read
    here, by default)."""
    if not hasattr(os, "posix_fadvise"):
        return 0
    if maps is None:
        try:
            maps = Path("/proc/self/maps").read_text()
        except OSError:
            return 0
    asked = 0
    for f in library_files(library_folders(maps)):
        try:
            fd = os.open(f, os.O_RDONLY)
        except OSError:
            continue
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_WILLNEED)
            asked += os.fstat(fd).st_size
        except OSError:
            pass
        finally:
            os.close(fd)
    return asked
