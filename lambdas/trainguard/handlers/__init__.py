"""Lambda handlers: parse -> decide -> act -> return the outcome."""
