"""The operator commands: `trainguard explain`, status, history, opt-in, preflight, simulate, sandbox.

The same domain core as the functions, installed in the venv, never in the Lambda asset."""
