# The service's image: `docker build -t svc .`, or `docker compose up` (compose.yaml).
# The Node.js line is the one the `node` dependency installs (package-lock.json); the
# test in tests/runtime/container.test.ts holds this file to it and to the code's settings.
ARG NODE_VERSION=22.23.3

FROM node:${NODE_VERSION}-bookworm-slim AS build
WORKDIR /app
COPY . .
# Every install script runs, the root package's own included (a postinstall patching a
# dependency), then the development dependencies go.
RUN npm ci --no-audit --no-fund && npm prune --omit=dev --no-audit --no-fund

FROM node:${NODE_VERSION}-bookworm-slim
ENV NODE_ENV=production \
    SVC_ADDR=0.0.0.0:8080
WORKDIR /app
# Owned by root and only readable by the service: it runs as `node`, never as root.
COPY --from=build /app /app
USER node
EXPOSE 8080
# Readiness, not liveness: while it drains at shutdown, or its database is away, the
# service answers 503 and the container shows unhealthy.
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:8080/api/readyz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
STOPSIGNAL SIGTERM
# Node.js is PID 1 (no shell between): svc serve takes SIGTERM and runs its shutdown graces.
CMD ["node", "bin/svc.js", "serve"]
