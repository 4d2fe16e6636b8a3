"""trainguard's progress contract from a Lightning Trainer (the `lightning` package: `lightning.pytorch`).

    import lightning
    from trainguard_sdk.lightning import TrainguardCallback

    trainer = lightning.Trainer(max_epochs=3, callbacks=[TrainguardCallback()])

For the `pytorch_lightning` package, `from trainguard_sdk.pytorch_lightning import TrainguardCallback`. What it
prints and from which hooks: trainguard_sdk.lightning_hooks. Lightning is imported by this module only.
"""

from __future__ import annotations

from lightning.pytorch.callbacks import Callback

from trainguard_sdk.lightning_hooks import LightningProgressHooks


class TrainguardCallback(LightningProgressHooks, Callback):
    """Prints trainguard's progress contract from a `lightning.Trainer` (trainguard_sdk.lightning_hooks)."""


__all__ = ["TrainguardCallback"]
