"""Errors a user can cause. Their message is one line, fit to print as is."""


class EngineError(Exception):
    """A model path, model file, argument or backend problem the user can fix."""
