"""edgc_torch: entropy-driven dynamic gradient compression (EDGC) inside PyTorch training.

    state = edgc_torch.State(process_group, model=model, policy="edgc", r_min=4, r_max=16, window=20)
    ddp_model.register_comm_hook(state, edgc_torch.hook)
    ...                              # train as usual; optionally state.record_loss(loss) each step
    state.windows                    # per window: entropy, rank in force, compression error, floats sent

The hook runs edgc's own controller (every policy of its registry: edgc_torch.policies()) and its CPU PowerSGD
kernels with error feedback and warm start, the same code `edgc replay` runs on a recorded trace.
Controller, PowerSGD and the entropy kernels are also usable on their own (edgc_torch.Controller,
edgc_torch.PowerSGD, edgc_torch.entropy).
"""

from ._core import Controller, PowerSGD, entropy, policies  # noqa: F401
from .hook import State, hook  # noqa: F401

__all__ = ["State", "hook", "Controller", "PowerSGD", "entropy", "policies"]
