"""sparsescope: explain sparse-kernel performance on NVIDIA GPUs.

Importing the package loads no GPU library: backends are registered as
``"module:Class"`` strings and imported only when used.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
