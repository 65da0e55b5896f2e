"""``-a/--attach`` and ``-f/--fragment`` as real subprocesses: what the model is sent, and every
mistake refused in one line (exit 2) before anything is sent."""

from __future__ import annotations

import base64
import subprocess
import sys
from pathlib import Path

from tests.cli.conftest import MODEL, Cli, sent_messages, text_reply
from tests.support.wire import Reply, WireServer

PNG = b"\x89PNG\r\n\x1a\n" + bytes(16)
PDF = b"%PDF-1.4\n%%EOF\n"
WAV = b"RIFF\x24\x00\x00\x00WAVEfmt " + bytes(8)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def test_run_sends_fragments_text_and_attachments_in_order(cli: Cli, wire: WireServer) -> None:
    (cli.cwd / "photo").write_bytes(PNG)  # no extension: the type is read from the content
    (cli.cwd / "report.pdf").write_bytes(PDF)
    (cli.cwd / "notes.md").write_text("# Notes\nShip on Friday.\n")
    wire.queue(text_reply("Both say Friday."))
    ran = cli("run", "What do these say?", "--model", MODEL, "-a", "photo", "--attach", "report.pdf", "-f", "notes.md")
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == "Both say Friday.\n"
    assert sent_messages(wire, 0) == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": '<file path="notes.md">\n# Notes\nShip on Friday.\n</file>'},
                {"type": "text", "text": "What do these say?"},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{b64(PNG)}"}},
                {
                    "type": "file",
                    "file": {"filename": "report.pdf", "file_data": f"data:application/pdf;base64,{b64(PDF)}"},
                },
            ],
        }
    ]
    shown = cli("sessions", "show", "last")
    assert shown.returncode == 0, shown.stderr
    assert "[image: image/png, 24 bytes]\n[document report.pdf: application/pdf, 15 bytes]" in shown.stdout


def test_an_attachment_on_standard_input(cli: Cli, wire: WireServer) -> None:
    wire.queue(text_reply("A beep."))
    ran = subprocess.run(
        [sys.executable, "-m", "tooloop", "run", "What is this sound?", "--model", MODEL, "-a", "-"],
        input=WAV,
        capture_output=True,
        env=cli.env,
        cwd=cli.cwd,
        timeout=90,
    )
    assert ran.returncode == 0, ran.stderr.decode()
    assert sent_messages(wire, 0)[0]["content"] == [
        {"type": "text", "text": "What is this sound?"},
        {"type": "input_audio", "input_audio": {"data": b64(WAV), "format": "wav"}},
    ]


def test_an_attachment_by_url_is_downloaded_and_typed_by_its_content(cli: Cli, wire: WireServer) -> None:
    wire.queue(
        Reply(200, {"content-type": "application/octet-stream"}, chunks=[PDF]),  # the download
        text_reply("A short PDF."),
    )
    url = f"{wire.url}/files/q3-report?x=1"
    ran = cli("run", "Summarise", "--model", MODEL, "-a", url)
    assert ran.returncode == 0, ran.stderr
    assert wire.requests[0].path == "/files/q3-report?x=1"
    assert sent_messages(wire, 1)[0]["content"][1] == {
        "type": "file",
        "file": {"filename": "q3-report", "file_data": f"data:application/pdf;base64,{b64(PDF)}"},
    }


def test_attach_type_forces_the_type(cli: Cli, wire: WireServer) -> None:
    table = b"PAR1\x01\x02\x03"
    (cli.cwd / "table.dat").write_bytes(table)
    wire.queue(text_reply("Three rows."))
    ran = cli("run", "Read it", "--model", MODEL, "-a", "table.dat", "--attach-type", "application/x-parquet")
    assert ran.returncode == 0, ran.stderr
    assert sent_messages(wire, 0)[0]["content"][1]["file"] == {
        "filename": "table.dat",
        "file_data": f"data:application/x-parquet;base64,{b64(table)}",
    }


def test_attachment_mistakes_are_one_line_and_exit_2(cli: Cli, wire: WireServer) -> None:
    (cli.cwd / "blob.bin").write_bytes(b"\x00\x01\x02\x03")
    (cli.cwd / "photo.png").write_bytes(PNG)
    cases = {
        ("-a", "missing.png"): "error: attachment 'missing.png': no such file",
        ("-a", "blob.bin"): (
            "error: attachment 'blob.bin': cannot tell its type from its content or name; "
            "pass --attach-type TYPE (e.g. application/pdf)"
        ),
        ("-f", "missing.md"): "error: fragment 'missing.md': no such file",
        ("-f", "blob.bin"): "error: fragment 'blob.bin' looks binary (a NUL byte at offset 0): give text",
        ("-a", "photo.png", "--attach-type", "png"): (
            "error: --attach-type 'png': give a media type such as image/png, audio/wav or application/pdf"
        ),
        ("-a", "http://127.0.0.1:9/x.png"): "error: attachment http://127.0.0.1:9/x.png: cannot download it (",
    }
    for args, message in cases.items():
        ran = cli("run", "Look", "--model", MODEL, *args)
        assert ran.returncode == 2, (args, ran.stderr)
        assert ran.stderr.strip().startswith(message), (args, ran.stderr)
        assert len(ran.stderr.strip().splitlines()) == 1, ran.stderr
    assert wire.requests == []


def test_an_attachment_the_model_cannot_take_is_refused_before_sending(cli: Cli, wire: WireServer) -> None:
    (cli.cwd / "photo.png").write_bytes(PNG)
    env = {**cli.env, "DEEPSEEK_API_KEY": "sk-test"}
    ran = Cli(env, cli.cwd)(
        "run", "Look", "--model", "deepseek:deepseek-chat", "--base-url", wire.url, "-a", "photo.png"
    )
    assert ran.returncode == 2, ran.stderr
    assert ran.stderr.strip().splitlines()[-1] == (
        "error: deepseek model 'deepseek-chat' cannot take an image (image/png) in a user message; it takes text only"
    )
    assert wire.requests == []


def test_chat_sends_attachments_with_the_first_message_only(cli: Cli, wire: WireServer) -> None:
    (cli.cwd / "photo.png").write_bytes(PNG)
    (cli.cwd / "brief.txt").write_text("Be kind.")
    wire.queue(text_reply("A square."), text_reply("Yes."))
    chat = cli("chat", "--model", MODEL, "-a", "photo.png", "-f", "brief.txt", input="What is it?\nSure?\n/exit\n")
    assert chat.returncode == 0, chat.stderr
    first = sent_messages(wire, 0)
    assert first[-1]["content"] == [
        {"type": "text", "text": '<file path="brief.txt">\nBe kind.\n</file>'},
        {"type": "text", "text": "What is it?"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{b64(PNG)}"}},
    ]
    second = sent_messages(wire, 1)
    assert second[-1] == {"role": "user", "content": "Sure?"}
    assert second[0] == first[-1]  # the first message keeps its parts in the session


def test_agent_short_option_is_capital_a(bare_cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "tooloop.toml").write_text('[agents.helper]\nmodel = "test:echo"\n')
    ran = bare_cli("run", "hello", "-A", "helper")
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.startswith("You said: hello")
