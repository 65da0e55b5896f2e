"""``python -m tooloop``: the ``tooloop`` command."""

from __future__ import annotations


def _main() -> None:
    try:
        from .cli import main
    except ImportError as exc:  # typer or rich missing
        raise SystemExit(f"the tooloop command needs its extra: pip install 'tooloop[cli]' ({exc})") from None
    main()


if __name__ == "__main__":
    _main()
