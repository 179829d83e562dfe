# pgcdc container image: built with the Rust toolchain, run on Debian slim as a non-root user.
#   docker build -t pgcdc .          (or: podman build -t pgcdc .)
#   docker run --rm pgcdc run --config /config/connector.json
# The default offsets file is /var/lib/pgcdc/data/offsets.json: mount a volume there, or keep
# the offsets in Kafka (offsets.storage.topic), so a new container does not snapshot again.
# Exit status: 0 stopped, 78 config error, 77 refused credentials, 1 other fatal error (a
# supervisor should not restart after 77 or 78).
# The REST API (Kafka Connect's, plus /metrics and /health/ready) listens on port 8083 on every
# interface of the container: publish it (-p 8083:8083). Writes from outside the container
# need credentials (pgcdc.rest.auth.token, or .username and .password, in a worker file or as
# PGCDC_PGCDC_REST_AUTH_TOKEN); reads, metrics and health need none.
FROM rust:1-bookworm AS build
# rdkafka builds its bundled librdkafka from C sources (configure + make); cmake and
# pkg-config cover the zlib/zstd sys crates; libssl-dev gives Kafka TLS and SASL/SCRAM.
RUN apt-get update \
 && apt-get install -y --no-install-recommends build-essential cmake pkg-config libssl-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# The release profile keeps debug info for profiling; the image keeps only the symbols
# (backtraces still name functions): 14 MB instead of 70.
RUN cargo build --release --locked --bin pgcdc \
 && objcopy --strip-debug target/release/pgcdc /usr/local/bin/pgcdc

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates libssl3 \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --user-group --home-dir /var/lib/pgcdc --create-home \
      --shell /usr/sbin/nologin pgcdc \
 && install -d -o pgcdc -g pgcdc /var/lib/pgcdc/data
COPY --from=build /usr/local/bin/pgcdc /usr/local/bin/pgcdc
USER 10001:10001
WORKDIR /var/lib/pgcdc
ENV PGCDC_LISTENERS=http://0.0.0.0:8083
EXPOSE 8083
# Healthy while every connector streams or takes its snapshot (GET /health/ready answers 200);
# the image has no HTTP client, so the binary asks. A listener set by --worker or --listeners
# instead of PGCDC_LISTENERS needs the same flag in a health check of your own. Docker keeps
# this; podman keeps it when building with --format docker.
HEALTHCHECK --interval=10s --timeout=6s --start-period=60s --retries=3 \
  CMD ["/usr/local/bin/pgcdc", "health"]
ENTRYPOINT ["/usr/local/bin/pgcdc"]
CMD ["--help"]
