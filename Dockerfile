# asyncbroker: a single-node Kafka-compatible broker.
#
#   docker build -t asyncbroker .
#   docker run -p 9092:9092 -v asyncbroker-data:/var/lib/asyncbroker asyncbroker
#
# Inside a container the broker must bind every interface, and clients must be
# told an address they can reach: both are set below (override them with
# ASYNCBROKER_LISTENERS / ASYNCBROKER_ADVERTISED_LISTENERS or --override).
# Outside a container the broker's own default stays 127.0.0.1:9092.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /src
COPY pyproject.toml README.md ./
COPY wire ./wire
COPY storage ./storage
COPY cleaner ./cleaner
COPY asyncbroker ./asyncbroker
COPY pipeline ./pipeline
RUN pip install . \
    && useradd --system --uid 1000 --home-dir /var/lib/asyncbroker asyncbroker \
    && mkdir -p /var/lib/asyncbroker \
    && chown asyncbroker /var/lib/asyncbroker

ENV ASYNCBROKER_LOG_DIRS=/var/lib/asyncbroker \
    ASYNCBROKER_LISTENERS=PLAINTEXT://0.0.0.0:9092 \
    ASYNCBROKER_ADVERTISED_LISTENERS=PLAINTEXT://localhost:9092

USER asyncbroker
WORKDIR /var/lib/asyncbroker
VOLUME /var/lib/asyncbroker
EXPOSE 9092 9404

# SIGTERM triggers the clean shutdown (flush, checkpoints, clean-shutdown marker).
STOPSIGNAL SIGTERM
ENTRYPOINT ["asyncbroker", "serve"]
CMD ["--metrics-port", "9404"]
