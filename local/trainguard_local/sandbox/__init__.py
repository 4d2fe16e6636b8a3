"""`make sandbox`: the local AWS stand-in as a server that real clients use, with trainguard attached.

One endpoint on 127.0.0.1 (``endpoint.py``) answers every AWS service the user's tools call: SageMaker
and Service Quotas requests (JSON protocol, routed by X-Amz-Target) go to the simulated control planes,
everything else to moto, and ``/_sandbox/`` is the sandbox's own control API (fault injection). The
simulated jobs train on a virtual clock (``world.py``: logs, GPU metrics, checkpoints), the production
handlers run on what the stand-in's EventBridge rules deliver (``guard.py``), and ``faults.py`` breaks a
running job on request (``trainguard sandbox inject JOB hang|internal-error|capacity|quota``, which is
``control.py``: the only module here the ``trainguard`` command imports, lazily).
"""
