"""trainguard's progress contract from a Lightning Trainer (the `pytorch_lightning` package, the older name).

    import pytorch_lightning
    from trainguard_sdk.pytorch_lightning import TrainguardCallback

    trainer = pytorch_lightning.Trainer(max_epochs=3, callbacks=[TrainguardCallback()])

For the `lightning` package (`lightning.pytorch`), `from trainguard_sdk.lightning import TrainguardCallback`. What it
prints and from which hooks: trainguard_sdk.lightning_hooks. Lightning is imported by this module only.
"""

from __future__ import annotations

from pytorch_lightning.callbacks import Callback

from trainguard_sdk.lightning_hooks import LightningProgressHooks


class TrainguardCallback(LightningProgressHooks, Callback):
    """Prints trainguard's progress contract from a `pytorch_lightning.Trainer` (trainguard_sdk.lightning_hooks)."""


__all__ = ["TrainguardCallback"]
