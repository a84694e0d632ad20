"""Tensors and arrays in NCCL memory: ``interop.torch`` and ``interop.cupy``."""
