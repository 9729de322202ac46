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
RUN pip install --no-cache-dir --prefix=/install .

FROM python:3.11-slim-bookworm
# Java is for the drain job (the driver that `spark-submit` starts, or a local[*] drain); the engine does not need it.
RUN apt-get update \
    && apt-get install -y --no-install-recommends openjdk-17-jre-headless \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --gid 10001 lagbot \
    && useradd --create-home --uid 10001 --gid 10001 lagbot
COPY --from=build /install /usr/local
# Numeric, so that Kubernetes' runAsNonRoot can verify the user without reading /etc/passwd.
USER 10001:10001
ENTRYPOINT ["lagbot"]
EXPOSE 3000
CMD ["run", "--config", "/etc/lagbot/lagbot.yaml"]
