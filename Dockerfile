# pgcdc container image: build with the Rust toolchain, run on a slim Debian.
FROM rust:1-bookworm AS build
# rdkafka builds its bundled librdkafka from C sources (configure + make); cmake and
# pkg-config cover the zlib/zstd sys crates; libssl-dev gives Kafka TLS and SASL/SCRAM.
RUN apt-get update \
 && apt-get install -y --no-install-recommends build-essential cmake pkg-config libssl-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin pgcdc \
 && cp target/release/pgcdc /usr/local/bin/pgcdc

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates libssl3 \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /usr/local/bin/pgcdc /usr/local/bin/pgcdc
ENTRYPOINT ["/usr/local/bin/pgcdc"]
