# lagbot: the Slack bot (`lagbot run`) and the lag engine (`lagbot check`). Production points it at real Kafka and Redis.
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY bot ./bot
COPY remediations ./remediations
COPY policies ./policies
RUN pip install --no-cache-dir --prefix=/install .

FROM python:3.11-slim
# Java is for the PySpark drain job (remediations); the engine itself does not need it.
RUN apt-get update \
    && apt-get install -y --no-install-recommends openjdk-17-jre-headless \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --create-home --uid 10001 lagbot
COPY --from=build /install /usr/local
USER lagbot
ENTRYPOINT ["lagbot"]
EXPOSE 3000
CMD ["run", "--config", "/etc/lagbot/lagbot.yaml"]
