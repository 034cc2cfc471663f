# syntax=docker/dockerfile:1
# The agent platform as a container: the standalone Node server (both APIs and the queue worker).
#
#   docker build -t agent-platform .                   # target "standalone": also runs Azurite inside
#   docker build -t agent-platform:service --target service .   # production dependencies only
#
# "standalone" is the whole service in one `docker run` (embedded store, Azurite for blobs and queues, local
# identity provider). "service" is for Compose beside an Azurite container, or for a real storage account
# and identity provider (AzureWebJobsStorage, AUTH_*): nothing in it but the built code and the production
# dependencies. Both run as the unprivileged `node` user with their data in the /data volume.

ARG NODE_IMAGE=node:20-bookworm-slim

# Compilers for the native modules (better-sqlite3) where no prebuilt binary can be downloaded, against the
# image's own Node headers (node-gyp would otherwise download them).
FROM ${NODE_IMAGE} AS toolchain
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
ENV npm_config_nodedir=/usr/local
WORKDIR /app

# Everything, to compile the TypeScript.
FROM toolchain AS build
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY functions ./functions
COPY shared ./shared
COPY scripts ./scripts
COPY portal ./portal
RUN npm run build

# Production dependencies only (no TypeScript, no test tools). The embedded store's native module is an
# optional dependency, which npm drops silently when it cannot be built: the build fails instead. Type
# declarations, source maps and documentation are half of what npm installs, and nothing reads them at run time.
FROM toolchain AS production-dependencies
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force \
 && node -e "new (require('better-sqlite3'))(':memory:').close()" \
 && find node_modules -type f \( -name '*.d.ts' -o -name '*.d.mts' -o -name '*.d.cts' -o -name '*.map' -o -name '*.md' \) -delete

# The version of Azurite the project pins for `npm start` (a development dependency), installed alone.
FROM toolchain AS azurite
COPY package.json ./
RUN mkdir /azurite && cd /azurite \
 && npm install --no-save --no-audit --no-fund --omit=dev "azurite@$(node -p "require('/app/package.json').devDependencies.azurite")" \
 && npm cache clean --force

FROM ${NODE_IMAGE} AS service
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    DATA_DIR=/data \
    LOG_FORMAT=json
WORKDIR /app
COPY --from=production-dependencies /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json host.json ./
RUN mkdir /data && chown node:node /data
USER node
VOLUME /data
EXPOSE 7071 7072
HEALTHCHECK --interval=30s --timeout=3s --start-period=20s \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.CORE_PORT || 7071) + '/health/ready').then(r => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["node", "dist/bundle/start.js"]

# The default: the service with its own Azurite, which `npm start` runs for development storage.
FROM service AS standalone
COPY --from=azurite /azurite/node_modules /opt/azurite/node_modules
ENV NODE_PATH=/opt/azurite/node_modules \
    AzureWebJobsStorage=UseDevelopmentStorage=true
