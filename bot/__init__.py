"""lagbot: watches Kafka consumer lag, explains it, and fixes it with a human's approval."""

__version__ = "0.1.0"
