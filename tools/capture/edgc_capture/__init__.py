"""Capture PyTorch gradients as edgc traces (format: traces/FORMAT.md).

The package is deliberately small and dependency-light (standard library, numpy, torch) so that it can be
copied next to any training script: attach a `TraceRecorder`, call `step()` after `backward()`, and the
directory it writes is a valid trace even if training is interrupted.
"""

from .recorder import TensorSpec, TraceRecorder, choose_blocks, parse_layer, stage_for
from .safetensors_io import SafetensorsError, load, save

__all__ = ["TraceRecorder", "TensorSpec", "choose_blocks", "parse_layer", "stage_for", "SafetensorsError",
           "load", "save"]
