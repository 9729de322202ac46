# lagbot: the Slack bot (`lagbot run`) and the lag engine (`lagbot check`). Production points it at real Kafka and Redis.
# The base is pinned to Debian 12 (bookworm): its main archive ships openjdk-17-jre-headless, the Java the PySpark 4
# drain job needs (Java 17 or newer). The unpinned python:3.11-slim follows Debian's newest release, which has no
# Java 17 package.
FROM python:3.11-slim-bookworm AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY bot ./bot
COPY remediations ./remediations
COPY policies ./policies
# The extra the image carries (pyproject.toml): `drain` (PySpark with its jars, and Java below: a local[*] drain or
# spark-submit), or `drain-connect` for a bot whose drains run on a Spark Connect server (sc://): the Connect client
# only, no jars and no Java (docker build --build-arg LAGBOT_EXTRAS=drain-connect .; sizes in README.md).
ARG LAGBOT_EXTRAS=drain
RUN pip install --no-cache-dir --prefix=/install ".[${LAGBOT_EXTRAS}]"

FROM python:3.11-slim-bookworm
ARG LAGBOT_EXTRAS=drain
# Java is for the drain job (the driver that `spark-submit` starts, or a local[*] drain); the engine does not need it,
# nor a Spark Connect client.
RUN if [ "${LAGBOT_EXTRAS}" = drain ]; then \
        apt-get update \
        && apt-get install -y --no-install-recommends openjdk-17-jre-headless \
        && rm -rf /var/lib/apt/lists/*; \
    fi \
    && groupadd --gid 10001 lagbot \
    && useradd --create-home --uid 10001 --gid 10001 lagbot
COPY --from=build /install /usr/local
# Numeric, so that Kubernetes' runAsNonRoot can verify the user without reading /etc/passwd.
USER 10001:10001
ENTRYPOINT ["lagbot"]
EXPOSE 3000
CMD ["run", "--config", "/etc/lagbot/lagbot.yaml"]
