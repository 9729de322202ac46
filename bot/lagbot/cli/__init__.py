"""The `lagbot` command: its subcommands and the terminal and JSON forms of a check."""
