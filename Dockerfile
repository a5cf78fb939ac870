# toolexecd container image. Both stages run the same scripts/ that CI runs
# (scripts/setup.sh, scripts/build.sh, scripts/test.sh), so CI exercises every
# step here; scripts/check_deploy.sh checks this file's shape.
#
#   docker build -t toolexecd .                          # from the repo root
#   docker build --build-arg RUN_TESTS=1 -t toolexecd .  # also run every test
#   docker run --rm --stop-timeout 45 -v ws:/workspace \
#     -v "$PWD/tokens:/run/secrets/toolexec/tokens:ro" toolexecd
#
# Callers need a bearer token from the token file at /run/secrets/toolexec/tokens
# (lines "TOKEN [NAME [PROFILE]]", owned by uid 10001, mode 0600; see deploy/README.md);
# without that file the daemon refuses to start. Health needs no token.
#
# Docker's default stop timeout (10 s) is shorter than the daemon's SIGTERM
# drain (limits.drain_grace_ms, 30 s): pass --stop-timeout 45 (compose sets
# stop_grace_period) so in-flight batches can finish.

# ---- build: compile toolexecd and the toolexec CLI --------------------------
FROM debian:bookworm AS build
WORKDIR /src
# setup.sh alone first, so the package layer is cached until it changes.
COPY scripts/setup.sh scripts/setup.sh
RUN scripts/setup.sh && rm -rf /var/lib/apt/lists/*
COPY . .
RUN scripts/build.sh toolexecd toolexec
# RUN_TESTS=1 runs scripts/test.sh (unit, integration, e2e, deploy checks), as CI does.
ARG RUN_TESTS=0
RUN if [ "$RUN_TESTS" = 1 ]; then scripts/test.sh; fi

# ---- runtime: the two binaries and their shared libraries only --------------
FROM debian:bookworm-slim AS runtime
ARG VERSION=0.1.0
ARG REVISION=unknown
LABEL org.opencontainers.image.title="toolexecd" \
      org.opencontainers.image.description="toolexec: a gRPC daemon that executes tools for LLM agents" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.base.name="docker.io/library/debian:bookworm-slim"

COPY scripts/setup.sh /tmp/setup.sh
RUN /tmp/setup.sh runtime && rm -rf /var/lib/apt/lists/* /tmp/setup.sh

COPY --from=build /src/build/toolexecd /src/build/toolexec /usr/local/bin/
COPY deploy/config/toolexecd.textproto /etc/toolexec/toolexecd.textproto

# A fixed uid/gid (10001) so Kubernetes runAsUser/fsGroup and volume ownership
# can name it. /workspace is created here, owned by it, so a fresh named
# volume mounted there inherits that ownership.
RUN groupadd --system --gid 10001 toolexec \
 && useradd --system --uid 10001 --gid 10001 --create-home --home-dir /home/toolexec \
      --shell /usr/sbin/nologin toolexec \
 && install -d -o toolexec -g toolexec -m 0750 /workspace

WORKDIR /workspace
USER toolexec

# Fails the image build if a shared library is missing from the runtime
# package list or the baked-in example config does not load with the
# ENTRYPOINT's and CMD's flags (a throwaway token file stands in for the real one).
RUN umask 077 && printf 'image-build-check\n' > /tmp/tokens \
 && toolexecd --check_config --listen=0.0.0.0:50051 --workspace=/workspace \
      --config=/etc/toolexec/toolexecd.textproto --token_file=/tmp/tokens \
 && rm /tmp/tokens

EXPOSE 50051
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD ["toolexec", "health", "--target=127.0.0.1:50051"]
# Flags win over the config file, so listen/workspace are fixed for the
# container whatever config is mounted; override CMD to use another config or
# token file (or TLS: --tls_cert_file, --tls_key_file, --tls_client_ca_file).
# Still keep the port reachable only by the model gateway (compose network,
# Kubernetes NetworkPolicy, no published port).
ENTRYPOINT ["toolexecd", "--listen=0.0.0.0:50051", "--workspace=/workspace"]
CMD ["--config=/etc/toolexec/toolexecd.textproto", "--token_file=/run/secrets/toolexec/tokens"]
