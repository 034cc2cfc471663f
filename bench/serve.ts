// The service as its own process for the peers benchmark (so its CPU time and memory are its own): the
// standalone server on the embedded store in a temp folder, no queue workers. Prints one JSON line (its
// addresses, instance and a bearer token) when it listens.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { QUEUE_HANDLERS, ROUTES } from '../functions/groups.js';
import { LOCAL_DEFAULT_USER, loadLocalKey, mintLocalToken } from '../shared/auth/local-idp.js';
import { loadConfig } from '../shared/config.js';
import { startStandalone } from '../shared/http/standalone.js';
import { createLog } from '../shared/log.js';
import { createServices } from '../shared/services.js';

const config = loadConfig({ ...process.env, DATA_DIR: mkdtempSync(path.join(tmpdir(), 'bench-peer-')), CORE_PORT: '0', MANAGEMENT_PORT: '0', ALLOW_PRIVATE_NETWORK: 'true' });
const services = await createServices(config, { log: createLog({ quiet: true }) });
const app = await startStandalone(ROUTES, QUEUE_HANDLERS, services, { consumers: false });
if (config.auth.kind !== 'local') throw new Error('the bench uses the local identity provider');
const token = await mintLocalToken(await loadLocalKey(config.auth.keyFile), config.auth.issuer, config.auth.audience, { upn: LOCAL_DEFAULT_USER.upn, oid: LOCAL_DEFAULT_USER.oid, expiresInSeconds: 86_400 });
process.stdout.write(`${JSON.stringify({ core: app.coreUrl, management: app.managementUrl, instanceId: config.instanceId, token })}\n`);
process.on('SIGTERM', () => void app.close(0).then(() => services.close()).then(() => process.exit(0)));
