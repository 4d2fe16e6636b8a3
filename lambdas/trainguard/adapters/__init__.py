"""Adapters: the only modules that import boto3. Each takes its client in the constructor."""
