"""The wording of `lagbot run` as it starts: what is missing or cannot be reached, and what to check.

Tiny functions, one per message (see lagbot.core.messages for the shared ones).
"""

from __future__ import annotations


def no_slack_mode(app_token_env: str, signing_secret_env: str) -> str:
    return (
        f"neither {app_token_env} nor {signing_secret_env} is set: set {app_token_env} to the app-level token "
        f"(xapp-..., Socket Mode, no public URL needed) or {signing_secret_env} to the app's Signing Secret "
        "(HTTP mode: Slack posts to /slack/events)"
    )


def slack_unreachable(api_url: str, problem: str) -> str:
    return (
        f"cannot reach Slack at {api_url}: {problem}; check this host's network, DNS and proxy "
        "(HTTPS_PROXY), or slack.api_url in the configuration"
    )


def slack_refused_token(token_env: str, error: str) -> str:
    return (
        f"Slack refused the bot token in {token_env} ({error}): check that it is the app's Bot User OAuth Token "
        "(xoxb-...), that the app is installed in the workspace, and that the token was not revoked"
    )
