"""The trainguard strategy's run: the real handlers and adapters over a trace, on an in-process stand-in."""
