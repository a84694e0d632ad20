"""Build nccl_core_backend._C, the product, and nccl_core_backend._testing,
the lab the tests import (csrc/testing: emulated ranks, private checks, the
fake NCCL), with torch's cpp_extension.  The lab links against _C and is never
imported by the package.

NCCL is found through NCCL_HOME, else the nvidia-nccl-* wheel torch depends
on, else CUDA_HOME.  The extension links the soname libnccl.so.2, so at run
time it shares the NCCL that torch already loaded.
"""

import glob
import os

from setuptools import find_packages, setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

HERE = os.path.dirname(os.path.abspath(__file__))


def _nccl_from_wheel():
    try:
        import nvidia.nccl  # the wheel torch depends on
    except ImportError:
        return None
    for root in list(getattr(nvidia.nccl, "__path__", [])):
        if os.path.exists(os.path.join(root, "include", "nccl.h")):
            return root
    return None


def find_nccl():
    """(include_dir, lib_dir) of the NCCL to build against."""
    candidates = []
    if os.environ.get("NCCL_HOME"):
        candidates.append(os.environ["NCCL_HOME"])
    wheel = _nccl_from_wheel()
    if wheel:
        candidates.append(wheel)
    cuda_home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH") or "/usr/local/cuda"
    candidates.append(cuda_home)
    for root in candidates:
        inc = os.path.join(root, "include")
        for lib in ("lib", "lib64", os.path.join("targets", "x86_64-linux", "lib")):
            libdir = os.path.join(root, lib)
            if os.path.exists(os.path.join(inc, "nccl.h")) and os.path.exists(
                os.path.join(libdir, "libnccl.so.2")
            ):
                return inc, libdir
    raise RuntimeError(
        "NCCL not found: set NCCL_HOME, install nvidia-nccl-cu13 (torch's "
        "dependency), or put NCCL under CUDA_HOME. Tried: " + ", ".join(candidates)
    )


def torch_minor():
    """torch's minor version, for code guarded on APIs newer than torch 2.11."""
    import torch

    major, minor = (int(x) for x in torch.__version__.split(".")[:2])
    return major * 100 + minor


LAB = os.path.join("csrc", "testing")


class BuildWithLab(BuildExtension):
    """Links the lab against the _C just built (its path differs between
    in-place, editable and wheel builds), found again at run time beside it."""

    def build_extension(self, ext):
        if ext.name == "nccl_core_backend._testing":
            product = self.get_ext_fullpath("nccl_core_backend._C")
            ext.library_dirs = list(ext.library_dirs) + [os.path.dirname(product)]
            ext.extra_link_args = list(ext.extra_link_args) + [
                "-l:" + os.path.basename(product), "-Wl,-rpath,$ORIGIN"]
        super().build_extension(ext)


def main():
    nccl_inc, nccl_lib = find_nccl()
    print(f"nccl_core: building against NCCL headers in {nccl_inc}, library in {nccl_lib}")
    every = sorted(glob.glob(os.path.join("csrc", "**", "*.cpp"), recursive=True))
    every += sorted(glob.glob(os.path.join("csrc", "**", "*.cu"), recursive=True))
    product = [p for p in every if not p.startswith(LAB + os.sep)]
    lab = [p for p in every if p.startswith(LAB + os.sep)]
    common = dict(
        include_dirs=[os.path.join(HERE, "csrc"), nccl_inc],
        library_dirs=[nccl_lib],
        # NCCL_CORE_TORCH: 211 for torch 2.11, 215 for 2.15 (virtuals that only
        # newer torch's c10d::Backend declares are overridden there).
        define_macros=[("NCCL_CORE_TORCH", str(torch_minor()))],
        extra_compile_args={
            "cxx": ["-O2", "-Wall", "-Wno-unused-function", "-Wno-sign-compare"],
            "nvcc": ["-O2", "-gencode=arch=compute_90,code=sm_90"],
        },
    )
    # The soname, not the unversioned dev link: one NCCL per process.
    nccl_link = ["-l:libnccl.so.2", f"-Wl,-rpath,{nccl_lib}", "-ldl"]
    ext = CUDAExtension(name="nccl_core_backend._C", sources=product, extra_link_args=nccl_link, **common)
    lab_ext = CUDAExtension(name="nccl_core_backend._testing", sources=lab, extra_link_args=nccl_link,
                            **common)
    setup(
        name="nccl_core_backend",
        version="0.1.0",
        description="A torch.distributed backend exposing NCCL's full modern API",
        packages=find_packages(include=["nccl_core_backend", "nccl_core_backend.*"]),
        package_data={"nccl_core_backend": ["py.typed", "*.pyi", "**/*.pyi"]},
        # In this order: the lab links against _C.  NCCL_CORE_PREBUILT=1: both
        # are already in place, built elsewhere for this torch and these sources
        # (scripts/prebuild.sh, installed by scripts/gpu-build.sh).
        ext_modules=[] if os.environ.get("NCCL_CORE_PREBUILT") == "1" else [ext, lab_ext],
        cmdclass={"build_ext": BuildWithLab.with_options(use_ninja=True)},
        entry_points={"torch.backends": ["nccl_core = nccl_core_backend._autoload:autoload"]},
        python_requires=">=3.10",
        install_requires=["torch>=2.11"],
    )


if __name__ == "__main__":
    main()
