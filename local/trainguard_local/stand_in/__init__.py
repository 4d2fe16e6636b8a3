"""The AWS stand-in on this machine: moto, with a simulated SageMaker, Service Quotas and CloudWatch alarms."""
