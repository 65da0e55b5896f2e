"""``tooloop web``: a local web app over a store's sessions (needs the ``web`` extra).

Pages: the sessions (sortable, searchable through the store's full-text index, filtered), one
session as a timeline with a waterfall of model requests and tool calls, live while another
process writes it; fork and re-run from any message with an agent of ``tooloop.toml`` (approvals
answered in the page); two sessions compared; a ``run_many`` results file summarised.

It binds to 127.0.0.1 and every request needs the random token of the address it prints. Stored
data is only ever shown escaped, and nothing is changed or deleted: fork and re-run only add.
The core never imports this package.
"""

from __future__ import annotations

from ._app import create_app, new_token

__all__ = ["create_app", "new_token"]
