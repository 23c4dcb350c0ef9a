# syntax=docker/dockerfile:1
# Multi-stage build: compile in the official Rust image (dependencies cached
# in their own layer), run on slim Debian as a non-root user.

FROM rust:1.95-slim-trixie AS build
# The slim image has gcc but not make, which the builds of jemalloc and
# librdkafka (the kafka destination) need; librdkafka's TLS links the
# system's OpenSSL, found by pkg-config.
RUN apt-get update \
    && apt-get install -y --no-install-recommends make pkg-config libssl-dev zlib1g-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# Build the dependencies alone first, so editing our code does not rebuild them.
COPY Cargo.toml Cargo.lock ./
RUN mkdir src \
    && echo 'fn main() {}' > src/main.rs \
    && touch src/lib.rs \
    && cargo build --release --locked \
    && rm -rf src
COPY build.rs ./
COPY src ./src
COPY migrations ./migrations
COPY templates ./templates
# Our sources must look newer than the placeholder build's outputs.
RUN touch src/main.rs src/lib.rs \
    && cargo build --release --locked \
    && cp target/release/hookledger /usr/local/bin/hookledger

FROM debian:trixie-slim AS runtime
# The system's trusted roots, for the outbox's HTTPS destinations (without
# them hookledger falls back to the Mozilla roots built in, and says so);
# OpenSSL's library, which librdkafka's TLS (the kafka destination) links.
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates libssl3t64 \
    && rm -rf /var/lib/apt/lists/*
RUN useradd --system --uid 10001 --home-dir /var/lib/hookledger --create-home hookledger \
    && mkdir -p /var/lib/hookledger/data \
    && chown -R hookledger:hookledger /var/lib/hookledger
COPY --from=build /usr/local/bin/hookledger /usr/local/bin/hookledger
WORKDIR /var/lib/hookledger
# Listen on every interface inside the container. SQLite and the generated
# admin token live on the volume; production sets HOOKLEDGER_DATABASE_URL to
# PostgreSQL and HOOKLEDGER_ADMIN_TOKEN, and probes /healthz and /readyz.
ENV HOOKLEDGER_LISTEN=0.0.0.0:8080 \
    HOOKLEDGER_DATA_DIR=/var/lib/hookledger/data
VOLUME ["/var/lib/hookledger/data"]
USER hookledger
EXPOSE 8080
ENTRYPOINT ["hookledger"]
CMD ["serve"]
