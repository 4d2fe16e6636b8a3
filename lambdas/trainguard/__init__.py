"""trainguard: a guardian for Amazon SageMaker training jobs."""
