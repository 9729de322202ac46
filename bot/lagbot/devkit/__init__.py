"""The dev kit: embedded broker and Redis, Apache Kafka for tests, the Slack emulator, the demos."""
