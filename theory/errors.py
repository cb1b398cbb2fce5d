"""Error types every level raises."""


class NonFiniteError(FloatingPointError):
    """A reward, loss, weight or policy that became NaN or infinite; the message names the step and quantity."""
