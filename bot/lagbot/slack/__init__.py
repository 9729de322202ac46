"""The Slack edge: bolt listeners, the `/lag` commands, Block Kit rendering of what the service presents, the words."""
