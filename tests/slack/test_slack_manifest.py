"""The Slack app manifest asks for exactly the scopes the code needs.

Every Slack Web API method the product calls (found by reading its source, so a new call cannot be missed) is
looked up in a table of the scopes Slack requires for it; the manifest must grant those and nothing unused.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import yaml
from slack_sdk import WebClient

from tests.support.tree import source_files

ROOT = Path(__file__).resolve().parents[2]
NOT_PRODUCT = {"emulator.py", "emulator_ws.py"}  # the test-and-demo Slack stand-in serves these methods

# WebClient method -> the bot token scopes Slack requires for it (api.slack.com/methods).
METHOD_SCOPES: dict[str, set[str]] = {
    "chat_postMessage": {"chat:write"},
    "chat_update": {"chat:write"},
    "files_upload_v2": {"files:write"},  # files.getUploadURLExternal, files.completeUploadExternal
    "views_open": set(),  # needs only a trigger_id from an interaction
    "usergroups_users_list": {"usergroups:read"},
    "conversations_history": {"channels:history", "groups:history"},  # public, private channels
    "conversations_replies": {"channels:history", "groups:history"},
}
# Scopes a feature declared elsewhere in the manifest needs (not a Web API call).
FEATURE_SCOPES = {"commands": "features.slash_commands"}


def web_api_calls() -> dict[str, list[str]]:
    """WebClient method name -> where the product calls it (file:line)."""
    methods = {name for name in dir(WebClient) if not name.startswith("_") and callable(getattr(WebClient, name))}
    calls: dict[str, list[str]] = {}
    for path in source_files():
        if path.name in NOT_PRODUCT:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in methods:
                calls.setdefault(node.func.attr, []).append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return calls


def manifest() -> dict[str, Any]:
    loaded = yaml.safe_load((ROOT / "deploy" / "slack-app-manifest.yaml").read_text())
    assert isinstance(loaded, dict)
    return loaded


def granted_scopes() -> set[str]:
    return set(manifest()["oauth_config"]["scopes"]["bot"])


def test_the_scan_finds_the_calls_we_know_of() -> None:
    calls = web_api_calls()
    assert set(calls) == set(METHOD_SCOPES), "a Web API method is called that the scope table does not list"
    assert any(where.startswith("bot/lagbot/service/outbox.py") for where in calls["chat_update"])
    assert any(where.startswith("policies/lagbot/policies/approvers.py") for where in calls["usergroups_users_list"])


def test_every_called_method_has_its_scopes_granted() -> None:
    granted = granted_scopes()
    for method, where in web_api_calls().items():
        missing = METHOD_SCOPES[method] - granted
        assert not missing, f"{method} (called at {', '.join(where)}) needs {sorted(missing)}"


def test_no_scope_is_granted_that_nothing_uses() -> None:
    needed = set().union(*(METHOD_SCOPES[m] for m in web_api_calls()))
    features = manifest()["features"]
    needed |= {scope for scope, feature in FEATURE_SCOPES.items() if feature.split(".")[1] in features}
    assert granted_scopes() == needed
