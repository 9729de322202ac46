"""The Slack side of lagbot. For now: the local Slack Web API emulator the tests and the demo use."""
