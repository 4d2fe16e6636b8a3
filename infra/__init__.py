"""The CDK app: settings, event patterns, and one construct per concern."""
