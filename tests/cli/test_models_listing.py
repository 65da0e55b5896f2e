"""``tooloop models`` lists what the model registry knows: one source of truth for providers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.cli.conftest import Cli


def test_models_lists_every_registry_provider_the_test_models_and_toml_models(bare_cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "tooloop.toml").write_text(
        '[models.fast]\nprovider = "deepseek"\nmodel = "deepseek-chat"\napi_key_env = "MY_DEEPSEEK"\n'
    )
    bare_cli.env["DEEPSEEK_API_KEY"] = "sk-deep"
    data = json.loads(bare_cli("models", "--json").stdout)
    providers = {p["provider"]: p for p in data["providers"]}
    # The same list a fresh interpreter's registry holds (tests in this process may register more).
    names = "import tooloop.models.registry as r; print([p.name for p in r.registered_providers()])"
    registry = subprocess.run(
        [sys.executable, "-c", names],
        capture_output=True,
        text=True,
        env=bare_cli.env,
        check=True,
    )
    assert str(list(providers)) == registry.stdout.strip()
    assert "deepseek" in providers and "test" in providers
    assert providers["deepseek"]["key_variables"] == ["DEEPSEEK_API_KEY"]
    assert providers["deepseek"]["key_set"] is True
    assert providers["deepseek"]["base_url"] == "https://api.deepseek.com"
    assert providers["anthropic"]["key_variables"] == ["ANTHROPIC_API_KEY"]
    assert providers["google"]["key_variables"] == ["GEMINI_API_KEY", "GOOGLE_API_KEY"]
    assert providers["test"]["models"] == ["test:echo", "test:tools"]
    assert providers["test"]["key_set"] is None
    assert data["models"] == [
        {
            "name": "@fast",
            "model": "deepseek:deepseek-chat",
            "key_set": False,
            "base_url": None,
            "from": str(tmp_path / "tooloop.toml"),
        }
    ]
    text = bare_cli("models").stdout
    assert "deepseek" in text and "test:echo" in text and "@fast" in text
    assert "default: none" in text


def test_every_listed_test_model_runs_offline(bare_cli: Cli) -> None:
    data = json.loads(bare_cli("models", "--json").stdout)
    test = next(p for p in data["providers"] if p["provider"] == "test")
    for model in test["models"]:
        done = bare_cli("run", "-m", model, "hello there")
        assert done.returncode == 0, done.stderr
        assert "hello there" in done.stdout
