"""The assembled `lagbot run` process: settings to a running bot, its HTTP server."""
