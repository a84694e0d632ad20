"""Entry point run by ``import torch`` (group ``torch.backends``).

Registers the ``nccl_core`` backend without loading the C++ extension; the
extension is imported the first time a group is created.  Must never raise:
an exception here would make ``import torch`` fail.
"""


def autoload() -> None:
    try:
        from nccl_core_backend._registration import register

        register()
    except Exception:  # noqa: BLE001 - see module docstring
        pass
