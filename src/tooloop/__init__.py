"""tooloop: the multi-turn LLM tool-calling loop."""
