"""The local commands outside the tools' packages: the CLI's local commands, the IAM check of `make lint`."""
