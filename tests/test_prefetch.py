"""``calibrate.prefetch``: which files calibration reads ahead."""

from pathlib import Path

from calibrate.prefetch import library_files, library_folders

MAPS = """\
7f00-7f01 r-xp 00000000 08:01 1 /opt/venv/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so
7f01-7f02 r-xp 00000000 08:01 2 /opt/venv/lib/python3.12/site-packages/torch/lib/libtorch_cpu.so
7f02-7f03 r-xp 00000000 08:01 3 /opt/venv/lib/python3.12/site-packages/nvidia/cudnn/lib/libcudnn.so.9
7f03-7f04 r-xp 00000000 08:01 4 /usr/lib/x86_64-linux-gnu/libc.so.6
7f04-7f05 rw-p 00000000 00:00 0 [heap]
"""


def test_the_folders_of_the_mapped_gpu_libraries_in_order():
    assert library_folders(MAPS) == [Path("/opt/venv/lib/python3.12/site-packages/torch/lib"), Path("/opt/venv/lib/python3.12/site-packages/nvidia/cudnn/lib")]


def test_every_gpu_library_of_those_folders_and_nothing_else(tmp_path):
    for name in ("libcudnn.so.9", "libcudnn_engines_precompiled.so.9", "libcublasLt.so.13", "libtorch_cpu.so", "libc.so.6", "notes.txt"):
        (tmp_path / name).write_bytes(b"x")
    assert [f.name for f in library_files([tmp_path])] == ["libcublasLt.so.13", "libcudnn.so.9", "libcudnn_engines_precompiled.so.9"]


def test_it_asks_for_every_byte_of_those_files_and_nothing_without_fadvise(tmp_path, monkeypatch):
    import calibrate.prefetch as prefetch

    (tmp_path / "libcudnn.so.9").write_bytes(b"x" * 1000)
    (tmp_path / "libcublasLt.so.13").write_bytes(b"x" * 24)
    (tmp_path / "libc.so.6").write_bytes(b"x" * 7)
    maps = f"7f00-7f01 r-xp 00000000 08:01 3 {tmp_path}/libcudnn.so.9\n"
    assert prefetch.prefetch_gpu_libraries(maps) == 1024
    monkeypatch.delattr(prefetch.os, "posix_fadvise")
    assert prefetch.prefetch_gpu_libraries(maps) == 0
