"""The turn loop, limits, hooks, approvals, cancellation and structured output."""
