"""`make sandbox`: the local AWS stand-in as a server that real clients use, with trainguard attached."""
