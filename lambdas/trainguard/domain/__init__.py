"""The domain core: pure decisions, no AWS SDK, no environment, no Powertools."""
