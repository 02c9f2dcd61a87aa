"""The one error type of the agent: a reason to leave the node alone, said in words."""


class AgentError(Exception):
    """A condition under which the agent must not touch the node; the message says why."""
