"""`make deploy-local`: the real CDK CLI deploys, updates and destroys the stack in moto server on localhost."""
