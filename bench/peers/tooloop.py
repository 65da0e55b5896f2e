"""tooloop: `Agent(...).run(prompt)` on the openai-compatible Chat Completions model (no streaming)."""

from tooloop import Agent, get_model

PACKAGES = ["tooloop"]


def build(base_url, model, add):
    llm = get_model("openai-compatible:" + model, base_url=base_url, api_key="mock", max_retries=0)
    agent = Agent(llm, tools=[add])

    async def run(prompt: str) -> str:
        return (await agent.run(prompt)).text

    return run
