"""tooloop: the streaming front door `Agent(...).stream(prompt)`, every event consumed."""

from tooloop import Agent, RunFinished, get_model

PACKAGES = ["tooloop"]


def build(base_url, model, add):
    llm = get_model("openai-compatible:" + model, base_url=base_url, api_key="mock", max_retries=0)
    agent = Agent(llm, tools=[add])

    async def run(prompt: str) -> str:
        async for event in agent.stream(prompt):
            if isinstance(event, RunFinished):
                return event.result.text
        raise RuntimeError("the stream ended without RunFinished")

    return run
