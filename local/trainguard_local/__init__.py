"""Local stand-ins for AWS: what moto lacks, and the demo."""
