"""The one model of the world the local tools play: the trace, what each fault does, one clock, one kernel."""
