"""Plugins: a real package, built as a wheel and installed with pip, adds a provider and tools
through entry points; a broken plugin is one warning line, never a crash."""

from __future__ import annotations

import base64
import hashlib
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.cli.conftest import Cli, base_env

_MODULE = '''
from tooloop.testing import FunctionModel


def create(model_name, *, provider, settings=None, **options):
    """The plugin's provider: answers with the model's name and the last user message."""
    def answer(request):
        return f"plugin model {model_name} heard: {request.messages[-1].text}"

    return FunctionModel(answer, name=model_name)


def shout(text: str) -> str:
    """Upper-case the text."""
    return text.upper() + "!"


TOOLS = [shout]
'''

_ENTRY_POINTS = """[tooloop.providers]
hello = tooloop_hello:create
missing = tooloop_not_installed:create
openai = tooloop_hello:create

[tooloop.tools]
shouty = tooloop_hello:TOOLS
gone = tooloop_hello:no_such_tools
weird = tooloop_hello
"""


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def _wheel(folder: Path) -> Path:
    """A real wheel of the package ``tooloop-hello`` (a module and its entry points)."""
    info = "tooloop_hello-1.0.dist-info"
    files = {
        "tooloop_hello.py": _MODULE.encode(),
        f"{info}/METADATA": b"Metadata-Version: 2.1\nName: tooloop-hello\nVersion: 1.0\n",
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"{info}/entry_points.txt": _ENTRY_POINTS.encode(),
    }
    record = [_record_line(name, data) for name, data in files.items()] + [f"{info}/RECORD,,"]
    path = folder / "tooloop_hello-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        for name, data in files.items():
            wheel.writestr(name, data)
        wheel.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    return path


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The plugin package installed by pip into a folder of its own (``--target``)."""
    folder = tmp_path_factory.mktemp("plugin")
    target = folder / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", str(target),
         str(_wheel(folder))],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return target


@pytest.fixture
def plugged(installed: Path, tmp_path: Path) -> Cli:
    env = base_env(tmp_path)
    env["PYTHONPATH"] = f"{installed}{':' + env['PYTHONPATH'] if env.get('PYTHONPATH') else ''}"
    return Cli(env, tmp_path)


def _warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("warning:")]


def test_plugins_lists_providers_and_tools_and_each_broken_one_in_a_line(plugged: Cli) -> None:
    done = plugged("plugins", "--json")
    assert done.returncode == 0, done.stderr
    rows = {(row["kind"], row["name"]): row for row in json.loads(done.stdout)}
    assert rows["provider", "hello"] == {
        "kind": "provider",
        "name": "hello",
        "target": "tooloop_hello:create",
        "package": "tooloop-hello 1.0",
        "error": None,
    }
    assert rows["tools", "shouty"]["tools"] == ["shout"]
    assert "No module named 'tooloop_not_installed'" in rows["provider", "missing"]["error"]
    assert "no_such_tools" in rows["tools", "gone"]["error"]
    assert rows["provider", "openai"]["error"] == "ignored: a provider named 'openai' exists already"
    assert ("tools", "weird") not in rows
    assert _warnings(done.stderr) == [  # each once, in one line
        "warning: plugin 'weird' of tooloop-hello 1.0 (tooloop.tools): 'tooloop_hello' is not "
        "'package.module:attribute'; ignored",
        "warning: plugin provider 'openai' of tooloop-hello 1.0 is ignored: a provider of that name exists",
    ]
    assert "Traceback" not in done.stderr
    text = plugged("plugins").stdout
    assert "hello" in text and "shouty" in text and "error: ModuleNotFoundError" in text


def test_a_plugin_provider_answers_model_strings(plugged: Cli) -> None:
    done = plugged("run", "-m", "hello:tiny", "Hi there")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "plugin model tiny heard: Hi there"
    listed = json.loads(plugged("models", "--json").stdout)
    names = [p["provider"] for p in listed["providers"]]
    assert "hello" in names and "missing" in names and names.count("openai") == 1
    assert "warning: plugin provider 'openai' of tooloop-hello 1.0 is ignored" in plugged("models").stderr


def test_a_broken_plugin_provider_is_one_line_when_used(plugged: Cli) -> None:
    done = plugged("run", "-m", "missing:x", "Hi")
    assert done.returncode == 2
    error = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(error) == 1 and "tooloop_not_installed" in error[0]
    assert "Traceback" not in done.stderr


def test_a_plugin_s_tools_by_name(plugged: Cli) -> None:
    listed = json.loads(plugged("tools", "--tool", "shouty", "--json").stdout)
    assert [t["name"] for t in listed] == ["shout"]
    done = plugged("run", "-m", "test:echo", "--tool", "shouty", "hey")
    assert done.returncode == 0, done.stderr
    assert "shout -> TEXT!" in done.stdout
    broken = plugged("tools", "--tool", "gone")
    assert broken.returncode == 2
    last = broken.stderr.strip().splitlines()[-1]
    assert last.startswith("error: --tool 'gone': tools plugin 'gone' of tooloop-hello")
    unknown = plugged("tools", "--tool", "nosuch")
    assert unknown.returncode == 2 and "no tools plugin named 'nosuch'" in unknown.stderr


def test_plugins_are_found_from_python_and_never_at_import(installed: Path) -> None:
    code = (
        "import sys, tooloop\n"
        "assert 'tooloop.plugins' not in sys.modules\n"
        "from tooloop.models import get_model\n"
        "model = get_model('hello:py')\n"
        "assert 'tooloop.plugins' in sys.modules\n"
        "from tooloop.plugins import plugin_tools\n"
        "print(model.name, [t.__name__ for t in plugin_tools('shouty')])\n"
    )
    env = {**base_env(installed), "PYTHONPATH": f"{installed}:{base_env(installed)['PYTHONPATH']}"}
    done = subprocess.run(
        [sys.executable, "-W", "ignore::UserWarning", "-c", code], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "py ['shout']"


def test_no_plugins_installed_says_so(bare_cli: Cli) -> None:
    done = bare_cli("plugins")
    assert done.returncode == 0
    assert "no plugins installed" in done.stderr
