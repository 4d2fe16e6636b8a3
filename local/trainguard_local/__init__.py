"""The local tools: the AWS stand-in, the fleet simulator, chaos, sandbox, demo, bench and deploy-local."""
